// Local attention, the log-sum-exp merge, Ring attention and the Ulysses all-to-alls shared by
// the variants.
#include <torch/version.h>

#include <cmath>

#include "executor/attention.h"

namespace cpplan::executor {

bool flash_attention_fits(const at::Device& device, at::ScalarType dtype, int64_t head_dim) {
#if defined(CPPLAN_CUDA) && TORCH_VERSION_MAJOR >= 2
  return device.is_cuda() && (dtype == at::kBFloat16 || dtype == at::kHalf) && head_dim % 8 == 0 && head_dim <= 256;
#else
  (void)device, (void)dtype, (void)head_dim;
  return false;
#endif
}

std::pair<at::Tensor, at::Tensor> attention_with_lse(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                     const at::Tensor& key_valid) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
#if defined(CPPLAN_CUDA) && TORCH_VERSION_MAJOR >= 2
  if (!key_valid.defined() && flash_attention_fits(q.device(), q.scalar_type(), q.size(-1)) && k.scalar_type() == q.scalar_type() &&
      v.scalar_type() == q.scalar_type()) {
    // Output in q's precision and the log-sum-exp [B, H, S_q] in fp32 (older kernels pad its
    // last dim to a multiple of 128: sliced back).
    const auto r = at::_scaled_dot_product_flash_attention(q, k, v, 0.0, false, false, scale);
    return {std::get<0>(r), std::get<1>(r).narrow(-1, 0, q.size(2)).to(at::kFloat)};
  }
#endif
  // The math path: fp32 scores, exact on every device. A masked key scores -1e30, not -inf: a
  // block whose keys are all masked then merges with weight exp(-1e30) = 0 instead of NaN.
  at::Tensor scores = at::matmul(q.to(at::kFloat), k.to(at::kFloat).transpose(-2, -1)) * scale;
  if (key_valid.defined())
    scores = scores.masked_fill(key_valid.logical_not().view({key_valid.size(0), 1, 1, key_valid.size(1)}), -1e30);
  at::Tensor lse = at::logsumexp(scores, -1);
  at::Tensor out = at::matmul(at::exp(scores - lse.unsqueeze(-1)), v.to(at::kFloat));
  return {out, lse};
}

at::Tensor attention_local(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& key_valid) {
#if TORCH_VERSION_MAJOR >= 2
  if (q.is_cuda() && !key_valid.defined()) return at::scaled_dot_product_attention(q, k, v);  // flash / cuDNN
#endif
  return attention_with_lse(q, k, v, key_valid).first.to(q.scalar_type());
}

at::Tensor head_slice(const at::Tensor& x, int rank, int size) {
  const int64_t h = x.size(1) / size;
  return x.narrow(1, rank * h, h);
}

at::Tensor with_whole_text(const at::Tensor& o, int64_t text, Comm& g, int64_t heads, const at::Tensor& split_out) {
  if (text == 0) return split_out;
  const at::Tensor all_heads = g.all_gather_cat(text_part(o, text).contiguous(), 1).narrow(1, 0, heads);
  return at::cat({all_heads, split_out}, 2);
}

at::Tensor AttentionContext::split_keys_valid(int first, int count) const {
  if (!masked()) return {};
  return at::cat(std::vector<at::Tensor>(key_valid.begin() + first, key_valid.begin() + first + count), 1);
}

at::Tensor AttentionContext::keys_valid(int first, int count) const {
  if (!masked()) return {};
  const at::Tensor split = split_keys_valid(first, count);
  return text_tokens > 0 ? at::cat({text_valid, split}, 1) : split;
}

AttentionContext AttentionContext::image_only() const {
  AttentionContext c = *this;  // the mesh, the plan, PipeFusion's patches, the model's math and grid
  c.cp_lengths = image_lengths;
  c.text_tokens = 0;
  c.key_valid = {};
  c.text_valid = at::Tensor();
  return c;
}

void merge_partial_attention(at::Tensor& out, at::Tensor& lse, const at::Tensor& block_out, const at::Tensor& l,
                             bool fp32) {
  const at::Tensor o = block_out.to(at::kFloat);  // flash returns bf16; the merge runs in fp32
  if (!out.defined()) {
    out = fp32 ? o : o.to(at::kBFloat16).to(at::kFloat);
    lse = l;
    return;
  }
  const at::Tensor merged = at::logaddexp(lse, l);
  out = out * at::exp(lse - merged).unsqueeze(-1) + o * at::exp(l - merged).unsqueeze(-1);
  if (!fp32) out = out.to(at::kBFloat16).to(at::kFloat);  // convert_to_fp32=False: bf16 accumulator
  lse = merged;
}

at::Tensor ring_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, Comm& ring,
                          const std::vector<int64_t>& lengths, const ContextParallelConfig& cp,
                          const std::vector<at::Tensor>& valid, const KeyBlock* joined) {
  const bool fp32 = cp.convert_to_fp32;
  at::Tensor out, lse;
  auto attend = [&](const at::Tensor& kb, const at::Tensor& vb, const at::Tensor& mask) {
    auto [o, l] = attention_with_lse(q, kb, vb, mask);
    merge_partial_attention(out, lse, o, l, fp32);
  };
  auto mask_of = [&](int rank) { return valid.empty() ? at::Tensor() : valid[rank]; };
  if (joined) attend(joined->k, joined->v, joined->valid);
  const int r = ring.size();
  if (cp.rotate_method == RotateMethod::kP2P) {
    at::Tensor current = at::stack({k, v}).contiguous();
    const int me = ring.rank(), next = (me + 1) % r, prev = (me + r - 1) % r;
    for (int step = 0; step < r; ++step) {
      at::Tensor incoming;
      Comm::Pending transfer;
      if (step + 1 < r) {
        incoming = at::empty_like(current);
        transfer = ring.exchange(current, next, incoming, prev, step);
      }
      attend(current[0], current[1], mask_of((me + r - step) % r));  // the block of rank me - step
      if (step + 1 < r) {
        ring.wait(transfer);
        current = incoming;
      }
    }
  } else {
    // The reference's "allgather": concatenated K and V gathered once (padded to the longest
    // local length for Ring Anything), then one attention per block, sliced back to its length.
    const at::Tensor kv = at::stack({k, v});
    const at::Tensor gathered = ring.all_gather_uneven(kv, 3, lengths);
    int64_t offset = 0;
    for (int j = 0; j < r; ++j) {
      const at::Tensor block = gathered.narrow(3, offset, lengths[j]);
      offset += lengths[j];
      attend(block[0], block[1], mask_of(j));
    }
  }
  return out.to(q.scalar_type());
}

at::Tensor sequence_to_heads(const at::Tensor& x, Comm& g) {
  const int64_t u = g.size(), b = x.size(0), h = x.size(1), s = x.size(2), d = x.size(3);
  // slice j of dim 0 holds heads [j*h/u, (j+1)*h/u) for rank j
  const at::Tensor send = x.reshape({b, u, h / u, s, d}).permute({1, 0, 2, 3, 4});
  const at::Tensor recv = g.all_to_all(send);  // slice i: rank i's tokens of my heads
  return recv.permute({1, 2, 0, 3, 4}).reshape({b, h / u, u * s, d});
}

at::Tensor heads_to_sequence(const at::Tensor& y, Comm& g) {
  const int64_t u = g.size(), b = y.size(0), hu = y.size(1), s = y.size(2) / u, d = y.size(3);
  const at::Tensor send = y.reshape({b, hu, u, s, d}).permute({2, 0, 1, 3, 4});  // slice i: rank i's tokens
  const at::Tensor recv = g.all_to_all(send);  // slice j: rank j's heads of my tokens
  return recv.permute({1, 0, 2, 3, 4}).reshape({b, u * hu, s, d});
}

}  // namespace cpplan::executor
