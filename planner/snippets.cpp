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
}  // namespace

std::string framework_snippets(const Query& q, const RankedPlan& p) {
  if (!p.plan.valid() || !p.predicted) return {};
  const PipelinePlacement where = p.predicted->pipeline.placement();
  std::string out;
  const auto diffusers_why = unsupported_reason(Framework::kDiffusers, q, p.plan, where);
  if (diffusers_why.empty()) out += "# diffusers\n" + diffusers_snippet(q, p.plan, where);
  else out += fmt::format("# diffusers: cannot run this plan: {}\n", diffusers_why);
  const auto cache_dit_why = unsupported_reason(Framework::kCacheDit, q, p.plan, where);
  if (!cache_dit_why.empty())
    out += fmt::format("# cache-dit: cannot run this plan: {}\n", cache_dit_why);
  else if (diffusers_why.empty())
    out += "# cache-dit: runs it too (its own parallelism hooks over the same pipeline)\n";
  else
    out += fmt::format("# cache-dit: runs it ({}{}{}); cpplan prints no cache-dit script yet\n",
                       cache_dit_degrees(p.plan.config),
                       where.text_encoder == TextEncoderPlacement::kSharded ? ", text encoders sharded" : "",
                       where.vae == VaePlacement::kParallel ? ", parallel VAE decode" : "");
  const auto xdit_why = unsupported_reason(Framework::kXdit, q, p.plan, where);
  if (xdit_why.empty()) out += "# xDiT\n" + xdit_command(q, p.plan, where) + "\n";
  else out += fmt::format("# xDiT: cannot run this plan: {}\n", xdit_why);
  return out;
}

}  // namespace cpplan::planner
