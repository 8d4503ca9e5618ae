#include "planner/snippets.h"

#include <fmt/format.h>

#include "planner/framework_scripts.h"

namespace cpplan::planner {

namespace {
constexpr int index(Framework f) { return static_cast<int>(f); }

// The loading recipe a plan needs when the node's host memory holds one copy of the pipeline but
// not one per rank (costmodel::HostLoad::kStaggered); empty otherwise.
std::string load_in_turn_lines(const costmodel::Prediction& pr, const ParallelConfig& c) {
  if (pr.host_load != costmodel::HostLoad::kStaggered) return {};
  const std::string tp_note =
      c.tp() > 1 ? "# tensor parallelism shards the transformer collectively (enable_parallelism after the loop): every\n"
                   "# rank's transformer copy is in host memory at once; the turns spare the other components only\n"
                 : "";
  return fmt::format(
      "# host memory: {} ranks x {:.1f} GiB do not fit in this node's host memory at once: load in turn,\n"
      "# each rank moving its weights to its GPU before the next reads them:\n"
      "#   for turn in range(int(os.environ[\"LOCAL_WORLD_SIZE\"])):\n"
      "#       if turn == int(os.environ[\"LOCAL_RANK\"]): <from_pretrained and the .to() lines below>\n"
      "#       dist.barrier()\n{}",
      pr.ranks_per_node, pr.memory.host_load_per_rank / kGiB, tp_note);
}
// The Python lines framework `f` (diffusers or cache-dit) adds for q's format and cache: a
// statement (diffusers) or an enable_cache keyword argument, "name=value" in the profile's flag (cache-dit).
std::vector<PythonHook> python_hooks(const Query& q, Framework f) {
  std::vector<PythonHook> out;
  const auto add = [&out, f](std::string what, const std::string& import, const std::string& flag) {
    PythonHook h{std::move(what), import, "", flag};
    const std::size_t eq = flag.find('=');
    if (f == Framework::kCacheDit && eq != std::string::npos) {
      h.keyword = flag.substr(0, eq);
      h.code = flag.substr(eq + 1);
    }
    out.push_back(std::move(h));
  };
  if (const FrameworkQuantization* fq = quantization_of(q, f)) add("dtype", fq->import, fq->flag);
  if (const FrameworkCache* fc = cache_of(q, f)) add("cache", fc->import, cache_flag(q, *fc));
  return out;
}
}  // namespace

std::array<FrameworkSnippet, kFrameworkCount> snippets_for(const Query& query, const RankedPlan& p) {
  std::array<FrameworkSnippet, kFrameworkCount> out;
  if (!p.plan.valid() || !p.predicted) return out;
  // The verdicts and the launch text's quantization and cache flags are those of the plan's own
  // format and cache (one of several when the query ranks them).
  const Query q = priced_query(query, p);
  for (int i = 0; i < kFrameworkCount; ++i)
    if (!p.runs[i].runs) {
      // Stated for the placement the framework uses unasked, which asks nothing of it beyond the plan.
      out[i].unavailable = unsupported_reason(static_cast<Framework>(i), q, p.plan);
      if (out[i].unavailable.empty()) out[i].unavailable = "no placement of the text encoders and the VAE it offers applies";
    }
  const auto where = [&p](Framework f) { return p.run(f).where; };
  const std::string turns = load_in_turn_lines(*p.predicted, p.plan.config);
  FrameworkSnippet& diffusers = out[index(Framework::kDiffusers)];
  if (diffusers.unavailable.empty()) {
    diffusers.text = turns + diffusers_snippet(q, p.plan, where(Framework::kDiffusers));
    diffusers.hooks = python_hooks(q, Framework::kDiffusers);
  }
  FrameworkSnippet& cache_dit = out[index(Framework::kCacheDit)];
  if (cache_dit.unavailable.empty()) {
    cache_dit.text = turns + cache_dit_script(q, p.plan, where(Framework::kCacheDit));
    cache_dit.hooks = python_hooks(q, Framework::kCacheDit);
  }
  FrameworkSnippet& xdit = out[index(Framework::kXdit)];
  if (xdit.unavailable.empty()) xdit.text = xdit_command(q, p.plan, where(Framework::kXdit)) + "\n";
  FrameworkSnippet& sglang = out[index(Framework::kSglang)];
  if (sglang.unavailable.empty()) sglang.text = sglang_command(q, p.plan, where(Framework::kSglang)) + "\n";
  FrameworkSnippet& vllm_omni = out[index(Framework::kVllmOmni)];
  if (vllm_omni.unavailable.empty()) vllm_omni.text = vllm_omni_command(q, p.plan, where(Framework::kVllmOmni)) + "\n";
  return out;
}

std::vector<FrameworkChoice> best_by_framework(const Query& q, const PlanReport& r) {
  std::vector<FrameworkChoice> out;
  const RankedPlan* best = best_plan(r);
  if (!best) return out;
  const RankedPlan& top = *best;
  const auto top_snippets = snippets_for(q, top);
  for (int i = 0; i < kFrameworkCount; ++i) {
    if (!q.frameworks[i]) continue;  // no file loaded for it: nothing to say
    FrameworkChoice c;
    c.framework = static_cast<Framework>(i);
    c.top_unavailable = top_snippets[i].unavailable;
    c.plan = c.top_unavailable.empty() ? &top : best_plan(r, c.framework);
    if (c.plan) {
      c.gap = ranking_ms(q, *c.plan) / ranking_ms(q, top) - 1;
      c.snippet = c.plan == &top ? top_snippets[i].text : snippets_for(q, *c.plan)[i].text;
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string framework_answer(const Query& q, const RankedPlan& p, Framework f, const FrameworkSnippet& s,
                             const PlanReport* report) {
  const std::string_view title = framework_title(f);
  if (!s.text.empty()) return fmt::format("# {}\n{}", title, s.text);
  std::string out = fmt::format("# {}: cannot run this plan: {}", title, s.unavailable);
  const RankedPlan* best = report ? best_plan(*report, f) : nullptr;
  if (!best) return out + (report ? "; nor any other plan here\n" : "\n");
  const double gap = ranking_ms(q, *best) / ranking_ms(q, p) - 1;
  const std::string format_cache = format_cache_label(q, *best);
  out += fmt::format("; the fastest plan it runs: {} ({}{}), {}\n", plan_label(best->plan.config),
                     display_name(best->plan.variant), format_cache.empty() ? "" : ", " + format_cache,
                     gap > 0.005    ? fmt::format("{:.0f}% slower", gap * 100)
                     : gap < -0.005 ? fmt::format("{:.0f}% faster", -gap * 100)
                                    : std::string("as fast"));
  return out + snippets_for(q, *best)[index(f)].text;
}

std::string framework_snippets(const Query& q, const RankedPlan& p, const PlanReport* report) {
  if (!p.plan.valid() || !p.predicted) return {};
  const auto all = snippets_for(q, p);
  std::string out;
  // diffusers first, then cache-dit over the same pipeline, then the others; a framework with no
  // file loaded says nothing.
  for (const Framework f : {Framework::kDiffusers, Framework::kCacheDit, Framework::kXdit, Framework::kSglang,
                            Framework::kVllmOmni})
    if (q.frameworks[index(f)]) out += framework_answer(q, p, f, all[index(f)], report);
  return out;
}

}  // namespace cpplan::planner
