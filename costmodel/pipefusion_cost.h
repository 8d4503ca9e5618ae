#pragma once
// PipeFusion's cost (docs/cost-model.md, "PipeFusion"; shared/spec/parallelism.md): the
// transformer's blocks split into P stages, the latent into M patches that flow through them, as
// xDiT runs it. The first W steps run the whole sequence through the stages in turn (warm-up);
// then the patches of the remaining S - W steps flow without a break: the last stage steps the
// scheduler per patch and sends it back to stage 0, so the pipe fills and drains once per image.
// Internal to costmodel/ (it takes a StepContext); declared here for the tests.

#include <optional>
#include <vector>

#include "costmodel/predict_terms.h"

namespace cpplan::costmodel {

// The blocks of each of `stages` stages as block groups in the model's order: xDiT's split
// (pipefusion_stage_blocks) over the whole block list, so a stage can span two groups.
std::vector<std::vector<BlockGroup>> pipefusion_stages(const ModelProfile& m, int stages);

// The query of one patch: the largest patch of xDiT's split (patch_token_span(q, patches, sp)) in
// image tokens, the text whole (every patch's forward runs the joint text with it).
Query patch_query(const Query& q, int patches, int sp);
// Makes a context built on a patch query attend like a patch: every attention call's keys are
// those of the full sequence (the stage's K/V buffer), `full` being the whole sequence's context;
// Ring's K/V blocks are those of the buffer too (xDiT passes the cached K/V of the full sequence
// around the ring for every patch; Ulysses' all-to-alls move the patch's tokens only).
void attend_full_sequence(StepContext& patch, const StepContext& full);

// The pipelined phase of an image, the patches of S - W steps flowing through P stages without a
// break. A patch's trip through the pipe takes `stages_sum_ms` of the stages' work plus P - 1
// sends of `link_ms` (the latency); returning to stage 0 adds `return_ms` (the round trip, loop).
// A step's M patches need max(M x max(stage, link), loop): the pacing stage or the link, or, with
// few patches, the round trip of patch 0 before stage 0 can start it again (the cycle).
struct PipelinedPhase {
  double slots = 0;             // (S - W) x M patch slots (count per image)
  Milliseconds slot_ms = 0;     // cycle / M: one slot (ms)
  Milliseconds cycle_ms = 0;    // one step's M patches in the steady state (ms)
  Milliseconds latency_ms = 0;  // one patch through the P stages (ms)
  Milliseconds loop_ms = 0;     // one patch's round trip back to stage 0 (ms)
  Milliseconds fill_drain_ms = 0;  // per image: total_ms - slots x slot_ms
  Milliseconds total_ms = 0;    // per image: (S - W - 1) x cycle + (M - 1) x max(stage, link) + latency
};
struct PipeShape {
  int stages = 1, patches = 1, steps = 0;  // P, M and the pipelined steps S - W
  Milliseconds stage_max_ms = 0;           // the pacing stage on one patch
  Milliseconds stages_sum_ms = 0;          // every stage on one patch
  Milliseconds link_ms = 0;                // a patch's send to the next stage (mean over a step's)
  Milliseconds return_ms = 0;              // the last stage's patch back to stage 0
};
PipelinedPhase pipelined_phase(const PipeShape& s);

// Point-to-point bytes a rank of a stage < P - 1 sends per step (warm-up or pipelined alike):
// samples x (S_img / k + text_local) x D x b, k = r x u; the patches add up to the image and the
// joint text travels once per step (with patch 0 in a pipelined step).
Bytes pipefusion_p2p_bytes(const StepContext& ctx);

// The transformer's weights on the GPU of the heaviest stage (bytes): its blocks' linears and
// their own adaLN projections plus, on the first and the last stage, the rest (embedders, final
// layer, shared modulation). TP never joins PipeFusion.
Bytes pipefusion_weight_bytes(const ModelProfile& m, int stages, const Precision& p = {});

// The K/V buffer of one block: K and V of the full sequence for this rank's heads and CP share,
// 2 x samples x (S_img / k + text_local) x D x b.
Bytes kv_buffer_bytes_per_block(const StepContext& ctx);

// PipeFusion's step on the most loaded rank into `p` (the pacing stage's blocks as p.blocks, the
// rest of the step, the point-to-point time on CommAxis::kPp, step_ms the image's denoising time
// over S, p.pipefusion); returns the denoising phase's memory per GPU.
// Precondition: ctx.config.pp() > 1.
MemoryBreakdown add_pipefusion_step(const StepContext& ctx, Prediction& p, std::optional<Source>& source);

}  // namespace cpplan::costmodel
