#include "planner/validate.h"

#include <fmt/format.h>
#include <limits>
#include <string>

#include "planner/cp_rules.h"
#include "planner/pipefusion_rules.h"

namespace cpplan::planner {

namespace {

void degrees_at_least_one(const ParallelConfig& c, std::vector<std::string>& reasons) {
  const std::pair<const char*, int> degrees[] = {{"ring_degree", c.ring()},   {"ulysses_degree", c.ulysses()},
                                                 {"tp_degree", c.tp()},       {"cfg_degree", c.cfg_degree},
                                                 {"dp_degree", c.dp_degree},  {"pipefusion_degree", c.pp()},
                                                 {"num_pipeline_patch", c.pipefusion.patches},
                                                 {"fs_degree", c.fs()}};
  for (const auto& [name, value] : degrees)
    if (value < 1) reasons.push_back(fmt::format("{} = {}: must be at least 1", name, value));
  if (c.pipefusion.warmup_steps < 0)
    reasons.push_back(fmt::format("pipefusion_warmup_steps = {}: must be at least 0", c.pipefusion.warmup_steps));
}

void tensor_parallel(const Query& q, const ParallelConfig& c, std::vector<std::string>& reasons) {
  const int t = c.tp();
  if (t <= 1) return;
  const ModelProfile& m = *q.model;
  // Column/row sharding splits heads and the FFN's hidden dimension across ranks.
  if (m.heads % t != 0) reasons.push_back(fmt::format("tp_degree = {}: must divide num_heads = {}", t, m.heads));
  if (m.ffn_hidden % t != 0)
    reasons.push_back(fmt::format("tp_degree = {}: must divide ffn_hidden = {}", t, m.ffn_hidden));
}

void cfg_parallel(const Query& q, const ParallelConfig& c, std::vector<std::string>& reasons) {
  const int cfg = c.cfg_degree;
  if (cfg < 1) return;
  if (cfg > 2) {
    reasons.push_back(fmt::format("cfg_degree = {}: must be 1 or 2 (a conditional and an unconditional pass)", cfg));
  } else if (cfg == 2 && q.model->guidance != Guidance::kTrueCfg) {
    reasons.push_back(fmt::format("cfg_degree = 2: {} {}; there is no second pass to split", q.model->name,
                                  q.model->guidance == Guidance::kDistilled
                                      ? "is guidance-distilled (one pass per step)"
                                      : "runs without guidance (one pass per step)"));
  }
}

// Fully sharded weights (xDiT fully_shard_degree, FSDP-style): the F ranks of a group share one copy
// of the block weights, so they must hold the same weights (no TP shards, no PipeFusion stages)
// and the group is laid over the ranks that do different work (ring, ulysses, cfg, dp), whose
// product it must divide (docs/usage.md, "Fully sharded weights").
void fully_shard(const ParallelConfig& c, std::vector<std::string>& reasons) {
  const int f = c.fs();
  if (f <= 1) return;
  if (c.tp() > 1)
    reasons.push_back(fmt::format("fs_degree = {}: exclusive with tensor parallelism (tp_degree = {})", f, c.tp()));
  if (c.pp() > 1)
    reasons.push_back(fmt::format(
        "fs_degree = {}: exclusive with PipeFusion (pipefusion_degree = {}; each stage holds other blocks)", f, c.pp()));
  const long long ranks = 1LL * c.ring() * c.ulysses() * c.cfg_degree * c.dp_degree;
  if (ranks % f != 0)
    reasons.push_back(
        fmt::format("fs_degree = {}: must divide ring_degree x ulysses_degree x cfg_degree x dp_degree = {}", f, ranks));
}

}  // namespace

std::vector<std::string> validate(const Query& q, const ParallelConfig& c) {
  std::vector<std::string> reasons;
  degrees_at_least_one(c, reasons);
  if (!reasons.empty()) return reasons;  // the other rules divide by the degrees

  if (const long long world = c.world_size(); world != q.gpus)
    reasons.push_back(fmt::format(
        "ring_degree x ulysses_degree x tp_degree x pipefusion_degree x cfg_degree x dp_degree = {}: must equal the GPU "
        "count {}",
        world == std::numeric_limits<long long>::max() ? "more than 2^63" : std::to_string(world), q.gpus));
  const ContextParallelConfig& cp = c.context_parallel_config;
  if (cp.ulysses_anything && cp.ring_anything)
    reasons.push_back("ulysses_anything and ring_anything: mutually exclusive; choose one");
  if (cp.rotate_method == RotateMethod::kAllToAll)
    reasons.push_back("rotate_method = alltoall: reserved in the reference, not implemented; use allgather or p2p");
  if (cp.rotate_method == RotateMethod::kP2P && (cp.ring_degree <= 1 || cp.ring_anything))
    reasons.push_back(fmt::format("rotate_method = p2p: needs a Ring or Unified plan without ring_anything{}",
                                  cp.ring_anything ? " (Ring Anything gathers padded K/V)" : " (ring_degree > 1)"));

  cp_rules(classify(cp)).validate(q, c, reasons);
  tensor_parallel(q, c, reasons);
  cfg_parallel(q, c, reasons);
  validate_pipefusion(q, c, reasons);
  fully_shard(c, reasons);
  if (q.batch % c.dp_degree != 0)
    reasons.push_back(fmt::format(
        "dp_degree = {}: must divide the batch = {} (each replica generates its own images; see --batch)",
        c.dp_degree, q.batch));
  return reasons;
}

Plan make_plan(const Query& q, const ParallelConfig& c) {
  Plan p;
  p.config = c;
  p.variant = classify(c.context_parallel_config);
  p.reasons = validate(q, c);
  return p;
}

}  // namespace cpplan::planner
