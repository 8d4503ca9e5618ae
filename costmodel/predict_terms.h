#pragma once
// The steps of CostModel::predict (cost_model.cpp), one per term of a prediction, in the order
// predict takes them: the block groups, the rest of the step, the step correction, the memory of
// the denoising phase, and the placement of the text encoders and the VAE. Internal to
// costmodel/ (they take a StepContext); declared here so that tests can check each by hand.

#include <optional>
#include <vector>

#include "costmodel/step_context.h"

namespace cpplan::costmodel {

// Adds every block group's terms (block_terms) to the step's totals, per-axis communication,
// FLOPs and bytes sent, in the model's block order; records each group in p.blocks and folds its
// source into `source`. Returns the largest live layer of any block (bytes, for memory).
Bytes add_block_groups(const StepContext& ctx, Prediction& p, std::optional<Source>& source);

// The step outside the blocks, as one more block of the step: the CP output all-gathered over
// the CP group, CFG's all-gather of the predictions, the scheduler's fp32 update of the latents
// (3 x S_img x in_channels x 4 bytes per image), the prologue/epilogue ops on the host, and the
// waits at those two collectives.
struct StepRestTerms {
  BlockCost cost;                  // count 1; comm_ms = cp_gather_ms + cfg_gather_ms
  Milliseconds cp_gather_ms = 0;   // CommAxis::kCp's share of cost.comm_ms
  Milliseconds cfg_gather_ms = 0;  // CommAxis::kCfg's share
  Bytes bytes_sent = 0;            // per rank (nccl-tests size x busbw factor), both gathers
};
StepRestTerms step_rest(const StepContext& ctx);
// Adds the rest of the step to the totals (p.step_rest, the per-axis and extra communication)
// and folds its communication source into `source`.
void add_step_rest(Prediction& p, const StepRestTerms& rest, std::optional<Source>& source);

// Adds one block group's (or the step rest's) times to the step's totals.
void add_to_step(Prediction& p, const BlockCost& b);
// Adds one GEMM of `flops`, priced `t`, to `c`: its FLOPs, its time (and the part the memory
// traffic bounds) and the source of its figure.
void add_gemm(BlockCost& c, Flops flops, const Timed& t);

// Steps per second of a step of `step_ms` (0 for an empty step).
double steps_per_sec(Milliseconds step_ms);

// Replaces the analytic step time by the correction's (which reads the terms), keeping the
// analytic one in uncalibrated_step_ms. Precondition: `correction` is set.
void calibrate_step(Prediction& p, const StepCorrection& correction, const ParallelConfig& pc);

// Caching allocator slack over the live activations (PyTorch's block rounding and splitting).
inline constexpr double kFragmentation = 1.15;

// Parameters of the attention and FFN linears of one block of `g` (both streams of a double
// block, a cross block's text K/V, the image-only attention): the TP-sharded part.
double block_linear_params(const ModelProfile& m, const BlockGroup& g);
// Of every block, capped at the model's parameters (the rest: embedders, norms, modulation).
double all_block_linear_params(const ModelProfile& m);

// The transformer's weights on one GPU (bytes): the attention and FFN linears of every block
// (both streams of a double block, a cross block's text K/V, the image-only attention), capped at
// the model's parameters, divided over `tp` ranks; the rest (embedders, norms, modulation) whole.
// Under a quantized precision the block linears take the format's bytes (core/precision.h); the
// rest stays at the checkpoint's, as the frameworks' validated presets keep modulation, embedders
// and the output layer in BF16.
Bytes transformer_weight_bytes(const ModelProfile& m, int tp, const Precision& p = {});
// Bytes per parameter of the block linears under `p`: the format's, else the checkpoint's.
Bytes linear_weight_bytes(const ModelProfile& m, const Precision& p);

// Fully sharded weights (xDiT fully_shard_degree, FSDP-style): every block's parameters are split
// over the F ranks of the group and all-gathered before the block runs, the next block's gather
// prefetched while it computes, so two whole blocks are live at once (the one running, the one
// arriving).
inline constexpr double kFsGatheredBlocks = 2.0;
// The parameters one block of `g` gathers: FSDP wraps each block whole, so its attention and FFN
// linears and its own adaLN modulation, from the D-wide conditioning: a double block 6 x D per
// stream (9 x D for SD3.5's image with its own self-attention), a single block 3 x D, a sequential
// or cross block 6 x D, each x D; a learned 6 x D table (Wan, PixArt); 2 x 6 D x D (CogVideoX's
// expert norms); none when shared (FLUX.2). Scaled down only when every block's would pass the
// model's parameters.
double fully_shard_block_params(const ModelProfile& m, const BlockGroup& g);
// Its bytes: the linears at linear_weight_bytes, the modulation at the checkpoint's.
Bytes fully_shard_block_bytes(const ModelProfile& m, const BlockGroup& g, const Precision& p = {});
// The transformer's weights on one GPU of a fully-shard group of `fs` ranks (bytes): 1/fs of the
// blocks' parameters, the rest (embedders, output layer) whole, as xDiT's FSDP strategy wraps the
// blocks alone and moves the other children whole and as cpplan's executor keeps them
// (executor/sharded_block.h); plus kFsGatheredBlocks whole copies of the largest block.
// Precondition: fs >= 1.
Bytes fully_sharded_weight_bytes(const ModelProfile& m, int fs, const Precision& p = {});
// Of which: the kFsGatheredBlocks whole copies of the largest block, which only a forward gathers
// (none while loading).
Bytes fully_shard_gathered_bytes(const ModelProfile& m, const Precision& p = {});

// Memory of the denoising phase: the transformer's and the VAE's weights, the resident
// activations plus the largest live layer `live` (bytes) with the allocator's slack, the runtime's
// reserve. The placement adds the text encoders and the decode.
MemoryBreakdown denoising_memory(const StepContext& ctx, Bytes live);

// How much a placement asks of a framework beyond loading the pipeline on every GPU: streaming or
// freeing the text encoder is a few lines of diffusers (1); sharding it (2) and decoding in
// parallel (1) need cache-dit or xDiT.
int placement_complexity(const PipelineCost& p);

// Among the placements that fit, the simplest whose image time is within this fraction of the
// fastest (of the steps' time plus the fastest's once-per-image time): a placement that changes
// what the frameworks must set up is worth it only for a real gain, not for a few milliseconds.
inline constexpr double kPlacementGain = 0.02;

}  // namespace cpplan::costmodel
