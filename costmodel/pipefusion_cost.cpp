// PipeFusion's step: stages priced block group by block group on the full sequence (warm-up) and
// on one patch (pipelined), the pacing stage, the point-to-point sends and the memory of a stage.
#include "costmodel/pipefusion_cost.h"

#include <algorithm>

#include "core/pipefusion.h"

namespace cpplan::costmodel {

namespace {

// a x wa + b x wb for every additive term (times, FLOPs, ops, calls); the rest is a's.
BlockCost blend(const BlockCost& a, double wa, const BlockCost& b, double wb) {
  BlockCost out = a;
  Milliseconds BlockCost::*terms[] = {&BlockCost::flops,   &BlockCost::gemm_ms,          &BlockCost::attention_ms,
                                      &BlockCost::memory_ms, &BlockCost::host_ms,        &BlockCost::comm_ms,
                                      &BlockCost::sync_ms, &BlockCost::collective_calls, &BlockCost::ops,
                                      &BlockCost::ulysses_ops, &BlockCost::ring_ops,    &BlockCost::ring_iteration_ops};
  for (auto term : terms) out.*term = a.*term * wa + b.*term * wb;
  return out;
}

// The weights of the warm-up and the pipelined steps in the mean step: W / S and (S - W) / S.
struct StepMix {
  double warmup = 0, pipelined = 1;
  int warmup_steps = 0;
};
StepMix step_mix(const Query& q, const PipeFusionConfig& pf) {
  const int steps = std::max(1, q.steps);
  StepMix mix;
  mix.warmup_steps = std::clamp(pf.warmup_steps, 0, steps);
  mix.warmup = static_cast<double>(mix.warmup_steps) / steps;
  mix.pipelined = 1.0 - mix.warmup;
  return mix;
}

// Local image tokens of a rank by the bytes rule: S_img / k, unrounded (k = r x u).
double image_local(const StepContext& ctx) { return ctx.input.image_tokens / (ctx.axes.r * ctx.axes.u); }

// One send of `bytes` to the next stage: alpha + bytes / busbw over the pp group's link (the
// collective machinery's send/recv, bus factor 1).
Timed send(const StepContext& ctx, Bytes bytes) {
  return ctx.hw.collective(Collective::kSendRecv, bytes, ctx.group(CommAxis::kPp));
}

// The pacing stage: the most loaded on one patch (it sets the pipelined step's slot).
int pacing_stage(const std::vector<StageTerms>& patch) {
  int pace = 0;
  for (int s = 1; s < static_cast<int>(patch.size()); ++s)
    if (patch[s].time_ms > patch[pace].time_ms) pace = s;
  return pace;
}

}  // namespace

std::vector<std::vector<BlockGroup>> pipefusion_stages(const ModelProfile& m, int stages) {
  std::vector<std::vector<BlockGroup>> out;
  std::size_t group = 0;
  int used = 0;  // blocks of m.blocks[group] already in earlier stages
  for (int left : pipefusion_stage_blocks(m.total_blocks(), stages)) {
    std::vector<BlockGroup> stage;
    while (left > 0 && group < m.blocks.size()) {
      BlockGroup part = m.blocks[group];
      part.count = std::min(left, m.blocks[group].count - used);
      if (part.count > 0) stage.push_back(part);
      left -= part.count;
      used += part.count;
      if (used >= m.blocks[group].count) ++group, used = 0;
    }
    out.push_back(std::move(stage));
  }
  return out;
}

StageTerms stage_terms(const StepContext& ctx, const std::vector<BlockGroup>& stage) {
  StageTerms out;
  for (const BlockGroup& g : stage) {
    out.groups.push_back(block_terms(ctx, g));
    const BlockTerms& t = out.groups.back();
    out.blocks += g.count;
    out.time_ms += t.cost.time_ms();
    out.bytes_sent += t.bytes_sent;
    out.live_bytes = std::max(out.live_bytes, t.live_bytes);
  }
  return out;
}

Query patch_query(const Query& q, int patches, int sp) {
  const long long largest = patches < 1 ? q.sequence.image_tokens : patch_token_span(q, patches, sp).largest;
  Query out = q;
  out.sequence.attention_tokens = q.sequence.attention_tokens - q.sequence.image_tokens + largest;
  out.sequence.image_tokens = largest;
  return out;
}

void attend_full_sequence(StepContext& patch, const StepContext& full) {
  // Each call's keys grow by the ratio of the sequences: Ulysses' full keys for its heads, Ring's
  // r blocks of the full sequence's CP share.
  const double joint = cp::sequence(patch.input);
  if (joint > 0) patch.attention.kv_tokens *= cp::sequence(full.input) / joint;
  if (patch.input.image_tokens > 0)
    patch.image_attention.kv_tokens *= full.input.image_tokens / patch.input.image_tokens;
}

Milliseconds pipelined_step_ms(int stages, int patches, Milliseconds stage_patch_ms, Milliseconds p2p_patch_ms,
                               Milliseconds rest_ms) {
  return stages * stage_patch_ms + (stages - 1) * p2p_patch_ms +
         (patches - 1) * std::max(stage_patch_ms, p2p_patch_ms) + rest_ms;
}

Milliseconds pipeline_bubble_ms(int stages, int patches, Milliseconds stage_patch_ms, Milliseconds p2p_patch_ms,
                                Milliseconds rest_ms) {
  return pipelined_step_ms(stages, patches, stage_patch_ms, p2p_patch_ms, rest_ms) -
         patches * std::max(stage_patch_ms, p2p_patch_ms) - rest_ms;
}

Bytes pipefusion_p2p_bytes(const StepContext& ctx) {
  const StepMix mix = step_mix(ctx.q, ctx.config.pipefusion);
  const double unit = ctx.samples * ctx.m.hidden() * ctx.m.bytes_per_activation;
  const Bytes warmup = unit * (image_local(ctx) + ctx.text_local);
  const Bytes pipelined = unit * (image_local(ctx) + ctx.config.pipefusion.patches * ctx.text_local);
  return mix.warmup * warmup + mix.pipelined * pipelined;
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

Bytes pipefusion_weight_bytes(const ModelProfile& m, int stages) {
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
  const auto split = pipefusion_stages(m, stages);
  double heaviest = 0;
  for (std::size_t s = 0; s < split.size(); ++s) {
    double here = (s == 0 || s + 1 == split.size()) ? rest : 0;
    for (const BlockGroup& g : split[s])
      here += g.count * (block_linear_params(m, g) * linear_scale + block_modulation_params(m, g) * modulation_scale);
    heaviest = std::max(heaviest, here);
  }
  return heaviest * m.bytes_per_param;
}

Bytes kv_buffer_bytes_per_block(const StepContext& ctx) {
  return 2.0 * ctx.samples * (image_local(ctx) + ctx.text_local) * ctx.m.hidden() * ctx.m.bytes_per_activation;
}

namespace {

// Both passes of every stage: the full sequence (warm-up) and one patch (pipelined).
struct StagePasses {
  std::vector<StageTerms> full, patch;
  int pace = 0;
};

// The times of p.pipefusion from the stages' passes and the rest of the step (ms).
void pipefusion_times(const StepContext& ctx, const StepContext& patch, const StagePasses& passes,
                      Milliseconds rest_ms, PipeFusionCost& c) {
  const PipeFusionConfig& pf = ctx.config.pipefusion;
  const double b = ctx.m.bytes_per_activation, d = ctx.m.hidden();
  c.stages = pf.degree;
  c.patches = pf.patches;
  c.warmup_steps = step_mix(ctx.q, pf).warmup_steps;
  c.stage_blocks = passes.patch[passes.pace].blocks;
  c.stage_patch_ms = passes.patch[passes.pace].time_ms;
  c.p2p_patch_ms = send(ctx, ctx.samples * patch.tokens * d * b).ms;
  c.p2p_full_ms = send(ctx, ctx.samples * ctx.tokens * d * b).ms;
  // The last stage returns each patch's velocity to stage 0; only the last patch's is not hidden
  // behind the next patch's work. A warm-up step returns the whole latent's.
  const double velocity = ctx.samples * ctx.m.in_channels * b;
  c.return_ms = send(ctx, velocity * (patch.tokens - patch.text_local)).ms;
  const Milliseconds warmup_return_ms = send(ctx, velocity * (ctx.tokens - ctx.text_local)).ms;
  c.pipelined_step_ms = pipelined_step_ms(c.stages, c.patches, c.stage_patch_ms, c.p2p_patch_ms, rest_ms + c.return_ms);
  c.bubble_ms = pipeline_bubble_ms(c.stages, c.patches, c.stage_patch_ms, c.p2p_patch_ms, rest_ms + c.return_ms);
  c.warmup_step_ms = (c.stages - 1) * c.p2p_full_ms + rest_ms + warmup_return_ms;
  for (const StageTerms& s : passes.full) c.warmup_step_ms += s.time_ms;
  c.p2p_bytes = pipefusion_p2p_bytes(ctx);
}

// The pacing stage's blocks into p (per step: the mean of a warm-up's full pass and a pipelined
// step's M patch passes), and the most loaded rank's bytes: its CP collectives and its sends.
void add_pacing_stage(const StepContext& ctx, const StagePasses& passes, Prediction& p,
                      std::optional<Source>& source) {
  const StepMix mix = step_mix(ctx.q, ctx.config.pipefusion);
  const double m = ctx.config.pipefusion.patches;
  const StageTerms& full = passes.full[passes.pace];
  const StageTerms& patch = passes.patch[passes.pace];
  for (std::size_t i = 0; i < full.groups.size(); ++i) {
    const BlockCost bc = blend(full.groups[i].cost, mix.warmup, patch.groups[i].cost, mix.pipelined * m);
    for (int a = 0; a < kCommAxisCount; ++a)
      p.axis_comm_ms[a] += full.groups[i].axis_comm_ms[a] * mix.warmup + patch.groups[i].axis_comm_ms[a] * mix.pipelined * m;
    p.step_flops += bc.flops;
    add_to_step(p, bc);
    note_source(source, bc.source);
    if (p.block_count < kMaxBlockGroups) p.blocks[p.block_count++] = bc;
  }
  const int stages = static_cast<int>(passes.full.size());
  const Bytes p2p = pipefusion_p2p_bytes(ctx);
  for (int s = 0; s < stages; ++s) {  // the last stage sends no hidden states
    const Bytes cp = passes.full[s].bytes_sent * mix.warmup + passes.patch[s].bytes_sent * mix.pipelined * m;
    p.comm_bytes = std::max(p.comm_bytes, cp + (s + 1 < stages ? p2p : 0.0));
  }
}

// Memory of the heaviest stage: its weights, the K/V buffer of its blocks, and the activations
// of what is in flight (the full sequence in a warm-up step, else one patch) with the sends'
// and receives' buffers.
MemoryBreakdown pipefusion_memory(const StepContext& ctx, const StepContext& patch, const StagePasses& passes) {
  const double b = ctx.m.bytes_per_activation, d = ctx.m.hidden();
  int most_blocks = 0;
  Bytes live_full = 0, live_patch = 0;
  for (std::size_t s = 0; s < passes.full.size(); ++s) {
    most_blocks = std::max(most_blocks, passes.full[s].blocks);
    live_full = std::max(live_full, passes.full[s].live_bytes);
    live_patch = std::max(live_patch, passes.patch[s].live_bytes);
  }
  const MemoryBreakdown full_mem = denoising_memory(ctx, live_full);
  MemoryBreakdown mem = denoising_memory(patch, live_patch);
  const Bytes patch_active = mem.activations + kFragmentation * 2.0 * ctx.samples * patch.tokens * d * b;
  const Bytes full_active = full_mem.activations + kFragmentation * 2.0 * ctx.samples * ctx.tokens * d * b;
  const bool warmup = step_mix(ctx.q, ctx.config.pipefusion).warmup_steps > 0;
  const Bytes kv_buffer = most_blocks * kv_buffer_bytes_per_block(ctx);
  mem.transformer_weights = pipefusion_weight_bytes(ctx.m, ctx.axes.p);
  mem.activations = std::max(patch_active, warmup ? full_active : 0.0) + kv_buffer;
  mem.attention_extra = std::max(mem.attention_extra, warmup ? full_mem.attention_extra : 0.0) + kv_buffer;
  return mem;
}

}  // namespace

MemoryBreakdown add_pipefusion_step(const StepContext& ctx, Prediction& p, std::optional<Source>& source) {
  const Query patch_q = patch_query(ctx.q, ctx.config.pipefusion.patches, ctx.axes.r * ctx.axes.u);
  StepContext patch(patch_q, ctx.config, ctx.variant, ctx.hw, ctx.runtime, &ctx.groups);
  attend_full_sequence(patch, ctx);
  StagePasses passes;
  for (const auto& stage : pipefusion_stages(ctx.m, ctx.axes.p)) {
    passes.full.push_back(stage_terms(ctx, stage));
    passes.patch.push_back(stage_terms(patch, stage));
  }
  passes.pace = pacing_stage(passes.patch);
  add_pacing_stage(ctx, passes, p, source);
  const StepRestTerms rest = step_rest(ctx);
  add_step_rest(p, rest, source);
  PipeFusionCost& c = p.pipefusion;
  pipefusion_times(ctx, patch, passes, rest.cost.time_ms(), c);
  const Timed send_time = send(ctx, 1.0);  // the source of the sends' terms
  note_source(source, send_time.source);
  const StepMix mix = step_mix(ctx.q, ctx.config.pipefusion);
  const Milliseconds p2p_ms = mix.warmup * c.p2p_full_ms + mix.pipelined * c.patches * c.p2p_patch_ms;
  p.comm_ms += p2p_ms;
  p.axis_comm_ms[static_cast<int>(CommAxis::kPp)] += p2p_ms;
  p.collective_calls += mix.warmup + mix.pipelined * c.patches;
  p.step_ms = mix.warmup * c.warmup_step_ms + mix.pipelined * c.pipelined_step_ms;
  return pipefusion_memory(ctx, patch, passes);
}

}  // namespace cpplan::costmodel
