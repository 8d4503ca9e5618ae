#include "planner/snippets.h"

#include <fmt/format.h>

namespace cpplan::planner {

namespace {
// The plan's degrees as cache-dit names them in its ParallelismConfig.
std::string cache_dit_degrees(const ParallelConfig& c) {
  std::string s;
  auto add = [&](const char* name, int degree) {
    if (degree > 1) s += fmt::format("{}{}={}", s.empty() ? "" : ", ", name, degree);
  };
  add("ulysses_size", c.ulysses());
  add("ring_size", c.ring());
  add("tp_size", c.tp());
  return s.empty() ? "one GPU" : s;
}

constexpr int index(Framework f) { return static_cast<int>(f); }

// The placement a framework's refusal is stated for: the query's forced one, else the text encoders
// on every GPU and one decoder, which ask nothing of a framework (what it lacks is in the plan).
PipelinePlacement plain_placement(const Query& q) {
  return {q.text_encoder.value_or(TextEncoderPlacement::kReplicated), q.vae.value_or(VaePlacement::kSingle)};
}
}  // namespace

std::array<FrameworkSnippet, kFrameworkCount> snippets_for(const Query& q, const RankedPlan& p) {
  std::array<FrameworkSnippet, kFrameworkCount> out;
  if (!p.plan.valid() || !p.predicted) return out;
  for (int i = 0; i < kFrameworkCount; ++i)
    if (!p.runs[i].runs) out[i].unavailable = unsupported_reason(static_cast<Framework>(i), q, p.plan, plain_placement(q));
  const auto where = [&p](Framework f) { return p.run(f).where; };
  FrameworkSnippet& diffusers = out[index(Framework::kDiffusers)];
  if (diffusers.unavailable.empty()) diffusers.text = diffusers_snippet(q, p.plan, where(Framework::kDiffusers));
  FrameworkSnippet& cache_dit = out[index(Framework::kCacheDit)];
  if (cache_dit.unavailable.empty())
    cache_dit.text = diffusers.unavailable.empty()
                         ? "runs it too (its own parallelism hooks over the same pipeline)"
                         : fmt::format("runs it ({}{}{}); cpplan prints no cache-dit script yet",
                                       cache_dit_degrees(p.plan.config),
                                       where(Framework::kCacheDit).text_encoder == TextEncoderPlacement::kSharded ? ", text encoders sharded" : "",
                                       where(Framework::kCacheDit).vae == VaePlacement::kParallel ? ", parallel VAE decode" : "");
  FrameworkSnippet& xdit = out[index(Framework::kXdit)];
  if (xdit.unavailable.empty()) xdit.text = xdit_command(q, p.plan, where(Framework::kXdit)) + "\n";
  return out;
}

const RankedPlan* fastest_plan_for(const PlanReport& r, Framework f) {
  const RankedPlan* first = nullptr;  // when none fits with the framework's placement
  for (const RankedPlan& p : r.plans) {
    if (!p.plan.valid() || !p.frameworks.has(f)) continue;
    if (p.run(f).fits) return &p;
    if (!first) first = &p;
  }
  return first;
}

std::vector<FrameworkChoice> best_by_framework(const Query& q, const PlanReport& r) {
  std::vector<FrameworkChoice> out;
  if (r.plans.empty() || !r.plans.front().plan.valid() || !r.plans.front().predicted) return out;
  const RankedPlan& top = r.plans.front();
  const auto top_snippets = snippets_for(q, top);
  for (int i = 0; i < kFrameworkCount; ++i) {
    if (!q.frameworks[i]) continue;  // no file loaded for it: nothing to say
    FrameworkChoice c;
    c.framework = static_cast<Framework>(i);
    c.top_unavailable = top_snippets[i].unavailable;
    c.plan = c.top_unavailable.empty() ? &top : fastest_plan_for(r, c.framework);
    if (c.plan) {
      c.gap = c.plan->predicted->step_ms / top.predicted->step_ms - 1;
      c.snippet = c.plan == &top ? top_snippets[i].text : snippets_for(q, *c.plan)[i].text;
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string framework_snippets(const Query& q, const RankedPlan& p) {
  if (!p.plan.valid() || !p.predicted) return {};
  const auto all = snippets_for(q, p);
  const auto cannot = [](std::string_view name, const FrameworkSnippet& s) {
    return fmt::format("# {}: cannot run this plan: {}\n", name, s.unavailable);
  };
  const FrameworkSnippet& diffusers = all[index(Framework::kDiffusers)];
  const FrameworkSnippet& cache_dit = all[index(Framework::kCacheDit)];
  const FrameworkSnippet& xdit = all[index(Framework::kXdit)];
  const auto title = [](Framework f) { return std::string(framework_title(f)); };
  std::string out = diffusers.text.empty() ? cannot(title(Framework::kDiffusers), diffusers)
                                           : "# " + title(Framework::kDiffusers) + "\n" + diffusers.text;
  out += cache_dit.text.empty() ? cannot(title(Framework::kCacheDit), cache_dit)
                                : "# " + title(Framework::kCacheDit) + ": " + cache_dit.text + "\n";
  out += xdit.text.empty() ? cannot(title(Framework::kXdit), xdit) : "# " + title(Framework::kXdit) + "\n" + xdit.text;
  return out;
}

}  // namespace cpplan::planner
