// PipeFusion (pipefusion_degree P > 1, num_pipeline_patch M, warmup_steps W): M >= P, M <= the
// latent rows; xDiT's patch split (core/pipefusion.h) runs M patches, without error and with equal
// sequence-parallel shares; W <= steps; no tensor parallelism, no anything modes (xDiT's even
// splits). xDiT's stage split may leave the last stages without a block (ceil(L / P) per stage):
// xDiT runs them (an empty block list between the forward's ends), so they are no violation.
#include <fmt/format.h>

#include "core/pipefusion.h"
#include "planner/pipefusion_rules.h"

namespace cpplan::planner {

namespace {

void unused_pipefusion(const PipeFusionConfig& pf, std::vector<Violation>& out) {
  if (pf.patches != 1)
    out.push_back({RuleId::kPipeFusionFlagsNeedPipeFusion, "num_pipeline_patch", std::to_string(pf.patches),
                   "needs pipefusion_degree > 1 (patches are PipeFusion's)", Lever::kDegree});
  if (pf.warmup_steps != 0)
    out.push_back({RuleId::kPipeFusionFlagsNeedPipeFusion, "pipefusion_warmup_steps", std::to_string(pf.warmup_steps),
                   "needs pipefusion_degree > 1 (warm-up steps are PipeFusion's)", Lever::kDegree});
}

// Why xDiT would not run the split as asked (its two errors, a changed count, unequal
// sequence-parallel shares), in the units of its code (latent pixels, H = height / VAE factor);
// "" when it would.
std::string xdit_split_rule(const XditPatchSplit& s) {
  const std::string grid = fmt::format("patch size x sequence-parallel degree ({} x {})", s.patch_size, s.sp);
  switch (s.error) {
    case XditSplitError::kHeightOverSp:
      return fmt::format("xDiT refuses it: the {}-high latent is not divisible by the sequence-parallel degree {}",
                         s.height, s.sp);
    case XditSplitError::kLastPatch:
      return fmt::format("xDiT refuses it: the last patch of the {}-high latent, {} - {} x {} = {}, is not a multiple "
                         "of {}",
                         s.height, s.height, s.patches - 1, s.patch_height, s.height - (s.patches - 1) * s.patch_height,
                         grid);
    case XditSplitError::kNone: break;
  }
  if (s.changes_count())
    return fmt::format("xDiT would run {}: it cuts the {}-high latent into patches of ceil({} / {}) = {} rounded up to "
                       "a multiple of {}, {} high, and ceil({} / {}) = {} of them",
                       s.patches, s.height, s.height, s.requested, s.unrounded, grid, s.patch_height, s.height,
                       s.patch_height, s.patches);
  if (s.unequal_sp_shares())
    return fmt::format("xDiT cuts the latent into patches of {} token rows and a last of {}, and its sequence-parallel "
                       "split then gives the {} ranks of a patch unequal rows (it needs equal patches)",
                       s.rows, s.last_rows, s.sp);
  return {};
}

void patches(const Query& q, const ParallelConfig& c, std::vector<Violation>& out) {
  const int p = c.pp(), m = c.pipefusion.patches;
  if (m < p)
    out.push_back({RuleId::kPipeFusionPatchesAtLeastDegree, "num_pipeline_patch", std::to_string(m),
                   fmt::format("must be at least pipefusion_degree = {} (a patch in flight per stage)", p),
                   Lever::kDegree});
  const long long rows = latent_rows(q);
  if (m > rows) {
    out.push_back({RuleId::kPipeFusionPatchesAtMostRows, "num_pipeline_patch", std::to_string(m),
                   fmt::format("must be at most the latent rows = {} (patches are whole rows of the latent)", rows),
                   Lever::kDegree});
    return;
  }
  if (m < 1) return;
  const int sp = c.ring() * c.ulysses();
  const XditPatchSplit split = xdit_patch_split(q, m, sp);
  const std::string rule = xdit_split_rule(split);
  if (rule.empty()) return;
  // Another M fixes a changed count or unequal shares; xDiT's errors need another height or degree.
  const Lever lever = split.error == XditSplitError::kNone ? Lever::kDegree : Lever::kResolution;
  out.push_back({RuleId::kPipeFusionXditPatchSplit, "num_pipeline_patch",
                 sp > 1 ? fmt::format("{} with ring_degree x ulysses_degree = {}", m, sp) : std::to_string(m), rule,
                 lever});
}

}  // namespace

void validate_pipefusion(const Query& q, const ParallelConfig& c, std::vector<Violation>& out) {
  const PipeFusionConfig& pf = c.pipefusion;
  if (pf.degree == 1) return unused_pipefusion(pf, out);
  patches(q, c, out);
  if (pf.warmup_steps > q.steps)
    out.push_back({RuleId::kPipeFusionWarmupAtMostSteps, "pipefusion_warmup_steps", std::to_string(pf.warmup_steps),
                   fmt::format("must be at most the steps = {}", q.steps), Lever::kSteps});
  if (c.tp() > 1)
    out.push_back({RuleId::kPipeFusionExcludesTp, "pipefusion_degree",
                   fmt::format("{} with tp_degree = {}", pf.degree, c.tp()),
                   "xDiT does not combine PipeFusion with tensor parallelism", Lever::kDegree});
  const ContextParallelConfig& cp = c.context_parallel_config;
  if (cp.ulysses_anything || cp.ring_anything)
    out.push_back({RuleId::kPipeFusionExcludesAnything, "pipefusion_degree",
                   fmt::format("{} with {}", pf.degree, cp.ulysses_anything ? "ulysses_anything" : "ring_anything"),
                   "PipeFusion's patches split evenly; anything modes do not combine with it", Lever::kVariant});
}

}  // namespace cpplan::planner
