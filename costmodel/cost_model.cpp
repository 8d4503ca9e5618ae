#include "costmodel/cost_model.h"

#include <algorithm>
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

double ffn_weights(const ModelProfile& m) {
  const double d = m.hidden(), f = m.ffn_hidden;
  return (m.ffn_kind == FfnKind::kSwiGlu ? 3.0 : 2.0) * d * f;
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
  const double d = m.hidden();
  const double attention = 4.0 * d * d;  // q, k, v, out
  return kind == BlockKind::kCross ? attention + 2.0 * d * d + ffn_weights(m)  // + cross q, out
                                   : attention + ffn_weights(m);
}

Bytes MemoryBreakdown::peak() const {
  const Bytes resident = transformer_weights + text_encoder_weights + vae_weights;
  const Bytes encoding = (transformer_while_encoding ? transformer_weights : 0.0) + text_encoder_weights + vae_weights +
                         text_encode;
  return runtime_reserved + std::max({resident + activations, resident + vae_decode, encoding});
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
  tokens = attention.tokens;
  text_local = !joint ? 0.0 : (input.split_text ? cp::ceil_div(text, axes.r * axes.u) : text);
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
  p.uncalibrated_step_ms = p.step_ms;
  p.step_ms = correction(p, pc);
  p.steps_per_sec = steps_per_sec(p.step_ms);
  p.calibrated = true;
}

double block_linear_params(const ModelProfile& m, const BlockGroup& g) {
  const double d = m.hidden();
  double per_block = (g.kind == BlockKind::kDouble ? 2.0 : 1.0) * linear_weights_per_token(m, g.kind);
  if (g.kind == BlockKind::kCross) per_block += 2.0 * d * d;
  if (g.image_self_attention) per_block += 4.0 * d * d;
  return per_block;
}

double all_block_linear_params(const ModelProfile& m) {
  double sharded = 0;
  for (const BlockGroup& g : m.blocks) sharded += block_linear_params(m, g) * g.count;
  return std::min(sharded, m.params);
}

Bytes transformer_weight_bytes(const ModelProfile& m, int tp) {
  const double sharded = all_block_linear_params(m);
  return (sharded / tp + (m.params - sharded)) * m.bytes_per_param;
}

double fully_shard_block_params(const ModelProfile& m, const BlockGroup& g) {
  const double linear = all_block_linear_params(m);
  return linear > 0 ? block_linear_params(m, g) * m.params / linear : 0.0;
}

Bytes fully_sharded_weight_bytes(const ModelProfile& m, int fs) {
  double largest = 0;
  for (const BlockGroup& g : m.blocks) largest = std::max(largest, fully_shard_block_params(m, g));
  return (m.params / fs + kFsGatheredBlocks * largest) * m.bytes_per_param;
}

MemoryBreakdown denoising_memory(const StepContext& ctx, Bytes live) {
  const ModelProfile& m = ctx.m;
  const double d = m.hidden(), b = m.bytes_per_activation;
  MemoryBreakdown mem;
  mem.transformer_weights =
      ctx.axes.f > 1 ? fully_sharded_weight_bytes(m, ctx.axes.f) : transformer_weight_bytes(m, ctx.axes.t);
  mem.vae_weights = m.vae.weights.params * m.vae.weights.bytes_per_param;
  const bool joint = m.text_handling == TextHandling::kJoint;
  const Bytes resident = ctx.samples * (ctx.tokens * d * kResidentActivations + (joint ? 0.0 : ctx.text * d)) * b;
  mem.attention_extra = ctx.samples * ctx.attention.transient_bytes;
  mem.activations = kFragmentation * (resident + live);
  mem.runtime_reserved = ctx.hw.profile().reserved_mib * kMiB;
  return mem;
}

int placement_complexity(const PipelineCost& p) {
  constexpr int kTextEncoder[] = {0, 1, 1, 2};  // replicated, offloaded, sequential, sharded
  return kTextEncoder[static_cast<int>(p.text_encoder)] + (p.vae == VaePlacement::kParallel ? 1 : 0);
}

const PlacedPipeline& simplest_within_gain(const std::vector<PlacedPipeline>& fitting, Milliseconds steps_ms) {
  Milliseconds fastest = std::numeric_limits<Milliseconds>::infinity();
  for (const PlacedPipeline& p : fitting) fastest = std::min(fastest, p.cost.total_ms());
  const Milliseconds budget = fastest + kPlacementGain * (steps_ms + fastest);
  const PlacedPipeline* best = nullptr;
  for (const PlacedPipeline& p : fitting)
    if (p.cost.total_ms() <= budget &&
        (!best || std::pair(placement_complexity(p.cost), p.cost.total_ms()) <
                      std::pair(placement_complexity(best->cost), best->cost.total_ms())))
      best = &p;
  return *best;
}

PlacedPipeline choose_placement(const StepContext& ctx, const MemoryBreakdown& denoising, Milliseconds steps_ms) {
  const Bytes capacity = ctx.hw.profile().memory_bytes();
  std::vector<PlacedPipeline> fitting;
  std::optional<PlacedPipeline> smallest;
  for (PlacedPipeline& placed : placements(ctx, denoising)) {
    if (!smallest || placed.memory.peak() < smallest->memory.peak()) smallest = placed;
    if (placed.memory.peak() <= capacity) fitting.push_back(std::move(placed));
  }
  if (fitting.empty()) return *smallest;
  return simplest_within_gain(fitting, steps_ms);
}

void add_placement(Prediction& p, const PlacedPipeline& placed, int steps, Bytes capacity) {
  p.pipeline = placed.cost;
  p.memory = placed.memory;
  p.text_encode_ms = placed.cost.text_encode_ms;
  p.vae_decode_ms = placed.cost.vae_decode_ms;
  p.image_ms = steps * p.step_ms + placed.cost.total_ms();
  p.peak_mem_bytes = p.memory.peak();
  p.transformer_peak_bytes = p.memory.transformer_peak();
  p.fits_memory = p.peak_mem_bytes <= capacity;
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
  }
  p.steps_per_sec = steps_per_sec(p.step_ms);
  p.source = source.value_or(Source::kDatasheet);
  if (correction_) calibrate_step(p, correction_, pc);  // after the terms: the correction reads them
  const PlacedPipeline placed = choose_placement(ctx, denoising, q.steps * p.step_ms);
  add_placement(p, placed, q.steps, hw_.profile().memory_bytes());
  if (ctx.runtime.compiles()) {
    p.compile_ms = (ctx.runtime.compile_base_s + ctx.runtime.compile_per_block_s * ctx.m.total_blocks()) * 1e3;
    p.warmup_ms = p.compile_ms + p.image_ms;
  }
  return p;
}

}  // namespace cpplan::costmodel
