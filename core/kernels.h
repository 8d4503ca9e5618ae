#pragma once
// The kernels a DiT step launches and how each uses an accelerator's resources: which attention
// kernels exist, where each runs, how it uses the tensor cores and the softmax units, and the fused
// elementwise kernels a framework may launch instead of PyTorch's one kernel per op. One table for
// every GPU kind (profiles/kernels.toml); what differs between GPUs is their datasheet peaks
// (HardwareProfile::peaks). The cost model prices a kernel against the one the GPU's calibrated
// efficiencies describe by the ratio of their multi-resource rooflines (costmodel/hardware_model.h).
// Schema: docs/profiles.md, "Kernels".

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/parallel_config.h"
#include "core/result.h"

namespace cpplan {

enum class DeviceFamily;  // core/hardware.h
struct HardwareProfile;   // core/hardware.h

// The resources of the roofline; a kernel's time is set by the one it saturates (the binding one).
enum class Resource { kTensor, kVector, kExp, kHbm, kLink, kHost };
std::string_view to_string(Resource r);  // "tensor cores", "vector units", "exp units", "HBM", "links", "host"

// Accelerators a kernel runs on: one device family and a range of its compute capabilities (CUDA
// sm x10, AMD gfx number); max_cc 0: no upper bound.
struct DeviceRange {
  DeviceFamily family;
  int min_cc = 0;
  int max_cc = 0;
  bool matches(DeviceFamily f, int cc) const;
};
namespace detail {
class Reader;  // core/toml_reader.h
// Reads `{ family, min_cc, max_cc }` (a kernel's runs_on, a framework's [[kernels]] on).
void read_device_range(Reader& r, DeviceRange& range);
}  // namespace detail
// "CUDA sm90", "CUDA sm80 to sm89", "ROCm gfx942 or newer", "TPU"
std::string describe(const DeviceRange& r);

// One attention kernel: the fraction of the BF16 tensor peak its two matmuls reach on long
// sequences, and whether the softmax (exponentials on the special-function units, the running max
// and sums on the vector units) runs hidden under the matmuls (FlashAttention-3's warp-specialized
// ping-pong, FA4, cuDNN's Hopper kernels) or between them, on the same warps (FlashAttention-2).
struct AttentionKernel {
  std::string title;              // "FlashAttention-3"
  double tensor = 0.5;
  bool overlapped = false;
  // Its matmuls issue warp-synchronous MMA (mma.sync: FlashAttention-2 and its ports), not the
  // asynchronous warpgroup or tensor-memory MMA of Hopper and Blackwell kernels: capped by the
  // GPU's sync_mma_tflops (ResourcePeaks).
  bool sync_mma = false;
  // The head dimensions it is compiled for (ascending); a head between two runs the larger one, its
  // matmuls padded to it. Empty: any head dimension as it is.
  std::vector<int> head_dims;
  // The head dimension the kernel computes for heads of `head_dim`.
  double padded_head_dim(double head_dim) const;
  std::vector<DeviceRange> runs_on;
  std::string source;             // where the kernel's properties come from
};

// Memory-bound work of a DiT block by kind, each either PyTorch's one kernel per op (eager) or one
// fused kernel: bytes moved per token per hidden element of a double-stream block, and the host
// ops launched per double-stream block (other blocks scale with their op counts).
enum class Elementwise { kNormModulation, kQkNormRope, kResidualActivation };
inline constexpr int kElementwiseCount = 3;
std::string_view to_string(Elementwise e);  // "norm_modulation", "qk_norm_rope", "residual_activation"
std::optional<Elementwise> elementwise_from_string(std::string_view s);

struct ElementwiseClass {
  std::string title;
  double eager_bytes = 0, fused_bytes = 0;
  double eager_ops = 0, fused_ops = 0;
};

// Which of the elementwise kinds run fused (bit per Elementwise).
struct FusedSet {
  unsigned bits = 0;
  bool has(Elementwise e) const { return bits & (1u << static_cast<int>(e)); }
  void add(Elementwise e) { bits |= 1u << static_cast<int>(e); }
  static FusedSet all() { return {(1u << kElementwiseCount) - 1}; }
};

// The kernels' table (profiles/kernels.toml): the attention kernels and the softmax's use of the
// special-function and vector units, and the elementwise kinds. GEMMs, convolutions and eager
// memory-bound kernels are priced by each hardware profile's [efficiency] (costmodel).
struct KernelTable {
  std::string source;
  double exp = 0.8;                      // softmax exponentials: fraction of the special-function rate
  double vector = 0.5;                   // softmax's FP32 arithmetic: fraction of the vector peak
  double softmax_vector_ops = 4;         // FP32 ops per score beside its exp: scale, max, subtract, sum
  double attention_half_tokens = 256;    // query/key block at which attention reaches half its fraction
  std::array<AttentionKernel, kAttentionBackendCount> attention;
  std::array<ElementwiseClass, kElementwiseCount> elementwise;

  const AttentionKernel& kernel(AttentionBackend b) const { return attention[static_cast<int>(b)]; }
  // Bytes a block's memory-bound work moves with `fused` kinds fused, over the all-fused bytes.
  double elementwise_traffic(FusedSet fused) const;
  // The share of the eager block's extra bytes (eager over fused) that the kinds left unfused move.
  double unfused_excess_share(FusedSet fused) const;
  // Host ops of a double-stream block that fusing `fused` saves, out of `eager_block_ops`.
  double ops_saved(FusedSet fused) const;
};

// Whether kernel `b` runs on an accelerator of family `f` and compute capability `cc`.
bool runs_on(const KernelTable& t, AttentionBackend b, DeviceFamily f, int cc);

// One attention kernel's roofline on a GPU, per score (one query against one key): its matmuls'
// picoseconds on the tensor cores (padded to a head dimension it is compiled for; warp-synchronous
// MMA capped at the GPU's sync_mma_tflops) and its softmax's on the special-function and vector
// units (the GPU's kernel table), overlapped or in series.
struct AttentionRoofline {
  double tensor_ps = 0, softmax_ps = 0;
  Resource softmax_unit = Resource::kExp;
  bool overlapped = false;
  double ps_per_score() const;
  Resource binding() const;  // the resource that sets its time
};
AttentionRoofline attention_roofline(const HardwareProfile& hw, AttentionBackend b, double head_dim);

// For a hardware profile whose [efficiency] gives no attention fractions: each profiled kernel's
// (flash, cudnn, sage, native) as its roofline on `hw.kernels` gives it for 128-wide heads, the
// fraction of the BF16 peak whose time equals the roofline's.
void derive_attention_efficiency(HardwareProfile& hw);

Result<KernelTable> load_kernel_table(const std::string& path);
Result<KernelTable> parse_kernel_table(std::string_view text, const std::string& path);

}  // namespace cpplan
