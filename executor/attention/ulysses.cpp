// Ulysses: all-to-all Q, K, V from sequence-sharded to head-sharded, local attention over
// heads/u and the whole sequence, all-to-all of the output back.
#include "executor/attention.h"

namespace cpplan::executor {
namespace {
class UlyssesAttention final : public AttentionOp {
 public:
  CpVariant variant() const override { return CpVariant::kUlysses; }
  at::Tensor forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     AttentionContext& ctx) const override {
    Comm& g = ctx.mesh->ulysses();
    const at::Tensor o = attention_local(sequence_to_heads(q, g), sequence_to_heads(k, g), sequence_to_heads(v, g));
    return heads_to_sequence(o, g);
  }
};
}  // namespace
const AttentionOp& ulysses_attention_op() { static const UlyssesAttention op; return op; }
}  // namespace cpplan::executor
