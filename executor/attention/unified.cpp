// Unified (USP): Ulysses all-to-all inside the u group, Ring over the r group on heads/u and the
// u group's tokens, reverse all-to-all.
#include "executor/attention.h"

namespace cpplan::executor {
namespace {
class UnifiedAttention final : public AttentionOp {
 public:
  CpVariant variant() const override { return CpVariant::kUnified; }
  at::Tensor forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     AttentionContext& ctx) const override {
    Comm& u = ctx.mesh->ulysses();
    const at::Tensor qh = sequence_to_heads(q, u), kh = sequence_to_heads(k, u), vh = sequence_to_heads(v, u);
    const std::vector<int64_t> lengths(ctx.mesh->ring().size(), kh.size(2));
    return heads_to_sequence(ring_attention(qh, kh, vh, ctx.mesh->ring(), lengths, ctx.cp), u);
  }
};
}  // namespace
const AttentionOp& unified_attention_op() { static const UnifiedAttention op; return op; }
}  // namespace cpplan::executor
