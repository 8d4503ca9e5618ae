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
    auto to_heads = [&](const at::Tensor& x) {
      const at::Tensor split = sequence_to_heads(split_part(x, t), g);
      return t > 0 ? at::cat({head_slice(text_part(x, t), g.rank(), g.size()), split}, 2) : split;
    };
    const int first = ctx.mesh->coords().ring * g.size();  // CP rank of this group's first member
    const at::Tensor o = attention_of_kind(ctx, to_heads(q), to_heads(k), to_heads(v), ctx.keys_valid(first, g.size()));
    return with_whole_text(o, t, g, q.size(1), heads_to_sequence(split_part(o, t), g));
  }
};
}  // namespace
const AttentionOp& ulysses_attention_op() { static const UlyssesAttention op; return op; }
}  // namespace cpplan::executor
