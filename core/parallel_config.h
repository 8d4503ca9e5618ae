#pragma once
// The ecosystem's parallel-configuration vocabulary (diffusers ContextParallelConfig /
// TensorParallelConfig / ParallelConfig, plus xDiT's cfg and data degrees), see
// shared/spec/parallelism.md. These are plain values; validity lives in planner/validate.h.

#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace cpplan {

// How Ring Attention moves K/V: "allgather" (the reference: gather every block once) or "p2p"
// (cpplan's send/recv ring: the next block's transfer overlaps the current block's attention and
// only two K/V blocks are live). "alltoall" is reserved in the reference and not implemented.
enum class RotateMethod { kAllGather, kAllToAll, kP2P };

struct ContextParallelConfig {
  int ring_degree = 1;     // devices in a Ring Attention group (r)
  int ulysses_degree = 1;  // devices in a Ulysses all-to-all group (u)
  bool convert_to_fp32 = true;  // Ring keeps the running output and LSE in fp32
  RotateMethod rotate_method = RotateMethod::kAllGather;
  bool ulysses_anything = false;  // uneven all-to-all, heads zero-padded
  bool ring_anything = false;     // K/V padded to the longest rank, gathered, sliced back

  int degree() const { return ring_degree * ulysses_degree; }
  bool operator==(const ContextParallelConfig&) const = default;
};

struct TensorParallelConfig {
  int tp_degree = 1;  // devices each attention/FFN weight is sharded over (t)
  bool operator==(const TensorParallelConfig&) const = default;
};

// xDiT's PipeFusion (patch-level pipeline parallelism, shared/spec/parallelism.md): the
// transformer's blocks split into `degree` contiguous stages, one per device group; the latent cut
// into `patches` patches that flow through the stages one after another; the first
// `warmup_steps` diffusion steps run the whole sequence through the stages synchronously, the
// later ones attend each patch against the previous step's K/V of the patches not yet refreshed.
// Unused: (1, 1, 0).
struct PipeFusionConfig {
  int degree = 1;        // P (xDiT pipefusion_parallel_degree)
  int patches = 1;       // M (xDiT num_pipeline_patch; its default is P)
  int warmup_steps = 0;  // W (xDiT warmup_steps; its default is kXditWarmupSteps)
  bool operator==(const PipeFusionConfig&) const = default;
};
inline constexpr int kXditWarmupSteps = 1;  // xDiT's --warmup_steps default

// Every axis of a plan. The product of the six degrees ring x ulysses x tp x pipefusion x cfg x dp
// is the device count (xDiT rule). fs_degree is not a seventh factor: it shards the transformer's
// block weights FSDP-style over groups of fs_degree ranks laid over the others (ranks that run
// different shards of the work share one copy of the weights, each holding 1/F and gathering a
// block's weights before running it), so it divides the world size (docs/usage.md,
// "Fully sharded weights").
struct ParallelConfig {
  ContextParallelConfig context_parallel_config;
  TensorParallelConfig tensor_parallel_config;
  int cfg_degree = 1;  // 1 or 2: conditional and unconditional passes on different groups
  int dp_degree = 1;   // independent replicas, each on its own images of the batch
  PipeFusionConfig pipefusion;
  int fs_degree = 1;   // F: ranks each holding 1/F of every block's weights (xDiT fully_shard_degree)

  int ring() const { return context_parallel_config.ring_degree; }
  int ulysses() const { return context_parallel_config.ulysses_degree; }
  int tp() const { return tensor_parallel_config.tp_degree; }
  int pp() const { return pipefusion.degree; }
  int fs() const { return fs_degree; }
  bool operator==(const ParallelConfig&) const = default;
  // The product of the six degrees, saturated at the limits of long long: degrees straight from
  // the command line reach 2^17 each, whose product (2^102) does not fit.
  long long world_size() const {
    long long w = 1;
    for (const int d : {ring(), ulysses(), tp(), pp(), cfg_degree, dp_degree}) {
      const bool negative = (w < 0) != (d < 0);
      if (__builtin_mul_overflow(w, static_cast<long long>(d), &w))
        return negative ? std::numeric_limits<long long>::min() : std::numeric_limits<long long>::max();
    }
    return w;
  }
};

// How attention is split over the context-parallel group.
enum class CpVariant { kNone, kRing, kUlysses, kUnified, kUlyssesAnything, kRingAnything };
inline constexpr int kCpVariantCount = 6;
static_assert(static_cast<int>(CpVariant::kRingAnything) + 1 == kCpVariantCount, "kCpVariantCount counts CpVariant");

// The variant a config asks for: the anything flags win, then the degrees decide.
CpVariant classify(const ContextParallelConfig& cp);
std::string_view to_string(CpVariant v);             // "none", "ring", ... (JSON names)
std::string_view display_name(CpVariant v);          // "Ring", "Ulysses Anything", ...
std::optional<CpVariant> cp_variant_from_string(std::string_view s);

// Attention kernels (core/kernels.h prices them). Ring merges partial outputs by their log-sum-exp:
// every kernel here returns it (torch SDPA through aten's flash op, as diffusers' native backend
// uses it); a framework that runs Ring with only some says so (profiles/frameworks backend_rules). flash: FlashAttention-2; native: torch SDPA with PyTorch's own dispatch (its FA2-class
// flash kernel on CUDA); cudnn: cuDNN's fused attention; sage: SageAttention (INT8 QK); fa3, fa4:
// FlashAttention-3 (Hopper) and -4 (Blackwell); aiter: AMD's AITER flash attention (ROCm); splash:
// Pallas splash attention (TPU).
enum class AttentionBackend { kFlash, kCudnn, kSage, kNative, kFa3, kFa4, kAiter, kSplash };
inline constexpr int kAttentionBackendCount = 8;
std::string_view to_string(AttentionBackend b);       // "flash", "cudnn", "sage", "native", "fa3", "fa4", "aiter", "splash"
// Also takes the aliases "fa2" (flash) and "sdpa" (native).
std::optional<AttentionBackend> attention_backend_from_string(std::string_view s);
std::string attention_backend_choices();              // "flash | cudnn | ... | splash"

std::string_view to_string(RotateMethod m);           // "allgather", "alltoall", "p2p"
std::optional<RotateMethod> rotate_method_from_string(std::string_view s);

// Short human label of the axes, e.g. "ring 2 x ulysses 2", "tp 4", "ulysses 2 x pipefusion 4
// (8 patches)", "ulysses 4 x fs 4", "single GPU".
std::string plan_label(const ParallelConfig& config);

}  // namespace cpplan
