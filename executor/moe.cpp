#include "executor/moe.h"

namespace cpplan::executor {

Routing route(const at::Tensor& logits, int active) {
  const at::Tensor probs = at::softmax(logits.reshape({-1, logits.size(-1)}), -1);
  auto [weight, expert] = at::topk(probs, active, -1);
  return {weight, expert};
}

at::Tensor routed_sum(const at::Tensor& x, const Routing& r, int experts,
                      const std::function<at::Tensor(int, const at::Tensor&)>& run) {
  const at::Tensor flat = x.reshape({-1, x.size(-1)});
  at::Tensor out = at::zeros_like(flat);
  const at::Tensor weights = r.weight.reshape({-1});
  const int64_t k = r.weight.size(1);
  for (int e = 0; e < experts; ++e) {
    const std::vector<at::Tensor> chosen = at::where(r.expert == e);  // (token, slot) pairs
    const at::Tensor& tokens = chosen[0];
    if (tokens.numel() == 0) continue;
    const at::Tensor w = weights.index_select(0, tokens * k + chosen[1]).unsqueeze(1).to(x.scalar_type());
    const at::Tensor y = run(e, flat.index_select(0, tokens).unsqueeze(0)).squeeze(0);
    out.index_add_(0, tokens, y * w);
  }
  return out.view(x.sizes());
}

at::Tensor routed_bias(const Routing& r, const at::Tensor& biases) {
  const at::Tensor picked = biases.index_select(0, r.expert.reshape({-1})).view({r.expert.size(0), r.expert.size(1), -1});
  return (picked * r.weight.unsqueeze(-1).to(biases.scalar_type())).sum(1);
}

}  // namespace cpplan::executor
