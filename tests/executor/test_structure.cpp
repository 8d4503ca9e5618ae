// The math of issue 32's structure against hand-written loops: frame-grouped attention (Latte)
// token group by token group, and the mixture-of-experts routing (HiDream) token by token.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "executor/moe.h"
#include "executor/temporal.h"

// Last: LibTorch (above) defines glog's CHECK, which would replace Catch's and go uncounted.
#undef CHECK
#include <catch2/catch.hpp>

namespace {
using cpplan::executor::TokenGroups;

at::Tensor plain_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  return at::softmax(at::matmul(q, k.transpose(-1, -2)) * scale, -1).matmul(v);
}
double max_difference(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }
}  // namespace

TEST_CASE("frame-grouped attention attends within each frame, or across the frames at each position",
          "[executor][structure]") {
  // 3 frames of 5 positions, frame-major: token f * 5 + p.
  const int64_t frames = 3, positions = 5;
  at::manual_seed(3);
  const at::Tensor q = at::randn({2, 4, frames * positions, 8}), k = at::randn_like(q), v = at::randn_like(q);
  const at::Tensor temporal = cpplan::executor::grouped_attention_local(q, k, v, frames, TokenGroups::kPosition);
  const at::Tensor spatial = cpplan::executor::grouped_attention_local(q, k, v, frames, TokenGroups::kFrame);
  for (int64_t p = 0; p < positions; ++p) {
    const at::Tensor idx = at::arange(frames, at::kLong) * positions + p;  // position p in every frame
    const at::Tensor expected = plain_attention(q.index_select(2, idx), k.index_select(2, idx), v.index_select(2, idx));
    CHECK(max_difference(temporal.index_select(2, idx), expected) < 1e-5);
  }
  for (int64_t f = 0; f < frames; ++f) {
    const at::Tensor expected = plain_attention(q.narrow(2, f * positions, positions), k.narrow(2, f * positions, positions),
                                                v.narrow(2, f * positions, positions));
    CHECK(max_difference(spatial.narrow(2, f * positions, positions), expected) < 1e-5);
  }
}

TEST_CASE("frame-grouped attention refuses the variants that split its groups", "[executor][structure]") {
  const at::Tensor q = at::randn({1, 2, 6, 4});
  cpplan::executor::AttentionContext ctx;
  ctx.frames = 2;
  for (const cpplan::CpVariant v : {cpplan::CpVariant::kRing, cpplan::CpVariant::kUnified,
                                    cpplan::CpVariant::kUlyssesAnything, cpplan::CpVariant::kRingAnything})
    CHECK_THROWS_AS(cpplan::executor::grouped_self_attention(cpplan::executor::attention_op(v), q, q, q, ctx,
                                                             TokenGroups::kPosition),
                    std::invalid_argument);
}

TEST_CASE("experts run on the tokens routed to them, weighted by their unrenormalized softmax probabilities",
          "[executor][structure]") {
  const int experts = 4, active = 2;
  at::manual_seed(5);
  const at::Tensor x = at::randn({2, 3, 6}), logits = at::randn({2, 3, experts});
  const at::Tensor scale = at::randn({experts, 6});  // expert e: x * scale[e]
  const cpplan::executor::Routing r = cpplan::executor::route(logits, active);
  int calls = 0;
  const at::Tensor y = cpplan::executor::routed_sum(x, r, experts, [&](int e, const at::Tensor& tokens) {
    ++calls;
    CHECK(tokens.dim() == 3);
    return tokens * scale[e];
  });
  const at::Tensor flat = x.reshape({-1, 6}), probs = at::softmax(logits.reshape({-1, experts}), -1);
  for (int64_t n = 0; n < flat.size(0); ++n) {
    // The two largest probabilities of token n, by hand.
    std::vector<std::pair<double, int>> p;
    for (int e = 0; e < experts; ++e) p.push_back({probs[n][e].item<double>(), e});
    std::sort(p.rbegin(), p.rend());
    at::Tensor expected = at::zeros({6});
    for (int i = 0; i < active; ++i) expected += p[i].first * flat[n] * scale[p[i].second];
    CHECK(max_difference(y.reshape({-1, 6})[n], expected) < 1e-6);
    const at::Tensor bias = cpplan::executor::routed_bias(r, scale)[n];
    CHECK(max_difference(bias, p[0].first * scale[p[0].second] + p[1].first * scale[p[1].second]) < 1e-6);
  }
  CHECK(calls <= experts);
}
