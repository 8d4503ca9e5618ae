// PipeFusion (pipefusion_degree P > 1, num_pipeline_patch M, warmup_steps W): at most a stage per
// block; M >= P, M <= the latent rows; every patch's tokens split
// evenly over the CP group; W <= steps; no tensor parallelism, no anything modes (xDiT's even splits).
#include <fmt/format.h>

#include "core/pipefusion.h"
#include "planner/pipefusion_rules.h"

namespace cpplan::planner {

namespace {

void unused_pipefusion(const PipeFusionConfig& pf, std::vector<Violation>& out) {
  if (pf.patches != 1)
    out.push_back({"num_pipeline_patch", std::to_string(pf.patches),
                   "needs pipefusion_degree > 1 (patches are PipeFusion's)", Lever::kDegree});
  if (pf.warmup_steps != 0)
    out.push_back({"pipefusion_warmup_steps", std::to_string(pf.warmup_steps),
                   "needs pipefusion_degree > 1 (warm-up steps are PipeFusion's)", Lever::kDegree});
}

// xDiT gives each stage ceil(blocks / P) blocks in order (its _split_transformer_blocks); the last
// stages can be left with none, and then only pass the hidden states on (the PixArt-alpha runs of
// xDiT's published set use 8 stages for 28 blocks: 4 x 7 + 0). More stages than blocks is refused.
void stage_split(const Query& q, int p, std::vector<Violation>& out) {
  const int blocks = q.model->total_blocks();
  if (p <= blocks) return;
  out.push_back({"pipefusion_degree", std::to_string(p),
                 fmt::format("must be at most {}'s {} blocks (a stage per block at most)", q.model->name, blocks),
                 Lever::kDegree});
}

void patches(const Query& q, const ParallelConfig& c, std::vector<Violation>& out) {
  const int p = c.pp(), m = c.pipefusion.patches;
  if (m < p)
    out.push_back({"num_pipeline_patch", std::to_string(m),
                   fmt::format("must be at least pipefusion_degree = {} (a patch in flight per stage)", p),
                   Lever::kDegree});
  const long long rows = latent_rows(q);
  if (m > rows) {
    out.push_back({"num_pipeline_patch", std::to_string(m),
                   fmt::format("must be at most the latent rows = {} (patches are whole rows of the latent)", rows),
                   Lever::kDegree});
    return;
  }
  const int cp = c.ring() * c.ulysses();
  if (cp <= 1 || m < 1) return;
  const PatchSpan span = patch_token_span(q, m);
  const long long sizes[] = {span.largest, span.smallest};
  for (int i = 0; i < (span.largest != span.smallest ? 2 : 1); ++i)
    if (sizes[i] % cp != 0)
      out.push_back({"num_pipeline_patch", fmt::format("{} with ring_degree x ulysses_degree = {}", m, cp),
                     fmt::format("a patch of {} image tokens must split evenly over the context-parallel group",
                                 sizes[i]),
                     Lever::kResolution});
}

}  // namespace

void validate_pipefusion(const Query& q, const ParallelConfig& c, std::vector<Violation>& out) {
  const PipeFusionConfig& pf = c.pipefusion;
  if (pf.degree == 1) return unused_pipefusion(pf, out);
  stage_split(q, pf.degree, out);
  patches(q, c, out);
  if (pf.warmup_steps > q.steps)
    out.push_back({"pipefusion_warmup_steps", std::to_string(pf.warmup_steps),
                   fmt::format("must be at most the steps = {}", q.steps), Lever::kSteps});
  if (c.tp() > 1)
    out.push_back({"pipefusion_degree", fmt::format("{} with tp_degree = {}", pf.degree, c.tp()),
                   "xDiT does not combine PipeFusion with tensor parallelism", Lever::kDegree});
  const ContextParallelConfig& cp = c.context_parallel_config;
  if (cp.ulysses_anything || cp.ring_anything)
    out.push_back({"pipefusion_degree",
                   fmt::format("{} with {}", pf.degree, cp.ulysses_anything ? "ulysses_anything" : "ring_anything"),
                   "PipeFusion's patches split evenly; anything modes do not combine with it", Lever::kVariant});
}

}  // namespace cpplan::planner
