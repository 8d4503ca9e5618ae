#include "costmodel/cost_model.h"

#include <algorithm>

#include "costmodel/cp_cost.h"

namespace cpplan::costmodel {

namespace {

// Caching allocator slack over the live activations (PyTorch's block rounding and splitting).
constexpr double kFragmentation = 1.15;
// Hidden-sized tensors resident across a block: hidden states, residual, modulation outputs.
constexpr double kResidentActivations = 4.0;
// Eager-mode kernels of one block (norms, modulation, projections, RoPE, attention, FFN,
// gated residuals), counted from the diffusers block forward; collectives add two each.
constexpr int kKernelsPerBlock[] = {30, 16, 24};  // double, single, cross

double ffn_weights(const ModelProfile& m) {
  const double d = m.hidden(), f = m.ffn_hidden;
  return (m.ffn_kind == FfnKind::kSwiGlu ? 3.0 : 2.0) * d * f;
}

Source worst(Source a, Source b) { return std::min(a, b); }  // datasheet < measured < calibrated

Source worst_of(const TermSources& s) {
  std::optional<Source> all;
  for (const auto& term : {s.gemm, s.attention, s.memory, s.comm})
    if (term) note_source(all, *term);
  return all.value_or(Source::kDatasheet);
}

struct Axes {
  int r, u, t, c, d;
  explicit Axes(const ParallelConfig& p) : r(p.ring()), u(p.ulysses()), t(p.tp()), c(p.cfg_degree), d(p.dp_degree) {}
};

// Ranks are laid out tp innermost, then ulysses, ring, cfg, dp (xDiT's tp-sp-cfg-dp order with
// Ulysses inside Ring), so a group of `ranks` at `stride` leaves the node once its span does.
CommGroup group(int ranks, int stride, const HardwareProfile& hw) {
  return {ranks, stride, 1LL * (ranks - 1) * stride >= hw.gpus_per_node};
}

}  // namespace

std::string_view to_string(CommAxis a) {
  constexpr std::string_view n[] = {"tp", "ulysses", "ring", "cp", "cfg"};
  return n[static_cast<int>(a)];
}

CommLayout default_layout(const ParallelConfig& pc, const HardwareProfile& hw) {
  const Axes a(pc);
  CommLayout l;
  l[CommAxis::kTp] = group(a.t, 1, hw);
  l[CommAxis::kUlysses] = group(a.u, a.t, hw);
  l[CommAxis::kRing] = group(a.r, a.t * a.u, hw);
  l[CommAxis::kCp] = group(a.r * a.u, a.t, hw);
  l[CommAxis::kCfg] = group(a.c, a.t * a.u * a.r, hw);
  return l;
}

double linear_weights_per_token(const ModelProfile& m, BlockKind kind) {
  const double d = m.hidden();
  const double attention = 4.0 * d * d;  // q, k, v, out
  return kind == BlockKind::kCross ? attention + 2.0 * d * d + ffn_weights(m)  // + cross q, out
                                   : attention + ffn_weights(m);
}

Bytes MemoryBreakdown::peak() const {
  const Bytes weights = transformer_weights + text_encoder_weights + vae_weights;
  return weights + runtime_reserved + std::max(activations, vae_decode);
}

Flops forward_flops(const ModelProfile& m, const Sequence& s) {
  const double d = m.hidden();
  const double img = s.image_tokens, txt = s.text_tokens, seq = s.attention_tokens;
  Flops total = 0;
  for (const auto& g : m.blocks) {
    Flops f = 2.0 * linear_weights_per_token(m, g.kind) * (g.kind == BlockKind::kCross ? img : seq);
    f += 4.0 * seq * seq * d;
    if (g.kind == BlockKind::kCross) f += 2.0 * 2.0 * d * d * txt + 4.0 * img * txt * d;
    if (g.image_self_attention) f += 2.0 * 4.0 * d * d * img + 4.0 * img * img * d;
    total += f * g.count;
  }
  return total;
}

void note_source(std::optional<Source>& term, Source input) { term = term ? worst(*term, input) : input; }

Prediction CostModel::predict(const Query& q, const ParallelConfig& pc, CpVariant v, const CommLayout* layout) const {
  const ModelProfile& m = *q.model;
  const HardwareProfile& hw = hw_.profile();
  const Axes a(pc);
  const double d = m.hidden(), f = m.ffn_hidden, b = m.bytes_per_activation, wb = m.bytes_per_param;
  const double txt = static_cast<double>(q.sequence.text_tokens);
  const bool joint = m.text_handling == TextHandling::kJoint;
  // Samples in one forward on a rank: true CFG batches both passes unless cfg_degree splits them.
  const double nb = std::max(1.0, static_cast<double>(m.passes_per_step()) / a.c) *
                    std::max(1.0, static_cast<double>(q.batch) / a.d);

  const CommLayout groups = layout ? *layout : default_layout(pc, hw);
  const CommGroup& tp_group = groups[CommAxis::kTp];
  const CommGroup& ulysses_group = groups[CommAxis::kUlysses];
  const CommGroup& ring_group = groups[CommAxis::kRing];
  const CommGroup& cp_group = groups[CommAxis::kCp];
  const CommGroup& cfg_group = groups[CommAxis::kCfg];
  std::array<Milliseconds, kCommAxisCount> block_axis_ms{};  // per block of the current group
  auto charge = [&](CommAxis axis, Milliseconds ms) { block_axis_ms[static_cast<int>(axis)] += ms; };

  AttentionInput in;
  in.image_tokens = static_cast<double>(q.sequence.image_tokens);
  in.text_tokens = joint ? txt : 0;
  in.split_text = m.cp_split == CpSplit::kImageAndText;
  in.heads = m.heads / a.t;
  in.head_dim = m.head_dim;
  in.ring = a.r;
  in.ulysses = a.u;
  in.elem_bytes = b;
  in.fp32_merge = pc.context_parallel_config.convert_to_fp32;
  in.ring_p2p = pc.context_parallel_config.rotate_method == RotateMethod::kP2P;
  const CpCostStrategy& strategy = cp_cost_strategy(v);
  const AttentionCost att = strategy.attention(in);
  AttentionInput image_only = in;  // SD3.5-medium's extra image-only self-attention
  image_only.text_tokens = 0;
  const AttentionCost image_att = strategy.attention(image_only);

  Prediction p;
  std::optional<Source> source;  // the least measured input of any term
  Bytes layer_bytes = 0;  // bytes sent per rank (size x busbw factor), summed below per step
  auto attention_kernel = [&](const AttentionCost& c, BlockCost& out) {
    const Flops fl = c.flops() * m.head_dim * nb;
    const Timed t = hw_.attention(fl, c.q_tokens, c.kv_tokens, q.backend);
    out.flops += fl;
    out.attention_ms += t.ms;
    out.overhead_ms += c.calls * hw_.launch_us() * 1e-3;
    const Timed merge = hw_.memory(c.merge_bytes * nb);
    out.memory_ms += merge.ms;
    note_source(out.sources.attention, t.source);
    if (c.merge_bytes > 0) note_source(out.sources.memory, merge.source);
    return t.ms;
  };
  // Collectives of one attention; those that overlap the attention kernels cost only what
  // they take beyond them.
  auto attention_comm = [&](const AttentionCost& c, Milliseconds attention_ms, BlockCost& out) {
    Milliseconds overlapped = 0;
    for (int i = 0; i < c.comm_count; ++i) {
      const CommCall& call = c.comm[i];
      const CommGroup& g = call.axis == CpAxis::kRing ? ring_group : ulysses_group;
      const Timed t = hw_.collective(call.kind, call.bytes * nb, g);
      (call.overlapped ? overlapped : out.comm_ms) += t.ms * call.count;
      if (!call.overlapped) charge(call.axis == CpAxis::kRing ? CommAxis::kRing : CommAxis::kUlysses, t.ms * call.count);
      layer_bytes += call.bytes * nb * busbw_factor(call.kind, g.ranks) * call.count;
      if (g.ranks > 1) out.collective_calls += call.count;
      out.overhead_ms += 2 * call.count * hw_.launch_us() * 1e-3;
      note_source(out.sources.comm, t.source);
    }
    out.comm_ms += std::max(0.0, overlapped - attention_ms);
    charge(CommAxis::kRing, std::max(0.0, overlapped - attention_ms));  // only Ring's p2p steps overlap
  };

  const double tokens = att.tokens;  // local tokens of the most loaded rank
  const double text_local = !joint ? 0.0 : (in.split_text ? cp::ceil_div(txt, a.r * a.u) : txt);
  Bytes attention_live = 0, ffn_live = 0;
  for (const BlockGroup& g : m.blocks) {
    BlockCost bc;
    block_axis_ms.fill(0);
    bc.kind = g.kind;
    bc.count = g.count;
    const bool cross = g.kind == BlockKind::kCross;
    // GEMMs one by one, as the kernels run (a short text stream is its own small GEMM): TP
    // shards each weight (column-parallel outputs, row-parallel inputs), every rank sees all
    // its local tokens. Bytes: the weight shard plus the activations in and out.
    auto gemm_call = [&](double rows, double k, double n) {
      if (rows <= 0) return;
      const Flops fl = 2.0 * nb * rows * k * n;
      const Timed t = hw_.gemm(fl, k * n * wb + nb * rows * (k + n) * b, nb * rows);
      bc.flops += fl;
      bc.gemm_ms += t.ms;
      note_source(bc.sources.gemm, t.source);
    };
    const double dt = d / a.t, ft = f / a.t, ffn_in = (m.ffn_kind == FfnKind::kSwiGlu ? 2.0 : 1.0) * ft;
    auto attention_projections = [&](double rows) {
      for (int i = 0; i < 3; ++i) gemm_call(rows, d, dt);  // q, k, v
      gemm_call(rows, dt, d);                              // out
    };
    auto ffn = [&](double rows) {
      gemm_call(rows, d, ffn_in);
      gemm_call(rows, ft, d);
    };
    if (g.kind == BlockKind::kDouble) {  // separate image and text weights, each on its stream
      for (double rows : {tokens - text_local, text_local}) {
        attention_projections(rows);
        ffn(rows);
      }
      if (g.image_self_attention) attention_projections(image_att.tokens);
    } else if (g.kind == BlockKind::kSingle) {  // q, k, v, MLP in; one output projection of both
      for (int i = 0; i < 3; ++i) gemm_call(tokens, d, dt);
      gemm_call(tokens, d, ffn_in);
      gemm_call(tokens, dt + ft, d);
    } else {  // self-attention, cross-attention (queries local, K/V of the whole text), FFN
      attention_projections(tokens);
      gemm_call(tokens, d, dt);
      gemm_call(tokens, dt, d);
      gemm_call(txt, d, dt);
      gemm_call(txt, d, dt);
      ffn(tokens);
    }

    layer_bytes = 0;
    attention_comm(att, attention_kernel(att, bc), bc);
    if (g.image_self_attention) attention_comm(image_att, attention_kernel(image_att, bc), bc);
    if (cross) {
      AttentionCost xa;
      xa.q_tokens = tokens;
      xa.kv_tokens = txt;
      xa.heads = in.heads;
      attention_kernel(xa, bc);
    }

    // Memory-bound work per token: two norm+modulate (2 x 2D), q/k norm and RoPE (8D/t),
    // two gated residual adds (2 x 3D), the FFN activation (2F/t); cross blocks add a norm
    // and a residual (5D). Read + write of each, in the activation dtype.
    double elementwise = 10.0 * d + 8.0 * d / a.t + 2.0 * f / a.t + (cross ? 5.0 * d : 0.0);
    if (g.image_self_attention) elementwise += 6.0 * d;
    const Timed elementwise_t = hw_.memory(nb * tokens * elementwise * b);
    bc.memory_ms += elementwise_t.ms;
    note_source(bc.sources.memory, elementwise_t.source);
    bc.overhead_ms += kKernelsPerBlock[static_cast<int>(g.kind)] * hw_.launch_us() * 1e-3;

    // TP: every row-parallel projection ends in an all-reduce of its tokens' activations.
    // Double blocks: attention out and FFN out per stream (image, text); single blocks: one,
    // their output projection fuses attention and MLP; cross blocks: self-attention,
    // cross-attention and FFN; SD3.5-medium's extra image self-attention adds one.
    if (a.t > 1) {
      auto all_reduce = [&](int count, double on_tokens) {
        if (count == 0 || on_tokens <= 0) return;
        const Timed t = hw_.collective(Collective::kAllReduce, nb * on_tokens * d * b, tp_group);
        bc.comm_ms += count * t.ms;
        bc.collective_calls += count;
        charge(CommAxis::kTp, count * t.ms);
        layer_bytes += count * nb * on_tokens * d * b * busbw_factor(Collective::kAllReduce, a.t);
        bc.overhead_ms += 2 * count * hw_.launch_us() * 1e-3;
        note_source(bc.sources.comm, t.source);
      };
      if (g.kind == BlockKind::kDouble) {
        all_reduce(2 + (g.image_self_attention ? 1 : 0), tokens - text_local);
        all_reduce(2, text_local);
      } else {
        all_reduce(cross ? 3 : 1, tokens);
      }
    }

    bc.source = worst_of(bc.sources);
    const double scale = g.count;
    bc.flops *= scale;
    bc.gemm_ms *= scale;
    bc.attention_ms *= scale;
    bc.memory_ms *= scale;
    bc.overhead_ms *= scale;
    bc.comm_ms *= scale;
    bc.collective_calls *= scale;
    for (int i = 0; i < kCommAxisCount; ++i) p.axis_comm_ms[i] += block_axis_ms[i] * scale;
    p.step_flops += bc.flops;
    p.comm_bytes += layer_bytes * scale;
    p.compute_ms += bc.compute_ms();
    p.comm_ms += bc.comm_ms;
    p.collective_calls += bc.collective_calls;
    note_source(source, bc.source);
    if (p.block_count < kMaxBlockGroups) p.blocks[p.block_count++] = bc;

    const Bytes qkvo = 4.0 * tokens * d / a.t * b + (cross ? 2.0 * txt * d / a.t * b : 0.0);
    attention_live = std::max(attention_live, nb * (qkvo + att.transient_bytes));
    ffn_live = std::max(ffn_live, nb * tokens * f / a.t * b * (m.ffn_kind == FfnKind::kSwiGlu ? 3.0 : 2.0));
  }

  // Per step: the CP output is gathered over the CP group, CFG gathers the two predictions,
  // and the scheduler updates the latents (fp32 read/write).
  const double img = static_cast<double>(q.sequence.image_tokens);
  const Bytes prediction = img * m.in_channels * b;
  // The CP output gather pads every rank's share to the longest (equal shapes for all-gather).
  const Bytes gathered = cp::ceil_div(img, a.r * a.u) * a.r * a.u * m.in_channels * b;
  const Timed gather = hw_.collective(Collective::kAllGather, nb * gathered, cp_group);
  const Timed cfg = hw_.collective(Collective::kAllGather, a.c * prediction * q.batch / a.d, cfg_group);
  p.step_comm_extra_ms = gather.ms + cfg.ms;
  if (cp_group.ranks > 1) note_source(p.step_comm_extra_source, gather.source);
  if (cfg_group.ranks > 1) note_source(p.step_comm_extra_source, cfg.source);
  p.collective_calls += (cp_group.ranks > 1 ? 1 : 0) + (cfg_group.ranks > 1 ? 1 : 0);
  if (p.step_comm_extra_source) note_source(source, *p.step_comm_extra_source);
  p.axis_comm_ms[static_cast<int>(CommAxis::kCp)] += gather.ms;
  p.axis_comm_ms[static_cast<int>(CommAxis::kCfg)] += cfg.ms;
  p.comm_bytes += nb * gathered * busbw_factor(Collective::kAllGather, cp_group.ranks) +
                  a.c * prediction * q.batch / a.d * busbw_factor(Collective::kAllGather, a.c);
  p.comm_ms += p.step_comm_extra_ms;
  p.compute_ms += hw_.memory(3.0 * img * m.in_channels * 4.0 * q.batch / a.d).ms;
  p.step_ms = p.compute_ms + p.comm_ms;
  p.steps_per_sec = p.step_ms > 0 ? 1e3 / p.step_ms : 0;

  // Once per image: text encoding (the negative prompt too under true CFG) and VAE decode.
  const double prompts = m.passes_per_step() * std::max(1.0, static_cast<double>(q.batch) / a.d);
  for (const Component& e : m.text_encoders) {
    const Timed t = hw_.gemm(2.0 * e.params * txt * prompts, e.params * e.bytes_per_param, txt * prompts);
    p.text_encode_ms += t.ms;
  }
  const double frames = m.video ? q.frames : 1;
  const double pixels = 1.0 * q.resolution.width * q.resolution.height * frames * std::max(1.0, 1.0 * q.batch / a.d);
  p.vae_decode_ms = hw_.conv(m.vae.decode_gflop_per_pixel * 1e9 * pixels).ms;
  p.image_ms = p.text_encode_ms + q.steps * p.step_ms + p.vae_decode_ms;

  // Memory per GPU.
  MemoryBreakdown& mem = p.memory;
  double sharded = 0;
  for (const BlockGroup& g : m.blocks) {
    double per_block = (g.kind == BlockKind::kDouble ? 2.0 : 1.0) * linear_weights_per_token(m, g.kind);
    if (g.kind == BlockKind::kCross) per_block += 2.0 * d * d;
    if (g.image_self_attention) per_block += 4.0 * d * d;
    sharded += per_block * g.count;
  }
  sharded = std::min(sharded, m.params);
  mem.transformer_weights = (sharded / a.t + (m.params - sharded)) * wb;
  if (!q.offload_text_encoders)
    for (const Component& e : m.text_encoders) mem.text_encoder_weights += e.params * e.bytes_per_param;
  mem.vae_weights = m.vae.weights.params * m.vae.weights.bytes_per_param;
  const Bytes resident = nb * (tokens * d * kResidentActivations + (joint ? 0.0 : txt * d)) * b;
  mem.attention_extra = nb * att.transient_bytes;
  mem.activations = kFragmentation * (resident + std::max(attention_live, ffn_live));
  const double chunk_frames = m.video ? m.vae.temporal : 1;
  mem.vae_decode = kFragmentation * m.vae.decode_bytes_per_pixel * q.resolution.width * q.resolution.height *
                   chunk_frames * std::max(1.0, 1.0 * q.batch / a.d);
  mem.runtime_reserved = hw.reserved_mib * kMiB;
  p.peak_mem_bytes = mem.peak();
  p.fits_memory = p.peak_mem_bytes <= hw.memory_bytes();
  p.source = source.value_or(Source::kDatasheet);
  if (correction_) {  // after the terms: the correction reads them
    p.uncalibrated_step_ms = p.step_ms;
    p.step_ms = correction_(p, pc);
    p.steps_per_sec = p.step_ms > 0 ? 1e3 / p.step_ms : 0;
    p.image_ms = p.text_encode_ms + q.steps * p.step_ms + p.vae_decode_ms;
    p.calibrated = true;
  }
  return p;
}

}  // namespace cpplan::costmodel
