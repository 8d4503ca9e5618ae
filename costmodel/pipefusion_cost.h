#pragma once
// PipeFusion's cost (docs/cost-model.md, "PipeFusion"; shared/spec/parallelism.md): the
// transformer's blocks split into P stages, the latent into M patches that flow through them.
// A warm-up step runs the whole sequence through the stages in turn; a pipelined step runs the
// patches through the stages one after another, each patch attending to the K/V buffer of the
// full sequence. Internal to costmodel/ (it takes a StepContext); declared here for the tests.

#include <optional>
#include <vector>

#include "costmodel/predict_terms.h"

namespace cpplan::costmodel {

// The blocks of each of `stages` stages as block groups in the model's order: xDiT's split
// (pipefusion_stage_blocks) over the whole block list, so a stage can span two groups.
std::vector<std::vector<BlockGroup>> pipefusion_stages(const ModelProfile& m, int stages);

// One stage's blocks for one forward of the context's tokens.
struct StageTerms {
  std::vector<BlockTerms> groups;  // one per block group of the stage
  int blocks = 0;
  Milliseconds time_ms = 0;        // sum of the groups' time_ms() (max(host, GPU) + waits)
  Bytes bytes_sent = 0;            // the stage's CP collectives, per rank
  Bytes live_bytes = 0;            // the largest live layer of any of its blocks
};
StageTerms stage_terms(const StepContext& ctx, const std::vector<BlockGroup>& stage);

// The query of one patch: the largest patch of xDiT's split (patch_token_span(q, patches, sp)) in
// image tokens, the text whole (xDiT passes the encoder states with every patch).
Query patch_query(const Query& q, int patches, int sp);
// Makes a context built on a patch query attend like a patch: every attention call's keys are
// those of the full sequence (the stage's K/V buffer), `full` being the whole sequence's context.
void attend_full_sequence(StepContext& patch, const StepContext& full);

// The pipelined step: the first patch fills the P stages (P stage slots and P - 1 sends), the
// other M - 1 follow one per max(stage, send) slot; `rest` is the step outside the blocks.
Milliseconds pipelined_step_ms(int stages, int patches, Milliseconds stage_patch_ms, Milliseconds p2p_patch_ms,
                               Milliseconds rest_ms);
// What the pipelined step spends beyond M busy slots and the rest: fill and drain.
Milliseconds pipeline_bubble_ms(int stages, int patches, Milliseconds stage_patch_ms, Milliseconds p2p_patch_ms,
                                Milliseconds rest_ms);

// Point-to-point bytes a rank of a stage < P - 1 sends per step, the mean over the query's steps:
// warm-up samples x (S_img / k + text_local) x D x b, pipelined samples x (S_img / k + M x
// text_local) x D x b (every patch carries the text); k = r x u.
Bytes pipefusion_p2p_bytes(const StepContext& ctx);

// The transformer's weights on the GPU of the heaviest stage (bytes): its blocks' linears and
// their own adaLN projections plus, on the first and the last stage, the rest (embedders, final
// layer, shared modulation). TP never joins PipeFusion.
Bytes pipefusion_weight_bytes(const ModelProfile& m, int stages);

// The K/V buffer of one block: K and V of the full sequence for this rank's heads and CP share,
// 2 x samples x (S_img / k + text_local) x D x b.
Bytes kv_buffer_bytes_per_block(const StepContext& ctx);

// PipeFusion's step on the most loaded rank into `p` (the pacing stage's blocks as p.blocks, the
// rest of the step, the point-to-point time on CommAxis::kPp, step_ms the mean of the W warm-up
// and S - W pipelined steps, p.pipefusion); returns the denoising phase's memory per GPU.
// Precondition: ctx.config.pp() > 1.
MemoryBreakdown add_pipefusion_step(const StepContext& ctx, Prediction& p, std::optional<Source>& source);

}  // namespace cpplan::costmodel
