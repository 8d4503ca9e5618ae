#pragma once
// Analytic cost of one plan as a framework runs it: per denoising step and block type, the GPU's
// time (GEMMs from the FLOPs of the local shard over peak x efficiency with the weight/activation
// bytes, attention, memory-bound work from bytes over memory bandwidth, collectives as alpha +
// bytes * factor / busbw) against the host's time to dispatch the block's ops (the runtime
// profile); once per image, text encoding, VAE decode and the pipeline's own work, for the text
// encoder and VAE placement that is fastest and fits; and the peak memory per GPU. See
// docs/cost-model.md for every formula.

#include <algorithm>
#include <array>
#include <functional>
#include <optional>

#include "core/plan.h"
#include "core/runtime.h"
#include "costmodel/hardware_model.h"

namespace cpplan::costmodel {

inline constexpr int kMaxBlockGroups = 4;

// The communication groups of a plan: tp, ulysses, ring, the whole CP group (ring x ulysses: the
// output gather), cfg, PipeFusion's stages (pp: point-to-point between consecutive stages) and the
// fully-shard group (fs: each block's weights all-gathered before it runs). Axes without
// collectives (dp) have none.
enum class CommAxis { kTp, kUlysses, kRing, kCp, kCfg, kPp, kFs };
inline constexpr int kCommAxisCount = 7;
std::string_view to_string(CommAxis a);  // "tp", "ulysses", "ring", "cp", "cfg", "pp", "fs"

// One group per axis. default_layout() is the rule without a topology (ranks laid out as xDiT's
// tp-sp-pp-cfg-dp: tp innermost, then ulysses, ring, pp, cfg, dp; a group leaves the node once
// its span does); a placement (planner/topology/) supplies its own, with each group's effective
// bandwidth.
struct CommLayout {
  std::array<CommGroup, kCommAxisCount> groups{};
  CommGroup& operator[](CommAxis a) { return groups[static_cast<int>(a)]; }
  const CommGroup& operator[](CommAxis a) const { return groups[static_cast<int>(a)]; }
};
CommLayout default_layout(const ParallelConfig& c, const HardwareProfile& hw);

// Where each term's inputs came from: the least measured input of the term; nullopt for a term
// with no input (no collective in the block, say).
struct TermSources {
  std::optional<Source> gemm, attention, memory, comm;
};
// Folds one input's source into a term's: the least measured wins.
void note_source(std::optional<Source>& term, Source input);

// All blocks of one group for one denoising step on the most loaded rank.
struct BlockCost {
  BlockKind kind = BlockKind::kSingle;
  int count = 0;
  Flops flops = 0;              // local FLOPs (GEMMs + attention)
  Milliseconds gemm_ms = 0;
  Milliseconds gemm_traffic_ms = 0;  // of gemm_ms: GEMMs the memory traffic bounds (the roofline's other side)
  Milliseconds attention_ms = 0;
  Milliseconds memory_ms = 0;   // memory-bound elementwise work, layout copies and LSE merges
  Milliseconds host_ms = 0;     // host time to dispatch the blocks' ops and collectives (the runtime)
  Milliseconds comm_ms = 0;     // CP and TP collectives on the GPU
  Milliseconds sync_ms = 0;     // waiting at each collective for the slowest rank (not overlapped)
  // Of gemm_ms, attention_ms, memory_ms and comm_ms: the attention modules' device work (their
  // projections, kernels, merges and Ulysses/Ring collectives), which a cache that predicts the
  // attention outputs alone skips (diffusers' TaylorSeer).
  Milliseconds attention_module_ms = 0;
  Milliseconds attention_module_host_ms = 0;  // of host_ms: dispatching those modules' ops (RuntimeOps::*_attention)
  double collective_calls = 0;  // collectives issued (each a synchronisation of the group)
  // The host's ops behind host_ms (with collective_calls x the runtime's collective_us): the
  // block's own, the Ulysses all-to-alls', Ring's set-up and Ring's K/V blocks.
  double ops = 0, ulysses_ops = 0, ring_ops = 0, ring_iteration_ops = 0;
  bool overlapped = true;       // the runtime launches asynchronously (host and GPU overlap)
  TermSources sources;
  Source source = Source::kDatasheet;  // the least measured of `sources`
  Milliseconds kernels_ms() const { return gemm_ms + attention_ms + memory_ms; }
  Milliseconds device_ms() const { return kernels_ms() + comm_ms; }  // the GPU's stream, in order
  // Asynchronous launches: the GPU waits on the host only when its work is shorter than the
  // host's; a synchronous runtime pays both. Then the synchronisation at the collectives.
  Milliseconds time_ms() const { return time_with_ms(device_ms(), host_ms); }
  bool host_bound() const { return overlapped && host_ms > device_ms(); }
  // time_ms() with the attention modules' device work and dispatch left out and `predict_host_ms`
  // of dispatch added: the block where a hook predicts their outputs and the rest runs.
  Milliseconds time_without_attention_ms(Milliseconds predict_host_ms) const {
    return time_with_ms(device_ms() - attention_module_ms, host_ms - attention_module_host_ms + predict_host_ms);
  }
  // The blocks' time when the GPU's stream holds `device` ms and the host dispatches for `host`
  // ms, with the waits.
  Milliseconds time_with_ms(Milliseconds device, Milliseconds host) const {
    return (overlapped ? std::max(device, host) : device + host) + sync_ms;
  }
};

// The phases of a job whose memory is predicted: loading the pipeline (the weights reach the GPU,
// sharded as the plan's scripts order it), encoding the prompt, denoising, decoding the latents.
enum class MemoryPhase { kLoad, kEncode, kDenoise, kDecode };
inline constexpr int kMemoryPhaseCount = 4;
std::string_view to_string(MemoryPhase p);  // "load", "encode", "denoise", "decode"

// Bytes per GPU in the phases of a job: loading, encoding the prompt, denoising, decoding; and the
// host memory a rank holds while it loads.
struct MemoryBreakdown {
  Bytes transformer_weights = 0;  // TP-sharded attention/FFN weights plus replicated rest
  Bytes text_encoder_weights = 0; // resident throughout: whole (replicated), a shard (sharded), else 0
  Bytes vae_weights = 0;
  Bytes activations = 0;          // transformer phase: resident + largest live layer
  Bytes attention_extra = 0;      // of which: gathered K/V, full-sequence Q/K/V (per strategy)
  Bytes vae_decode = 0;           // decoder activations of one chunk (of this GPU's patch when parallel)
  Bytes text_encode = 0;          // only while encoding: streamed or loaded encoder weights + activations
  bool transformer_while_encoding = true;  // false when the encoder runs before the transformer is loaded
  Bytes runtime_reserved = 0;     // CUDA context, workspaces
  Bytes step_cache = 0;           // --cache: the stored residual (and a threshold policy's previous output), denoising
  // Loading: the weights on the GPU once the pipeline is loaded when the transformer is sharded
  // before it moves to the GPU (the order of cpplan's scripts: each weight reaches the GPU as its
  // shard), and when the whole pipeline moves to the GPU first and is sharded there (diffusers'
  // from_pretrained(...).to("cuda") then enable_parallelism: the unsharded transformer and every
  // text encoder the placement moves, whole).
  Bytes load_weights = 0;
  Bytes load_weights_moved_first = 0;
  // Host memory one rank holds while loading: from_pretrained reads every component's weights into
  // host memory before any reaches a GPU.
  Bytes host_load_per_rank = 0;
  // Every phase's bytes per GPU, runtime_reserved included, in MemoryPhase order.
  std::array<Bytes, kMemoryPhaseCount> phases() const;
  // One phase's bytes per GPU, runtime_reserved included.
  Bytes phase(MemoryPhase p) const { return phases()[static_cast<int>(p)]; }
  // The phase with the most bytes (denoising on a tie).
  MemoryPhase peak_phase() const;
  // The whole job's peak per GPU: the largest phase.
  Bytes peak() const;
  // The transformer's denoising loop alone: its weights (this GPU's TP shard) + its activations
  // (with the CP strategy's transients). No text encoder, no VAE, no runtime_reserved: what
  // cpplan's executor measures (the caching allocator's peak of allocated bytes on a GPU; on a CPU
  // the rank's resident memory grown beyond what it held before building the model).
  Bytes transformer_peak() const { return transformer_weights + activations + step_cache; }
};

// Whether a node's host memory holds the pipeline while its ranks load it: every rank at once (each
// reads its own copy), only when the ranks load in turn (each moves its weights to its GPU and frees
// them before the next reads), or not even one copy; unknown without a host memory size.
enum class HostLoad { kFits, kStaggered, kTooLarge, kUnknown };
std::string_view to_string(HostLoad h);  // "fits", "staggered", "too large", "unknown"
// The verdict for `ranks` ranks of a node each holding `per_rank` bytes in `host` bytes (0: unknown).
HostLoad host_load_verdict(Bytes per_rank, int ranks, Bytes host);

// One text encoder's encoding per image, for the placement chosen (docs/cost-model.md, "Per image").
struct TextEncodeTerms {
  int encoder = -1;        // index into ModelProfile::text_encoders
  double tokens = 0;       // tokens it reads per prompt
  double prompts = 0;      // prompts it encodes per image on this GPU (both under true CFG)
  Milliseconds gemm_ms = 0, attention_ms = 0, memory_ms = 0;  // on the GPU
  Milliseconds comm_ms = 0;      // all-reduces (sharded) or the exposed layer gathers (fully sharded)
  Milliseconds transfer_ms = 0;  // weights over the host link not hidden by compute
  Milliseconds host_ms = 0;      // the runtime's ops on the host
  Milliseconds ms = 0;           // the encoder's part of text_encode_ms
};
inline constexpr int kMaxTextEncoders = 4;  // HiDream's four

// The VAE decode per image batch of this replica, for the placement chosen: the decoder's FLOPs
// over the pixels and frames it computes, its memory-bound traffic, the host's ops per decoded
// chunk and the parallel decode's communication.
struct VaeDecodeTerms {
  double gflop_per_pixel = 0;     // decoder GFLOP per output pixel per frame
  double traffic_bytes_per_pixel = 0;
  double frame_pixels = 0;        // output pixels of one frame the decoder computes (every tile's when tiled)
  double frames = 1;              // frames per image
  double images = 1;              // images per replica
  double tiles = 1;               // tiles per frame
  double chunks = 1;              // host decode calls: latent frames (video) x tiles
  int gpus = 1;                   // GPUs sharing each image (parallel)
  Milliseconds conv_ms = 0, memory_ms = 0, host_ms = 0, comm_ms = 0;
  Source conv_source = Source::kDatasheet;
};

// The once-per-image work, for the placement chosen.
struct PipelineCost {
  TextEncoderPlacement text_encoder = TextEncoderPlacement::kReplicated;
  VaePlacement vae = VaePlacement::kSingle;
  Milliseconds text_encode_ms = 0;   // every encoder, every prompt (both under true CFG)
  Milliseconds text_transfer_ms = 0; // of which: weights over the host link not hidden by compute
  Milliseconds text_comm_ms = 0;     // of which: the sharded encoder's all-reduces
  Milliseconds vae_decode_ms = 0;
  Milliseconds vae_comm_ms = 0;      // of which: the parallel decode's halo exchange and gather
  Milliseconds host_ms = 0;          // the pipeline's own host work per image (runtime image_ms)
  // Two transformers, the idle one offloaded: each is loaded over the host link once per image
  // (the first for its steps, the second at the boundary timestep).
  Milliseconds transformer_load_ms = 0;
  // The terms behind text_encode_ms (each encoder's, the first kMaxTextEncoders) and vae_decode_ms.
  std::array<TextEncodeTerms, kMaxTextEncoders> encoders{};
  int encoder_count = 0;
  VaeDecodeTerms decode;
  Milliseconds total_ms() const { return text_encode_ms + vae_decode_ms + host_ms + transformer_load_ms; }
  PipelinePlacement placement() const { return {text_encoder, vae}; }
};

// Once-per-image costs and the memory of the phases for one placement of the text encoders and
// the VAE.
struct PipelineOption {
  PipelineCost cost;
  MemoryBreakdown memory;
};
// Unforced, the VAE is single or parallel; a forced placement is one of them.
inline constexpr int kPipelineOptionCount = kTextEncoderPlacementCount * kChosenVaePlacementCount;

// PipeFusion's terms (docs/cost-model.md, "PipeFusion"), on the most loaded stage; stages = 1 for a
// plan without it. An image's denoising is
//   warmup_ms + pipelined_slots x slot_ms + fill_drain_ms + pipelined_rest_ms   (= S x step_ms
// before a calibration): the parts a fit maps to its parameters. Each field says its unit and
// whether it is per patch, per step or per image.
struct PipeFusionCost {
  int stages = 1;                      // P
  int patches = 1;                     // M (xDiT's split runs exactly M for a valid plan)
  int warmup_steps = 0;                // W (at most the query's steps)
  int stage_blocks = 0;                // blocks of the stage that sets the pace
  // Warm-up steps: the full sequence through the P stages in turn.
  Milliseconds warmup_step_ms = 0;     // ms per warm-up step
  Milliseconds warmup_ms = 0;          // ms per image: W x warmup_step_ms
  // The pipelined phase: the patches of S - W steps flowing without a break.
  double pipelined_slots = 0;          // patch slots per image: (S - W) x M
  Milliseconds slot_ms = 0;            // ms per slot: a step's cycle / M (pacing stage, link or round trip)
  Milliseconds round_trip_ms = 0;      // ms per patch: through the P stages and back to stage 0
  Milliseconds fill_drain_ms = 0;      // ms per image: the pipe filling and draining, once
  Milliseconds pipelined_rest_ms = 0;  // ms per image: (S - W) x the step's GPU work outside the blocks
  Milliseconds pipelined_ms = 0;       // ms per image: slots x slot + fill_drain + rest
  Milliseconds pipelined_step_ms = 0;  // ms per pipelined step: pipelined_ms / (S - W)
  // One patch on the pacing stage (the host issues the stage's kernels for every patch).
  Milliseconds stage_patch_ms = 0;       // ms per patch: max(GPU, host) + waits (both for a synchronous runtime)
  Milliseconds stage_patch_gpu_ms = 0;   // ms per patch: its blocks' kernels and collectives
  Milliseconds stage_patch_host_ms = 0;  // ms per patch: the host's, blocks and patch_host_extra_ms
  Milliseconds patch_host_extra_ms = 0;  // ms per patch: of which outside the blocks (the forward's other ops, the sends)
  Milliseconds patch_host_ms = 0;        // ms per image: pipelined_slots x stage_patch_host_ms
  // Point to point between consecutive stages.
  Milliseconds p2p_patch_ms = 0;       // ms per patch: its image hidden states to the next stage
  Milliseconds p2p_text_ms = 0;        // ms per step: the joint text's, once (with patch 0); 0 without joint text
  Milliseconds p2p_full_ms = 0;        // ms per warm-up step: the full sequence's (image and text)
  Milliseconds return_ms = 0;          // ms per patch: the last stage's updated patch back to stage 0
  Milliseconds p2p_ms = 0;             // ms per image: a sending stage's link, W x full + (S - W) x (M x patch + text)
  Bytes p2p_bytes = 0;                 // bytes per step: what a sending stage's rank sends (every step alike)
  bool host_bound_patch() const { return stage_patch_host_ms > stage_patch_gpu_ms; }
  bool active() const { return stages > 1; }
};

struct Prediction {
  Milliseconds step_ms = 0;       // one denoising step (all passes of the batch); PipeFusion: the
                                  // image's denoising (warm-up and pipelined phase) over its steps
  Milliseconds compute_ms = 0;    // GPU kernels: GEMM + attention + memory-bound
  Milliseconds comm_ms = 0;       // collectives on the GPU
  Milliseconds host_ms = 0;       // the host's dispatch time per step (blocks and the rest of the step)
  Milliseconds sync_ms = 0;       // waiting for the slowest rank at collectives
  double steps_per_sec = 0;
  Milliseconds text_encode_ms = 0;  // once per image (pipeline.text_encode_ms)
  Milliseconds vae_decode_ms = 0;   // once per image (pipeline.vae_decode_ms)
  Milliseconds image_ms = 0;        // text + computed steps x step + cached steps x cached step + VAE + host work
  // --cache: of the query's steps, those that reuse the middle blocks' residual, and the time of one
  // such step (the first F and last B blocks, the rest of the step, the residual and the decision).
  int cached_steps = 0;
  Milliseconds cached_step_ms = 0;
  Milliseconds cache_work_ms = 0;  // of cached_step_ms: the cache's own (the residual added, a threshold's decision)
  // Static-shape runtimes (XLA): compiling the pipeline's graphs for this (resolution, frames,
  // batch), and the warm-up that pays it before the first timed image (tpu_warmup: the compile
  // and one image). Not in step_ms, steps_per_sec or image_ms. 0 for the other runtimes.
  Milliseconds compile_ms = 0;
  Milliseconds warmup_ms = 0;
  PipelineCost pipeline;
  std::string runtime;              // the runtime profile it was predicted for ("" without one)
  Flops step_flops = 0;             // local FLOPs per step on the most loaded rank
  Bytes comm_bytes = 0;             // bytes sent per rank per step (nccl-tests size x busbw factor)
  double collective_calls = 0;      // collectives per step on the most loaded rank
  Bytes peak_mem_bytes = 0;        // the whole pipeline's (memory.peak())
  MemoryPhase peak_phase = MemoryPhase::kDenoise;  // the phase of peak_mem_bytes
  // Host memory of one node while its ranks load the pipeline: ranks_per_node copies.
  int ranks_per_node = 1;
  Bytes host_load_bytes = 0;        // ranks_per_node x memory.host_load_per_rank
  HostLoad host_load = HostLoad::kUnknown;
  Bytes transformer_peak_bytes = 0; // the denoising loop's alone (memory.transformer_peak())
  bool fits_memory = false;
  MemoryBreakdown memory;
  std::array<BlockCost, kMaxBlockGroups> blocks{};
  int block_count = 0;
  // The step outside the blocks: the scheduler's update (memory_ms), the CP output and CFG
  // gathers (comm_ms), the prologue/epilogue ops on the host (ops, host_ms) and their waits.
  BlockCost step_rest;
  Milliseconds step_comm_extra_ms = 0;  // per step: output gather over CP, CFG all-gather
  std::optional<Source> step_comm_extra_source;
  std::array<Milliseconds, kCommAxisCount> axis_comm_ms{};  // comm_ms split by CommAxis
  Source source = Source::kDatasheet;   // the least measured input of any term
  // With a step correction (a calibration fitted to measured runs): step_ms, steps_per_sec,
  // cached_step_ms (corrected_cached_step_ms) and image_ms are corrected; the analytic sum of the
  // terms stays in uncalibrated_step_ms.
  bool calibrated = false;
  Milliseconds uncalibrated_step_ms = 0;
  PipeFusionCost pipefusion;        // stages = 1 without PipeFusion
  // Every placement of the text encoders and the VAE priced for the plan (the query's forced one,
  // else each that applies); pipeline_choice is the one pipeline, memory and the image terms above
  // hold. A framework picks among those it offers (choose_pipeline, use_pipeline).
  std::array<PipelineOption, kPipelineOptionCount> pipeline_options{};
  int pipeline_option_count = 0;
  int pipeline_choice = 0;
};

// A set of pipeline_options, by index: bit i stands for pipeline_options[i].
using PipelineOptionMask = unsigned;
inline constexpr PipelineOptionMask kEveryPipelineOption = (1u << kPipelineOptionCount) - 1;

// The cost model's rule over the options of `p` in `allowed`: of those that fit in `capacity`
// bytes per GPU, the simplest whose image time is within kPlacementGain of the fastest; when none
// fits, the one needing the least memory. -1 when `allowed` holds none of them.
int choose_pipeline(const Prediction& p, PipelineOptionMask allowed, int steps, Bytes capacity);
// The image time of `p` (over `steps` steps) with option i's placement; with `cached` steps of
// them cached instead of p.cached_steps (a framework whose cache runs its own schedule).
Milliseconds image_ms_with(const Prediction& p, int option, int steps);
Milliseconds image_ms_with(const Prediction& p, int option, int steps, int cached);
// The denoising of one image: its computed steps at step_ms and its cached ones (p.cached_steps, or
// `cached`) at cached_step_ms.
Milliseconds denoise_ms(const Prediction& p, int steps);
Milliseconds denoise_ms(const Prediction& p, int steps, int cached);
// The mean step of that denoising, denoise_ms / steps (step_ms itself when no step is cached): what
// plans are ranked by, so that a cached plan counts the steps it reuses.
Milliseconds mean_step_ms(const Prediction& p, int steps);

// The cached step of `p` when a correction makes its computed step `corrected_step_ms`: the cached
// step's blocks and the rest of the step (cached_step_ms less cache_work_ms) scaled by the
// correction's factor, corrected_step_ms / p.step_ms; the cache's own work as it is. The factor,
// not the correction's terms: a calibration fitted to full steps cannot tell its constants per step
// from its per-block terms (they grow together in every step it saw), and applied term by term to
// a cached step of a quarter of the blocks it charged those constants in full (docs/accuracy.md,
// "A fixed cache schedule on CPU"). Precondition: `p` uncalibrated; 0 when it caches nothing.
Milliseconds corrected_cached_step_ms(const Prediction& p, Milliseconds corrected_step_ms);
// Makes option i the placement of `p`: its once-per-image terms, memory, image time, whether it
// fits in `capacity`, and the warm-up of a compiling runtime.
void use_pipeline(Prediction& p, int option, int steps, Bytes capacity);

// A fitted correction of the step time from the prediction's terms (costmodel/calibration.h
// makes one from a stored calibration).
using StepCorrection = std::function<Milliseconds(const Prediction&, const ParallelConfig&)>;

class CostModel {
 public:
  explicit CostModel(const HardwareModel& hw, StepCorrection correction = {})
      : hw_(hw), correction_(std::move(correction)) {}
  // Precondition: the plan is valid for the query (planner::validate). `layout`: the groups of a
  // placement; nullptr: default_layout(). Without q.runtime, the host side is the hardware's
  // kernel launches (kernel_launch_runtime()).
  Prediction predict(const Query& q, const ParallelConfig& c, CpVariant v, const CommLayout* layout = nullptr) const;
  const HardwareModel& hardware() const { return hw_; }

 private:
  const HardwareModel& hw_;
  StepCorrection correction_;
};

// The collective that carries most of an axis's traffic (what --explain names the source of).
Collective main_collective(CommAxis axis, const ParallelConfig& c, CpVariant v);

// The runtime of a query without one: every kernel costs the hardware's launch time, asynchronous,
// no collective overheads (the model before runtimes existed; the executor's probes measure it).
RuntimeProfile kernel_launch_runtime(const HardwareModel& hw);

// FLOPs of one forward pass of the transformer on one device (no parallelism), as in
// shared/reference/models.md: linears 2 x weights x tokens, attention 4 x S_q x S_kv x hidden.
Flops forward_flops(const ModelProfile& m, const Sequence& s);

// Weights per token of the attention and FFN linears of one block (the TP-sharded part).
double linear_weights_per_token(const ModelProfile& m, BlockKind kind);
// Keys each query of a self-attention layer of `g` meets (the whole sequence unless the model's
// math says otherwise: per frame, per position across frames, or linear attention's state).
double attention_keys(const ModelProfile& m, const BlockGroup& g, const Sequence& s);

}  // namespace cpplan::costmodel
