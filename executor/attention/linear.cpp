// ReLU linear attention (SANA): the state of the keys and values is a head_dim x (head_dim + 1)
// matrix per head, so context parallelism sums states instead of passing K/V blocks around.
#include <stdexcept>

#include "executor/attention.h"

namespace cpplan::executor {

at::Tensor linear_attention_state(const at::Tensor& k, const at::Tensor& v) {
  const at::Tensor vf = v.to(at::kFloat);
  const at::Tensor ones = at::ones({vf.size(0), vf.size(1), vf.size(2), 1}, vf.options());
  return at::matmul(at::relu(k.to(at::kFloat)).transpose(-2, -1), at::cat({vf, ones}, -1));
}

at::Tensor apply_linear_attention(const at::Tensor& q, const at::Tensor& state) {
  const int64_t hd = state.size(-1) - 1;
  const at::Tensor r = at::matmul(at::relu(q.to(at::kFloat)), state);  // [B, H, S_q, hd + 1]
  return (r.narrow(-1, 0, hd) / (r.narrow(-1, hd, 1) + 1e-15)).to(q.scalar_type());
}

at::Tensor linear_ring_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, Comm& ring,
                                 const KeyBlock* joined) {
  at::Tensor state = linear_attention_state(k, v).contiguous();
  ring.all_reduce(state);
  if (joined) state = state + linear_attention_state(joined->k, joined->v);
  return apply_linear_attention(q, state);
}

at::Tensor attention_of_kind(const AttentionContext& ctx, const at::Tensor& q, const at::Tensor& k,
                             const at::Tensor& v, const at::Tensor& key_valid) {
  if (!ctx.linear) return attention_local(q, k, v, key_valid);
  if (key_valid.defined()) throw std::invalid_argument("linear attention takes no key mask");
  return apply_linear_attention(q, linear_attention_state(k, v));
}

}  // namespace cpplan::executor
