// Ulysses: all-to-all Q, K, V from sequence-sharded to head-sharded, local attention over
// heads/u and the whole sequence, all-to-all of the output back. Text a model keeps whole on
// every rank stays out of the all-to-alls: each rank attends its heads of it, and the text's
// output heads are all-gathered.
#include "executor/attention.h"

namespace cpplan::executor {
namespace {
class UlyssesAttention final : public AttentionOp {
 public:
  CpVariant variant() const override { return CpVariant::kUlysses; }
  at::Tensor forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     AttentionContext& ctx) const override {
    Comm& g = ctx.mesh->ulysses();
    const int64_t t = ctx.text_tokens;
    const int first = ctx.mesh->coords().ring * g.size();  // CP rank of this group's first member
    at::Tensor ks = sequence_to_heads(split_part(k, t), g), vs = sequence_to_heads(split_part(v, t), g);
    // PipeFusion: attend the whole sequence's keys of these heads, this pass's fresh.
    if (ctx.patch_kv) std::tie(ks, vs) = cached_keys(ctx, ks, vs, first, g.size());
    auto with_text = [&](const at::Tensor& x, const at::Tensor& split) {
      return t > 0 ? at::cat({head_slice(text_part(x, t), g.rank(), g.size()), split}, 2) : split;
    };
    const at::Tensor o = attention_of_kind(ctx, with_text(q, sequence_to_heads(split_part(q, t), g)),
                                           with_text(k, ks), with_text(v, vs), ctx.keys_valid(first, g.size()));
    return with_whole_text(o, t, g, q.size(1), heads_to_sequence(split_part(o, t), g));
  }
};
}  // namespace
const AttentionOp& ulysses_attention_op() { static const UlyssesAttention op; return op; }
}  // namespace cpplan::executor
