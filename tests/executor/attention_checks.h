#pragma once
// Checks of the attention kernels shared by the CPU suite and the GPU suite (test_cuda): the same
// assertions on whatever device and precision the tensors have. Include after catch.hpp (and
// LibTorch before it: its glog CHECK must not replace Catch's).

#include <ATen/ATen.h>

#include "executor/attention.h"

namespace cpplan::test {

inline double max_relative_error(const at::Tensor& a, const at::Tensor& reference) {
  const at::Tensor r = reference.to(at::kFloat).cpu(), x = a.to(at::kFloat).cpu();
  return (x - r).abs().max().item<double>() / r.abs().max().item<double>();
}

// Attention with its LSE over K/V split in three blocks of unequal length, folded block by block
// (what Ring does), equals attention over all of K/V, in output and LSE; and both equal the fp32
// math path. `options`: the device and precision under test; `tolerance`: relative, on outputs.
inline void check_blockwise_attention(const at::TensorOptions& options, double tolerance) {
  at::manual_seed(7);
  const int64_t b = 2, h = 4, s_q = 96, s_kv = 160, d = 64;
  const at::Tensor q = at::randn({b, h, s_q, d}, at::kFloat).to(options);
  const at::Tensor k = at::randn({b, h, s_kv, d}, at::kFloat).to(options);
  const at::Tensor v = at::randn({b, h, s_kv, d}, at::kFloat).to(options);
  const auto [full, full_lse] = cpplan::executor::attention_with_lse(q, k, v);
  CHECK(full.sizes() == q.sizes());
  CHECK(full_lse.sizes() == at::IntArrayRef({b, h, s_q}));
  CHECK(full_lse.scalar_type() == at::kFloat);

  // The fp32 math path on the same inputs: the reference of every device and kernel.
  const auto [exact, exact_lse] =
      cpplan::executor::attention_with_lse(q.to(at::kFloat), k.to(at::kFloat), v.to(at::kFloat));
  CHECK(max_relative_error(full, exact) <= tolerance);
  CHECK((full_lse.cpu() - exact_lse.cpu()).abs().max().item<double>() <= tolerance * 10);

  at::Tensor out, lse;
  int64_t offset = 0;
  for (int64_t length : {40, 72, 48}) {
    const auto [o, l] = cpplan::executor::attention_with_lse(q, k.narrow(2, offset, length), v.narrow(2, offset, length));
    cpplan::executor::merge_partial_attention(out, lse, o, l, true);
    offset += length;
  }
  CHECK(out.scalar_type() == at::kFloat);
  CHECK(max_relative_error(out, exact) <= tolerance);
  CHECK((lse.cpu() - exact_lse.cpu()).abs().max().item<double>() <= tolerance * 10);
}

}  // namespace cpplan::test
