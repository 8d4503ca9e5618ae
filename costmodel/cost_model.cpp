#include "costmodel/cost_model.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include "costmodel/cp_cost.h"
#include "costmodel/pipefusion_cost.h"
#include "costmodel/predict_terms.h"

namespace cpplan::costmodel {

namespace {

// Hidden-sized tensors resident across a block: hidden states, residual, modulation outputs.
constexpr double kResidentActivations = 4.0;
// Kernels of one block without a runtime profile (norms, modulation, projections, RoPE, the
// attention call, FFN, gated residuals); collectives add two each.
constexpr double kKernelsPerBlock[] = {31, 17, 26};  // double, single, cross

// One FFN of `width` in and out and `hidden` inside: gated and conv-GLU FFNs project up to 2F.
double ffn_weights(const ModelProfile& m, double width, double hidden) {
  return (m.ffn_kind == FfnKind::kGelu ? 2.0 : 3.0) * width * hidden;
}

// The linear weights of one stream of a block that a token runs (`ffn_count` FFNs: the active
// and shared experts) or that the block holds (all experts), with the router.
double stream_linear_weights(const ModelProfile& m, bool cross, double width, double hidden, int ffn_count) {
  const double d = m.hidden();
  const double attention = 4.0 * d * width;  // q, k, v, out between the stream and the heads
  const double router = m.experts > 0 ? width * m.experts : 0.0;
  return attention + (cross ? 2.0 * d * d : 0.0) + ffn_count * ffn_weights(m, width, hidden) + router;
}

Source worst(Source a, Source b) { return std::min(a, b); }  // datasheet < measured < calibrated

// Ranks are laid out tp innermost, then ulysses, ring, pp, cfg, dp (xDiT's tp-sp-pp-cfg-dp order
// with Ulysses inside Ring), so a group of `ranks` at `stride` leaves the node once its span does;
// it spans as many nodes as its ranks' positions fall in.
CommGroup group(int ranks, int stride, const HardwareProfile& hw) {
  const long long per_node = std::max(1, hw.gpus_per_node);
  // The nodes of ranks 0, stride, ..., (ranks - 1) x stride: a stride of a node or more puts each
  // on its own node; a shorter one steps at most one node at a time, so every node from the
  // first to the last is hit.
  const long long nodes = stride >= per_node ? ranks : (ranks - 1LL) * stride / per_node + 1;
  return {ranks, stride, static_cast<int>(std::max(1LL, nodes))};
}

}  // namespace

Collective main_collective(CommAxis axis, const ParallelConfig& c, CpVariant v) {
  switch (axis) {
    case CommAxis::kTp: return Collective::kAllReduce;
    case CommAxis::kUlysses:
      return cp_cost_strategy(v).main_collective(CpAxis::kUlysses, c.context_parallel_config.rotate_method);
    case CommAxis::kRing:
      return cp_cost_strategy(v).main_collective(CpAxis::kRing, c.context_parallel_config.rotate_method);
    case CommAxis::kPp: return Collective::kSendRecv;
    case CommAxis::kCp:
    case CommAxis::kCfg:
    case CommAxis::kFs: return Collective::kAllGather;
  }
  return Collective::kAllGather;
}

std::string_view to_string(CommAxis a) {
  constexpr std::string_view n[] = {"tp", "ulysses", "ring", "cp", "cfg", "pp", "fs"};
  return n[static_cast<int>(a)];
}

CommLayout default_layout(const ParallelConfig& pc, const HardwareProfile& hw) {
  const Axes a(pc);
  CommLayout l;
  l[CommAxis::kTp] = group(a.t, 1, hw);
  l[CommAxis::kUlysses] = group(a.u, a.t, hw);
  l[CommAxis::kRing] = group(a.r, a.t * a.u, hw);
  l[CommAxis::kCp] = group(a.r * a.u, a.t, hw);
  l[CommAxis::kPp] = group(a.p, a.t * a.u * a.r, hw);
  l[CommAxis::kCfg] = group(a.c, a.t * a.u * a.r * a.p, hw);
  // The fully-shard group: F consecutive ranks (the innermost axes' ranks, whose links are the
  // fastest), whatever axes they belong to.
  l[CommAxis::kFs] = group(a.f, 1, hw);
  return l;
}

double linear_weights_per_token(const ModelProfile& m, BlockKind kind) {
  return stream_linear_weights(m, kind == BlockKind::kCross, m.hidden(), m.ffn_hidden, m.ffn_runs());
}

std::string_view to_string(MemoryPhase p) {
  constexpr std::string_view n[] = {"load", "encode", "denoise", "decode"};
  return n[static_cast<int>(p)];
}

std::array<Bytes, kMemoryPhaseCount> MemoryBreakdown::phases() const {
  const Bytes resident = transformer_weights + text_encoder_weights + vae_weights;
  std::array<Bytes, kMemoryPhaseCount> out{};
  out[static_cast<int>(MemoryPhase::kLoad)] = runtime_reserved + load_weights;
  out[static_cast<int>(MemoryPhase::kEncode)] = runtime_reserved +
                                                (transformer_while_encoding ? transformer_weights : 0.0) +
                                                text_encoder_weights + vae_weights + text_encode;
  out[static_cast<int>(MemoryPhase::kDenoise)] = runtime_reserved + resident + activations + step_cache;
  out[static_cast<int>(MemoryPhase::kDecode)] = runtime_reserved + resident + vae_decode;
  return out;
}

MemoryPhase MemoryBreakdown::peak_phase() const {
  const std::array<Bytes, kMemoryPhaseCount> ph = phases();
  int best = static_cast<int>(MemoryPhase::kDenoise);
  for (int i = 0; i < kMemoryPhaseCount; ++i)
    if (ph[i] > ph[best]) best = i;
  return static_cast<MemoryPhase>(best);
}

Bytes MemoryBreakdown::peak() const {
  const std::array<Bytes, kMemoryPhaseCount> ph = phases();
  return *std::max_element(ph.begin(), ph.end());
}

std::string_view to_string(HostLoad h) {
  constexpr std::string_view n[] = {"fits", "staggered", "too large", "unknown"};
  return n[static_cast<int>(h)];
}

HostLoad host_load_verdict(Bytes per_rank, int ranks, Bytes host) {
  if (host <= 0) return HostLoad::kUnknown;
  if (per_rank * ranks <= host) return HostLoad::kFits;
  return per_rank <= host ? HostLoad::kStaggered : HostLoad::kTooLarge;
}

// Keys each query of a self-attention layer of `g` meets: the whole sequence; a frame's tokens in
// the spatial blocks of a model with temporal blocks, its frames in those (Latte); linear
// attention's head_dim + 1 (the K^T V state and its normalizer per head).
double attention_keys(const ModelProfile& m, const BlockGroup& g, const Sequence& s) {
  if (m.attention == AttentionKind::kLinear) return m.head_dim + 1.0;
  bool factored = false;
  for (const BlockGroup& b : m.blocks) factored = factored || b.temporal;
  if (!factored) return static_cast<double>(s.attention_tokens);
  const double frames = static_cast<double>(s.latent_frames);
  return g.temporal ? frames : static_cast<double>(s.image_tokens) / frames;
}

Flops forward_flops(const ModelProfile& m, const Sequence& s) {
  const double d = m.hidden();
  const double img = s.image_tokens, txt = s.text_tokens, seq = s.attention_tokens;
  Flops total = 0;
  for (const auto& g : m.blocks) {
    const bool narrow_text = g.kind == BlockKind::kDouble && m.text_hidden > 0;
    const bool cross = ModelProfile::cross_attends(g);
    Flops f = 2.0 * stream_linear_weights(m, cross, m.hidden(), m.ffn_hidden, m.ffn_runs()) *
              (g.kind == BlockKind::kCross || narrow_text || g.text_kv_only ? img : seq);
    if (g.text_kv_only) f += 2.0 * 2.0 * d * d * txt;  // the text's keys and values (PRX)
    if (narrow_text) f += 2.0 * stream_linear_weights(m, false, m.text_width(), m.text_ffn(), m.ffn_runs()) * txt;
    if (m.ffn_kind == FfnKind::kConvGlu) f += 2.0 * 9.0 * 2.0 * m.ffn_hidden * img;  // the depthwise 3x3 conv
    if (g.skip) f += 2.0 * 2.0 * d * d * img;                                        // skip_linear 2D -> D
    f += 2.0 * m.ffn_temporal_taps * d * d * img;  // the temporal conv after the FFN (SANA-Video's conv_temp)
    if (const auto& x = m.side_cross; x.every > 0)  // ConsisID's face cross-attention, 1 / every of it per block
      f += (2.0 * 2.0 * d * x.inner * img + 2.0 * 2.0 * x.width * x.inner * x.tokens + 4.0 * img * x.tokens * x.inner) /
           x.every;
    f += 4.0 * (g.text_kv_only ? img : seq) * attention_keys(m, g, s) * d;
    if (cross) f += 2.0 * 2.0 * d * d * txt + 4.0 * img * txt * d;
    if (g.image_self_attention) f += 2.0 * 4.0 * d * d * img + 4.0 * img * img * d;
    total += f * g.count;
  }
  return total;
}

void note_source(std::optional<Source>& term, Source input) { term = term ? worst(*term, input) : input; }

RuntimeProfile kernel_launch_runtime(const HardwareModel& hw) {
  RuntimeProfile rt;
  rt.name = "";
  rt.us_per_op = hw.launch_us();
  rt.ops.double_block = kKernelsPerBlock[0];
  rt.ops.single_block = kKernelsPerBlock[1];
  rt.ops.cross_block = kKernelsPerBlock[2];
  rt.ops.image_attention = 1;
  rt.ops.ring_iteration = 1;
  rt.ops.tp_all_reduce = 0;
  rt.collective_us = 2 * hw.launch_us();
  return rt;
}

namespace {
// Linear attention under the plan's CP split: the kernel runs relu(k)^T [v | 1] and relu(q) times
// that state, 2 x 2 x tokens x head_dim x (head_dim + 1) FLOPs per head (kv_tokens = head_dim + 1,
// one call); Ulysses keeps its all-to-alls, and Ring, instead of passing K/V blocks, all-reduces
// each rank's fp32 state [heads x head_dim x (head_dim + 1)] once per layer.
AttentionCost linear_attention(const AttentionCost& softmax, const AttentionInput& in) {
  AttentionCost c = softmax;
  c.kv_tokens = in.head_dim + 1.0;
  c.calls = 1;
  c.merge_bytes = 0;
  const Bytes state = static_cast<double>(in.heads) / std::max(1, in.ulysses) * in.head_dim * (in.head_dim + 1.0) * 4.0;
  c.transient_bytes = state;
  c.comm_count = 0;
  for (int i = 0; i < softmax.comm_count; ++i)
    if (softmax.comm[i].axis == CpAxis::kUlysses) c.add(softmax.comm[i]);
  if (in.ring > 1) c.add({Collective::kAllReduce, CpAxis::kRing, state, 1});
  return c;
}
// Latte's factored attention over a split of spatial tokens (each rank holds every frame of its
// rows). The spatial blocks attend within a frame: under Ring each K/V block holds 1 / r of the
// frame's keys. The temporal blocks attend across the frames of each position, all on the rank:
// under Ring they exchange nothing (Ulysses still moves heads for the frames' all-to-all).
void factor_by_frames(const ModelProfile& m, const Sequence& s, int ring, AttentionCost& spatial,
                      AttentionCost& temporal) {
  for (const BlockGroup& g : m.blocks)
    (g.temporal ? temporal : spatial).kv_tokens = attention_keys(m, g, s) / (g.temporal ? 1 : ring);
  if (ring <= 1) return;
  const AttentionCost ringed = temporal;
  temporal.calls = 1;
  temporal.merge_bytes = 0;
  temporal.comm_count = 0;
  for (int i = 0; i < ringed.comm_count; ++i)
    if (ringed.comm[i].axis == CpAxis::kUlysses) temporal.add(ringed.comm[i]);
}
}  // namespace

StepContext::StepContext(const Query& query, const ParallelConfig& c, CpVariant v, const HardwareModel& model,
                         const RuntimeProfile& rt, const CommLayout* layout)
    : q(query), m(*query.model), hw(model), runtime(rt), config(c), variant(v), axes(c),
      groups(layout ? *layout : default_layout(c, model.profile())) {
  const bool joint = m.text_handling == TextHandling::kJoint;
  text = static_cast<double>(q.sequence.text_tokens);
  samples = std::max(1.0, static_cast<double>(m.passes_per_step()) / axes.c) *
            std::max(1.0, static_cast<double>(q.batch) / axes.d);
  input.image_tokens = static_cast<double>(q.sequence.image_tokens);
  input.text_tokens = joint ? text : 0;
  input.split_text = m.cp_split == CpSplit::kImageAndText;
  input.heads = m.heads / axes.t;
  input.head_dim = m.head_dim;
  input.ring = axes.r;
  input.ulysses = axes.u;
  input.elem_bytes = m.bytes_per_activation;
  input.fp32_merge = c.context_parallel_config.convert_to_fp32;
  input.ring_p2p = c.context_parallel_config.rotate_method == RotateMethod::kP2P;
  const CpCostStrategy& strategy = cp_cost_strategy(v);
  attention = strategy.attention(input);
  AttentionInput image_only = input;
  image_only.text_tokens = 0;
  image_attention = strategy.attention(image_only);
  if (m.attention == AttentionKind::kLinear) attention = image_attention = linear_attention(attention, input);
  temporal_attention = attention;
  const bool factored = std::any_of(m.blocks.begin(), m.blocks.end(), [](const BlockGroup& g) { return g.temporal; });
  if (factored) factor_by_frames(m, q.sequence, axes.r, attention, temporal_attention);
  tokens = attention.tokens;
  text_local = !joint ? 0.0 : (input.split_text ? cp::ceil_div(text, axes.r * axes.u) : text);
  if (axes.p > 1 && axes.r * axes.u > 1) image_runs = std::max(1, c.pipefusion.patches);
}

namespace {

}  // namespace

Bytes add_block_groups(const StepContext& ctx, Prediction& p, std::optional<Source>& source) {
  Bytes live = 0;
  for (const BlockGroup& g : ctx.m.blocks) {
    const BlockTerms t = block_terms(ctx, g);
    const BlockCost& bc = t.cost;
    for (int i = 0; i < kCommAxisCount; ++i) p.axis_comm_ms[i] += t.axis_comm_ms[i];
    p.step_flops += bc.flops;
    p.comm_bytes += t.bytes_sent;
    add_to_step(p, bc);
    note_source(source, bc.source);
    if (p.block_count < kMaxBlockGroups) p.blocks[p.block_count++] = bc;
    live = std::max(live, t.live_bytes);
  }
  return live;
}

// The step's layers outside the blocks, whole on every rank (never sharded), as the transformer's
// forward runs them around its blocks: the patch embedding of the rank's image tokens, the text
// embedding (joint text: the rank's text tokens; cross-attention: the whole text), the timestep's
// sinusoid (256 features) through its two-layer MLP and the output layer's adaLN projection (a
// row per sample), the projection back to latent channels; the output LayerNorm and modulation
// read and write the image tokens twice. Priced like the blocks' GEMMs and memory-bound work; on a
// GPU a fraction of a percent of the step, on a CPU a share that a cached step of a few blocks feels.
void add_step_layers(const StepContext& ctx, double image_local, BlockCost& rest) {
  const ModelProfile& m = ctx.m;
  const double d = m.hidden(), b = m.bytes_per_activation, n = ctx.samples;
  const Component* encoder = m.text_encoders.empty() ? nullptr : &m.text_encoders.front();
  const double text_in = encoder && encoder->hidden > 0 ? encoder->hidden : m.text_width();
  const double text_rows = m.text_handling == TextHandling::kJoint ? ctx.text_local : ctx.text;
  auto gemm = [&](double rows, double k, double out) {
    if (rows <= 0) return;
    const Flops fl = 2.0 * n * rows * k * out;
    add_gemm(rest, fl, ctx.hw.gemm(fl, k * out * m.bytes_per_param + n * rows * (k + out) * b, n * rows));
  };
  gemm(image_local, m.in_channels, d);
  gemm(text_rows, text_in, m.text_width());
  gemm(1, 256, d);
  gemm(1, d, d);
  if (m.modulation != Modulation::kTable) gemm(1, d, 2.0 * d);
  gemm(image_local, d, m.in_channels);
  const Timed norm = ctx.hw.memory(4.0 * n * image_local * d * b);
  rest.memory_ms += norm.ms;
  note_source(rest.sources.memory, norm.source);
}

StepRestTerms step_rest(const StepContext& ctx) {
  const ModelProfile& m = ctx.m;
  const Axes& a = ctx.axes;
  const double b = m.bytes_per_activation, img = static_cast<double>(ctx.q.sequence.image_tokens);
  const Bytes prediction = img * m.in_channels * b;
  // The CP output gather pads every rank's share to the longest (equal shapes for all-gather).
  const Bytes gathered = cp::ceil_div(img, a.r * a.u) * a.r * a.u * m.in_channels * b;
  const CommGroup& cp_group = ctx.group(CommAxis::kCp);
  const CommGroup& cfg_group = ctx.group(CommAxis::kCfg);
  const Timed gather = ctx.hw.collective(Collective::kAllGather, ctx.samples * gathered, cp_group);
  const Timed cfg = ctx.hw.collective(Collective::kAllGather, a.c * prediction * ctx.q.batch / a.d, cfg_group);
  StepRestTerms out;
  BlockCost& rest = out.cost;
  rest.count = 1;
  rest.overlapped = ctx.runtime.overlaps_device;
  rest.comm_ms = gather.ms + cfg.ms;
  if (cp_group.ranks > 1) note_source(rest.sources.comm, gather.source);
  if (cfg_group.ranks > 1) note_source(rest.sources.comm, cfg.source);
  rest.collective_calls = (cp_group.ranks > 1 ? 1 : 0) + (cfg_group.ranks > 1 ? 1 : 0);
  out.cp_gather_ms = gather.ms;
  out.cfg_gather_ms = cfg.ms;
  out.bytes_sent = ctx.samples * gathered * busbw_factor(Collective::kAllGather, cp_group.ranks) +
                   a.c * prediction * ctx.q.batch / a.d * busbw_factor(Collective::kAllGather, a.c);
  const Timed scheduler = ctx.hw.memory(3.0 * img * m.in_channels * 4.0 * ctx.q.batch / a.d);
  rest.memory_ms = scheduler.ms;
  note_source(rest.sources.memory, scheduler.source);
  add_step_layers(ctx, cp::ceil_div(img, a.r * a.u), rest);
  const RuntimeProfile& rt = ctx.runtime;
  rest.ops = rt.ops.step;
  rest.host_ms = rt.host_ms(rest.ops) + rest.collective_calls * rt.collective_us * 1e-3;
  rest.sync_ms = rt.sync_us * 1e-3 * (slowest_rank_factor(cp_group.ranks) + slowest_rank_factor(cfg_group.ranks));
  return out;
}

void add_step_rest(Prediction& p, const StepRestTerms& rest, std::optional<Source>& source) {
  p.axis_comm_ms[static_cast<int>(CommAxis::kCp)] += rest.cp_gather_ms;
  p.axis_comm_ms[static_cast<int>(CommAxis::kCfg)] += rest.cfg_gather_ms;
  p.comm_bytes += rest.bytes_sent;
  p.step_rest = rest.cost;
  p.step_comm_extra_ms = rest.cost.comm_ms;
  p.step_comm_extra_source = rest.cost.sources.comm;
  if (rest.cost.sources.comm) note_source(source, *rest.cost.sources.comm);
  add_to_step(p, rest.cost);
}

void add_gemm(BlockCost& c, Flops flops, const Timed& t) {
  c.flops += flops;
  c.gemm_ms += t.ms;
  if (t.bandwidth_bound) c.gemm_traffic_ms += t.ms;
  note_source(c.sources.gemm, t.source);
}

void add_to_step(Prediction& p, const BlockCost& b) {
  p.compute_ms += b.kernels_ms();
  p.comm_ms += b.comm_ms;
  p.host_ms += b.host_ms;
  p.sync_ms += b.sync_ms;
  p.step_ms += b.time_ms();
  p.collective_calls += b.collective_calls;
}

double steps_per_sec(Milliseconds step_ms) { return step_ms > 0 ? 1e3 / step_ms : 0; }

void calibrate_step(Prediction& p, const StepCorrection& correction, const ParallelConfig& pc) {
  const Milliseconds corrected = correction(p, pc);
  p.cached_step_ms = corrected_cached_step_ms(p, corrected);
  p.uncalibrated_step_ms = p.step_ms;
  p.step_ms = corrected;
  p.steps_per_sec = steps_per_sec(p.step_ms);
  p.calibrated = true;
}

double block_linear_params(const ModelProfile& m, const BlockGroup& g) {
  const double d = m.hidden();
  const int held = m.ffn_copies();
  const bool cross = ModelProfile::cross_attends(g);
  double per_block = stream_linear_weights(m, cross, d, m.ffn_hidden, held);
  if (g.kind == BlockKind::kDouble) per_block += stream_linear_weights(m, false, m.text_width(), m.text_ffn(), held);
  if (cross) per_block += 2.0 * d * d;
  if (g.image_self_attention) per_block += 4.0 * d * d;
  return per_block;
}

double all_block_linear_params(const ModelProfile& m) {
  double sharded = 0;
  for (const BlockGroup& g : m.blocks) sharded += block_linear_params(m, g) * g.count;
  return std::min(sharded, m.params);
}

Bytes linear_weight_bytes(const ModelProfile& m, const Precision& p) {
  return p.quantized() ? weight_bytes(p.weights) : m.bytes_per_param;
}

Bytes transformer_weight_bytes(const ModelProfile& m, int tp, const Precision& p) {
  const double sharded = all_block_linear_params(m);
  return sharded / tp * linear_weight_bytes(m, p) + (m.params - sharded) * m.bytes_per_param;
}

namespace {
// The adaLN modulation a block holds itself (fully_shard_block_params). pipefusion_cost.cpp has its
// own for FLUX.1-style blocks only.
double own_modulation_params(const ModelProfile& m, const BlockGroup& g) {
  const double d = m.hidden();
  switch (m.modulation) {
    case Modulation::kShared: return 0.0;          // FLUX.2: the projections sit outside the blocks
    case Modulation::kTable: return 6.0 * d;       // a learned 6 x D table per block
    case Modulation::kExpert: return 12.0 * d * d; // the image's and the text's 6 D x D each
    case Modulation::kBlock: break;
  }
  if (g.kind == BlockKind::kDouble) return ((g.image_self_attention ? 9.0 : 6.0) * d + 6.0 * m.text_width()) * d;
  return (g.kind == BlockKind::kSingle && !g.sequential ? 3.0 : 6.0) * d * d;
}

// Every block's parameters together (linears and modulation) over the model's, capped at 1 (a
// profile whose blocks would count more than its parameters: they are all there is).
double block_share(const ModelProfile& m) {
  double blocks = 0;
  for (const BlockGroup& g : m.blocks) blocks += (block_linear_params(m, g) + own_modulation_params(m, g)) * g.count;
  return blocks > m.params && blocks > 0 ? m.params / blocks : 1.0;
}
}  // namespace

double fully_shard_block_params(const ModelProfile& m, const BlockGroup& g) {
  return (block_linear_params(m, g) + own_modulation_params(m, g)) * block_share(m);
}

Bytes fully_shard_block_bytes(const ModelProfile& m, const BlockGroup& g, const Precision& p) {
  return (block_linear_params(m, g) * linear_weight_bytes(m, p) + own_modulation_params(m, g) * m.bytes_per_param) *
         block_share(m);
}

Bytes fully_shard_gathered_bytes(const ModelProfile& m, const Precision& p) {
  double largest = 0;
  for (const BlockGroup& g : m.blocks) largest = std::max(largest, fully_shard_block_bytes(m, g, p));
  return kFsGatheredBlocks * largest;
}

Bytes fully_sharded_weight_bytes(const ModelProfile& m, int fs, const Precision& p) {
  double blocks = 0, block_bytes = 0;
  for (const BlockGroup& g : m.blocks) {
    blocks += fully_shard_block_params(m, g) * g.count;
    block_bytes += fully_shard_block_bytes(m, g, p) * g.count;
  }
  const double whole = m.params - blocks;  // embedders, output layer: every rank holds them whole
  return block_bytes / fs + whole * m.bytes_per_param + fully_shard_gathered_bytes(m, p);
}

MemoryBreakdown denoising_memory(const StepContext& ctx, Bytes live) {
  const ModelProfile& m = ctx.m;
  const double d = m.hidden(), b = m.bytes_per_activation;
  MemoryBreakdown mem;
  // A pipeline of two transformers (Wan2.2 A14B's noise experts) holds both, unless the idle one
  // waits in host memory; a step runs one.
  const int held = ctx.q.offload_idle_transformer ? 1 : m.transformers;
  mem.transformer_weights =
      held *
      (ctx.axes.f > 1 ? fully_sharded_weight_bytes(m, ctx.axes.f, ctx.q.precision)
                      : transformer_weight_bytes(m, ctx.axes.t, ctx.q.precision));
  mem.vae_weights = m.vae.weights.params * m.vae.weights.bytes_per_param;
  const bool joint = m.text_handling == TextHandling::kJoint;
  const Bytes resident = ctx.samples * (ctx.tokens * d * kResidentActivations + (joint ? 0.0 : ctx.text * d)) * b;
  mem.attention_extra = ctx.samples * ctx.attention.transient_bytes;
  mem.activations = kFragmentation * (resident + live);
  mem.runtime_reserved = ctx.hw.profile().reserved_mib * kMiB;
  return mem;
}

int placement_complexity(const PipelineCost& p) {
  // replicated, offloaded, sequential, sharded, fully-sharded, fully-sharded-host
  constexpr int kTextEncoder[] = {0, 1, 1, 2, 2, 2};
  static_assert(std::size(kTextEncoder) == kTextEncoderPlacementCount);
  return kTextEncoder[static_cast<int>(p.text_encoder)] + (p.vae == VaePlacement::kSingle ? 0 : 1);
}

Milliseconds corrected_cached_step_ms(const Prediction& p, Milliseconds corrected_step_ms) {
  if (p.cached_step_ms <= 0 || p.step_ms <= 0) return p.cached_step_ms;
  return (p.cached_step_ms - p.cache_work_ms) * corrected_step_ms / p.step_ms + p.cache_work_ms;
}

Milliseconds denoise_ms(const Prediction& p, int steps, int cached) {
  cached = std::clamp(cached, 0, steps);
  return (steps - cached) * p.step_ms + cached * p.cached_step_ms;
}

Milliseconds denoise_ms(const Prediction& p, int steps) { return denoise_ms(p, steps, p.cached_steps); }

Milliseconds mean_step_ms(const Prediction& p, int steps) {
  return p.cached_steps > 0 && steps > 0 ? denoise_ms(p, steps) / steps : p.step_ms;
}

Milliseconds image_ms_with(const Prediction& p, int option, int steps, int cached) {
  return denoise_ms(p, steps, cached) + p.pipeline_options[option].cost.total_ms();
}

Milliseconds image_ms_with(const Prediction& p, int option, int steps) {
  return image_ms_with(p, option, steps, p.cached_steps);
}

int choose_pipeline(const Prediction& p, PipelineOptionMask allowed, int steps, Bytes capacity) {
  std::array<Bytes, kPipelineOptionCount> peak{};
  for (int i = 0; i < p.pipeline_option_count; ++i) peak[i] = p.pipeline_options[i].memory.peak();
  const auto in = [&](int i) { return (allowed >> i) & 1u; };
  const auto fits = [&](int i) { return peak[i] <= capacity; };
  int smallest = -1;
  Milliseconds fastest = std::numeric_limits<Milliseconds>::infinity();
  for (int i = 0; i < p.pipeline_option_count; ++i) {
    if (!in(i)) continue;
    if (smallest < 0 || peak[i] < peak[smallest]) smallest = i;
    if (fits(i)) fastest = std::min(fastest, p.pipeline_options[i].cost.total_ms());
  }
  if (fastest == std::numeric_limits<Milliseconds>::infinity()) return smallest;  // none fits (or none allowed)
  const Milliseconds budget = fastest + kPlacementGain * (denoise_ms(p, steps) + fastest);
  int best = -1;
  const auto key = [&](int i) {
    return std::pair(placement_complexity(p.pipeline_options[i].cost), p.pipeline_options[i].cost.total_ms());
  };
  for (int i = 0; i < p.pipeline_option_count; ++i)
    if (in(i) && fits(i) && p.pipeline_options[i].cost.total_ms() <= budget && (best < 0 || key(i) < key(best))) best = i;
  return best;
}

void use_pipeline(Prediction& p, int option, int steps, Bytes capacity) {
  const PipelineOption& placed = p.pipeline_options[option];
  p.pipeline_choice = option;
  p.pipeline = placed.cost;
  p.memory = placed.memory;
  p.text_encode_ms = placed.cost.text_encode_ms;
  p.vae_decode_ms = placed.cost.vae_decode_ms;
  p.image_ms = image_ms_with(p, option, steps);
  p.peak_phase = p.memory.peak_phase();
  p.peak_mem_bytes = p.memory.phase(p.peak_phase);
  p.transformer_peak_bytes = p.memory.transformer_peak();
  // Every phase on the GPU, and the node's host memory while loading (in turn, if need be).
  p.fits_memory = p.peak_mem_bytes <= capacity && p.host_load != HostLoad::kTooLarge;
  if (p.compile_ms > 0) p.warmup_ms = p.compile_ms + p.image_ms;
}

// The node's host memory while its ranks load: one copy of the pipeline per rank on the node.
void add_host_load(const StepContext& ctx, Prediction& p) {
  const long long world = ctx.config.world_size();
  p.ranks_per_node = static_cast<int>(std::min<long long>(world, std::max(1, ctx.hw.profile().gpus_per_node)));
  const Bytes per_rank = p.pipeline_options[0].memory.host_load_per_rank;  // the same for every placement
  p.host_load_bytes = p.ranks_per_node * per_rank;
  p.host_load = host_load_verdict(per_rank, p.ranks_per_node, ctx.q.host_memory_gib * kGiB);
}

// Prices every placement that applies into p.pipeline_options and uses the cost model's choice.
void place_pipeline(const StepContext& ctx, const MemoryBreakdown& denoising, Prediction& p) {
  const Bytes capacity = ctx.hw.profile().memory_bytes();
  p.pipeline_option_count = placements(ctx, denoising, p.pipeline_options);
  if (p.pipeline_option_count > 0) add_host_load(ctx, p);
  use_pipeline(p, choose_pipeline(p, kEveryPipelineOption, ctx.q.steps, capacity), ctx.q.steps, capacity);
}

namespace {
// The ops of diffusers' TaylorSeer predicting one output of a hooked module (hooks/taylorseer_cache.py
// TaylorSeerState.predict, max_order 1): zeros_like, then for orders 0 and 1 a cast, a multiply
// and an add.
constexpr double kTaylorseerOps = 1 + 2 * 3;
// The outputs its hooks predict per block: a double block's joint attention returns the image's
// and the text's (FluxAttention with added projections); a single block's attention one; a
// self + cross-attention block's two modules one each (where a class's names are hooked at all).
double taylorseer_outputs(BlockKind k) { return k == BlockKind::kSingle ? 1 : 2; }
}  // namespace

// The time of `count` blocks of the step's block groups, taken from the first group onward
// (`from_last`: from the last backward), each at its group's time per block.
Milliseconds blocks_ms(const Prediction& p, int count, bool from_last) {
  Milliseconds ms = 0;
  for (int k = 0; k < p.block_count && count > 0; ++k) {
    const BlockCost& g = p.blocks[from_last ? p.block_count - 1 - k : k];
    const int n = std::min(count, g.count);
    ms += g.count > 0 ? n * g.time_ms() / g.count : 0.0;
    count -= n;
  }
  return ms;
}

// diffusers' TaylorSeer predicts each block's attention outputs instead (max_order 1: from the last
// computed output and its difference per step): every block runs but for its attention modules
// (BlockCost::time_without_attention_ms: their device work, and their dispatch where the runtime
// counts it apart), the rest of the step too, and per block the prediction reads the two stored
// factors and writes the output, 3 hidden-state tensors. Memory: the two factors of every block.
void add_taylorseer_step(const StepContext& ctx, Prediction& p, MemoryBreakdown& denoising, Bytes hidden) {
  double blocks = 0;
  Milliseconds ms = 0;
  for (int k = 0; k < p.block_count; ++k) {
    const BlockCost& b = p.blocks[k];
    const double outputs = taylorseer_outputs(b.kind) * b.count;
    ms += b.time_without_attention_ms(b.attention_module_host_ms > 0 ? ctx.runtime.host_ms(outputs * kTaylorseerOps) : 0);
    blocks += b.count;
  }
  p.cache_work_ms = ctx.hw.memory(3.0 * hidden * blocks).ms;
  p.cached_step_ms = ms + p.step_rest.time_ms() + p.cache_work_ms;
  denoising.step_cache = 2.0 * hidden * blocks;
}

// A cached step (--cache): the first F and last B blocks as a computed step runs them, the rest of
// the step, and the cache's own work on every sample's hidden states of this rank: the stored
// residual added (reading it and the hidden states, writing the sum: 3 tensors), and for a
// threshold policy the decision, the first blocks' output against the previous step's (2 more
// reads), whose mean a CP or TP group all-reduces (one scalar: its latency). Memory: the residual,
// and a threshold policy's previous output. A cache whose hook attaches to none of the model's
// modules caches no step and stores nothing.
void add_cached_step(const StepContext& ctx, Prediction& p, MemoryBreakdown& denoising) {
  const CacheSpec& s = ctx.q.cache;
  const Bytes hidden = ctx.samples * ctx.tokens * ctx.m.hidden() * ctx.m.bytes_per_activation;
  p.cached_steps = cached_steps(s, ctx.q.steps);
  if (!s.hooked) return;
  if (s.policy == CachePolicy::kTaylorseer) return add_taylorseer_step(ctx, p, denoising, hidden);
  const double tensors = s.fixed_schedule() ? 3.0 : 5.0;
  const Timed cache_work = ctx.hw.memory(tensors * hidden);
  Milliseconds decision = 0;
  if (!s.fixed_schedule())
    for (const CommAxis a : {CommAxis::kCp, CommAxis::kTp})
      if (ctx.group(a).ranks > 1) decision += ctx.hw.collective(Collective::kAllReduce, 4, ctx.group(a)).ms;
  p.cache_work_ms = cache_work.ms + decision;
  p.cached_step_ms = blocks_ms(p, s.first_blocks, false) + blocks_ms(p, s.last_blocks, true) +
                     p.step_rest.time_ms() + p.cache_work_ms;
  denoising.step_cache = (s.fixed_schedule() ? 1.0 : 2.0) * hidden;
}

// The steps in the order of docs/cost-model.md: the step's terms (block groups, then the rest of
// the step), the correction of the step time, then the once-per-image placement and memory.
Prediction CostModel::predict(const Query& q, const ParallelConfig& pc, CpVariant v, const CommLayout* layout) const {
  const RuntimeProfile fallback = q.runtime ? RuntimeProfile{} : kernel_launch_runtime(hw_);
  const StepContext ctx(q, pc, v, hw_, q.runtime ? *q.runtime : fallback, layout);
  Prediction p;
  p.runtime = ctx.runtime.name;
  std::optional<Source> source;  // the least measured input of any term
  MemoryBreakdown denoising;
  if (pc.pp() > 1) {  // PipeFusion: stages and patches (pipefusion_cost.cpp)
    denoising = add_pipefusion_step(ctx, p, source);
  } else {
    const Bytes live = add_block_groups(ctx, p, source);
    add_step_rest(p, step_rest(ctx), source);
    denoising = denoising_memory(ctx, live);
    if (q.cache.active()) add_cached_step(ctx, p, denoising);
  }
  p.steps_per_sec = steps_per_sec(p.step_ms);
  p.source = source.value_or(Source::kDatasheet);
  if (correction_) calibrate_step(p, correction_, pc);  // after the terms: the correction reads them
  if (ctx.runtime.compiles())
    p.compile_ms = (ctx.runtime.compile_base_s + ctx.runtime.compile_per_block_s * ctx.m.total_blocks()) * 1e3;
  place_pipeline(ctx, denoising, p);
  return p;
}

}  // namespace cpplan::costmodel
