// Unified (USP): Ulysses all-to-all inside the u group, Ring over the r group on heads/u and the
// u group's tokens, reverse all-to-all. Text a model keeps whole: each rank's heads of it join
// the ring once as a local block, and its output heads are all-gathered over the u group.
#include "executor/attention.h"

namespace cpplan::executor {
namespace {
class UnifiedAttention final : public AttentionOp {
 public:
  CpVariant variant() const override { return CpVariant::kUnified; }
  at::Tensor forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     AttentionContext& ctx) const override {
    Comm& u = ctx.mesh->ulysses();
    Comm& ring = ctx.mesh->ring();
    const int64_t t = ctx.text_tokens;
    auto text_heads = [&](const at::Tensor& x) { return head_slice(text_part(x, t), u.rank(), u.size()); };
    at::Tensor qh = sequence_to_heads(split_part(q, t), u);
    if (t > 0) qh = at::cat({text_heads(q), qh}, 2);
    at::Tensor kh = sequence_to_heads(split_part(k, t), u), vh = sequence_to_heads(split_part(v, t), u);
    // PipeFusion: the ring passes the u group's keys of the whole sequence.
    if (ctx.patch_kv) std::tie(kh, vh) = cached_keys(ctx, kh, vh, ctx.mesh->coords().ring * u.size(), u.size());
    const std::vector<int64_t> lengths(ring.size(), kh.size(2));
    std::vector<at::Tensor> valid;  // ring rank j holds the tokens of CP ranks j*u .. j*u + u - 1
    if (ctx.masked())
      for (int j = 0; j < ring.size(); ++j) valid.push_back(ctx.split_keys_valid(j * u.size(), u.size()));
    KeyBlock text;
    if (t > 0) text = {text_heads(k), text_heads(v), ctx.text_valid};
    const at::Tensor o = ctx.linear ? linear_ring_attention(qh, kh, vh, ring, t > 0 ? &text : nullptr)
                                    : ring_attention(qh, kh, vh, ring, lengths, ctx.cp, valid, t > 0 ? &text : nullptr);
    return with_whole_text(o, t, u, q.size(1), heads_to_sequence(split_part(o, t), u));
  }
};
}  // namespace
const AttentionOp& unified_attention_op() { static const UnifiedAttention op; return op; }
}  // namespace cpplan::executor
