#include "executor/model.h"

#include <ATen/CPUGeneratorImpl.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>

#include "executor/moe.h"
#include "executor/pipefusion.h"
#include "executor/sharded_block.h"
#include "executor/temporal.h"

namespace cpplan::executor {

class WeightDraws {
 public:
  // One model's draws in order; `done` once its drawing rank finished (or failed).
  struct Sequence {
    std::mutex m;
    std::condition_variable grown;
    std::vector<at::Tensor> draws;
    bool done = false;
  };
  // The sequence of `key`, and whether the caller is the first to ask (it draws, the others read).
  std::pair<std::shared_ptr<Sequence>, bool> claim(const std::string& key) {
    std::lock_guard lock(m_);
    auto& seq = sequences_[key];
    if (seq) return {seq, false};
    seq = std::make_shared<Sequence>();
    return {seq, true};
  }

 private:
  std::mutex m_;
  std::map<std::string, std::shared_ptr<Sequence>> sequences_;
};

std::shared_ptr<WeightDraws> make_weight_draws() { return std::make_shared<WeightDraws>(); }

namespace {

// x times the weight w^T: w itself, or an int8 w with its per-output-channel `scale` [out] (weight-
// only int8, DeviceSpec::weights): w converted to x's dtype, the product scaled per output channel
// as torchao's int8 weight-only matmul does (_linear_fp_act_int8_weight_impl: mm(x, w.to(x.dtype))
// * scale; LibTorch 1.13 has no weight-only int8 kernel: quantize_rows below says why).
at::Tensor weight_product(const at::Tensor& x, const at::Tensor& w, const at::Tensor& scale) {
  if (!scale.defined()) return at::linear(x, w);
  return at::linear(x, w.to(x.scalar_type())) * scale;
}

// A linear layer: W [out, in] (int8 with `scale` [out] when quantized; scale undefined otherwise)
// and its bias [out], in the compute dtype.
struct Linear {
  at::Tensor w, b, scale;
  at::Tensor operator()(const at::Tensor& x) const {
    return scale.defined() ? weight_product(x, w, scale) + b : at::linear(x, w, b);
  }
};

// Weight-only int8 as torchao's int8_weight_only and diffusers' TorchAoConfig("int8wo") store it:
// symmetric per output channel (choose_qparams_affine, MappingType.SYMMETRIC, quant_min -128,
// quant_max 127): scale = max |w| of the row / 127.5 (at least float32's eps), q = clamp(round(w /
// scale), -128, 127), the scale kept in the weight's dtype, no zero point (symmetric: it is 0;
// torchao also keeps an int64 zero per row). Plain int8 and scale tensors rather than LibTorch's
// per-channel QTensor (at::quantize_per_channel): 1.13 ships no weight-only int8 GEMM for either
// (fbgemm_linear_int8_weight and quantized::linear_dynamic quantize the activations too, W8A8;
// _weight_int8pack_mm came with 2.3), a QTensor keeps float64 scales and int64 zero points and
// dequantizes to float32 only, and the sharding below (chunks, cat, all-gathers) needs plain tensors.
std::pair<at::Tensor, at::Tensor> quantize_rows(const at::Tensor& w) {
  const at::Tensor wf = w.to(at::kFloat);
  const at::Tensor scale = wf.abs().amax(1).div(127.5).clamp_min(std::numeric_limits<float>::epsilon());
  const at::Tensor q = at::round(wf / scale.unsqueeze(1)).clamp(-128, 127).to(at::kChar);
  return {q, scale.to(w.scalar_type())};
}

// Draws every weight in a fixed order from one generator; the shard a rank keeps does not
// change the draws, so every plan sees the same full weights.
// On a GPU the weights are drawn there, from the device's generator seeded with `seed` (the same
// on every rank), so that a full-size model takes seconds to build instead of minutes of CPU draws.
// With a WeightDraws, the draws of the rank that drew first are read instead.
class WeightSource {
 public:
  WeightSource(const ModelProfile& m, uint64_t seed, int tp_rank, int tp_size, const DeviceSpec& device,
               WeightDraws* shared)
      : gen_(generator(seed, device.device)), rank_(tp_rank), size_(tp_size), dtype_(device.dtype),
        int8_(device.weights == WeightStorage::kInt8), draw_(at::TensorOptions().dtype(at::kFloat).device(device.device)) {
    if (!shared) return;
    std::tie(sequence_, drawing_) =
        shared->claim(fmt::format("{} {} {} {}", m.name, static_cast<const void*>(&m), seed, device.device.str()));
  }
  WeightSource(const WeightSource&) = delete;
  WeightSource& operator=(const WeightSource&) = delete;
  ~WeightSource() {
    if (!sequence_ || !drawing_) return;
    std::lock_guard lock(sequence_->m);
    sequence_->done = true;
    sequence_->grown.notify_all();
  }

  at::Tensor full(std::vector<int64_t> shape, double scale) { return (draw(shape) * scale).to(dtype_); }
  // W [out, in] with 1/sqrt(in) scale, bias [out].
  std::pair<at::Tensor, at::Tensor> linear(int64_t out, int64_t in) {
    return {full({out, in}, 1.0 / std::sqrt(static_cast<double>(in))), full({out}, 0.02)};
  }
  // A linear layer of a transformer block (attention and FFN projections, a MoE router: what the
  // planner's block_linear_params counts), drawn as linear() draws it; int8 with its scales when
  // the rank holds them so (quantize_rows), quantized whole before any TP shard is cut, so that
  // every plan holds the single rank's int8 weights and scales.
  Linear block_linear(int64_t out, int64_t in) {
    auto [w, b] = linear(out, in);
    if (!int8_) return {w, b, {}};
    auto [q, scale] = quantize_rows(w);
    return {q, b, scale};
  }
  // The shard in storage of its own: a chunk of rows is contiguous already, so contiguous() would
  // return a view that keeps the whole weight alive (a TP rank would hold every column-parallel
  // weight whole). An undefined tensor (no scale) stays undefined.
  at::Tensor shard_rows(const at::Tensor& w) const {
    return size_ == 1 || !w.defined() ? w : w.chunk(size_, 0)[rank_].clone();
  }
  at::Tensor shard_cols(const at::Tensor& w) const {
    return size_ == 1 || !w.defined() ? w : w.chunk(size_, 1)[rank_].contiguous();
  }
  at::ScalarType dtype() const { return dtype_; }

 private:
  static at::Generator generator(uint64_t seed, const at::Device& device) {
    if (!device.is_cuda()) return at::detail::createCPUGenerator(seed);
    at::Generator gen = at::globalContext().defaultGenerator(device);
    gen.set_current_seed(seed);
    return gen;
  }

  // The next standard-normal draw: this rank's generator's, or the drawing rank's.
  at::Tensor draw(const std::vector<int64_t>& shape) {
    if (sequence_ && !drawing_) {
      if (at::Tensor t = read(shape); t.defined()) return t;
    }
    at::Tensor t = at::randn(shape, gen_, draw_);
    if (sequence_ && drawing_) {
      std::lock_guard lock(sequence_->m);
      sequence_->draws.push_back(t);
      sequence_->grown.notify_all();
    }
    return t;
  }
  // The drawing rank's draw number next_, once it is drawn; undefined (and this rank draws its
  // own from here, its generator brought level) when that rank stopped short of it.
  at::Tensor read(const std::vector<int64_t>& shape) {
    std::unique_lock lock(sequence_->m);
    sequence_->grown.wait(lock, [&] { return next_ < sequence_->draws.size() || sequence_->done; });
    if (next_ < sequence_->draws.size()) {
      at::Tensor t = sequence_->draws[next_++];
      if (t.sizes() != at::IntArrayRef(shape))
        throw std::logic_error("WeightDraws: a draw of another shape under the same model, seed and device");
      return t;
    }
    std::vector<std::vector<int64_t>> drawn;
    for (std::size_t i = 0; i < next_; ++i) drawn.push_back(sequence_->draws[i].sizes().vec());
    lock.unlock();
    for (const auto& s : drawn) (void)at::randn(s, gen_, draw_);
    sequence_.reset();
    return {};
  }

  at::Generator gen_;
  int rank_, size_;
  at::ScalarType dtype_;
  bool int8_;  // the blocks' linear weights held int8 (block_linear)
  at::TensorOptions draw_;
  std::shared_ptr<WeightDraws::Sequence> sequence_;  // null: no sharing
  bool drawing_ = false;
  std::size_t next_ = 0;  // the next draw to read
};

// Whole on every rank and always in the compute dtype: embedders, timestep MLPs, adaLN modulation,
// long skips and the final layer (the planner keeps them at the model's bytes per parameter under
// int8-weight-only: transformer_weight_bytes).
Linear replicated(WeightSource& ws, int64_t out, int64_t in) {
  auto [w, b] = ws.linear(out, in);
  return {w, b, {}};
}
// Column-parallel: output features sharded (heads stay whole: out = heads x head_dim), int8
// scales with their rows.
Linear column(WeightSource& ws, int64_t out, int64_t in) {
  const Linear l = ws.block_linear(out, in);
  return {ws.shard_rows(l.w), ws.shard_rows(l.b), ws.shard_rows(l.scale)};
}

// Row-parallel: input features sharded; partial sums all-reduced, bias added once after. An int8
// weight's scales are per output row, whole on every rank: each partial sum is scaled before the
// all-reduce (the sum of scaled partial products is the scaled product).
struct RowLinear {
  at::Tensor w, b, scale;
  at::Tensor operator()(const at::Tensor& x, Comm& tp) const {
    at::Tensor y = partial(x);
    tp.all_reduce(y);
    return y + b;
  }
  // This rank's share of the product before the all-reduce, without the bias.
  at::Tensor partial(const at::Tensor& x) const { return weight_product(x, w, scale); }
};
RowLinear row(WeightSource& ws, int64_t out, int64_t in) {
  const Linear l = ws.block_linear(out, in);
  return {ws.shard_cols(l.w), l.b, l.scale};
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

// q or k of `x` in heads [B, H, S, hd], RMS-normed per head when the model has QK-norm (`norm`).
at::Tensor project_heads(const Linear& l, const at::Tensor& norm, const at::Tensor& x, int64_t local_heads) {
  const at::Tensor h = heads(l(x), local_heads);
  return norm.defined() ? rms_norm(h, norm) : h;
}

struct AttentionWeights {
  Linear q, k, v;
  at::Tensor q_norm, k_norm;  // undefined without QK-norm
  RowLinear out;
};
// q, k, v project a stream of `width` (d unless the stream is narrower: Mochi's text) to the d =
// heads x head_dim of attention; out projects back to `width`.
AttentionWeights attention_weights(WeightSource& ws, int64_t d, int64_t hd, bool qk_norm, int64_t width = 0) {
  if (width == 0) width = d;
  AttentionWeights a{column(ws, d, width), column(ws, d, width), column(ws, d, width), {}, {}, {}};
  if (qk_norm) {
    a.q_norm = ws.full({hd}, 0.1) + 1;
    a.k_norm = ws.full({hd}, 0.1) + 1;
  }
  a.out = row(ws, width, d);
  return a;
}

// GELU: out(gelu(in(x))); SwiGLU: out(silu(gate(x)) * in(x)). Column-parallel in (and gate),
// row-parallel out. A mixture of experts (`routed` non-empty; in, gate and out unused): the router
// (replicated) picks `active` routed experts per token (executor/moe.h), each a dense FFN sharded
// as above; the shared experts run on every token; the routed and shared partial sums are
// all-reduced once, and the biases of the row-parallel outputs added after.
struct Mlp {
  Linear in, gate;
  RowLinear out;
  std::vector<Mlp> routed, shared;
  Linear router;
  int active = 0;
  at::Tensor hidden(const at::Tensor& x) const { return gate.w.defined() ? at::silu(gate(x)) * in(x) : gelu_tanh(in(x)); }
  at::Tensor operator()(const at::Tensor& x, Comm& tp) const { return routed.empty() ? out(hidden(x), tp) : experts(x, tp); }
  // This rank's share of out(hidden(x)) before the all-reduce, without the bias.
  at::Tensor partial(const at::Tensor& x) const { return out.partial(hidden(x)); }
  at::Tensor experts(const at::Tensor& x, Comm& tp) const;
};
Mlp mlp(WeightSource& ws, int64_t d, int64_t f, FfnKind kind) {
  Mlp m;
  m.in = column(ws, f, d);
  if (kind == FfnKind::kSwiGlu) m.gate = column(ws, f, d);
  m.out = row(ws, d, f);
  return m;
}

at::Tensor Mlp::experts(const at::Tensor& x, Comm& tp) const {
  const Routing r = route(router(x), active);
  at::Tensor y = routed_sum(x, r, static_cast<int>(routed.size()),
                            [&](int e, const at::Tensor& tokens) { return routed[e].partial(tokens); });
  for (const Mlp& s : shared) y = y + s.partial(x);
  tp.all_reduce(y);
  std::vector<at::Tensor> biases;
  for (const Mlp& e : routed) biases.push_back(e.out.b);
  y = y + routed_bias(r, at::stack(biases)).view(x.sizes());
  for (const Mlp& s : shared) y = y + s.out.b;
  return y;
}

// The FFN of a block of `m`: dense, or its experts (the routed ones, the shared ones, the router).
// `d` wide in and out, `f` inside (a narrower text stream has its own).
Mlp feed_forward(WeightSource& ws, const ModelProfile& m, int64_t d, int64_t f) {
  if (m.experts == 0) return mlp(ws, d, f, m.ffn_kind);
  Mlp moe;
  for (int e = 0; e < m.experts; ++e) moe.routed.push_back(mlp(ws, d, f, m.ffn_kind));
  for (int e = 0; e < m.shared_experts; ++e) moe.shared.push_back(mlp(ws, d, f, m.ffn_kind));
  moe.router = ws.block_linear(m.experts, d);  // replicated under TP
  moe.active = m.active_experts;
  return moe;
}

// SANA's GLUMBConv on this rank's tokens [B, S, D]: up = silu(x W_up + b) with 2F channels
// [x | gate], a 3x3 depthwise conv of them on the latent grid (depthwise_conv3x3), then
// down(x * silu(gate)). Under TP each rank keeps its shard of the x half and the matching shard
// of the gate half (up, conv weights and bias alike): the conv is per channel, down is row-parallel.
struct ConvGlu {
  Linear up;                 // D -> 2F/t: [x shard | gate shard]
  at::Tensor depth_w, depth_b;  // [2F/t, 9] (row-major 3x3 taps), [2F/t]
  RowLinear down;            // F/t -> D
};
// Rows of a [2F, ...] tensor: this rank's shard of the x half, then the same shard of the gate half.
at::Tensor matched_halves(const WeightSource& ws, const at::Tensor& w) {
  if (!w.defined()) return w;
  const auto h = w.chunk(2, 0);
  return at::cat({ws.shard_rows(h[0]), ws.shard_rows(h[1])}, 0);
}
ConvGlu conv_glu(WeightSource& ws, int64_t d, int64_t f) {
  ConvGlu c;
  const Linear up = ws.block_linear(2 * f, d);
  c.up = {matched_halves(ws, up.w), matched_halves(ws, up.b), matched_halves(ws, up.scale)};
  c.depth_w = matched_halves(ws, ws.full({2 * f, 9}, 1.0 / 3));
  c.depth_b = matched_halves(ws, ws.full({2 * f}, 0.02));
  c.down = row(ws, d, f);
  return c;
}

// Tokens a rank needs from each CP neighbour for a 3x3 conv on rows of `cols` tokens: a whole row
// when every rank's share starts at a row's start (the diagonal neighbour of a row's first token
// is padding), else one more (the share may start mid-row).
int64_t conv_halo(const std::vector<int64_t>& lengths, int64_t cols) {
  for (const int64_t n : lengths)
    if (n % cols != 0) return cols + 1;
  return cols;
}

// This rank's tokens h [B, S, C] with `halo` tokens of the CP ranks before and after it (zeros at
// the sequence's ends) and one zero token more on each side: ONE all-gather over the CP group of
// every rank's first and last `halo` tokens, [B, 2 halo, C] each.
at::Tensor with_halos(const at::Tensor& h, int64_t halo, const AttentionContext& ctx) {
  const int n = ctx.mesh ? ctx.mesh->coords().cp_size : 1;
  const int me = ctx.mesh ? ctx.mesh->coords().cp() : 0;
  const at::Tensor zeros = at::zeros({h.size(0), halo + 1, h.size(2)}, h.options());
  at::Tensor prev = zeros, next = zeros;
  if (n > 1) {
    if (h.size(1) < halo)
      throw std::invalid_argument("the conv-GLU FFN needs at least " + std::to_string(halo) +
                                  " tokens per context-parallel rank, this one holds " + std::to_string(h.size(1)));
    const at::Tensor ends = at::cat({h.narrow(1, 0, halo), h.narrow(1, h.size(1) - halo, halo)}, 1).contiguous();
    const at::Tensor all = ctx.mesh->cp().all_gather_cat(ends, 1);  // rank j: [first | last] at 2 halo j
    if (me > 0) prev = at::cat({zeros.narrow(1, 0, 1), all.narrow(1, 2 * halo * (me - 1) + halo, halo)}, 1);
    if (me + 1 < n) next = at::cat({all.narrow(1, 2 * halo * (me + 1), halo), zeros.narrow(1, 0, 1)}, 1);
  }
  return at::cat({prev, h, next}, 1);
}

// The 3x3 depthwise conv (padding 1, per frame) of this rank's tokens h [B, S, C], row-major on
// the latent grid (ctx.grid_rows x ctx.grid_cols per frame), from the first token of this CP
// rank's share: the nine neighbours of each token (zero outside its frame), stacked [B, S, C, 1, 9],
// times the taps [C, 9, 1] as one batched GEMM (2 x 9 FLOPs per channel per token), plus the bias.
at::Tensor depthwise_conv3x3(const at::Tensor& h, const at::Tensor& w, const at::Tensor& b,
                             const AttentionContext& ctx) {
  const int64_t rows = ctx.grid_rows, cols = ctx.grid_cols, s = h.size(1);
  if (ctx.patch_kv) throw std::invalid_argument("PipeFusion does not run the conv-GLU FFN (its patches split rows)");
  if (rows <= 0 || cols <= 0) throw std::invalid_argument("the conv-GLU FFN needs the latent grid (AttentionContext)");
  const std::vector<int64_t> lengths = ctx.image_lengths.empty() ? std::vector<int64_t>{s} : ctx.image_lengths;
  const int me = ctx.mesh ? ctx.mesh->coords().cp() : 0;
  const int64_t halo = conv_halo(lengths, cols), base = halo + 1;
  const at::Tensor extended = with_halos(h, halo, ctx);
  const int64_t first = std::accumulate(lengths.begin(), lengths.begin() + me, int64_t{0});
  const at::Tensor p = at::arange(first, first + s, at::TensorOptions(at::kLong).device(h.device()));
  const at::Tensor r = p.div(cols, "floor").remainder(rows), c = p.remainder(cols);
  std::vector<at::Tensor> taps;
  for (int64_t dy = -1; dy <= 1; ++dy)
    for (int64_t dx = -1; dx <= 1; ++dx) {
      const at::Tensor inside = (r + dy).ge(0) & (r + dy).lt(rows) & (c + dx).ge(0) & (c + dx).lt(cols);
      taps.push_back(extended.narrow(1, base + dy * cols + dx, s) * inside.to(h.scalar_type()).view({1, s, 1}));
    }
  // [B, S, C, 1, 9] x [C, 9, 1]: a 1 x 9 by 9 x 1 product per token and channel.
  return at::matmul(at::stack(taps, -1).unsqueeze(-2), w.unsqueeze(-1)).view_as(h) + b;
}

// The 3x3 conv of a PipeFusion patch (whole latent rows): the rows above and below it belong to
// other patches, read from the stage's buffer of this FFN's input over the whole image (fresh for
// this step's patches so far, the previous step's for the rest: stale as the K/V are), and under
// CP the rows around this rank's run come from the other CP ranks (PatchKvCache::image_rows). The
// conv runs on the whole buffer and the patch's tokens are kept.
at::Tensor patch_conv3x3(const at::Tensor& h, const at::Tensor& w, const at::Tensor& b, const AttentionContext& ctx) {
  AttentionContext whole = ctx;
  whole.patch_kv = nullptr;
  whole.mesh = nullptr;
  whole.image_lengths.clear();
  const at::Tensor image = ctx.patch_kv->image_rows(h, ctx.mesh ? &ctx.mesh->cp() : nullptr, ctx.grid_cols);
  return depthwise_conv3x3(image, w, b, whole).index_select(1, ctx.patch_kv->image_index());
}

at::Tensor conv_glu_forward(const ConvGlu& c, const at::Tensor& x, Comm& tp, const AttentionContext& ctx) {
  const at::Tensor up = at::silu(c.up(x));
  const auto xg = (ctx.patch_kv ? patch_conv3x3(up, c.depth_w, c.depth_b, ctx)
                                : depthwise_conv3x3(up, c.depth_w, c.depth_b, ctx))
                      .chunk(2, -1);
  return c.down(xg[0] * at::silu(xg[1]), tp);
}

// adaLN terms [B, 1, D] of one block: shift, scale and gate chunks, for the text and the image
// tokens of a joint sequence [text; image] (the same unless the modulation is per modality).
struct Mod {
  std::vector<at::Tensor> txt, img;
  // norm(x) * (1 + scale) + shift with chunks (i, i + 1), each token range its own
  at::Tensor modulate_joint(const at::Tensor& x, int64_t text, int i) const {
    if (txt.empty()) return modulate(x, img[i], img[i + 1]);
    return at::cat({modulate(x.narrow(1, 0, text), txt[i], txt[i + 1]),
                    modulate(x.narrow(1, text, x.size(1) - text), img[i], img[i + 1])}, 1);
  }
  at::Tensor gate_joint(const at::Tensor& y, int64_t text, int i) const {
    if (txt.empty()) return img[i] * y;
    return at::cat({txt[i] * y.narrow(1, 0, text), img[i] * y.narrow(1, text, y.size(1) - text)}, 1);
  }
};
std::vector<at::Tensor> chunks(const Linear& l, const at::Tensor& vec, int n) { return l(vec).unsqueeze(1).chunk(n, -1); }

// ---------------------------------------------------------------- fully sharded blocks (FSDP)
// Every defined tensor of a weight set, in a fixed order (executor/sharded_block.h); undefined
// ones (no QK-norm, no gate, shared modulation) are skipped and stay undefined.
void visit(at::Tensor& t, const TensorVisitor& fn) {
  if (t.defined()) fn(t);
}
void for_each_tensor(Linear& l, const TensorVisitor& fn) {
  visit(l.w, fn);
  visit(l.b, fn);
  visit(l.scale, fn);
}
void for_each_tensor(RowLinear& l, const TensorVisitor& fn) {
  visit(l.w, fn);
  visit(l.b, fn);
  visit(l.scale, fn);
}
void for_each_tensor(AttentionWeights& a, const TensorVisitor& fn) {
  for (Linear* l : {&a.q, &a.k, &a.v}) for_each_tensor(*l, fn);
  visit(a.q_norm, fn);
  visit(a.k_norm, fn);
  for_each_tensor(a.out, fn);
}
void for_each_tensor(Mlp& m, const TensorVisitor& fn) {
  for_each_tensor(m.in, fn);
  for_each_tensor(m.gate, fn);
  for_each_tensor(m.out, fn);
  for (std::vector<Mlp>* experts : {&m.routed, &m.shared})
    for (Mlp& e : *experts) for_each_tensor(e, fn);
  for_each_tensor(m.router, fn);
}
void for_each_tensor(ConvGlu& c, const TensorVisitor& fn) {
  for_each_tensor(c.up, fn);
  visit(c.depth_w, fn);
  visit(c.depth_b, fn);
  for_each_tensor(c.down, fn);
}

// Bytes in the tensors of whole layers (embedders, final layer: never sharded).
double layer_bytes(std::initializer_list<const Linear*> layers) {
  double bytes = 0;
  for (const Linear* l : layers)
    for (const at::Tensor* t : {&l->w, &l->b, &l->scale})
      if (t->defined()) bytes += static_cast<double>(t->nbytes());
  return bytes;
}
// Bytes in the blocks as this rank holds them (ShardedBlock::held_bytes).
template <class Block>
double held_bytes(const std::vector<ShardedBlock<Block>>& blocks) {
  double bytes = 0;
  for (const auto& b : blocks) bytes += b.held_bytes();
  return bytes;
}

// The block as this rank keeps it: sharded over `fs` when `held`, an empty placeholder otherwise.
template <class Block>
ShardedBlock<Block> keep(bool held, Block b, Comm& fs) {
  return held ? ShardedBlock<Block>(std::move(b), fs) : ShardedBlock<Block>();
}

// ---------------------------------------------------------------- MMDiT (FLUX, SD3, HunyuanVideo, Qwen-Image, CogVideoX)
class Mmdit final : public DitModel {
 public:
  Mmdit(const ModelProfile& m, uint64_t seed, Comm& tp, Comm& fs, const DeviceSpec& device, const AttentionOp& op,
        BlockRange held, WeightDraws* shared)
      : m_(m), tp_(tp), fs_(fs), op_(op), held_(held), d_(m.hidden()), hd_(m.head_dim), f_(m.ffn_hidden),
        tw_(m.text_width()), local_heads_(m.heads / tp.size()) {
    refuse_structure(m);
    check_supported(m);
    WeightSource ws(m, seed, tp.rank(), tp.size(), device, shared);
    x_embed_ = replicated(ws, d_, m.in_channels);
    txt_embed_ = replicated(ws, tw_, d_);
    time_in_ = replicated(ws, d_, 256);
    time_out_ = replicated(ws, d_, d_);
    if (m.modulation == Modulation::kShared) {  // FLUX.2: one projection per stream kind
      shared_img_ = replicated(ws, 6 * d_, d_);
      shared_txt_ = replicated(ws, 6 * tw_, d_);
      shared_single_ = replicated(ws, 3 * d_, d_);
    }
    // Blocks outside `held` are drawn all the same (the generator's sequence stays the single-rank
    // model's) and dropped at once: an empty placeholder keeps the forward-order index. Held ones
    // are sharded over `fs` as soon as drawn: one whole block at a time lives here.
    const auto [doubles, singles] = stream_counts(m);
    for (const BlockGroup& g : m.blocks)
      for (int i = 0; i < g.count; ++i) {
        if (g.kind == BlockKind::kDouble) {
          doubles_.push_back(keep(held.holds(index(doubles_.size(), 0)), make_double(ws, g), fs));
        } else if (g.sequential) {
          const bool mine = held.holds(index(sequentials_.size(), doubles + singles));
          sequentials_.push_back(keep(mine, make_sequential(ws), fs));
        } else {
          singles_.push_back(keep(held.holds(index(singles_.size(), doubles)), make_single(ws), fs));
        }
      }
    norm_out_ = replicated(ws, 2 * d_, d_);
    proj_out_ = replicated(ws, m.in_channels, d_);
  }

  ContextParallelPlan cp_plan() const override { return {m_.cp_split == CpSplit::kImageAndText}; }

  // The single-rank pass, op for op as before the stage pieces existed (the op counts of
  // profiles/runtimes/cpplan.toml): the two streams embedded apart, the conditioning computed once.
  at::Tensor forward(const ForwardInputs& in, AttentionContext& ctx) override {
    const at::Tensor img = x_embed_(in.latents);
    const at::Tensor vec = conditioning(in, img.scalar_type());
    const at::Tensor x = held_blocks(img, txt_embed_(in.text), vec, in, ctx, BlockRange{});
    return final_layer(x, vec, in.text.size(1));
  }

  at::Tensor embed(const ForwardInputs& in) const override { return joined(txt_embed_(in.text), x_embed_(in.latents)); }

  ForwardInputs with_conditioning(ForwardInputs in) const override {
    in.conditioning = conditioning(in, in.latents.scalar_type());
    return in;
  }

  at::Tensor run_span(const at::Tensor& hidden, const ForwardInputs& in, AttentionContext& ctx,
                      BlockRange span) const override {
    const int64_t text_len = in.text.size(1);
    const at::Tensor txt = hidden.narrow(1, 0, text_len).narrow(2, 0, tw_).contiguous();
    const at::Tensor img = hidden.narrow(1, text_len, hidden.size(1) - text_len).contiguous();
    return held_blocks(img, txt, conditioning(in, hidden.scalar_type()), in, ctx, span);
  }

  at::Tensor project_out(const at::Tensor& hidden, const ForwardInputs& in) const override {
    return final_layer(hidden, conditioning(in, hidden.scalar_type()), in.text.size(1));
  }

  double parameter_bytes() const override {
    return layer_bytes({&x_embed_, &txt_embed_, &time_in_, &time_out_, &norm_out_, &proj_out_, &shared_img_,
                        &shared_txt_, &shared_single_}) +
           held_bytes(doubles_) + held_bytes(singles_) + held_bytes(sequentials_);
  }

 private:
  // Whether this model runs block `block` of `span`: held here and in the span.
  bool runs(int block, BlockRange span) const { return held_.holds(block) && span.holds(block); }
  // The held blocks (BlockRange) of `span`: the double-stream ones on the two streams, the others
  // on [text; image]; returns [text; image].
  at::Tensor held_blocks(at::Tensor img, at::Tensor txt, const at::Tensor& vec, const ForwardInputs& in,
                         AttentionContext& ctx, BlockRange span) const {
    const at::Tensor angles = at::cat({in.text_rope, in.image_rope}, 0);
    const int64_t text_len = txt.size(1);
    int block = 0;
    for (const auto& b : doubles_)
      if (runs(block++, span)) double_block(b.gather(fs_), vec, angles, img, txt, ctx);
    at::Tensor x = joined(txt, img);
    for (const auto& b : singles_)
      if (runs(block++, span)) x = single_block(b.gather(fs_), vec, angles, x, ctx);
    for (const auto& b : sequentials_)
      if (runs(block++, span)) x = sequential_block(b.gather(fs_), vec, angles, text_len, x, ctx);
    return x;
  }
  // The final norm and projection of the image tokens of [text; image].
  at::Tensor final_layer(const at::Tensor& x, const at::Tensor& vec, int64_t text_len) const {
    const at::Tensor img = x.narrow(1, text_len, x.size(1) - text_len);
    auto fo = norm_out_(at::silu(vec)).unsqueeze(1).chunk(2, -1);
    return proj_out_(modulate(img, fo[0], fo[1]));
  }

  // What the joint-attention blocks do not run: frame-grouped attention and long skips (cross
  // blocks: Latte, HunyuanDiT), experts in a single-stream block's fused output projection.
  static void refuse_structure(const ModelProfile& m) {
    for (const BlockGroup& g : m.blocks) {
      if (g.temporal || g.skip)
        throw std::invalid_argument(m.name + ": temporal and long-skip blocks are cross-attention blocks here");
      if (m.experts > 0 && g.kind == BlockKind::kSingle && !g.sequential)
        throw std::invalid_argument(m.name + ": experts need a single-stream block's own FFN output (sequential = true)");
    }
  }

  // [text; image] of the two streams; a narrower text stream (Mochi) zero-padded to the image's width.
  at::Tensor joined(const at::Tensor& txt, const at::Tensor& img) const {
    return at::cat({tw_ == d_ ? txt : at::constant_pad_nd(txt, {0, d_ - tw_}), img}, 1);
  }
  // What this class runs: a narrower text stream in double-stream blocks only (the other blocks
  // run [text; image] at one width), no conv-GLU FFN (its grid is the image's alone).
  static void check_supported(const ModelProfile& m) {
    if (m.ffn_kind == FfnKind::kConvGlu)
      throw std::invalid_argument(m.name + ": the conv-GLU FFN runs in cross-attention blocks only");
    if (m.text_width() == m.hidden()) return;
    for (const BlockGroup& g : m.blocks)
      if (g.kind != BlockKind::kDouble)
        throw std::invalid_argument(m.name + ": a text stream narrower than the image's (text_hidden) runs in "
                                    "double-stream blocks only");
  }

  // Double-stream and (parallel) single-stream blocks of `m`: where each kind starts in forward order.
  static std::pair<int, int> stream_counts(const ModelProfile& m) {
    int doubles = 0, singles = 0;
    for (const BlockGroup& g : m.blocks) {
      if (g.kind == BlockKind::kDouble) doubles += g.count;
      else if (!g.sequential) singles += g.count;
    }
    return {doubles, singles};
  }
  static int index(std::size_t in_kind, int kind_start) { return kind_start + static_cast<int>(in_kind); }
  // The timestep's conditioning vector [B, D]: the one with_conditioning computed, else from the
  // timestep (every PipeFusion stage computes it: cheap, identical).
  at::Tensor conditioning(const ForwardInputs& in, at::ScalarType type) const {
    if (in.conditioning.defined()) return in.conditioning;
    return at::silu(time_out_(at::silu(time_in_(timestep_features(in.timestep, 256).to(type)))));
  }

  // Separate image and text weights, joint attention (FLUX double-stream, SD3 joint block); with
  // an image-only self-attention after it (SD3.5-medium's MMDiT-X blocks 0-12).
  struct DoubleBlock {
    Linear img_mod, txt_mod;
    AttentionWeights img_attn, txt_attn, img_attn2;
    Mlp img_mlp, txt_mlp;
    bool image_self_attention = false;
    friend void for_each_tensor(DoubleBlock& b, const TensorVisitor& fn) {
      for (Linear* l : {&b.img_mod, &b.txt_mod}) for_each_tensor(*l, fn);
      for (AttentionWeights* a : {&b.img_attn, &b.txt_attn, &b.img_attn2}) for_each_tensor(*a, fn);
      for (Mlp* l : {&b.img_mlp, &b.txt_mlp}) for_each_tensor(*l, fn);
    }
  };
  // One weight set over [text; image]: attention and MLP side by side from one norm, one output
  // projection of both (FLUX single-stream, HunyuanVideo).
  struct SingleBlock {
    Linear mod, q, k, v;
    Mlp mlp;  // in (and gate) only: its output is the fused projection below
    at::Tensor q_norm, k_norm;
    RowLinear out;
    friend void for_each_tensor(SingleBlock& b, const TensorVisitor& fn) {
      for (Linear* l : {&b.mod, &b.q, &b.k, &b.v}) for_each_tensor(*l, fn);
      for_each_tensor(b.mlp, fn);
      visit(b.q_norm, fn);
      visit(b.k_norm, fn);
      for_each_tensor(b.out, fn);
    }
  };
  // One weight set over [text; image]: attention, then the FFN, each with its own output
  // projection and its own modulation per modality under expert adaLN (CogVideoX).
  struct SequentialBlock {
    Linear mod, txt_mod;
    AttentionWeights attn;
    Mlp mlp;
    friend void for_each_tensor(SequentialBlock& b, const TensorVisitor& fn) {
      for (Linear* l : {&b.mod, &b.txt_mod}) for_each_tensor(*l, fn);
      for_each_tensor(b.attn, fn);
      for_each_tensor(b.mlp, fn);
    }
  };

  at::Tensor project(const Linear& l, const at::Tensor& norm, const at::Tensor& x) const {
    return project_heads(l, norm, x, local_heads_);
  }
  at::Tensor attend(const AttentionWeights& a, const at::Tensor& x, const at::Tensor& angles, AttentionContext& ctx) const {
    const at::Tensor q = rope(project(a.q, a.q_norm, x), angles), k = rope(project(a.k, a.k_norm, x), angles);
    return a.out(merge_heads(self_attention(op_, q, k, heads(a.v(x), local_heads_), ctx)), tp_);
  }

  void double_block(const DoubleBlock& b, const at::Tensor& vec, const at::Tensor& angles, at::Tensor& img,
                    at::Tensor& txt, AttentionContext& ctx) const {
    const bool shared = m_.modulation == Modulation::kShared;
    auto mi = chunks(shared ? shared_img_ : b.img_mod, vec, b.image_self_attention ? 9 : 6);
    auto mt = chunks(shared ? shared_txt_ : b.txt_mod, vec, 6);
    const at::Tensor ni = modulate(img, mi[0], mi[1]), nt = modulate(txt, mt[0], mt[1]);
    // SD3.5-medium: the second attention's input is normed from the block's input, as the first's.
    const at::Tensor ni2 = b.image_self_attention ? modulate(img, mi[6], mi[7]) : at::Tensor();
    const at::Tensor q = at::cat({project(b.txt_attn.q, b.txt_attn.q_norm, nt), project(b.img_attn.q, b.img_attn.q_norm, ni)}, 2);
    const at::Tensor k = at::cat({project(b.txt_attn.k, b.txt_attn.k_norm, nt), project(b.img_attn.k, b.img_attn.k_norm, ni)}, 2);
    const at::Tensor v = at::cat({heads(b.txt_attn.v(nt), local_heads_), heads(b.img_attn.v(ni), local_heads_)}, 2);
    const at::Tensor o = merge_heads(self_attention(op_, rope(q, angles), rope(k, angles), v, ctx));
    const int64_t text_len = txt.size(1);
    txt = txt + mt[2] * b.txt_attn.out(o.narrow(1, 0, text_len), tp_);
    img = img + mi[2] * b.img_attn.out(o.narrow(1, text_len, o.size(1) - text_len), tp_);
    if (b.image_self_attention) {
      AttentionContext image = ctx.image_only();
      const at::Tensor image_angles = angles.narrow(0, text_len, angles.size(0) - text_len);
      img = img + mi[8] * attend(b.img_attn2, ni2, image_angles, image);
    }
    img = img + mi[5] * b.img_mlp(modulate(img, mi[3], mi[4]), tp_);
    txt = txt + mt[5] * b.txt_mlp(modulate(txt, mt[3], mt[4]), tp_);
  }

  at::Tensor single_block(const SingleBlock& b, const at::Tensor& vec, const at::Tensor& angles, const at::Tensor& x,
                          AttentionContext& ctx) const {
    auto mo = chunks(m_.modulation == Modulation::kShared ? shared_single_ : b.mod, vec, 3);
    const at::Tensor n = modulate(x, mo[0], mo[1]);
    const at::Tensor q = rope(project(b.q, b.q_norm, n), angles), k = rope(project(b.k, b.k_norm, n), angles);
    const at::Tensor o = merge_heads(self_attention(op_, q, k, heads(b.v(n), local_heads_), ctx));
    // proj_out over [attention, mlp] is row-parallel: each rank holds its heads' and FFN columns.
    return x + mo[2] * b.out(at::cat({o, b.mlp.hidden(n)}, -1), tp_);
  }

  at::Tensor sequential_block(const SequentialBlock& b, const at::Tensor& vec, const at::Tensor& angles, int64_t text_len,
                              at::Tensor x, AttentionContext& ctx) const {
    Mod mod{{}, chunks(b.mod, vec, 6)};
    if (m_.modulation == Modulation::kExpert) mod.txt = chunks(b.txt_mod, vec, 6);
    x = x + mod.gate_joint(attend(b.attn, mod.modulate_joint(x, text_len, 0), angles, ctx), text_len, 2);
    return x + mod.gate_joint(b.mlp(mod.modulate_joint(x, text_len, 3), tp_), text_len, 5);
  }

  DoubleBlock make_double(WeightSource& ws, const BlockGroup& g) {
    DoubleBlock b;
    b.image_self_attention = g.image_self_attention;
    if (m_.modulation != Modulation::kShared) {
      b.img_mod = replicated(ws, (g.image_self_attention ? 9 : 6) * d_, d_);
      b.txt_mod = replicated(ws, 6 * tw_, d_);
    }
    b.img_attn = attention_weights(ws, d_, hd_, m_.qk_norm);
    b.txt_attn = attention_weights(ws, d_, hd_, m_.qk_norm, tw_);
    if (g.image_self_attention) b.img_attn2 = attention_weights(ws, d_, hd_, m_.qk_norm);
    b.img_mlp = feed_forward(ws, m_, d_, f_);
    b.txt_mlp = feed_forward(ws, m_, tw_, m_.text_ffn());
    return b;
  }
  SingleBlock make_single(WeightSource& ws) {
    SingleBlock b;
    if (m_.modulation != Modulation::kShared) b.mod = replicated(ws, 3 * d_, d_);
    b.q = column(ws, d_, d_);
    b.k = column(ws, d_, d_);
    b.v = column(ws, d_, d_);
    b.mlp.in = column(ws, f_, d_);
    if (m_.ffn_kind == FfnKind::kSwiGlu) b.mlp.gate = column(ws, f_, d_);
    if (m_.qk_norm) {
      b.q_norm = ws.full({hd_}, 0.1) + 1;
      b.k_norm = ws.full({hd_}, 0.1) + 1;
    }
    // proj_out: (D + F) -> D; its input columns are [attention D | mlp F], each sharded.
    const Linear out = ws.block_linear(d_, d_ + f_);  // int8: scaled per output row over all D + F inputs
    b.out = {at::cat({ws.shard_cols(out.w.narrow(1, 0, d_)), ws.shard_cols(out.w.narrow(1, d_, f_))}, 1), out.b,
             out.scale};
    return b;
  }
  SequentialBlock make_sequential(WeightSource& ws) {
    SequentialBlock b;
    b.mod = replicated(ws, 6 * d_, d_);
    if (m_.modulation == Modulation::kExpert) b.txt_mod = replicated(ws, 6 * d_, d_);
    b.attn = attention_weights(ws, d_, hd_, m_.qk_norm);
    b.mlp = feed_forward(ws, m_, d_, f_);
    return b;
  }

  const ModelProfile& m_;
  Comm& tp_;
  Comm& fs_;  // the fully-shard group the blocks are gathered over (a group of one: held whole)
  const AttentionOp& op_;
  BlockRange held_;
  int64_t d_, hd_, f_, tw_, local_heads_;  // tw_: the text stream's width (d_ unless narrower)
  Linear x_embed_, txt_embed_, time_in_, time_out_, norm_out_, proj_out_;
  Linear shared_img_, shared_txt_, shared_single_;
  std::vector<ShardedBlock<DoubleBlock>> doubles_;
  std::vector<ShardedBlock<SingleBlock>> singles_;
  std::vector<ShardedBlock<SequentialBlock>> sequentials_;
};

// ---------------------------------------------------------------- cross-attention DiT (Wan)
class CrossDit final : public DitModel {
 public:
  CrossDit(const ModelProfile& m, uint64_t seed, Comm& tp, Comm& fs, const DeviceSpec& device, const AttentionOp& op,
           BlockRange held, WeightDraws* shared)
      : tp_(tp), fs_(fs), op_(op), held_(held), d_(m.hidden()), hd_(m.head_dim), local_heads_(m.heads / tp.size()),
        linear_(m.attention == AttentionKind::kLinear) {
    WeightSource ws(m, seed, tp.rank(), tp.size(), device, shared);
    x_embed_ = replicated(ws, d_, m.in_channels);
    txt_embed_ = replicated(ws, d_, d_);
    time_in_ = replicated(ws, d_, 256);
    time_mod_ = replicated(ws, 6 * d_, d_);
    const bool framed = std::any_of(m.blocks.begin(), m.blocks.end(), [](const BlockGroup& g) { return g.temporal; });
    for (const BlockGroup& g : m.blocks)
      for (int i = 0; i < g.count; ++i) {
        Block b;
        b.groups = g.temporal ? TokenGroups::kPosition : framed ? TokenGroups::kFrame : TokenGroups::kAll;
        if (g.skip) {
          b.skip = replicated(ws, d_, 2 * d_);
          ++skips_;
        }
        b.table = ws.full({6, d_}, 0.02);
        b.self = attention_weights(ws, d_, hd_, m.qk_norm);
        if (ModelProfile::cross_attends(g)) b.cross = attention_weights(ws, d_, hd_, m.qk_norm);
        if (m.ffn_kind == FfnKind::kConvGlu) b.conv_ffn = conv_glu(ws, d_, m.ffn_hidden);
        else b.ffn = feed_forward(ws, m, d_, m.ffn_hidden);
        // Drawn whether held or not: the generator's sequence stays the single-rank model's.
        blocks_.push_back(keep(held.holds(static_cast<int>(blocks_.size())), std::move(b), fs));
      }
    head_ = replicated(ws, 2 * d_, d_);
    proj_out_ = replicated(ws, m.in_channels, d_);
  }

  ContextParallelPlan cp_plan() const override { return {false}; }

  // The single-rank pass with the conditioning computed once (the op counts of cpplan.toml).
  at::Tensor forward(const ForwardInputs& in, AttentionContext& ctx) override {
    const at::Tensor x = x_embed_(in.latents);
    const at::Tensor e = conditioning(in, x.scalar_type());
    return final_layer(held_blocks(x, e, in, ctx, BlockRange{}), e);
  }

  at::Tensor embed(const ForwardInputs& in) const override { return x_embed_(in.latents); }

  ForwardInputs with_conditioning(ForwardInputs in) const override {
    in.conditioning = conditioning(in, in.latents.scalar_type());
    return in;
  }

  at::Tensor run_span(const at::Tensor& hidden, const ForwardInputs& in, AttentionContext& ctx,
                      BlockRange span) const override {
    return held_blocks(hidden, conditioning(in, hidden.scalar_type()), in, ctx, span);
  }

  at::Tensor project_out(const at::Tensor& hidden, const ForwardInputs& in) const override {
    return final_layer(hidden, conditioning(in, hidden.scalar_type()));
  }

  double parameter_bytes() const override {
    return layer_bytes({&x_embed_, &txt_embed_, &time_in_, &time_mod_, &head_, &proj_out_}) + held_bytes(blocks_);
  }

 private:
  // The timestep's conditioning: the one with_conditioning computed, else from the timestep.
  at::Tensor conditioning(const ForwardInputs& in, at::ScalarType type) const {
    if (in.conditioning.defined()) return in.conditioning;
    return at::silu(time_in_(timestep_features(in.timestep, 256).to(type)));
  }

  // Whether this model runs block `block` of `span`: held here and in the span.
  bool runs(int block, BlockRange span) const { return held_.holds(block) && span.holds(block); }
  // `x`: the hidden states [B, S, D], followed on the last dim by the long skips an earlier
  // PipeFusion stage's blocks left for this stage's (in push order); returned the same way.
  at::Tensor held_blocks(at::Tensor x, const at::Tensor& e, const ForwardInputs& in, AttentionContext& ctx,
                         BlockRange span) const {
    const at::Tensor ctx_tokens = txt_embed_(in.text);
    const at::Tensor e6 = time_mod_(e).view({e.size(0), 6, d_});
    // The outputs of the first blocks, for the skip blocks (last in, first out).
    std::vector<at::Tensor> skips;
    if (x.size(-1) > d_) {  // no op more for a model whose stage receives no skips (the op counts)
      skips = x.split(d_, -1);
      x = skips.front();
      skips.erase(skips.begin());
    }
    int block = 0;
    for (const auto& sharded : blocks_) {
      if (!runs(block++, span)) continue;
      const Block b = sharded.gather(fs_);  // dropped at the end of the iteration
      if (b.skip.w.defined()) x = long_skip(b.skip, x, pop(skips));
      auto m = (e6 + b.table).chunk(6, 1);  // each [B, 1, D]
      const at::Tensor n = modulate(x, m[0], m[1]);
      const at::Tensor v = heads(b.self.v(n), local_heads_);
      const at::Tensor o = merge_heads(grouped_self_attention(op_, self_q(b, n, in), self_k(b, n, in), v, ctx, b.groups));
      x = x + m[2] * b.self.out(o, tp_);
      if (b.cross.q.w.defined()) x = x + cross_attention(b.cross, x, ctx_tokens);  // not in temporal blocks
      x = x + m[5] * ffn(b, modulate(x, m[3], m[4]), ctx);
      if (block <= skips_) skips.push_back(x);
    }
    if (skips.empty()) return x;
    skips.insert(skips.begin(), x);
    return at::cat(skips, -1);
  }

  // Cross-attention: local queries against the whole text on every rank, no CP traffic.
  at::Tensor cross_attention(const AttentionWeights& a, const at::Tensor& x, const at::Tensor& text) const {
    const at::Tensor nx = layer_norm(x);
    const at::Tensor q = project(a.q, a.q_norm, nx), k = project(a.k, a.k_norm, text);
    return a.out(merge_heads(attention_local(q, k, heads(a.v(text), local_heads_))), tp_);
  }

  // HunyuanDiT's long skip at a block's entry: skip_linear(skip_norm([x, skip])), replicated under TP.
  static at::Tensor long_skip(const Linear& skip, const at::Tensor& x, const at::Tensor& earlier) {
    return skip(layer_norm(at::cat({x, earlier}, -1)));
  }
  static at::Tensor pop(std::vector<at::Tensor>& stack) {
    if (stack.empty()) throw std::invalid_argument("a long-skip block without an earlier block's output to take");
    at::Tensor top = stack.back();
    stack.pop_back();
    return top;
  }

  at::Tensor final_layer(const at::Tensor& x, const at::Tensor& e) const {
    auto h = head_(e).unsqueeze(1).chunk(2, -1);
    return proj_out_(modulate(x, h[0], h[1]));
  }

  struct Block {
    TokenGroups groups = TokenGroups::kAll;  // whose tokens the self-attention attends together
    Linear skip;                             // a long-skip block's 2D -> D projection; undefined otherwise
    at::Tensor table;
    AttentionWeights self, cross;
    Mlp ffn;          // GELU or SwiGLU
    ConvGlu conv_ffn;  // or the conv-GLU (SANA): one of the two is defined
    friend void for_each_tensor(Block& b, const TensorVisitor& fn) {
      for_each_tensor(b.skip, fn);
      visit(b.table, fn);
      for (AttentionWeights* a : {&b.self, &b.cross}) for_each_tensor(*a, fn);
      for_each_tensor(b.ffn, fn);
      for_each_tensor(b.conv_ffn, fn);
    }
  };
  at::Tensor project(const Linear& l, const at::Tensor& norm, const at::Tensor& x) const {
    return project_heads(l, norm, x, local_heads_);
  }
  // Self-attention's q and k: rotated by RoPE for softmax attention, as projected for linear (SANA).
  at::Tensor self_q(const Block& b, const at::Tensor& n, const ForwardInputs& in) const {
    const at::Tensor q = project(b.self.q, b.self.q_norm, n);
    return linear_ ? q : rope(q, in.image_rope);
  }
  at::Tensor self_k(const Block& b, const at::Tensor& n, const ForwardInputs& in) const {
    const at::Tensor k = project(b.self.k, b.self.k_norm, n);
    return linear_ ? k : rope(k, in.image_rope);
  }
  at::Tensor ffn(const Block& b, const at::Tensor& x, const AttentionContext& ctx) const {
    return b.conv_ffn.up.w.defined() ? conv_glu_forward(b.conv_ffn, x, tp_, ctx) : b.ffn(x, tp_);
  }

  Comm& tp_;
  Comm& fs_;  // the fully-shard group the blocks are gathered over (a group of one: held whole)
  const AttentionOp& op_;
  BlockRange held_;
  int64_t d_, hd_, local_heads_;
  int skips_ = 0;  // long-skip blocks; the first skips_ blocks push their outputs for them
  bool linear_;  // linear self-attention (SANA): no RoPE
  Linear x_embed_, txt_embed_, time_in_, time_mod_, head_, proj_out_;
  std::vector<ShardedBlock<Block>> blocks_;
};

}  // namespace

std::unique_ptr<DitModel> build_model(const ModelProfile& profile, uint64_t seed, Comm& tp, Comm& fs,
                                      const DeviceSpec& device, const AttentionOp& attention, BlockRange blocks,
                                      WeightDraws* shared) {
  if (profile.text_handling == TextHandling::kCross)
    return std::make_unique<CrossDit>(profile, seed, tp, fs, device, attention, blocks, shared);
  return std::make_unique<Mmdit>(profile, seed, tp, fs, device, attention, blocks, shared);
}

std::unique_ptr<DitModel> build_model(const ModelProfile& profile, uint64_t seed, Comm& tp, const DeviceSpec& device,
                                      const AttentionOp& attention, BlockRange blocks, WeightDraws* shared) {
  static Comm whole;  // a group of one: its collectives are the identity and change nothing
  return build_model(profile, seed, tp, whole, device, attention, blocks, shared);
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
