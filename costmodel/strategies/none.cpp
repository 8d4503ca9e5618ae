// No context parallelism: the whole sequence on every rank of the group.
#include "costmodel/cp_cost.h"

namespace cpplan::costmodel {
namespace {
class NoCp final : public CpCostStrategy {
 public:
  CpVariant variant() const override { return CpVariant::kNone; }
  CpCostTraits traits() const override { return {}; }  // one rank's attention: no CP ops, no collective
  AttentionCost attention(const AttentionInput& in) const override {
    AttentionCost c;
    c.tokens = c.q_tokens = c.kv_tokens = cp::sequence(in);
    c.heads = in.heads;
    return c;
  }
};
}  // namespace
const CpCostStrategy& no_cp_cost() { static const NoCp s; return s; }
}  // namespace cpplan::costmodel
