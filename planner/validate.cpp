#include "planner/validate.h"

#include <fmt/format.h>
#include <limits>
#include <string>

#include "planner/cp_rules.h"
#include "planner/pipefusion_rules.h"

namespace cpplan::planner {

namespace {

void degrees_at_least_one(const ParallelConfig& c, std::vector<Violation>& out) {
  const std::pair<const char*, int> degrees[] = {{"ring_degree", c.ring()},   {"ulysses_degree", c.ulysses()},
                                                 {"tp_degree", c.tp()},       {"cfg_degree", c.cfg_degree},
                                                 {"dp_degree", c.dp_degree},  {"pipefusion_degree", c.pp()},
                                                 {"num_pipeline_patch", c.pipefusion.patches},
                                                 {"fs_degree", c.fs()}};
  for (const auto& [name, value] : degrees)
    if (value < 1)
      out.push_back({RuleId::kDegreeAtLeastOne, name, std::to_string(value), "must be at least 1", Lever::kDegree});
  if (c.pipefusion.warmup_steps < 0)
    out.push_back({RuleId::kPipeFusionWarmupNonNegative, "pipefusion_warmup_steps",
                   std::to_string(c.pipefusion.warmup_steps), "must be at least 0", Lever::kDegree});
}

void tensor_parallel(const Query& q, const ParallelConfig& c, std::vector<Violation>& out) {
  const int t = c.tp();
  if (t <= 1) return;
  const ModelProfile& m = *q.model;
  // Column/row sharding splits heads and the FFN's hidden dimension across ranks.
  if (m.heads % t != 0)
    out.push_back({RuleId::kTpHeadsDivisible, "tp_degree", std::to_string(t),
                   fmt::format("must divide num_heads = {}", m.heads), Lever::kModelHeads});
  if (m.ffn_hidden % t != 0)
    out.push_back({RuleId::kTpFfnDivisible, "tp_degree", std::to_string(t),
                   fmt::format("must divide ffn_hidden = {}", m.ffn_hidden), Lever::kDegree});
}

void cfg_parallel(const Query& q, const ParallelConfig& c, std::vector<Violation>& out) {
  const int cfg = c.cfg_degree;
  if (cfg < 1) return;
  if (cfg > 2) {
    out.push_back({RuleId::kCfgDegreeAtMostTwo, "cfg_degree", std::to_string(cfg),
                   "must be 1 or 2 (a conditional and an unconditional pass)", Lever::kDegree});
  } else if (cfg == 2 && q.model->guidance != Guidance::kTrueCfg) {
    out.push_back({RuleId::kCfgNeedsGuidance, "cfg_degree", "2",
                   fmt::format("{} {}; there is no second pass to split", q.model->name,
                               q.model->guidance == Guidance::kDistilled ? "is guidance-distilled (one pass per step)"
                                                                         : "runs without guidance (one pass per step)"),
                   Lever::kModel});
  }
}

// Fully sharded weights (xDiT fully_shard_degree, FSDP-style): the F ranks of a group share one copy
// of the block weights, so they must hold the same weights (no TP shards, no PipeFusion stages)
// and the group is laid over the ranks that do different work (ring, ulysses, cfg, dp), whose
// product it must divide (docs/usage.md, "Fully sharded weights").
void fully_shard(const ParallelConfig& c, std::vector<Violation>& out) {
  const int f = c.fs();
  if (f <= 1) return;
  const std::string fs = std::to_string(f);
  if (c.tp() > 1)
    out.push_back({RuleId::kFullyShardExcludesTp, "fs_degree", fs,
                   fmt::format("exclusive with tensor parallelism (tp_degree = {})", c.tp()), Lever::kDegree});
  if (c.pp() > 1)
    out.push_back({RuleId::kFullyShardExcludesPipeFusion, "fs_degree", fs,
                   fmt::format("exclusive with PipeFusion (pipefusion_degree = {}; each stage holds other blocks)", c.pp()),
                   Lever::kDegree});
  const long long ranks = 1LL * c.ring() * c.ulysses() * c.cfg_degree * c.dp_degree;
  if (ranks % f != 0)
    out.push_back({RuleId::kFullyShardDividesRanks, "fs_degree", fs,
                   fmt::format("must divide ring_degree x ulysses_degree x cfg_degree x dp_degree = {}", ranks),
                   Lever::kDegree});
}

// The mode flags: anything modes and the Ring rotation.
void mode_flags(const ContextParallelConfig& cp, std::vector<Violation>& out) {
  if (cp.ulysses_anything && cp.ring_anything)
    out.push_back({RuleId::kAnythingModesExclusive, "ulysses_anything and ring_anything", "",
                   "mutually exclusive; choose one", Lever::kVariant});
  if (cp.rotate_method == RotateMethod::kAllToAll)
    out.push_back({RuleId::kRotateAllToAllUnimplemented, "rotate_method", "alltoall",
                   "reserved in the reference, not implemented; use allgather or p2p", Lever::kVariant});
  if (cp.rotate_method == RotateMethod::kP2P && (cp.ring_degree <= 1 || cp.ring_anything))
    out.push_back({RuleId::kRotateP2pNeedsRing, "rotate_method", "p2p",
                   fmt::format("needs a Ring or Unified plan without ring_anything{}",
                               cp.ring_anything ? " (Ring Anything gathers padded K/V)" : " (ring_degree > 1)"),
                   Lever::kVariant});
}

bool has_group(const ModelProfile& m, bool BlockGroup::*flag) {
  for (const BlockGroup& g : m.blocks)
    if (g.*flag) return true;
  return false;
}

// The structure of newer models limits the plans that compute their math (docs/usage.md, "Models
// with other math"). Linear attention exchanges its K^T V state and temporal blocks attend across
// frames: both need an even split (no anything modes). The split is over spatial tokens (each rank
// holds every frame of its rows), so Ring runs spatial attention within each frame and temporal
// attention stays local (xDiT's latte_example.py runs Latte with --ring_degree). PipeFusion's row
// patches would cut the temporal blocks' frames apart. PipeFusion runs linear attention, its stale
// K/V sums standing in for stale K/V (sana_example.py, --pipefusion_parallel_degree), and long
// skips, which travel from stage to stage with the hidden states (hunyuandit_example.py). A conv-GLU
// FFN needs each CP rank to hold a whole row of the latent grid.
void model_structure(const Query& q, const ParallelConfig& c, std::vector<Violation>& out) {
  const ModelProfile& m = *q.model;
  const ContextParallelConfig& cp = c.context_parallel_config;
  const bool anything = cp.ulysses_anything || cp.ring_anything;
  const bool linear = m.attention == AttentionKind::kLinear;
  const bool temporal = has_group(m, &BlockGroup::temporal);
  if ((linear || temporal) && anything)
    out.push_back({RuleId::kStructureNeedsEvenSplit, cp.ulysses_anything ? "ulysses_anything" : "ring_anything", "true",
                   fmt::format("{} runs with Ulysses and Ring only (an even split)",
                               linear ? "linear attention" : "temporal attention across frames"),
                   Lever::kVariant});
  if (c.pp() > 1 && temporal)
    out.push_back({RuleId::kTemporalExcludesPipeFusion, "pipefusion_degree", std::to_string(c.pp()),
                   "must be 1: PipeFusion's row patches cut the temporal blocks' frames", Lever::kDegree});
  const long long cp_ranks = 1LL * c.ring() * c.ulysses();
  const long long row = q.resolution.width / std::max(1, m.pixel_granularity());
  if (m.ffn_kind == FfnKind::kConvGlu && cp_ranks > 1 && q.sequence.image_tokens / cp_ranks < row)
    out.push_back({RuleId::kConvGluLatentRow, "ring_degree x ulysses_degree", std::to_string(cp_ranks),
                   fmt::format("leaves a rank fewer than one latent row ({} tokens) for the conv-GLU FFN's 3x3 conv",
                               row),
                   Lever::kDegree});
}

}  // namespace

std::vector<Violation> validate(const Query& q, const ParallelConfig& c) {
  std::vector<Violation> out;
  degrees_at_least_one(c, out);
  if (!out.empty()) return out;  // the other rules divide by the degrees

  if (const long long world = c.world_size(); world != q.gpus)
    out.push_back({RuleId::kGpuCountProduct,
                   "ring_degree x ulysses_degree x tp_degree x pipefusion_degree x cfg_degree x dp_degree",
                   world == std::numeric_limits<long long>::max() ? "more than 2^63" : std::to_string(world),
                   fmt::format("must equal the GPU count {}", q.gpus), Lever::kGpuCount});
  mode_flags(c.context_parallel_config, out);
  cp_rules(classify(c.context_parallel_config)).validate(q, c, out);
  tensor_parallel(q, c, out);
  cfg_parallel(q, c, out);
  validate_pipefusion(q, c, out);
  fully_shard(c, out);
  model_structure(q, c, out);
  if (q.cache.active() && c.pp() > 1)
    out.push_back({RuleId::kCacheExcludesPipeFusion, "pipefusion_degree", std::to_string(c.pp()),
                   fmt::format("must be 1 with --cache {} (a cached step skips the middle blocks every stage's "
                               "patches run; xDiT disables its caches under PipeFusion)",
                               to_string(q.cache.policy)),
                   Lever::kDegree});
  if (q.batch % c.dp_degree != 0)
    out.push_back({RuleId::kDpDividesBatch, "dp_degree", std::to_string(c.dp_degree),
                   fmt::format("must divide the batch = {} (each replica generates its own images; see --batch)", q.batch),
                   Lever::kBatch});
  return out;
}

Plan make_plan(const Query& q, const ParallelConfig& c) {
  Plan p;
  p.config = c;
  p.variant = classify(c.context_parallel_config);
  p.violations = validate(q, c);
  return p;
}

}  // namespace cpplan::planner
