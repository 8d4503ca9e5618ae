#pragma once
// The routing of a mixture-of-experts FFN (HiDream): a router Linear(D, experts), its softmax, and
// each token's top-k experts weighted by their softmax probabilities (not renormalized). Each
// expert runs on the tokens routed to it only, gathered.

#include <ATen/ATen.h>

#include <functional>

namespace cpplan::executor {

// Of N = B x S tokens: the top-k softmax probabilities [N, k] and their experts [N, k] (long).
struct Routing {
  at::Tensor weight, expert;
};

// The routing of the router's logits [B, S, experts] to `active` experts per token.
Routing route(const at::Tensor& logits, int active);

// sum over each token's experts e of weight x run(e, its tokens): [B, S, D] for x [B, S, D]. `run`
// gets [1, n_e, D] (the n_e tokens routed to e, in token order) and returns [1, n_e, D]; experts
// no token chose do not run.
at::Tensor routed_sum(const at::Tensor& x, const Routing& r, int experts,
                      const std::function<at::Tensor(int, const at::Tensor&)>& run);

// sum over each token's experts of weight x biases[e]: [N, D] for biases [experts, D].
at::Tensor routed_bias(const Routing& r, const at::Tensor& biases);

}  // namespace cpplan::executor
