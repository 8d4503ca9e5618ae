// PipeFusion (pipefusion_degree P > 1, num_pipeline_patch M, warmup_steps W): xDiT's split of the
// blocks must leave every stage a block; M >= P, M <= the latent rows; every patch's tokens split
// evenly over the CP group; W <= steps; no tensor parallelism, no anything modes (xDiT's even splits).
#include <fmt/format.h>

#include "core/pipefusion.h"
#include "planner/pipefusion_rules.h"

namespace cpplan::planner {

namespace {

void unused_pipefusion(const PipeFusionConfig& pf, std::vector<std::string>& reasons) {
  if (pf.patches != 1)
    reasons.push_back(fmt::format("num_pipeline_patch = {}: needs pipefusion_degree > 1 (patches are PipeFusion's)",
                                  pf.patches));
  if (pf.warmup_steps != 0)
    reasons.push_back(fmt::format(
        "pipefusion_warmup_steps = {}: needs pipefusion_degree > 1 (warm-up steps are PipeFusion's)", pf.warmup_steps));
}

void stage_split(const Query& q, int p, std::vector<std::string>& reasons) {
  const int blocks = q.model->total_blocks();
  const int empty = empty_stages(blocks, p);
  if (empty == 0) return;
  reasons.push_back(fmt::format(
      "pipefusion_degree = {}: xDiT's split of {}'s {} blocks into stages of ceil({} / {}) = {} leaves {} stage{} "
      "without a block",
      p, q.model->name, blocks, blocks, p, (blocks + p - 1) / p, empty, empty == 1 ? "" : "s"));
}

void patches(const Query& q, const ParallelConfig& c, std::vector<std::string>& reasons) {
  const int p = c.pp(), m = c.pipefusion.patches;
  if (m < p)
    reasons.push_back(fmt::format(
        "num_pipeline_patch = {}: must be at least pipefusion_degree = {} (a patch in flight per stage)", m, p));
  const long long rows = latent_rows(q);
  if (m > rows) {
    reasons.push_back(fmt::format("num_pipeline_patch = {}: must be at most the latent rows = {} (patches are whole "
                                  "rows of the latent)",
                                  m, rows));
    return;
  }
  const int cp = c.ring() * c.ulysses();
  if (cp <= 1 || m < 1) return;
  const PatchSpan span = patch_token_span(q, m);
  const long long sizes[] = {span.largest, span.smallest};
  for (int i = 0; i < (span.largest != span.smallest ? 2 : 1); ++i)
    if (sizes[i] % cp != 0)
      reasons.push_back(fmt::format("num_pipeline_patch = {} with ring_degree x ulysses_degree = {}: a patch of {} "
                                    "image tokens must split evenly over the context-parallel group",
                                    m, cp, sizes[i]));
}

}  // namespace

void validate_pipefusion(const Query& q, const ParallelConfig& c, std::vector<std::string>& reasons) {
  const PipeFusionConfig& pf = c.pipefusion;
  if (pf.degree == 1) return unused_pipefusion(pf, reasons);
  stage_split(q, pf.degree, reasons);
  patches(q, c, reasons);
  if (pf.warmup_steps > q.steps)
    reasons.push_back(fmt::format("pipefusion_warmup_steps = {}: must be at most the steps = {}", pf.warmup_steps, q.steps));
  if (c.tp() > 1)
    reasons.push_back(fmt::format(
        "pipefusion_degree = {} with tp_degree = {}: xDiT does not combine PipeFusion with tensor parallelism",
        pf.degree, c.tp()));
  const ContextParallelConfig& cp = c.context_parallel_config;
  if (cp.ulysses_anything || cp.ring_anything)
    reasons.push_back(fmt::format(
        "pipefusion_degree = {} with {}: PipeFusion's patches split evenly; anything modes do not combine with it",
        pf.degree, cp.ulysses_anything ? "ulysses_anything" : "ring_anything"));
}

}  // namespace cpplan::planner
