#pragma once
// Analytic cost of one plan: per denoising step, compute per block type from the FLOPs of the
// local shard over peak x efficiency (roofline with the weight/activation bytes), memory-bound
// work from bytes over memory bandwidth, collectives as alpha + bytes * factor / busbw, and the
// peak memory per GPU. See docs/cost-model.md for every formula.

#include <algorithm>
#include <array>
#include <functional>
#include <optional>

#include "core/plan.h"
#include "costmodel/hardware_model.h"

namespace cpplan::costmodel {

inline constexpr int kMaxBlockGroups = 4;

// The communication groups of a plan: tp, ulysses, ring, the whole CP group (ring x ulysses: the
// output gather) and cfg. Axes without collectives (dp) have none.
enum class CommAxis { kTp, kUlysses, kRing, kCp, kCfg };
inline constexpr int kCommAxisCount = 5;
std::string_view to_string(CommAxis a);  // "tp", "ulysses", "ring", "cp", "cfg"

// One group per axis. default_layout() is the rule without a topology (ranks laid out tp
// innermost, then ulysses, ring, cfg, dp; a group leaves the node once its span does); a
// placement (planner/topology/) supplies its own, with each group's effective bandwidth.
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
  Milliseconds attention_ms = 0;
  Milliseconds memory_ms = 0;   // memory-bound elementwise work and LSE merges
  Milliseconds overhead_ms = 0; // CPU time to launch the kernels
  Milliseconds comm_ms = 0;     // CP and TP collectives
  double collective_calls = 0;  // collectives issued (each a synchronisation of the group)
  TermSources sources;
  Source source = Source::kDatasheet;  // the least measured of `sources`
  // Eager mode launches asynchronously: the GPU waits on the CPU only when its kernels are
  // shorter than their launches.
  Milliseconds compute_ms() const { return std::max(gemm_ms + attention_ms + memory_ms, overhead_ms); }
};

struct MemoryBreakdown {
  Bytes transformer_weights = 0;  // TP-sharded attention/FFN weights plus replicated rest
  Bytes text_encoder_weights = 0; // 0 with --offload-text-encoders
  Bytes vae_weights = 0;
  Bytes activations = 0;          // transformer phase: resident + largest live layer
  Bytes attention_extra = 0;      // of which: gathered K/V, full-sequence Q/K/V (per strategy)
  Bytes vae_decode = 0;           // decoder activations of one chunk
  Bytes runtime_reserved = 0;     // CUDA context, workspaces
  Bytes peak() const;
};

struct Prediction {
  Milliseconds step_ms = 0;       // one denoising step (all passes of the batch)
  Milliseconds compute_ms = 0;    // kernels: GEMM + attention + memory-bound (or launches, if longer)
  Milliseconds comm_ms = 0;       // collectives (no overlap assumed)
  double steps_per_sec = 0;
  Milliseconds text_encode_ms = 0;  // once per image
  Milliseconds vae_decode_ms = 0;   // once per image
  Milliseconds image_ms = 0;        // text + steps x step + VAE
  Flops step_flops = 0;             // local FLOPs per step on the most loaded rank
  Bytes comm_bytes = 0;             // bytes sent per rank per step (nccl-tests size x busbw factor)
  double collective_calls = 0;      // collectives per step on the most loaded rank
  Bytes peak_mem_bytes = 0;
  bool fits_memory = false;
  MemoryBreakdown memory;
  std::array<BlockCost, kMaxBlockGroups> blocks{};
  int block_count = 0;
  Milliseconds step_comm_extra_ms = 0;  // per step: output gather over CP, CFG all-gather
  std::optional<Source> step_comm_extra_source;
  std::array<Milliseconds, kCommAxisCount> axis_comm_ms{};  // comm_ms split by CommAxis
  Source source = Source::kDatasheet;   // the least measured input of any term
  // With a step correction (a calibration fitted to measured runs): step_ms, steps_per_sec and
  // image_ms are corrected; the analytic sum of the terms stays in uncalibrated_step_ms.
  bool calibrated = false;
  Milliseconds uncalibrated_step_ms = 0;
};

// A fitted correction of the step time from the prediction's terms (costmodel/calibration.h
// makes one from a stored calibration).
using StepCorrection = std::function<Milliseconds(const Prediction&, const ParallelConfig&)>;

class CostModel {
 public:
  explicit CostModel(const HardwareModel& hw, StepCorrection correction = {})
      : hw_(hw), correction_(std::move(correction)) {}
  // Precondition: the plan is valid for the query (planner::validate). `layout`: the groups of a
  // placement; nullptr: default_layout().
  Prediction predict(const Query& q, const ParallelConfig& c, CpVariant v, const CommLayout* layout = nullptr) const;

 private:
  const HardwareModel& hw_;
  StepCorrection correction_;
};

// FLOPs of one forward pass of the transformer on one device (no parallelism), as in
// shared/reference/models.md: linears 2 x weights x tokens, attention 4 x S_q x S_kv x hidden.
Flops forward_flops(const ModelProfile& m, const Sequence& s);

// Weights per token of the attention and FFN linears of one block (the TP-sharded part).
double linear_weights_per_token(const ModelProfile& m, BlockKind kind);

}  // namespace cpplan::costmodel
