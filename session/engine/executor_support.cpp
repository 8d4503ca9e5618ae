#include "session/engine/executor_support.h"

#include <fmt/format.h>

#include "planner/planner.h"
#include "session/query/query.h"
#include "planner/validate.h"

namespace cpplan::session {

// PipeFusion's stages run one patch of whole rows each: long skips travel with the hidden states,
// linear attention sums its state over the stage's buffer, the conv-GLU reads the rows around its
// patch from its own buffer (under CP, with the runs' ends all-gathered), and context parallelism
// inside a stage splits each patch over the CP group with K/V buffers at the level each op attends
// (PatchKvCache::cached). Ring over a model with temporal blocks splits the spatial tokens
// (shard_sequence): executor/. Every valid plan of the built-in profiles runs; a structure the
// executor's blocks lack gets its line here.
std::string unsupported_plan(const ModelProfile& m, const ParallelConfig& /*c*/) {
  for (const BlockGroup& g : m.blocks)
    if (g.text_kv_only)
      return "text_kv_only: the executor's single-stream blocks update the text tokens too (PRX's give keys and "
             "values only)";
  if (m.side_cross.every > 0)
    return "side_cross_every = " + std::to_string(m.side_cross.every) +
           ": the executor's blocks have no cross-attention to conditioning tokens (ConsisID's face tokens)";
  if (m.ffn_temporal_taps > 0)
    return "ffn_temporal_taps = " + std::to_string(m.ffn_temporal_taps) +
           ": the executor's blocks have no temporal conv after the FFN (SANA-Video's conv_temp)";
  return {};
}

std::string unsupported_run_choice(const Precision& p, const CacheSpec& s) {
  if (!runs_held_weights(p))
    return fmt::format("--dtype {}: the executor runs fp32 or bf16 weights (cpplan run --dtype) or int8-weight-only "
                       "(cpplan run --weights int8)",
                       to_string(p));
  if (s.active() && !executor_refusal(s.policy).empty())
    return fmt::format("--cache {}: the executor runs the fixed schedule only (cpplan run --cache fixed)",
                       to_string(s.policy));
  return {};
}

std::vector<UnsupportedPlan> unsupported_plans(const Query& q) {
  std::vector<UnsupportedPlan> out;
  for (const ParallelConfig& c : planner::enumerate(q.gpus)) {
    if (!planner::validate(q, c).empty()) continue;
    if (std::string why = unsupported_plan(*q.model, c); !why.empty())
      out.push_back({c, plan_label(c), std::move(why)});
  }
  return out;
}

}  // namespace cpplan::session
