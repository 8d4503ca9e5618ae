#include "executor/model.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

namespace cpplan::executor {

namespace {

// Draws every weight in a fixed order from one generator; the shard a rank keeps does not
// change the draws, so every plan sees the same full weights.
// On a GPU the weights are drawn there, from the device's generator seeded with `seed` (the same
// on every rank), so that a full-size model takes seconds to build instead of minutes of CPU draws.
class WeightSource {
 public:
  WeightSource(uint64_t seed, int tp_rank, int tp_size, const DeviceSpec& device)
      : gen_(generator(seed, device.device)), rank_(tp_rank), size_(tp_size), dtype_(device.dtype),
        draw_(at::TensorOptions().dtype(at::kFloat).device(device.device)) {}

  at::Tensor full(std::vector<int64_t> shape, double scale) {
    return (at::randn(shape, gen_, draw_) * scale).to(dtype_);
  }
  // W [out, in] with 1/sqrt(in) scale, bias [out].
  std::pair<at::Tensor, at::Tensor> linear(int64_t out, int64_t in) {
    return {full({out, in}, 1.0 / std::sqrt(static_cast<double>(in))), full({out}, 0.02)};
  }
  at::Tensor shard_rows(const at::Tensor& w) const { return w.chunk(size_, 0)[rank_].contiguous(); }
  at::Tensor shard_cols(const at::Tensor& w) const { return w.chunk(size_, 1)[rank_].contiguous(); }
  at::ScalarType dtype() const { return dtype_; }

 private:
  static at::Generator generator(uint64_t seed, const at::Device& device) {
    if (!device.is_cuda()) return at::detail::createCPUGenerator(seed);
    at::Generator gen = at::globalContext().defaultGenerator(device);
    gen.set_current_seed(seed);
    return gen;
  }

  at::Generator gen_;
  int rank_, size_;
  at::ScalarType dtype_;
  at::TensorOptions draw_;
};

struct Linear {
  at::Tensor w, b;
  at::Tensor operator()(const at::Tensor& x) const { return at::linear(x, w, b); }
};

Linear replicated(WeightSource& ws, int64_t out, int64_t in) {
  auto [w, b] = ws.linear(out, in);
  return {w, b};
}
// Column-parallel: output features sharded (heads stay whole: out = heads x head_dim).
Linear column(WeightSource& ws, int64_t out, int64_t in) {
  auto [w, b] = ws.linear(out, in);
  return {ws.shard_rows(w), ws.shard_rows(b)};
}

// Row-parallel: input features sharded; partial sums all-reduced, bias added once after.
struct RowLinear {
  at::Tensor w, b;
  at::Tensor operator()(const at::Tensor& x, Comm& tp) const {
    at::Tensor y = at::linear(x, w);
    tp.all_reduce(y);
    return y + b;
  }
};
RowLinear row(WeightSource& ws, int64_t out, int64_t in) {
  auto [w, b] = ws.linear(out, in);
  return {ws.shard_cols(w), b};
}

at::Tensor layer_norm(const at::Tensor& x) { return at::layer_norm(x, {x.size(-1)}, {}, {}, 1e-6); }
at::Tensor modulate(const at::Tensor& x, const at::Tensor& shift, const at::Tensor& scale) {
  return layer_norm(x) * (1 + scale) + shift;
}
// RMSNorm over head_dim (per head), learned weight [head_dim].
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w) {
  return x * at::rsqrt(x.pow(2).mean(-1, true) + 1e-6) * w;
}
// Rotates pairs of the last dim by `angles` [S, hd/2]; x is [B, H, S, hd].
at::Tensor rope(const at::Tensor& x, const at::Tensor& angles) {
  const auto shape = x.sizes().vec();
  const at::Tensor pairs = x.reshape({shape[0], shape[1], shape[2], shape[3] / 2, 2});
  const at::Tensor c = at::cos(angles).to(x.scalar_type()), s = at::sin(angles).to(x.scalar_type());
  const at::Tensor a = pairs.select(-1, 0), b = pairs.select(-1, 1);
  return at::stack({a * c - b * s, a * s + b * c}, -1).reshape(shape);
}
// [B, S, H*hd] -> [B, H, S, hd]
at::Tensor heads(const at::Tensor& x, int64_t h) {
  return x.view({x.size(0), x.size(1), h, -1}).transpose(1, 2);
}
at::Tensor merge_heads(const at::Tensor& x) {
  return x.transpose(1, 2).reshape({x.size(0), x.size(2), -1});
}
// Sinusoidal timestep features [B, dim].
at::Tensor timestep_features(const at::Tensor& t, int64_t dim) {
  const int64_t half = dim / 2;
  const at::Tensor freqs = at::exp(-std::log(10000.0) * at::arange(half, t.options().dtype(at::kFloat)) / half);
  const at::Tensor args = (t.to(at::kFloat) * 1000).unsqueeze(1) * freqs.unsqueeze(0);
  return at::cat({at::cos(args), at::sin(args)}, 1);
}

at::Tensor gelu_tanh(const at::Tensor& x) { return at::gelu(x, "tanh"); }

struct AttentionWeights {
  Linear q, k, v;
  at::Tensor q_norm, k_norm;
  RowLinear out;
};
AttentionWeights attention_weights(WeightSource& ws, int64_t d, int64_t hd) {
  AttentionWeights a{column(ws, d, d), column(ws, d, d), column(ws, d, d), {}, {}, {}};
  a.q_norm = ws.full({hd}, 0.1) + 1;
  a.k_norm = ws.full({hd}, 0.1) + 1;
  a.out = row(ws, d, d);
  return a;
}

struct Mlp {
  Linear in;
  RowLinear out;
  at::Tensor operator()(const at::Tensor& x, Comm& tp) const { return out(gelu_tanh(in(x)), tp); }
};
Mlp mlp(WeightSource& ws, int64_t d, int64_t f) { return {column(ws, f, d), row(ws, d, f)}; }

// ---------------------------------------------------------------- MMDiT (FLUX family)
class Mmdit final : public DitModel {
 public:
  Mmdit(const ModelProfile& m, uint64_t seed, Comm& tp, const DeviceSpec& device, const AttentionOp& op)
      : m_(m), tp_(tp), op_(op), d_(m.hidden()), hd_(m.head_dim), f_(m.ffn_hidden), local_heads_(m.heads / tp.size()) {
    WeightSource ws(seed, tp.rank(), tp.size(), device);
    x_embed_ = replicated(ws, d_, m.in_channels);
    txt_embed_ = replicated(ws, d_, d_);
    time_in_ = replicated(ws, d_, 256);
    time_out_ = replicated(ws, d_, d_);
    for (const BlockGroup& g : m.blocks)
      for (int i = 0; i < g.count; ++i) {
        if (g.kind == BlockKind::kDouble) doubles_.push_back(make_double(ws));
        else singles_.push_back(make_single(ws));
      }
    norm_out_ = replicated(ws, 2 * d_, d_);
    proj_out_ = replicated(ws, m.in_channels, d_);
  }

  ContextParallelPlan cp_plan() const override { return {m_.cp_split == CpSplit::kImageAndText}; }

  at::Tensor forward(const ForwardInputs& in, AttentionContext& ctx) override {
    at::Tensor img = x_embed_(in.latents);
    at::Tensor txt = txt_embed_(in.text);
    const at::Tensor vec = at::silu(time_out_(at::silu(time_in_(timestep_features(in.timestep, 256).to(img.scalar_type())))));
    const at::Tensor angles = at::cat({in.text_rope, in.image_rope}, 0);
    const int64_t text_len = txt.size(1);
    for (const DoubleBlock& b : doubles_) {
      auto mi = b.img_mod(vec).unsqueeze(1).chunk(6, -1), mt = b.txt_mod(vec).unsqueeze(1).chunk(6, -1);
      const at::Tensor ni = modulate(img, mi[0], mi[1]), nt = modulate(txt, mt[0], mt[1]);
      const at::Tensor q = at::cat({project(b.txt_attn.q, b.txt_attn.q_norm, nt), project(b.img_attn.q, b.img_attn.q_norm, ni)}, 2);
      const at::Tensor k = at::cat({project(b.txt_attn.k, b.txt_attn.k_norm, nt), project(b.img_attn.k, b.img_attn.k_norm, ni)}, 2);
      const at::Tensor v = at::cat({heads(b.txt_attn.v(nt), local_heads_), heads(b.img_attn.v(ni), local_heads_)}, 2);
      const at::Tensor o = merge_heads(op_.forward(rope(q, angles), rope(k, angles), v, ctx));
      txt = txt + mt[2] * b.txt_attn.out(o.narrow(1, 0, text_len), tp_);
      img = img + mi[2] * b.img_attn.out(o.narrow(1, text_len, o.size(1) - text_len), tp_);
      img = img + mi[5] * b.img_mlp(modulate(img, mi[3], mi[4]), tp_);
      txt = txt + mt[5] * b.txt_mlp(modulate(txt, mt[3], mt[4]), tp_);
    }
    at::Tensor x = at::cat({txt, img}, 1);
    for (const SingleBlock& b : singles_) {
      auto mo = b.mod(vec).unsqueeze(1).chunk(3, -1);
      const at::Tensor n = modulate(x, mo[0], mo[1]);
      const at::Tensor q = rope(project(b.q, b.q_norm, n), angles), k = rope(project(b.k, b.k_norm, n), angles);
      const at::Tensor o = merge_heads(op_.forward(q, k, heads(b.v(n), local_heads_), ctx));
      // proj_out over [attention, mlp] is row-parallel: each rank holds its heads' and FFN columns.
      x = x + mo[2] * b.out(at::cat({o, gelu_tanh(b.mlp_in(n))}, -1), tp_);
    }
    img = x.narrow(1, text_len, x.size(1) - text_len);
    auto fo = norm_out_(at::silu(vec)).unsqueeze(1).chunk(2, -1);
    return proj_out_(modulate(img, fo[0], fo[1]));
  }

 private:
  struct DoubleBlock {
    Linear img_mod, txt_mod;
    AttentionWeights img_attn, txt_attn;
    Mlp img_mlp, txt_mlp;
  };
  struct SingleBlock {
    Linear mod, q, k, v, mlp_in;
    at::Tensor q_norm, k_norm;
    RowLinear out;
  };

  at::Tensor project(const Linear& l, const at::Tensor& norm, const at::Tensor& x) const {
    return rms_norm(heads(l(x), local_heads_), norm);
  }
  DoubleBlock make_double(WeightSource& ws) {
    DoubleBlock b{replicated(ws, 6 * d_, d_), replicated(ws, 6 * d_, d_), {}, {}, {}, {}};
    b.img_attn = attention_weights(ws, d_, hd_);
    b.txt_attn = attention_weights(ws, d_, hd_);
    b.img_mlp = mlp(ws, d_, f_);
    b.txt_mlp = mlp(ws, d_, f_);
    return b;
  }
  SingleBlock make_single(WeightSource& ws) {
    SingleBlock b;
    b.mod = replicated(ws, 3 * d_, d_);
    b.q = column(ws, d_, d_);
    b.k = column(ws, d_, d_);
    b.v = column(ws, d_, d_);
    b.mlp_in = column(ws, f_, d_);
    b.q_norm = ws.full({hd_}, 0.1) + 1;
    b.k_norm = ws.full({hd_}, 0.1) + 1;
    // proj_out: (D + F) -> D; its input columns are [attention D | mlp F], each sharded.
    auto [w, bias] = ws.linear(d_, d_ + f_);
    b.out = {at::cat({ws.shard_cols(w.narrow(1, 0, d_)), ws.shard_cols(w.narrow(1, d_, f_))}, 1), bias};
    return b;
  }

  const ModelProfile& m_;
  Comm& tp_;
  const AttentionOp& op_;
  int64_t d_, hd_, f_, local_heads_;
  Linear x_embed_, txt_embed_, time_in_, time_out_, norm_out_, proj_out_;
  std::vector<DoubleBlock> doubles_;
  std::vector<SingleBlock> singles_;
};

// ---------------------------------------------------------------- cross-attention DiT (Wan)
class CrossDit final : public DitModel {
 public:
  CrossDit(const ModelProfile& m, uint64_t seed, Comm& tp, const DeviceSpec& device, const AttentionOp& op)
      : tp_(tp), op_(op), d_(m.hidden()), hd_(m.head_dim), local_heads_(m.heads / tp.size()) {
    WeightSource ws(seed, tp.rank(), tp.size(), device);
    x_embed_ = replicated(ws, d_, m.in_channels);
    txt_embed_ = replicated(ws, d_, d_);
    time_in_ = replicated(ws, d_, 256);
    time_mod_ = replicated(ws, 6 * d_, d_);
    for (const BlockGroup& g : m.blocks)
      for (int i = 0; i < g.count; ++i) {
        Block b;
        b.table = ws.full({6, d_}, 0.02);
        b.self = attention_weights(ws, d_, hd_);
        b.cross = attention_weights(ws, d_, hd_);
        b.ffn = mlp(ws, d_, m.ffn_hidden);
        blocks_.push_back(std::move(b));
      }
    head_ = replicated(ws, 2 * d_, d_);
    proj_out_ = replicated(ws, m.in_channels, d_);
  }

  ContextParallelPlan cp_plan() const override { return {false}; }

  at::Tensor forward(const ForwardInputs& in, AttentionContext& ctx) override {
    at::Tensor x = x_embed_(in.latents);
    const at::Tensor ctx_tokens = txt_embed_(in.text);
    const at::Tensor e = at::silu(time_in_(timestep_features(in.timestep, 256).to(x.scalar_type())));
    const at::Tensor e6 = time_mod_(e).view({e.size(0), 6, d_});
    for (const Block& b : blocks_) {
      auto m = (e6 + b.table).chunk(6, 1);  // each [B, 1, D]
      const at::Tensor n = modulate(x, m[0], m[1]);
      const at::Tensor q = rope(rms_norm(heads(b.self.q(n), local_heads_), b.self.q_norm), in.image_rope);
      const at::Tensor k = rope(rms_norm(heads(b.self.k(n), local_heads_), b.self.k_norm), in.image_rope);
      const at::Tensor o = merge_heads(op_.forward(q, k, heads(b.self.v(n), local_heads_), ctx));
      x = x + m[2] * b.self.out(o, tp_);
      // Cross-attention: local queries against the whole text on every rank, no CP traffic.
      const at::Tensor nx = layer_norm(x);
      const at::Tensor cq = rms_norm(heads(b.cross.q(nx), local_heads_), b.cross.q_norm);
      const at::Tensor ck = rms_norm(heads(b.cross.k(ctx_tokens), local_heads_), b.cross.k_norm);
      x = x + b.cross.out(merge_heads(attention_local(cq, ck, heads(b.cross.v(ctx_tokens), local_heads_))), tp_);
      x = x + m[5] * b.ffn(modulate(x, m[3], m[4]), tp_);
    }
    auto h = head_(e).unsqueeze(1).chunk(2, -1);
    return proj_out_(modulate(x, h[0], h[1]));
  }

 private:
  struct Block {
    at::Tensor table;
    AttentionWeights self, cross;
    Mlp ffn;
  };
  Comm& tp_;
  const AttentionOp& op_;
  int64_t d_, hd_, local_heads_;
  Linear x_embed_, txt_embed_, time_in_, time_mod_, head_, proj_out_;
  std::vector<Block> blocks_;
};

}  // namespace

std::unique_ptr<DitModel> build_model(const ModelProfile& profile, uint64_t seed, Comm& tp, const DeviceSpec& device,
                                      const AttentionOp& attention) {
  if (profile.text_handling == TextHandling::kCross)
    return std::make_unique<CrossDit>(profile, seed, tp, device, attention);
  return std::make_unique<Mmdit>(profile, seed, tp, device, attention);
}

at::Tensor image_rope_angles(int64_t frames, int64_t rows, int64_t cols, int64_t head_dim) {
  const int64_t pairs = head_dim / 2, axis = pairs / 3, first = pairs - 2 * axis;
  auto axis_angles = [](const at::Tensor& pos, int64_t n) {
    const at::Tensor freqs = at::pow(10000.0, -at::arange(n, at::kFloat) / std::max<int64_t>(n, 1));
    return pos.to(at::kFloat).unsqueeze(1) * freqs.unsqueeze(0);
  };
  const at::Tensor idx = at::arange(frames * rows * cols, at::kLong);
  const at::Tensor f = idx.div(rows * cols, "floor"), y = (idx.div(cols, "floor")).remainder(rows), x = idx.remainder(cols);
  return at::cat({axis_angles(f, first), axis_angles(y, axis), axis_angles(x, axis)}, 1);
}

at::Tensor text_rope_angles(int64_t tokens, int64_t head_dim) { return at::zeros({tokens, head_dim / 2}, at::kFloat); }

}  // namespace cpplan::executor
