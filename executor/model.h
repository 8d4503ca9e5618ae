#pragma once
// The two DiT families of the profiles in LibTorch, with deterministic random weights from a
// seed (timing a plan needs the shapes, not a checkpoint):
// - joint-attention MMDiT (FLUX, HunyuanVideo, Qwen-Image): double-stream blocks with separate
//   image/text weights and joint attention, single-stream blocks, adaLN modulation, RoPE;
// - cross-attention DiT (Wan): self-attention over video tokens, cross-attention to text, FFN.
// Every rank draws the full weights in the same order and keeps its tensor-parallel shard
// (column-parallel q/k/v/FFN-in, row-parallel out/FFN-out followed by an all-reduce), so any
// plan computes the same function as one rank.

#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "core/model.h"
#include "executor/attention.h"
#include "executor/device.h"

namespace cpplan::executor {

// What the model's context-parallel plan splits at entry and gathers at exit.
struct ContextParallelPlan {
  bool split_text = false;  // text tokens split like the image tokens (FLUX) or kept whole (Wan)
};

// The inputs of one forward pass, already split for this rank by apply_context_parallel.
struct ForwardInputs {
  at::Tensor latents;     // [B, S_img_local, in_channels]
  at::Tensor text;        // [B, S_txt(_local), hidden]
  at::Tensor timestep;    // [B] in [0, 1]
  at::Tensor image_rope;  // [S_img_local, head_dim / 2] rotation angles
  at::Tensor text_rope;   // [S_txt(_local), head_dim / 2]
  // The timestep's conditioning [B, D] once DitModel::with_conditioning computed it for a pass run
  // in pieces; undefined: each piece computes it from `timestep`.
  at::Tensor conditioning;
};

// The blocks a model instance holds and runs: [first, first + count) of the model's blocks in
// forward order (double-stream, then single-stream, then sequential; Wan's in order). A PipeFusion
// stage holds its stage's blocks; count < 0: all of them.
struct BlockRange {
  int first = 0;
  int count = -1;
  bool holds(int block) const { return block >= first && (count < 0 || block < first + count); }
};

class DitModel {
 public:
  virtual ~DitModel() = default;
  virtual ContextParallelPlan cp_plan() const = 0;
  // Velocity for this rank's image tokens: [B, S_img_local, in_channels]. The whole model, the
  // same function as project_out(run_blocks(embed(in))); needs every block (BlockRange{}).
  virtual at::Tensor forward(const ForwardInputs& in, AttentionContext& attention) = 0;
  // The pieces of a forward pass that PipeFusion's stages run apart. The hidden states between
  // them: [B, S_txt + S_img, hidden] ([text; image]) for joint-attention models, [B, S_img, hidden]
  // for cross-attention ones (their text is embedded again by each stage from `in.text`).
  // `in.latents` is read by embed() only; every piece computes the timestep conditioning itself
  // unless `in` carries it (with_conditioning).
  virtual at::Tensor embed(const ForwardInputs& in) const = 0;
  // `in` with the timestep's conditioning computed once, for the pieces of one pass (a step cache
  // runs three: as a cache hook on the blocks sees the conditioning of the model's one forward).
  virtual ForwardInputs with_conditioning(ForwardInputs in) const = 0;
  // The held blocks (BlockRange) on `hidden`.
  at::Tensor run_blocks(const at::Tensor& hidden, const ForwardInputs& in, AttentionContext& attention) const {
    return run_span(hidden, in, attention, BlockRange{});
  }
  // The held blocks of `span` alone on `hidden`, the same form in and out (a step cache runs the
  // first, middle and last blocks apart: executor/cache.h).
  virtual at::Tensor run_span(const at::Tensor& hidden, const ForwardInputs& in, AttentionContext& attention,
                              BlockRange span) const = 0;
  // The final norm and projection of the image tokens: the velocity [B, S_img, in_channels].
  virtual at::Tensor project_out(const at::Tensor& hidden, const ForwardInputs& in) const = 0;
  // Bytes in the weights as this rank holds them (its TP or fully-sharded shard, its PipeFusion
  // stage's blocks; int8 weights with their scales under WeightStorage::kInt8), summed over the
  // tensors themselves: the parameter bytes a run records beside the allocator's load phase.
  virtual double parameter_bytes() const = 0;
};

// The full weights drawn in one process, for ranks that run as its threads: the first rank to
// build a model of (profile, seed, device) draws it and keeps every draw here, the others read
// them as they come (the numbers their own generator gives: each rank draws the whole model and
// keeps its shard). The draws live as long as the WeightDraws; hold it across runs of one model
// to draw it once.
class WeightDraws;
std::shared_ptr<WeightDraws> make_weight_draws();

// Builds the model of `profile` with weights drawn from `seed`, sharded for `tp` (rank, size), on
// `device` in its dtype. The draws depend on the device kind (CPU or CUDA generator), never on
// the plan: blocks outside `blocks` are drawn too (the same generator sequence) and dropped at
// once, so a stage's weights equal the single-rank model's. When `fs` has F > 1 ranks, each
// transformer block is kept as this rank's 1/F and all-gathered over `fs` just before it runs
// (FSDP; embedders and final layer stay whole); every rank of `fs` must then run the same blocks.
// `tp` and `fs` must outlive the model.
// `shared`: see WeightDraws; null: this rank draws its own.
std::unique_ptr<DitModel> build_model(const ModelProfile& profile, uint64_t seed, Comm& tp, Comm& fs,
                                      const DeviceSpec& device, const AttentionOp& attention, BlockRange blocks = {},
                                      WeightDraws* shared = nullptr);
// As above with every block held whole (no fully-shard group): PipeFusion's stages, the bench.
std::unique_ptr<DitModel> build_model(const ModelProfile& profile, uint64_t seed, Comm& tp, const DeviceSpec& device,
                                      const AttentionOp& attention, BlockRange blocks = {},
                                      WeightDraws* shared = nullptr);

// RoPE angles [S, head_dim/2] for latent-grid positions (frame, row, column) of the image tokens
// and position 0 for text tokens.
at::Tensor image_rope_angles(int64_t frames, int64_t rows, int64_t cols, int64_t head_dim);
at::Tensor text_rope_angles(int64_t tokens, int64_t head_dim);

}  // namespace cpplan::executor
