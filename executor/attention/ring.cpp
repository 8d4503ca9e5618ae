// Ring: K/V blocks of the whole ring group, block by block, merged with the LSE. Text a model
// keeps whole on every rank is not passed around: its K/V joins once, as a local block.
#include "executor/attention.h"

namespace cpplan::executor {
namespace {
class RingAttention final : public AttentionOp {
 public:
  explicit RingAttention(bool anything) : anything_(anything) {}
  CpVariant variant() const override { return anything_ ? CpVariant::kRingAnything : CpVariant::kRing; }
  at::Tensor forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     AttentionContext& ctx) const override {
    Comm& ring = ctx.mesh->ring();
    const int64_t t = ctx.text_tokens;
    std::vector<at::Tensor> valid;
    if (ctx.masked())
      for (int j = 0; j < ring.size(); ++j) valid.push_back(ctx.split_keys_valid(j, 1));
    KeyBlock text;
    if (t > 0) text = {text_part(k, t), text_part(v, t), ctx.text_valid};
    at::Tensor ks = split_part(k, t), vs = split_part(v, t);
    // PipeFusion: the blocks passed around are this rank's keys of the whole sequence.
    if (ctx.patch_kv) std::tie(ks, vs) = cached_keys(ctx, ks, vs, ctx.mesh->coords().cp(), 1);
    if (ctx.linear) return linear_ring_attention(q, ks, vs, ring, t > 0 ? &text : nullptr);
    return ring_attention(q, ks, vs, ring, ctx.cp_lengths, ctx.cp, valid, t > 0 ? &text : nullptr);
  }

 private:
  bool anything_;
};
}  // namespace
const AttentionOp& ring_attention_op() { static const RingAttention op(false); return op; }
const AttentionOp& ring_anything_attention_op() { static const RingAttention op(true); return op; }
}  // namespace cpplan::executor
