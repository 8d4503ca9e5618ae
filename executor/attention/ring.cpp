// Ring and Ring Anything: K/V of the whole ring group, block by block, merged with the LSE.
#include "executor/attention.h"

namespace cpplan::executor {
namespace {
class RingAttention final : public AttentionOp {
 public:
  explicit RingAttention(bool anything) : anything_(anything) {}
  CpVariant variant() const override { return anything_ ? CpVariant::kRingAnything : CpVariant::kRing; }
  at::Tensor forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     AttentionContext& ctx) const override {
    return ring_attention(q, k, v, ctx.mesh->ring(), ctx.cp_lengths, ctx.cp);
  }

 private:
  bool anything_;
};
}  // namespace
const AttentionOp& ring_attention_op() { static const RingAttention op(false); return op; }
const AttentionOp& ring_anything_attention_op() { static const RingAttention op(true); return op; }
}  // namespace cpplan::executor
