// No context parallelism: local attention over the whole sequence.
#include "executor/attention.h"

namespace cpplan::executor {
namespace {
class LocalAttention final : public AttentionOp {
 public:
  CpVariant variant() const override { return CpVariant::kNone; }
  at::Tensor forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     AttentionContext& ctx) const override {
    return attention_of_kind(ctx, q, k, v, ctx.keys_valid(0, 1));
  }
};
}  // namespace
const AttentionOp& local_attention_op() { static const LocalAttention op; return op; }
}  // namespace cpplan::executor
