#include "executor/supported.h"

#include <algorithm>
#include <fmt/format.h>

namespace cpplan::executor {

namespace {

bool has_group(const ModelProfile& m, bool BlockGroup::*flag) {
  return std::any_of(m.blocks.begin(), m.blocks.end(), [&](const BlockGroup& g) { return g.*flag; });
}

std::string cp_flags(const ParallelConfig& c) {
  std::string cp;
  if (c.ulysses() > 1) cp += fmt::format("--ulysses {}", c.ulysses());
  if (c.ring() > 1) cp += fmt::format("{}--ring {}", cp.empty() ? "" : " ", c.ring());
  return cp;
}

// PipeFusion's stages run one patch of whole rows through softmax-attention blocks of one chain:
// what else a model's blocks need crosses the stages.
std::string pipefusion_unsupported(const ModelProfile& m, const ParallelConfig& c) {
  const std::string pp = fmt::format("--pipefusion {}", c.pp());
  if (c.ring() * c.ulysses() > 1)
    return fmt::format("{} with {}: the executor does not run context parallelism inside PipeFusion stages yet", pp,
                       cp_flags(c));
  if (has_group(m, &BlockGroup::skip))
    return fmt::format("{}: the executor does not pass {}'s long skips between PipeFusion stages yet (xDiT does)", pp,
                       m.name);
  if (m.attention == AttentionKind::kLinear)
    return fmt::format("{}: the executor does not keep stale linear-attention sums across PipeFusion patches yet "
                       "(xDiT does)",
                       pp);
  if (m.ffn_kind == FfnKind::kConvGlu)
    return fmt::format("{}: the executor does not exchange the conv-GLU FFN's boundary rows between PipeFusion "
                       "patches yet",
                       pp);
  return {};
}

}  // namespace

std::string unsupported_plan(const ModelProfile& m, const ParallelConfig& c) {
  if (c.pp() > 1) return pipefusion_unsupported(m, c);
  if (c.ring() > 1 && has_group(m, &BlockGroup::temporal))
    return fmt::format("--ring {}: the executor does not split {}'s frame-grouped attention over a Ring yet (xDiT "
                       "does; the executor runs it under Ulysses)",
                       c.ring(), m.name);
  return {};
}

}  // namespace cpplan::executor
