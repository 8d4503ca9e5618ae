// PipeFusion's image: the stages priced from each block group's terms for one block (full sequence
// and one patch), the warm-up steps, the pipelined phase with its fill and drain, the per-patch
// host work, the point-to-point sends and the memory of a stage.
#include "costmodel/pipefusion_cost.h"

#include <algorithm>

#include "core/pipefusion.h"

namespace cpplan::costmodel {

namespace {

// a x wa + b x wb for every additive term (times, FLOPs, ops, calls); the rest is a's.
BlockCost blend(const BlockCost& a, double wa, const BlockCost& b, double wb) {
  BlockCost out = a;
  Milliseconds BlockCost::*terms[] = {&BlockCost::flops,   &BlockCost::gemm_ms,          &BlockCost::gemm_traffic_ms, &BlockCost::attention_ms,
                                      &BlockCost::memory_ms, &BlockCost::host_ms,        &BlockCost::comm_ms,
                                      &BlockCost::sync_ms, &BlockCost::collective_calls, &BlockCost::ops,
                                      &BlockCost::ulysses_ops, &BlockCost::ring_ops,    &BlockCost::ring_iteration_ops,
                                      &BlockCost::attention_module_ms, &BlockCost::attention_module_host_ms};
  for (auto term : terms) out.*term = a.*term * wa + b.*term * wb;
  return out;
}

// Local image tokens of a rank by the bytes rule: S_img / k, unrounded (k = r x u).
double image_local(const StepContext& ctx) { return ctx.input.image_tokens / (ctx.axes.r * ctx.axes.u); }

// One send of `bytes` to the next stage: alpha + bytes / busbw over the pp group's link (the
// collective machinery's send/recv, bus factor 1).
Timed send(const StepContext& ctx, Bytes bytes) {
  return ctx.hw.collective(Collective::kSendRecv, bytes, ctx.group(CommAxis::kPp));
}

// The warm-up steps W' = min(W, S) and the pipelined ones S - W'.
struct StepSplit {
  int steps = 1, warmup = 0, pipelined = 1;
};
StepSplit step_split(const Query& q, const PipeFusionConfig& pf) {
  StepSplit s;
  s.steps = std::max(1, q.steps);
  s.warmup = std::clamp(pf.warmup_steps, 0, s.steps);
  s.pipelined = s.steps - s.warmup;
  return s;
}

// Walks stage s of xDiT's split (ceil(L / P) blocks per stage, the last the rest) group by
// group: part(group index, that group's blocks in the stage). No allocation: the planner prices
// thousands of plans.
template <class Part>
void for_each_part(const ModelProfile& m, int stages, int s, Part&& part) {
  const int total = m.total_blocks();
  const int per_stage = (total + stages - 1) / stages;
  const int begin = std::min(total, s * per_stage), end = std::min(total, (s + 1) * per_stage);
  int offset = 0;  // the group's first block in the model
  for (int g = 0; g < static_cast<int>(m.blocks.size()); ++g) {
    const int lo = std::max(begin, offset), hi = std::min(end, offset + m.blocks[g].count);
    if (hi > lo) part(g, hi - lo);
    offset += m.blocks[g].count;
  }
}

// The terms of one block of every group of the model (count 1): a block's terms are linear in
// the count (block_terms scales one block's by it), so a stage's part is these times its count,
// priced once per plan however the stages cut the groups.
std::vector<BlockTerms> unit_terms(const StepContext& ctx) {
  std::vector<BlockTerms> out;
  out.reserve(ctx.m.blocks.size());
  for (BlockGroup g : ctx.m.blocks) {
    g.count = 1;
    out.push_back(block_terms(ctx, g));
  }
  return out;
}

// `unit` (one block's terms) for `count` blocks.
BlockTerms times(const BlockTerms& unit, int count) {
  BlockTerms out = unit;
  out.cost = blend(unit.cost, count, unit.cost, 0);
  out.cost.count = count;
  for (Milliseconds& a : out.axis_comm_ms) a *= count;
  out.bytes_sent *= count;
  return out;
}

// One stage's pass (the full sequence or one patch): its blocks' GPU time, the host's time to
// issue them, the waits at collectives, its CP bytes and largest live layer.
struct StagePass {
  Milliseconds gpu_ms = 0, host_ms = 0, sync_ms = 0;
  Bytes bytes_sent = 0, live_bytes = 0;
  int blocks = 0;
  // The host issues the stage's kernels one after another and the GPU runs them in order:
  // asynchronous launches take the longer of the two, a synchronous runtime both.
  Milliseconds time_ms(bool overlapped, Milliseconds extra_host_ms = 0) const {
    const Milliseconds host = host_ms + extra_host_ms;
    return (overlapped ? std::max(gpu_ms, host) : gpu_ms + host) + sync_ms;
  }
};
StagePass stage_pass(const ModelProfile& m, const std::vector<BlockTerms>& unit, int stages, int s) {
  StagePass out;
  for_each_part(m, stages, s, [&](int group, int count) {
    const BlockCost& c = unit[group].cost;
    out.gpu_ms += count * c.device_ms();
    out.host_ms += count * c.host_ms;
    out.sync_ms += count * c.sync_ms;
    out.bytes_sent += count * unit[group].bytes_sent;
    out.live_bytes = std::max(out.live_bytes, unit[group].live_bytes);
    out.blocks += count;
  });
  return out;
}

// What the plan's stages come to: one block of each group priced on both passes, the pacing
// stage's passes, and the sums and maxima over the stages (no per-stage storage).
struct Stages {
  std::vector<BlockTerms> unit_full, unit_patch;
  int pace = 0;                    // the stage with the longest patch slot
  StagePass pace_full, pace_patch;
  Milliseconds full_sum_ms = 0;    // every stage on the full sequence, in turn
  Milliseconds patch_sum_ms = 0;   // every stage on one patch, the host's work outside the blocks with each
  Bytes most_sent_bytes = 0;       // per step, the most a stage's rank sends: CP collectives and sends (comm_bytes)
  Bytes live_full = 0, live_patch = 0;
  int most_blocks = 0;
};
}  // namespace

std::vector<std::vector<BlockGroup>> pipefusion_stages(const ModelProfile& m, int stages) {
  std::vector<std::vector<BlockGroup>> out(std::max(0, stages));
  for (int s = 0; s < stages; ++s)
    for_each_part(m, stages, s, [&](int group, int count) {
      BlockGroup g = m.blocks[group];
      g.count = count;
      out[s].push_back(g);
    });
  return out;
}

Query patch_query(const Query& q, int patches, int sp) {
  const long long largest = patches < 1 ? q.sequence.image_tokens : patch_token_span(q, patches, sp).largest;
  Query out = q;
  out.sequence.attention_tokens = q.sequence.attention_tokens - q.sequence.image_tokens + largest;
  out.sequence.image_tokens = largest;
  return out;
}

namespace {
// Ring's calls in a layer's cost move K/V blocks; under PipeFusion they are the buffer's. Linear
// attention's Ring all-reduces its state instead, whose size does not depend on the tokens.
void ring_moves_buffer(AttentionCost& c, double ratio) {
  for (int i = 0; i < c.comm_count; ++i)
    if (c.comm[i].axis == CpAxis::kRing && c.comm[i].kind != Collective::kAllReduce) c.comm[i].bytes *= ratio;
}
}  // namespace

void attend_full_sequence(StepContext& patch, const StepContext& full) {
  // Each call's keys grow by the ratio of the sequences: Ulysses' full keys for its heads, Ring's
  // r blocks of the full sequence's CP share.
  const double joint = cp::sequence(patch.input);
  if (joint > 0) patch.attention.kv_tokens *= cp::sequence(full.input) / joint;
  if (patch.input.image_tokens > 0)
    patch.image_attention.kv_tokens *= full.input.image_tokens / patch.input.image_tokens;
  const double split = cp::split_sequence(patch.input);
  if (split > 0) ring_moves_buffer(patch.attention, cp::split_sequence(full.input) / split);
  if (patch.input.image_tokens > 0)
    ring_moves_buffer(patch.image_attention, full.input.image_tokens / patch.input.image_tokens);
}

PipelinedPhase pipelined_phase(const PipeShape& s) {
  PipelinedPhase out;
  if (s.steps < 1 || s.patches < 1) return out;
  const Milliseconds slot = std::max(s.stage_max_ms, s.link_ms);  // the busiest server per patch
  out.latency_ms = s.stages_sum_ms + (s.stages - 1) * s.link_ms;
  out.loop_ms = out.latency_ms + s.return_ms;
  out.cycle_ms = std::max(s.patches * slot, out.loop_ms);
  out.slots = static_cast<double>(s.steps) * s.patches;
  out.slot_ms = out.cycle_ms / s.patches;
  // Patch 0 of step i + 1 starts one cycle after patch 0 of step i; the last patch of the last
  // step starts M - 1 slots after that step's patch 0 and takes the latency to leave the pipe.
  out.total_ms = (s.steps - 1) * out.cycle_ms + (s.patches - 1) * slot + out.latency_ms;
  out.fill_drain_ms = out.total_ms - out.slots * out.slot_ms;
  return out;
}

// Hidden-state tensors per send: the hidden states and the long skips the busiest boundary carries.
double tensors_per_send(const StepContext& ctx) {
  return 1.0 + pipefusion_skips_crossing(ctx.m, pipefusion_stage_blocks(ctx.m.total_blocks(), ctx.axes.p));
}

Bytes pipefusion_p2p_bytes(const StepContext& ctx) {
  return tensors_per_send(ctx) * ctx.samples * (image_local(ctx) + ctx.text_local) * ctx.m.hidden() *
         ctx.m.bytes_per_activation;
}

namespace {

// A block's own adaLN projection (Modulation::kBlock: FLUX.1, SD3.5): 6 D^2 per stream of a
// double block, 3 D^2 for a single block, 6 D^2 for a cross block. Shared and table modulations
// live outside the blocks (with the embedders).
double block_modulation_params(const ModelProfile& m, const BlockGroup& g) {
  if (m.modulation != Modulation::kBlock) return 0;
  const double d2 = m.hidden() * m.hidden();
  return g.kind == BlockKind::kDouble ? 12.0 * d2 : g.kind == BlockKind::kSingle ? 3.0 * d2 : 6.0 * d2;
}

}  // namespace

Bytes pipefusion_weight_bytes(const ModelProfile& m, int stages, const Precision& p) {
  double listed = 0, modulation = 0;  // before the cap at the model's parameters
  for (const BlockGroup& g : m.blocks) {
    listed += block_linear_params(m, g) * g.count;
    modulation += block_modulation_params(m, g) * g.count;
  }
  const double linears = all_block_linear_params(m);
  const double linear_scale = listed > 0 ? linears / listed : 0;
  const double kept_modulation = std::min(modulation, m.params - linears);
  const double modulation_scale = modulation > 0 ? kept_modulation / modulation : 0;
  const double rest = m.params - linears - kept_modulation;  // embedders, final layer
  const Bytes linear_bytes = linear_weight_bytes(m, p);
  double heaviest = 0;
  for (int s = 0; s < stages; ++s) {
    double here = (s == 0 || s + 1 == stages) ? rest * m.bytes_per_param : 0;
    for_each_part(m, stages, s, [&](int group, int count) {
      const BlockGroup& g = m.blocks[group];
      here += count * (block_linear_params(m, g) * linear_scale * linear_bytes +
                       block_modulation_params(m, g) * modulation_scale * m.bytes_per_param);
    });
    heaviest = std::max(heaviest, here);
  }
  return heaviest;
}

Bytes kv_buffer_bytes_per_block(const StepContext& ctx) {
  return 2.0 * ctx.samples * (image_local(ctx) + ctx.text_local) * ctx.m.hidden() * ctx.m.bytes_per_activation;
}

namespace {

// The host's work per patch outside the blocks: xDiT runs the transformer's whole forward per
// patch on every stage (the prologue and epilogue ops of the runtime's step, the scheduler's
// update on the last stage), and the stage posts a receive and a send of the patch.
Milliseconds patch_host_extra_ms(const StepContext& ctx) {
  const RuntimeProfile& rt = ctx.runtime;
  return rt.host_ms(rt.ops.step) + 2.0 * rt.collective_us * 1e-3;
}

// The weights of a warm-up pass and of a patch pass in the mean step: W / S and (S - W) x M / S.
struct PassWeights {
  double full = 0, patch = 0;
};
PassWeights pass_weights(const StepContext& ctx) {
  const StepSplit steps = step_split(ctx.q, ctx.config.pipefusion);
  return {static_cast<double>(steps.warmup) / steps.steps,
          static_cast<double>(steps.pipelined) / steps.steps * ctx.config.pipefusion.patches};
}

// Every stage's two passes from one block of each group: the pacing stage (the longest patch
// slot; the host's work outside the blocks is the same on every stage), the sums, the maxima.
Stages price_stages(const StepContext& ctx, const StepContext& patch) {
  Stages st;
  st.unit_full = unit_terms(ctx);
  st.unit_patch = unit_terms(patch);
  const bool overlapped = ctx.runtime.overlaps_device;
  const Milliseconds extra = patch_host_extra_ms(ctx);
  const PassWeights w = pass_weights(ctx);
  const Bytes p2p = pipefusion_p2p_bytes(ctx);
  const int stages = ctx.axes.p;
  for (int s = 0; s < stages; ++s) {
    const StagePass full = stage_pass(ctx.m, st.unit_full, stages, s);
    const StagePass one = stage_pass(ctx.m, st.unit_patch, stages, s);
    if (s == 0 || one.time_ms(overlapped) > st.pace_patch.time_ms(overlapped)) {
      st.pace = s;
      st.pace_full = full;
      st.pace_patch = one;
    }
    st.full_sum_ms += full.time_ms(overlapped);
    st.patch_sum_ms += one.time_ms(overlapped, extra);
    // Its CP collectives per step and, unless it is the last, its sends.
    const Bytes sent = full.bytes_sent * w.full + one.bytes_sent * w.patch + (s + 1 < stages ? p2p : 0.0);
    st.most_sent_bytes = std::max(st.most_sent_bytes, sent);
    st.live_full = std::max(st.live_full, full.live_bytes);
    st.live_patch = std::max(st.live_patch, one.live_bytes);
    st.most_blocks = std::max(st.most_blocks, full.blocks);
  }
  return st;
}

// The sends: a patch's image tokens, the joint text once per step, the full sequence in a
// warm-up step, the last stage's updated latent back to stage 0 (ms).
void pipefusion_sends(const StepContext& ctx, const StepContext& patch, PipeFusionCost& c) {
  const double unit = tensors_per_send(ctx) * ctx.samples * ctx.m.hidden() * ctx.m.bytes_per_activation;
  const double velocity = ctx.samples * ctx.m.in_channels * ctx.m.bytes_per_activation;
  const double patch_image = patch.tokens - patch.text_local;
  c.p2p_patch_ms = send(ctx, unit * patch_image).ms;
  c.p2p_text_ms = ctx.text_local > 0 ? send(ctx, unit * ctx.text_local).ms : 0.0;
  c.p2p_full_ms = send(ctx, unit * (ctx.tokens - ctx.text_local)).ms + c.p2p_text_ms;
  c.return_ms = send(ctx, velocity * patch_image).ms;
}

// The warm-up step: every stage on the full sequence in turn, P - 1 sends of it, the latent back
// to stage 0 and the rest of the step (ms).
Milliseconds warmup_step_ms(const StepContext& ctx, const Stages& st, const PipeFusionCost& c, Milliseconds rest_ms) {
  const double velocity = ctx.samples * ctx.m.in_channels * ctx.m.bytes_per_activation;
  return st.full_sum_ms + (c.stages - 1) * c.p2p_full_ms + send(ctx, velocity * (ctx.tokens - ctx.text_local)).ms +
         rest_ms;
}

// The pipelined phase from the stages' patch passes and the sends (see PipeFusionCost).
void pipelined_times(const Stages& st, int pipelined_steps, const StepRestTerms& rest, PipeFusionCost& c) {
  PipeShape shape{c.stages, c.patches, pipelined_steps, c.stage_patch_ms, st.patch_sum_ms, 0, c.return_ms};
  shape.link_ms = c.p2p_patch_ms + c.p2p_text_ms / c.patches;
  const PipelinedPhase phase = pipelined_phase(shape);
  c.pipelined_slots = phase.slots;
  c.slot_ms = phase.slot_ms;
  c.round_trip_ms = phase.loop_ms;
  c.fill_drain_ms = phase.fill_drain_ms;
  // The GPU's work outside the blocks (the scheduler's update, the CP and CFG gathers) once per
  // step's worth of patches; its host ops are in the per-patch host work.
  c.pipelined_rest_ms = pipelined_steps * (rest.cost.device_ms() + rest.cost.sync_ms);
  c.pipelined_ms = phase.total_ms + c.pipelined_rest_ms;
  c.pipelined_step_ms = pipelined_steps > 0 ? c.pipelined_ms / pipelined_steps : 0.0;
  c.patch_host_ms = c.pipelined_slots * c.stage_patch_host_ms;
}

// The times of p.pipefusion (see PipeFusionCost for each field's unit).
void pipefusion_times(const StepContext& ctx, const StepContext& patch, const Stages& st, const StepRestTerms& rest,
                      PipeFusionCost& c) {
  const StepSplit steps = step_split(ctx.q, ctx.config.pipefusion);
  c.stages = ctx.axes.p;
  c.patches = ctx.config.pipefusion.patches;
  c.warmup_steps = steps.warmup;
  c.stage_blocks = st.pace_patch.blocks;
  pipefusion_sends(ctx, patch, c);
  c.patch_host_extra_ms = patch_host_extra_ms(ctx);
  c.stage_patch_gpu_ms = st.pace_patch.gpu_ms;
  c.stage_patch_host_ms = st.pace_patch.host_ms + c.patch_host_extra_ms;
  c.stage_patch_ms = st.pace_patch.time_ms(ctx.runtime.overlaps_device, c.patch_host_extra_ms);
  c.warmup_step_ms = warmup_step_ms(ctx, st, c, rest.cost.time_ms());
  c.warmup_ms = steps.warmup * c.warmup_step_ms;
  pipelined_times(st, steps.pipelined, rest, c);
  c.p2p_ms = steps.warmup * c.p2p_full_ms + steps.pipelined * (c.patches * c.p2p_patch_ms + c.p2p_text_ms);
  c.p2p_bytes = pipefusion_p2p_bytes(ctx);
}

// The pacing stage's blocks into p (per step: the mean of a warm-up's full pass and a pipelined
// step's M patch passes) and the most loaded rank's bytes: its CP collectives and its sends.
void add_pacing_stage(const StepContext& ctx, const Stages& st, Prediction& p, std::optional<Source>& source) {
  const PassWeights w = pass_weights(ctx);
  for_each_part(ctx.m, ctx.axes.p, st.pace, [&](int group, int count) {
    const BlockTerms full = times(st.unit_full[group], count);
    const BlockTerms patch = times(st.unit_patch[group], count);
    const BlockCost bc = blend(full.cost, w.full, patch.cost, w.patch);
    for (int a = 0; a < kCommAxisCount; ++a)
      p.axis_comm_ms[a] += full.axis_comm_ms[a] * w.full + patch.axis_comm_ms[a] * w.patch;
    p.step_flops += bc.flops;
    add_to_step(p, bc);
    note_source(source, bc.source);
    if (p.block_count < kMaxBlockGroups) p.blocks[p.block_count++] = bc;
  });
  p.comm_bytes = st.most_sent_bytes;
}

// Memory of the heaviest stage: its weights, the K/V buffer of its blocks, and the activations
// of what is in flight (the full sequence in a warm-up step, else one patch) with the sends'
// and receives' buffers.
MemoryBreakdown pipefusion_memory(const StepContext& ctx, const StepContext& patch, const Stages& st) {
  const double b = ctx.m.bytes_per_activation, d = ctx.m.hidden();
  const MemoryBreakdown full_mem = denoising_memory(ctx, st.live_full);
  MemoryBreakdown mem = denoising_memory(patch, st.live_patch);
  const Bytes patch_active = mem.activations + kFragmentation * 2.0 * ctx.samples * patch.tokens * d * b;
  const Bytes full_active = full_mem.activations + kFragmentation * 2.0 * ctx.samples * ctx.tokens * d * b;
  const bool warmup = step_split(ctx.q, ctx.config.pipefusion).warmup > 0;
  const Bytes kv_buffer = st.most_blocks * kv_buffer_bytes_per_block(ctx);
  mem.transformer_weights = pipefusion_weight_bytes(ctx.m, ctx.axes.p, ctx.q.precision);
  mem.activations = std::max(patch_active, warmup ? full_active : 0.0) + kv_buffer;
  mem.attention_extra = std::max(mem.attention_extra, warmup ? full_mem.attention_extra : 0.0) + kv_buffer;
  return mem;
}

// The step's totals beyond the blocks: the sends on CommAxis::kPp, the host's per-patch work in
// place of the step's once-per-step ops in pipelined steps, and step_ms, the image's denoising
// (warm-up, pipelined phase) over its S steps.
void add_pipefusion_totals(const StepContext& ctx, const StepRestTerms& rest, Prediction& p) {
  const PipeFusionCost& c = p.pipefusion;
  const StepSplit steps = step_split(ctx.q, ctx.config.pipefusion);
  const double pipelined = static_cast<double>(steps.pipelined) / steps.steps;
  const Milliseconds p2p_ms = c.p2p_ms / steps.steps;
  p.comm_ms += p2p_ms;
  p.axis_comm_ms[static_cast<int>(CommAxis::kPp)] += p2p_ms;
  const double text_sends = c.p2p_text_ms > 0 ? 1.0 : 0.0;
  p.collective_calls += (steps.warmup * (1 + text_sends) + steps.pipelined * (c.patches + text_sends)) / steps.steps;
  p.host_ms += pipelined * (c.patches * c.patch_host_extra_ms - rest.cost.host_ms);
  p.step_ms = (c.warmup_ms + c.pipelined_ms) / steps.steps;
}

}  // namespace

MemoryBreakdown add_pipefusion_step(const StepContext& ctx, Prediction& p, std::optional<Source>& source) {
  const int sp = ctx.axes.r * ctx.axes.u;
  const Query patch_q = patch_query(ctx.q, ctx.config.pipefusion.patches, sp);
  StepContext patch(patch_q, ctx.config, ctx.variant, ctx.hw, ctx.runtime, &ctx.groups);
  patch.image_runs = 1;  // a patch pass holds one run per rank
  attend_full_sequence(patch, ctx);
  const Stages st = price_stages(ctx, patch);
  add_pacing_stage(ctx, st, p, source);
  const StepRestTerms rest = step_rest(ctx);
  add_step_rest(p, rest, source);
  pipefusion_times(ctx, patch, st, rest, p.pipefusion);
  note_source(source, send(ctx, 1.0).source);  // the source of the sends' terms
  add_pipefusion_totals(ctx, rest, p);
  return pipefusion_memory(ctx, patch, st);
}

}  // namespace cpplan::costmodel
