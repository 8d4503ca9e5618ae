#pragma once
// How a framework runs the transformer: the host side of an eager (or compiled) step, which the
// GPU's kernel times alone do not show. An eager PyTorch step dispatches every tensor op from
// Python; when the kernels are short (fast GPUs, short local sequences) the GPU waits on the host,
// and every collective waits for the slowest rank. Loaded from profiles/runtimes/*.toml (schema:
// docs/profiles.md); the op counts are counted from each framework's block forward.

#include <string>
#include <string_view>

#include "core/units.h"

namespace cpplan {

// Ops the host dispatches (Python-level tensor ops for eager frameworks, kernel launches for
// compiled code), per unit of work.
struct RuntimeOps {
  double double_block = 0;      // one double-stream (MMDiT) block
  double single_block = 0;      // one single-stream block
  double cross_block = 0;       // one self + cross-attention block
  double image_attention = 0;   // an extra image-only self-attention (SD3.5-medium)
  // Of the block counts above: the ops of one q or k norm (RMSNorm: to fp32, pow, mean, add, rsqrt,
  // mul, to bf16, mul) and of rotating one of q or k (apply_rotary_emb), which a model without
  // q/k norms or without RoPE does not launch (ModelProfile::qk_norm, rope).
  double qk_norm = 0;
  double rope = 0;
  // Of the block counts above: the ops inside one block's attention modules (q/k/v and output
  // projections, q/k norms, RoPE, the attention call), which a hook that predicts their outputs
  // (diffusers' TaylorSeer) skips on a cached step; 0: not counted apart (the dispatch kept whole).
  double double_attention = 0;
  double single_attention = 0;
  double cross_attention = 0;
  double ulysses = 0;           // per attention layer: the four all-to-alls and their reshapes
  double ring = 0;              // per attention layer: gathering K/V (or setting up the ring)
  double ring_iteration = 0;    // per K/V block of Ring: slicing, the attention call, the LSE merge
  double anything = 0;          // per attention layer of an anything mode: lengths, padding, slicing
  double tp_all_reduce = 0;     // per tensor-parallel all-reduce
  double tp_linear = 0;         // per tensor-parallel linear: wrapping its input and output (DTensor dispatch)
  double step = 0;              // per denoising step outside the blocks: embedders, RoPE, norm_out, scheduler
  double text_encoder_layer = 0;  // per layer of a text encoder
  double vae_decode = 0;        // one VAE decode (per chunk of a video VAE)
};

struct RuntimeProfile {
  std::string name;         // "diffusers", "xdit", "compiled", "cpplan"
  std::string description;
  std::string source;       // file it was loaded from
  std::string fitted_by;    // the fit file whose values replaced the priors ("" when none)

  RuntimeOps ops;
  // What dispatches the ops ("python": eager PyTorch from Python; "inductor": compiled code;
  // "cpp": ATen from C++): a fit's host cost per op is shared by the runtimes of one kind.
  std::string dispatch;
  Microseconds us_per_op = 0;       // host time to dispatch one op
  // Host time per op of the parts a compiled pipeline leaves eager (text encoders, VAE); 0: us_per_op.
  Microseconds eager_us_per_op = 0;
  bool overlaps_device = true;      // asynchronous launches: a block costs max(host, device)
  Microseconds collective_us = 0;   // host time to issue one collective (beyond its ops)
  Microseconds sync_us = 0;         // per collective x sqrt(2 ln n): waiting for the slowest of n ranks
  Milliseconds image_ms = 0;        // per image on the host: tokenizing, preparing latents, converting the output
  // Memory-bound traffic of a block relative to a fused implementation (1: norms, modulation,
  // RoPE and gated residuals each read and write their tensors once; eager frameworks move more:
  // fp32 RMSNorm and RoPE, unfused modulation).
  double elementwise_traffic = 1;
  // Score tensors (query x key tokens x heads each) live at once inside one attention call: 0 for
  // a fused kernel (flash, SDPA's memory-efficient one); 2 through diffusers' classic
  // AttnProcessor (what XLA compiles: the scores and their softmax; the profile's
  // explicit_attention_scores); 3 on cpplan's math path (executor/attention/common.cpp: the
  // scores, scores - lse and their exp, while the last multiplies V).
  double attention_score_tensors = 0;
  // Bytes per score element; 0: the activations' (the math path computes in fp32 whatever the dtype).
  double attention_score_bytes = 0;
  // Static shapes (XLA): every distinct (resolution, frames, batch) compiles its graphs before
  // its first image: base_s plus per_block_s per transformer block. 0: no compile step.
  double compile_base_s = 0;
  double compile_per_block_s = 0;
  bool compiles() const { return compile_base_s > 0 || compile_per_block_s > 0; }

  // Host time of `ops` ops of the transformer, and of the eager parts, ms.
  Milliseconds host_ms(double ops) const { return ops * us_per_op * 1e-3; }
  Milliseconds eager_host_ms(double ops) const { return ops * (eager_us_per_op > 0 ? eager_us_per_op : us_per_op) * 1e-3; }
};

// Where the text encoders live while a plan runs (shared/spec and docs/cost-model.md):
// replicated on every GPU; offloaded to CPU memory and streamed to the GPU block by block to
// encode; sequential: on the GPU to encode, freed before the transformer's denoising; sharded:
// tensor-parallel over the plan's GPUs. Fully sharded: the largest text encoder's weights split over
// the plan's fully-shard group with the transformer's (FSDP, as xDiT's fsdp_strategy), each layer
// gathered before it runs, the others replicated; fully-sharded-host: its shards kept in host memory
// between uses (FSDP's CPU offload policy, as xDiT for FLUX.2-dev and Wan).
enum class TextEncoderPlacement { kReplicated, kOffloaded, kSequential, kSharded, kFullySharded, kFullyShardedHost };
inline constexpr int kTextEncoderPlacementCount = 6;
// Whether the placement shards an encoder over the fully-shard group (applies only with one).
constexpr bool fully_sharded(TextEncoderPlacement p) {
  return p == TextEncoderPlacement::kFullySharded || p == TextEncoderPlacement::kFullyShardedHost;
}
// The VAE decode on one GPU, patch-parallel over the plan's GPUs, tiled (diffusers'
// vae.enable_tiling(): overlapping tiles of the VAE config's sample_size decoded one at a time) or
// sliced (vae.enable_slicing(): the images of a batch decoded one at a time).
enum class VaePlacement { kSingle, kParallel, kTiled, kSliced };
inline constexpr int kVaePlacementCount = 4;
// The first two are the planner's own choice; tiled and sliced only when the query asks for them.
inline constexpr int kChosenVaePlacementCount = 2;

// Where a plan's text encoders and VAE decode run.
struct PipelinePlacement {
  TextEncoderPlacement text_encoder = TextEncoderPlacement::kReplicated;
  VaePlacement vae = VaePlacement::kSingle;
  bool operator==(const PipelinePlacement& o) const { return text_encoder == o.text_encoder && vae == o.vae; }
  bool operator!=(const PipelinePlacement& o) const { return !(*this == o); }
};

// "replicated", "offloaded", "sequential", "sharded", "fully-sharded", "fully-sharded-host"
std::string_view to_string(TextEncoderPlacement p);
// The names as a rule's text: "replicated, offloaded, ... or fully-sharded-host".
std::string text_encoder_placement_choices();
std::string_view to_string(VaePlacement p);          // "single", "parallel", "tiled", "sliced"
bool text_encoder_placement_from_string(std::string_view s, TextEncoderPlacement& out);
bool vae_placement_from_string(std::string_view s, VaePlacement& out);

}  // namespace cpplan
