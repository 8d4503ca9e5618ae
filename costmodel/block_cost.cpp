// One block group's cost for one denoising step: the GPU's kernels (GEMMs one by one, attention,
// memory-bound work), its collectives, and the host's time to dispatch it all under the runtime.
#include <algorithm>
#include <cmath>

#include "costmodel/cp_cost.h"
#include "costmodel/predict_terms.h"
#include "costmodel/step_context.h"

namespace cpplan::costmodel {

namespace {

// Accumulates one block's terms (before scaling by the group's count).
class BlockBuilder {
 public:
  BlockBuilder(const StepContext& ctx, const BlockGroup& g) : ctx_(ctx), g_(g) {
    out_.cost.kind = g.kind;
    out_.cost.count = g.count;
    out_.cost.overlapped = ctx.runtime.overlaps_device;
  }

  BlockTerms build() {
    gemms();
    attention_layer(self_attention());
    if (g_.image_self_attention) image_self_attention();
    if (ModelProfile::cross_attends(g_)) cross_attention();
    if (ctx_.m.side_cross.every > 0) side_cross();
    elementwise();
    tp_all_reduces();
    fully_shard_gather();
    host();
    scale();
    return out_;
  }

 private:
  BlockCost& bc() { return out_.cost; }
  double d() const { return ctx_.m.hidden(); }
  double nb() const { return ctx_.samples; }
  double b() const { return ctx_.m.bytes_per_activation; }

  // One GEMM of rows x k x n (a short text stream is its own small GEMM): TP shards each weight
  // (column-parallel outputs, row-parallel inputs), every rank sees all its local tokens. Bytes:
  // the weight shard plus the activations in and out. A quantized linear (Query::precision) reads
  // its weights at the format's bytes and, where its activations are quantized too, its input at
  // theirs, and runs on the format's tensor peak: priced as the BF16 GEMM of the same bytes whose
  // FLOPs are scaled by the BF16 peak over the format's (the same fraction of its own peak), plus
  // the pass that quantizes its input (quantize_activations).
  void gemm(double rows, double k, double n, bool sharded = true) {
    if (rows <= 0) return;
    if (sharded && ctx_.axes.t > 1) ++tp_linears_;
    const Precision& p = ctx_.q.precision;
    const Flops fl = 2.0 * nb() * rows * k * n;
    const double bf16_equivalent =
        p.low_precision_math() ? ctx_.q.hardware->bf16_tflops / gemm_peak_tflops(*ctx_.q.hardware, p) : 1.0;
    const Bytes bytes = k * n * weight_bytes_of_linears() + nb() * rows * (k * activation_bytes(p) + n * b());
    const Timed t = ctx_.hw.gemm(fl * bf16_equivalent, bytes, nb() * rows);
    add_gemm(bc(), fl, t);
    if (in_attention_) bc().attention_module_ms += t.ms;
    if (p.low_precision_math()) quantize_activations(nb() * rows * k);
  }

  Bytes weight_bytes_of_linears() const {
    return ctx_.q.precision.quantized() ? weight_bytes(ctx_.q.precision.weights) : ctx_.m.bytes_per_param;
  }

  // Quantizing a GEMM's `elements` input activations at run time, eager: a per-tensor scale needs
  // the tensor's absolute maximum first (one reduction reading the BF16 input), then one pass that
  // reads it again and writes the quantized copy; a per-row scale (or a static one) is that one
  // pass alone. Each pass is a kernel the host launches.
  void quantize_activations(double elements) {
    const Precision& p = ctx_.q.precision;
    const bool reduction = p.activations == ActivationScaling::kDynamicTensor;
    const Bytes bytes = elements * ((reduction ? 2.0 : 0.0) + b() + activation_bytes(p));
    const Timed e = ctx_.hw.memory(bytes);
    bc().memory_ms += e.ms;
    quantize_ops_ += reduction ? 2 : 1;
    note_source(bc().sources.memory, e.source);
  }

  void gemms() {
    const double t = ctx_.axes.t, dt = d() / t;
    const double tokens = ctx_.tokens;
    auto projections = [&](double rows, double width, bool predicted = true) {
      in_attention_ = predicted;
      for (int i = 0; i < 3; ++i) gemm(rows, width, dt);  // q, k, v
      gemm(rows, dt, width);                              // out
      in_attention_ = false;
    };
    if (g_.kind == BlockKind::kDouble) {  // separate image and text weights, each on its stream
      projections(tokens - ctx_.text_local, d());
      ffn(tokens - ctx_.text_local, d(), ctx_.m.ffn_hidden);
      projections(ctx_.text_local, ctx_.m.text_width());
      ffn(ctx_.text_local, ctx_.m.text_width(), ctx_.m.text_ffn(), false);
      if (g_.image_self_attention) projections(ctx_.image_attention.tokens, d(), false);  // attn2: image_self_attention()
    } else if (g_.kind == BlockKind::kSingle && g_.text_kv_only) {  // the text gives K and V only (PRX)
      projections(tokens - ctx_.text_local, d());
      in_attention_ = true;
      for (int i = 0; i < 2; ++i) gemm(ctx_.text_local, d(), dt);
      in_attention_ = false;
      ffn(tokens - ctx_.text_local, d(), ctx_.m.ffn_hidden);
    } else if (g_.kind == BlockKind::kSingle && g_.sequential) {  // attention, then FFN (CogVideoX)
      projections(tokens, d());
      ffn(tokens, d(), ctx_.m.ffn_hidden);
    } else if (g_.kind == BlockKind::kSingle) {  // q, k, v, MLP in; one output projection of both
      const double ft = ctx_.m.ffn_hidden / t;
      in_attention_ = true;  // the attention module holds q, k, v; the block's proj_out serves both
      for (int i = 0; i < 3; ++i) gemm(tokens, d(), dt);
      in_attention_ = false;
      gemm(tokens, d(), ffn_in(ft));
      gemm(tokens, dt + ft, d());
    } else {  // self-attention, cross-attention (queries local, K/V of the whole text), FFN
      projections(tokens, d());
      if (ModelProfile::cross_attends(g_)) {
        in_attention_ = true;
        gemm(tokens, d(), dt);
        gemm(tokens, dt, d());
        gemm(ctx_.text, d(), dt);
        gemm(ctx_.text, d(), dt);
        in_attention_ = false;
      }
      ffn(tokens, d(), ctx_.m.ffn_hidden);
    }
    if (g_.skip) gemm(tokens, 2.0 * d(), d(), false);  // skip_linear, whole on every rank
  }

  // The FFN's up-projection width per TP rank: gated and conv-GLU FFNs project to 2F.
  double ffn_in(double ft) const { return (ctx_.m.ffn_kind == FfnKind::kGelu ? 1.0 : 2.0) * ft; }

  // One FFN of `width` in and out on `rows` tokens: the router of a mixture of experts (whole on
  // every rank), then each FFN a token runs (its active and shared experts) up and down; a
  // conv-GLU FFN adds its depthwise 3x3 conv over the 2F channels, and the image stream's its
  // temporal conv over the frames (SANA-Video).
  void ffn(double rows, double width, double hidden, bool image = true) {
    if (rows <= 0) return;
    const ModelProfile& m = ctx_.m;
    const double ft = hidden / ctx_.axes.t;
    if (m.experts > 0) gemm(rows, width, m.experts, false);
    for (int e = 0; e < m.ffn_runs(); ++e) {
      gemm(rows, width, ffn_in(ft));
      gemm(rows, ft, width);
    }
    if (m.ffn_kind == FfnKind::kConvGlu) depthwise_conv(rows, 2.0 * ft);
    if (image && m.ffn_temporal_taps > 0) temporal_conv(rows, width);
  }

  // SANA-Video's conv_temp: a (taps x 1) conv D -> D over the frames of each position, an
  // implicit GEMM of taps x D in and D out per token, whole on every TP rank (after the FFN's
  // all-reduce). Under a CP split of the frame-major sequence a rank needs the (taps - 1) / 2
  // frames before and after its share: one all-gather over the CP group of each rank's first and
  // last frames.
  void temporal_conv(double rows, double width) {
    const double taps = ctx_.m.ffn_temporal_taps;
    gemm(rows, taps * width, width, false);
    const CommGroup& grp = ctx_.group(CommAxis::kCp);
    const double frames = static_cast<double>(ctx_.q.sequence.latent_frames);
    const double halo_frames = std::floor((taps - 1) / 2);
    if (grp.ranks <= 1 || frames <= 1 || halo_frames < 1) return;
    const double frame = static_cast<double>(ctx_.q.sequence.image_tokens) / frames;
    cp_all_gather(nb() * grp.ranks * 2.0 * halo_frames * frame * width * b());
  }

  // 9 multiply-adds per channel and token; memory-bound: the channels read and written once.
  void depthwise_conv(double rows, double channels) {
    bc().flops += 2.0 * 9.0 * nb() * rows * channels;
    const Timed t = ctx_.hw.memory(2.0 * nb() * rows * channels * b());
    bc().memory_ms += t.ms;
    note_source(bc().sources.memory, t.source);
    conv_halo(channels);
  }

  // One all-gather of `gathered` bytes over the CP group (the convs' halos), on the CP axis.
  void cp_all_gather(Bytes gathered) {
    const CommGroup& grp = ctx_.group(CommAxis::kCp);
    const Timed t = ctx_.hw.collective(Collective::kAllGather, gathered, grp);
    bc().comm_ms += t.ms;
    axis_ms_[static_cast<int>(CommAxis::kCp)] += t.ms;
    out_.bytes_sent += gathered * busbw_factor(Collective::kAllGather, grp.ranks);
    collective(grp, 1);
    note_source(bc().sources.comm, t.source);
  }

  // Under a CP split the 3x3 conv needs the latent row before and after each run of this rank's
  // tokens: one all-gather over the CP group of each run's first and last row of the 2F/t
  // channels, a row and one token when the runs start mid-row (the first token's upper-left
  // neighbour). A rank holds one run, or one per patch in PipeFusion's whole-sequence pass; under
  // PipeFusion a run of at most two halos goes whole, once (executor/pipefusion.cpp, run_ends).
  void conv_halo(double channels) {
    const CommGroup& grp = ctx_.group(CommAxis::kCp);
    if (grp.ranks <= 1) return;
    const double row = ctx_.q.resolution.width / static_cast<double>(ctx_.m.pixel_granularity());
    const double run = static_cast<double>(ctx_.q.sequence.image_tokens) / grp.ranks / ctx_.image_runs;
    const double halo = std::fmod(run, row) == 0 ? row : row + 1;
    const double per_run = ctx_.axes.p > 1 ? std::min(run, 2.0 * halo) : 2.0 * halo;
    const Bytes gathered = nb() * grp.ranks * ctx_.image_runs * per_run * channels * b();
    cp_all_gather(gathered);
  }

  // The cross-attention to a few conditioning tokens after every `every`-th block (ConsisID's face
  // tokens), 1 / every of it on each block: the local image tokens' q and out (TP-sharded heads),
  // the conditioning tokens' K and V, and the attention to them; no collective (every rank holds
  // the conditioning tokens).
  void side_cross() {
    const ModelProfile::SideCross& x = ctx_.m.side_cross;
    const double share = 1.0 / x.every, inner = x.inner / ctx_.axes.t;
    const double rows = (ctx_.tokens - ctx_.text_local) * share;
    in_attention_ = true;
    gemm(rows, d(), inner);
    gemm(rows, inner, d());
    gemm(x.tokens * share, x.width, 2.0 * inner);
    in_attention_ = false;
    AttentionCost c;
    c.tokens = rows;
    c.q_tokens = rows;
    c.kv_tokens = x.tokens;
    c.heads = inner / ctx_.m.head_dim;
    attention_kernel(c);
  }

  // The block's self-attention layer: across frames in a temporal block; in a block whose text
  // gives keys and values only (PRX), the image's share of each call's queries (the all-to-alls
  // still move the text's, as xDiT's joint attention does).
  AttentionCost self_attention() const {
    if (!g_.text_kv_only) return g_.temporal ? ctx_.temporal_attention : ctx_.attention;
    AttentionCost c = ctx_.attention;
    const double all = static_cast<double>(ctx_.q.sequence.attention_tokens);
    if (all > 0) c.q_tokens *= static_cast<double>(ctx_.q.sequence.image_tokens) / all;
    return c;
  }

  Milliseconds attention_kernel(const AttentionCost& c, bool linear = false) {
    const Flops fl = c.flops() * ctx_.m.head_dim * nb();
    // Linear attention is two small GEMMs per head (its state and the queries against it).
    const Timed t = linear ? ctx_.hw.gemm(fl, 4.0 * c.q_tokens * c.heads * ctx_.m.head_dim * b() * nb(), nb() * c.q_tokens)
                           : ctx_.hw.attention(fl, c.q_tokens, c.kv_tokens, ctx_.m.head_dim, ctx_.q.backend);
    bc().flops += fl;
    bc().attention_ms += t.ms;
    if (predicted_) bc().attention_module_ms += t.ms;
    note_source(bc().sources.attention, t.source);
    const Bytes moved = (c.merge_bytes + c.layout_bytes) * nb();
    if (moved > 0) {
      const Timed merge = ctx_.hw.memory(moved);
      bc().memory_ms += merge.ms;
      if (predicted_) bc().attention_module_ms += merge.ms;
      note_source(bc().sources.memory, merge.source);
    }
    return t.ms;
  }

  // The attention kernels and their collectives; those that overlap the kernels (Ring's p2p
  // steps) cost only what they take beyond them.
  void attention_layer(const AttentionCost& c) {
    const Milliseconds kernels = attention_kernel(c, ctx_.m.attention == AttentionKind::kLinear);
    Milliseconds overlapped = 0;
    for (int i = 0; i < c.comm_count; ++i) {
      const CommCall& call = c.comm[i];
      const CommAxis axis = call.axis == CpAxis::kRing ? CommAxis::kRing : CommAxis::kUlysses;
      const CommGroup& grp = ctx_.group(axis);
      const Timed t = ctx_.hw.collective(call.kind, call.bytes * nb(), grp);
      if (call.overlapped) {
        overlapped += t.ms * call.count;
      } else {
        bc().comm_ms += t.ms * call.count;
        if (predicted_) bc().attention_module_ms += t.ms * call.count;
        axis_ms_[static_cast<int>(axis)] += t.ms * call.count;
      }
      out_.bytes_sent += call.bytes * nb() * busbw_factor(call.kind, grp.ranks) * call.count;
      collective(grp, call.count);
      note_source(bc().sources.comm, t.source);
    }
    const Milliseconds exposed = std::max(0.0, overlapped - kernels);
    bc().comm_ms += exposed;
    if (predicted_) bc().attention_module_ms += exposed;
    axis_ms_[static_cast<int>(CommAxis::kRing)] += exposed;  // only Ring's p2p steps overlap
  }

  // SD3.5-medium's image-only self-attention (MMDiT-X blocks 0-12), the module diffusers names
  // attn2: TaylorSeer's identifier ^transformer_blocks.*attn matches the name in full, attn and not
  // attn2, so a cached step computes it (tests/reference/cache_hooks.py reports it covered in
  // part). Its projections (gemms) and this layer stay out of attention_module_ms.
  void image_self_attention() {
    predicted_ = false;
    attention_layer(ctx_.image_attention);
    predicted_ = true;
  }

  void cross_attention() {
    AttentionCost xa;
    xa.q_tokens = ctx_.tokens;
    xa.kv_tokens = ctx_.text;
    xa.heads = ctx_.input.heads;
    attention_kernel(xa);
  }

  // Memory-bound work per token of a fused block: two norm+modulate (2 x 2D), q/k norm and RoPE
  // (8D/t), two gated residual adds (2 x 3D), the FFN activation (2F/t); cross blocks add a norm
  // and a residual (5D). Read + write of each, in the activation dtype; the runtime's
  // elementwise_traffic scales it to what the framework's unfused ops move.
  void elementwise() {
    const double t = ctx_.axes.t, f = ctx_.m.ffn_hidden;
    double per_token = 10.0 * d() + 8.0 * d() / t + 2.0 * f / t + (ModelProfile::cross_attends(g_) ? 5.0 * d() : 0.0);
    if (g_.image_self_attention) per_token += 6.0 * d();
    if (g_.skip) per_token += 2.0 * 2.0 * d();  // skip_norm, LayerNorm over the 2D concatenation
    const Timed e = ctx_.hw.memory(nb() * ctx_.tokens * per_token * b() * elementwise_traffic(ctx_.q, ctx_.runtime));
    bc().memory_ms += e.ms;
    note_source(bc().sources.memory, e.source);
  }

  // TP: every row-parallel projection ends in an all-reduce of its tokens' activations. Double
  // blocks: attention out and FFN out per stream (image, text); single blocks: one, their output
  // projection fuses attention and MLP (sequential ones: attention out and FFN out); cross blocks:
  // self-attention, cross-attention and FFN; SD3.5-medium's extra image self-attention adds one.
  void tp_all_reduces() {
    if (ctx_.axes.t <= 1) return;
    auto all_reduce = [&](int count, double on_tokens, double width) {
      if (count == 0 || on_tokens <= 0) return;
      const CommGroup& grp = ctx_.group(CommAxis::kTp);
      const Timed t = ctx_.hw.collective(Collective::kAllReduce, nb() * on_tokens * width * b(), grp);
      bc().comm_ms += count * t.ms;
      axis_ms_[static_cast<int>(CommAxis::kTp)] += count * t.ms;
      out_.bytes_sent += count * nb() * on_tokens * width * b() * busbw_factor(Collective::kAllReduce, ctx_.axes.t);
      collective(grp, count);
      tp_all_reduces_ += count;
      note_source(bc().sources.comm, t.source);
    };
    if (g_.kind == BlockKind::kDouble) {
      all_reduce(2 + (g_.image_self_attention ? 1 : 0), ctx_.tokens - ctx_.text_local, d());
      all_reduce(2, ctx_.text_local, ctx_.m.text_width());
    } else {
      const int outputs = ModelProfile::cross_attends(g_) ? 3 : g_.kind == BlockKind::kCross || g_.sequential ? 2 : 1;
      all_reduce(outputs, ctx_.tokens, d());
    }
  }

  // Fully sharded weights: before the block runs, its parameters are all-gathered over the fs group
  // (nccl-tests size: the whole block; each rank receives (F-1)/F of it). The runtime prefetches
  // the next block's gather on its own stream while this block computes (xDiT, FSDP's forward
  // prefetch), so only what the gather takes beyond the block's GPU work is exposed. One
  // collective to launch; no wait for the slowest rank, which the prefetch hides.
  void fully_shard_gather() {
    const int f = ctx_.axes.f;
    if (f <= 1) return;
    const CommGroup& grp = ctx_.group(CommAxis::kFs);
    const Bytes weights = fully_shard_block_bytes(ctx_.m, g_, ctx_.q.precision);
    const Timed t = ctx_.hw.collective(Collective::kAllGather, weights, grp);
    const Milliseconds exposed = std::max(0.0, t.ms - bc().device_ms());
    bc().comm_ms += exposed;
    axis_ms_[static_cast<int>(CommAxis::kFs)] += exposed;
    out_.bytes_sent += weights * busbw_factor(Collective::kAllGather, f);
    if (grp.ranks > 1) bc().collective_calls += 1;
    note_source(bc().sources.comm, t.source);
  }

  void collective(const CommGroup& grp, double count) {
    if (grp.ranks <= 1) return;
    bc().collective_calls += count;
    bc().sync_ms += count * ctx_.runtime.sync_us * 1e-3 * slowest_rank_factor(grp.ranks);
  }

  void host() {
    const RuntimeProfile& rt = ctx_.runtime;
    const HostOps ops = block_host_ops(ctx_, g_);
    bc().ops = ops.block + tp_all_reduces_ * rt.ops.tp_all_reduce + tp_linears_ * rt.ops.tp_linear + quantize_ops_;
    bc().ulysses_ops = ops.ulysses;
    bc().ring_ops = ops.ring;
    bc().ring_iteration_ops = ops.ring_iterations;
    bc().host_ms = rt.host_ms(bc().ops + ops.ulysses + ops.ring + ops.ring_iterations) +
                   bc().collective_calls * rt.collective_us * 1e-3;
    bc().attention_module_host_ms = rt.host_ms(ops.attention);
  }

  void live_bytes() {
    const double t = ctx_.axes.t, f = ctx_.m.ffn_hidden;
    const bool cross = ModelProfile::cross_attends(g_);
    const Bytes qkvo = 4.0 * ctx_.tokens * d() / t * b() + (cross ? 2.0 * ctx_.text * d() / t * b() : 0.0);
    // Attention that writes each call's scores (RuntimeProfile::attention_score_tensors).
    const AttentionCost& a = ctx_.attention;
    const RuntimeProfile& rt = ctx_.runtime;
    const Bytes scores = rt.attention_score_tensors * a.q_tokens * a.kv_tokens * a.heads *
                         (rt.attention_score_bytes > 0 ? rt.attention_score_bytes : b());
    const Bytes attention = nb() * (qkvo + a.transient_bytes + scores);
    const Bytes ffn = nb() * ctx_.tokens * f / t * b() * (ctx_.m.ffn_kind == FfnKind::kGelu ? 2.0 : 3.0);
    out_.live_bytes = std::max(attention, ffn);
  }

  void scale() {
    live_bytes();
    BlockCost& c = bc();
    c.source = Source::kDatasheet;
    std::optional<Source> all;
    for (const auto& term : {c.sources.gemm, c.sources.attention, c.sources.memory, c.sources.comm})
      if (term) note_source(all, *term);
    c.source = all.value_or(Source::kDatasheet);
    const double n = g_.count;
    for (Milliseconds* x : {&c.flops, &c.gemm_ms, &c.gemm_traffic_ms, &c.attention_ms, &c.memory_ms, &c.host_ms, &c.comm_ms, &c.sync_ms,
                            &c.attention_module_ms, &c.attention_module_host_ms, &c.collective_calls, &c.ops, &c.ulysses_ops, &c.ring_ops,
                            &c.ring_iteration_ops})
      *x *= n;
    for (int i = 0; i < kCommAxisCount; ++i) out_.axis_comm_ms[i] = axis_ms_[i] * n;
    out_.bytes_sent *= n;
  }

  const StepContext& ctx_;
  const BlockGroup& g_;
  BlockTerms out_;
  std::array<Milliseconds, kCommAxisCount> axis_ms_{};
  double tp_all_reduces_ = 0;
  double tp_linears_ = 0;  // the block's tensor-parallel linears
  double quantize_ops_ = 0;  // kernels quantizing the GEMMs' inputs
  bool in_attention_ = false;  // the GEMMs being priced are an attention module's that a cache predicts
  bool predicted_ = true;      // the attention layer being priced is one a cache's hook predicts
};

}  // namespace

double elementwise_traffic(const Query& q, const RuntimeProfile& rt) {
  if (!q.kernels || !q.hardware || rt.elementwise_traffic <= 1) return rt.elementwise_traffic;
  // The runtime's traffic beyond one pass, less the share of it the fused kinds no longer move.
  return 1 + (rt.elementwise_traffic - 1) * q.hardware->kernels.unfused_excess_share(q.kernels->fused);
}

double unfused_ops_share(const Query& q, const RuntimeProfile& rt) {
  if (!q.kernels || !q.hardware || rt.elementwise_traffic <= 1 || rt.ops.double_block <= 0) return 1;
  return 1 - std::min(0.9, q.hardware->kernels.ops_saved(q.kernels->fused) / rt.ops.double_block);
}

double slowest_rank_factor(int ranks) { return ranks > 1 ? std::sqrt(2.0 * std::log(static_cast<double>(ranks))) : 0; }

namespace {
// The ops a block's count holds for q/k norms and RoPE that this model's blocks do not launch. The
// counts are those of FLUX's and Wan's blocks: a double-stream block normalizes four tensors (q and
// k of each stream) and rotates two (the joint q and k); a single-stream block two and two; a
// cross-attention block four (q and k of its self- and cross-attention) and two.
double positional_ops_absent(const ModelProfile& m, const RuntimeOps& ops, BlockKind kind) {
  const double norms = kind == BlockKind::kSingle ? 2 : 4, rotations = 2;
  return (m.qk_norm ? 0 : norms * ops.qk_norm) + (m.rope ? 0 : rotations * ops.rope);
}
}  // namespace

HostOps block_host_ops(const StepContext& ctx, const BlockGroup& g) {
  const RuntimeOps& ops = ctx.runtime.ops;
  const CpCostTraits cp = cp_cost_strategy(ctx.variant).traits();
  const bool ulysses = cp.ulysses_ops, ring = cp.ring_ops, anything = cp.anything_ops;
  const double layers = 1 + (g.image_self_attention ? 1 : 0);  // attention layers of the block
  HostOps out;
  const double block = (g.kind == BlockKind::kDouble   ? ops.double_block
                        : g.kind == BlockKind::kSingle ? ops.single_block
                                                       : ops.cross_block) -
                       positional_ops_absent(ctx.m, ops, g.kind);
  const double share = unfused_ops_share(ctx.q, ctx.runtime);
  out.block = (block + (g.image_self_attention ? ops.image_attention : 0)) * share + (anything ? layers * ops.anything : 0);
  const double attention = g.kind == BlockKind::kDouble   ? ops.double_attention
                           : g.kind == BlockKind::kSingle ? ops.single_attention
                                                          : ops.cross_attention;
  // The q/k norms and rotations a model does not launch are the attention modules' own.
  if (attention > 0) out.attention = (attention - positional_ops_absent(ctx.m, ops, g.kind)) * share;
  out.ulysses = ulysses ? layers * ops.ulysses : 0;
  out.ring = ring ? layers * ops.ring : 0;
  out.ring_iterations = ring ? layers * ctx.axes.r * ops.ring_iteration : 0;
  return out;
}

BlockTerms block_terms(const StepContext& ctx, const BlockGroup& g) { return BlockBuilder(ctx, g).build(); }

}  // namespace cpplan::costmodel
