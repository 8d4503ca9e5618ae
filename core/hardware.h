#pragma once
// One accelerator kind and the node it sits in: datasheet peaks and the achievable fractions
// of them before anything is measured. Loaded from profiles/hardware/*.toml.

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/kernels.h"
#include "core/parallel_config.h"
#include "core/units.h"

namespace cpplan {

// nvswitch: all-to-all NVLink through switches; pcie: peer-to-peer over PCIe;
// pcie_host: PCIe without P2P (traffic staged through host memory); ici: TPU torus links;
// neuronlink: AWS Trainium / Inferentia chip-to-chip links; xgmi: AMD Infinity Fabric, a full mesh
// of point-to-point links, one per GPU pair (no switch: a pair gets one link, a GPU reaches all its
// peers at once only over all its links; the planner prices groups on that mesh, core/node_topology.h).
enum class LinkKind { kNvSwitch, kPcie, kPcieHost, kIci, kNeuronLink, kXgmi };

// What runs on the accelerator, which decides the frameworks that can (planner/frameworks.h):
// CUDA GPUs; Google TPUs (PyTorch/XLA through torch_tpu); AWS Neuron chips (PyTorch/XLA through
// torch-neuronx).
// ROCm: AMD Instinct GPUs (PyTorch on ROCm, RCCL).
enum class DeviceFamily { kCuda, kTpu, kNeuron, kRocm };

struct Link {
  GBps bandwidth_gbps = 0;     // per direction, per device
  Microseconds latency_us = 0; // alpha of one collective step
  double efficiency = 0.8;     // achievable busbw / bandwidth
};

// The server these GPUs usually sit in ([node] of a hardware profile): how its gpus_per_node GPUs
// hang off PCIe switches and CPU sockets, and its NICs. Without --topology the planner builds this
// node (core/node_topology.h) and prices every group by the links it crosses. Peer-to-peer follows
// the link kind: pcie (P2P works), pcie_host (staged through host memory), or xgmi (the GPUs joined
// pairwise by their own links; PCIe carries only host and NIC traffic).
struct NodeLayout {
  int sockets = 1;                 // CPU sockets; each holds gpus_per_node / sockets GPUs
  int gpus_per_switch = 1;         // GPUs under one PCIe switch; 1 (the default): each GPU on its own root port
  GBps switch_uplink_gbps = 0;     // a switch's link to its CPU (or to host memory without P2P), per direction
  GBps socket_gbps = 0;            // between two sockets, per direction (peer-to-peer across UPI / xGMI)
  GBps host_memory_gbps = 0;       // without P2P: a socket's host memory, per direction
  int nics = 1;                    // NICs of the node (Ethernet), spread over the switches, else the sockets
  GBps nic_gbps = 0;               // one NIC's port speed, per direction (100 GbE = 12.5)
};

// Datasheet peaks per resource beyond the BF16 tensor peak, dense (no sparsity). 0: the hardware
// has no such unit (FP8/FP4/INT8 tensor cores), or no figure is published (the roofline then has no
// ceiling on that resource, and --explain says so; a quantized format without its peak is refused).
struct ResourcePeaks {
  TFlopsPerSec fp8_tflops = 0;      // FP8 tensor (matrix) peak
  TFlopsPerSec fp4_tflops = 0;      // FP4 (NVFP4 / MXFP4) tensor peak
  TFlopsPerSec int8_tops = 0;       // INT8 tensor peak, 1e12 integer multiply-adds x 2 per second (TOPS)
  TFlopsPerSec vector_tflops = 0;   // non-tensor FP32 (CUDA cores, CU SIMDs, TPU VPU)
  double exp_tera_per_s = 0;        // special-function (exp2) results, 1e12 per second: softmax's exponentials
  int units = 0;                    // SMs / CUs / TensorCores
  double clock_mhz = 0;             // the clock behind the peaks
  // CUDA compute capability x10 (80 = sm80, 90 = sm90, 100 = sm100); AMD gfx target as a number
  // (942 = gfx942); 0 elsewhere. Which kernels a GPU runs (FA3 needs sm90, FA4 sm100+) keys on it.
  int compute_capability = 0;
  // The dense BF16 peak that warp-synchronous MMA instructions (mma.sync, the only tensor path of
  // sm80/sm89 kernels such as FlashAttention-2) reach where the GPU's peak needs newer ones
  // (Hopper's wgmma). 0: no separate ceiling (the tensor peak).
  TFlopsPerSec sync_mma_tflops = 0;
};

// The attention kernels a hardware profile gives achievable fractions for ([efficiency.attention]:
// flash, cudnn, sage, native, the first four AttentionBackends), the kernels the published timings
// ran; the others are priced against one of them by the kernel table (costmodel/hardware_model.h).
inline constexpr int kProfiledAttentionBackends = 4;
inline bool profiled(AttentionBackend b) { return static_cast<int>(b) < kProfiledAttentionBackends; }

struct HardwareProfile {
  std::string name;
  std::string description;
  std::string source;
  std::vector<std::string> match;  // substrings of the nvidia-smi name that identify it
  // GPU architecture ("ampere", "ada", "hopper", "blackwell", "tpu", ...): fits of end-to-end
  // timings scale the efficiencies of every profile of an architecture (core/fit.h).
  std::string architecture;
  std::string fitted_by;           // the fit whose multipliers were applied ("" when none)
  DeviceFamily family = DeviceFamily::kCuda;

  TFlopsPerSec bf16_tflops = 0;    // dense, no sparsity
  // The other ceilings of the multi-resource roofline ([compute], from datasheets:
  // shared/reference/hardware-resources.md): each kernel's work on each resource over its peak.
  ResourcePeaks peaks;
  double memory_mib = 0;           // capacity as nvidia-smi reports it
  double reserved_mib = 0;         // CUDA context, library workspaces, allocator slack
  double host_memory_gib = 0;      // host memory of the node these GPUs usually sit in; 0: unknown
  GBps memory_bandwidth_gbps = 0;

  LinkKind link_kind = LinkKind::kNvSwitch;
  Link intra_node;                 // GPU to GPU inside a node
  Link network;                    // per GPU between nodes
  Link host_link;                  // GPU to host memory (PCIe): offloaded weights stream over it
  // Achievable busbw / bandwidth of PCIe peer links between GPUs, when a topology (a PCIe box, or
  // the profile's [node]) places groups on them: the interconnect's efficiency for a PCIe GPU, the
  // host link's for a GPU whose own fabric is NVLink (an SXM part in a PCIe-only box).
  double pcie_efficiency = 0.8;
  // Achievable busbw / bandwidth of a topology's routes when its switches or CPUs stage peer
  // traffic through host memory (p2p = false): every byte is a copy to host memory and one back,
  // so the host link's efficiency (pinned copies), or the interconnect's for a GPU whose own
  // interconnect is staged (pcie_host). The routes' shared links are priced by the topology. A
  // fit's [links] pcie_host scales it, as it scales a pcie_host GPU's interconnect.
  double staged_pcie_efficiency = 0.8;
  // The share of the link between sockets that an all-to-all reaches where that link binds it (a
  // PCIe node with GPUs under two sockets): NCCL has no peer-to-peer across sockets and runs each
  // pair that crosses them through host memory, n - 1 peers at once, while a ring's one pair per
  // direction streams. General knowledge: nccl-tests' alltoall_perf on dual-socket 8-GPU PCIe
  // servers reports a few GB/s of busbw, a quarter or less of all_reduce_perf on the same box.
  // [efficiency] all_to_all_across_sockets; a fit's [links] socket_all_to_all scales it.
  double all_to_all_across_sockets = 0.25;
  int gpus_per_node = 8;
  std::optional<NodeLayout> node;  // the usual server of a PCIe GPU; none: the two links above

  // Achievable fractions of peak on large shapes; small shapes fall off (see costmodel).
  double gemm_efficiency = 0.7;
  double gemm_half_rows = 128;       // rows (tokens) at which GEMM efficiency is half its max
  double attention_efficiency[kProfiledAttentionBackends] = {0.4, 0.45, 0.5, 0.35};  // flash, cudnn, sage, native
  // [efficiency] gives no `attention`: the catalog derives the fractions from the kernels' rooflines
  // on this GPU's peaks (derive_attention_efficiency, core/kernels.h) before any fit scales them.
  bool attention_from_kernels = false;
  double attention_half_tokens = 256; // query/key block at which attention efficiency halves
  double conv_efficiency = 0.4;       // VAE convolutions
  double memory_efficiency = 0.8;     // achievable / datasheet memory bandwidth
  Microseconds kernel_launch_us = 5;  // per kernel in eager mode
  // The kernels as the catalog's profiles/kernels.toml describes them (shared by every GPU kind):
  // where each attention kernel runs and how it uses the resources, the fused elementwise kinds.
  // A profile made in code gets the built-in defaults.
  KernelTable kernels;

  // What a kernel issuing only warp-synchronous MMA sustains: the lower of the two ceilings.
  TFlopsPerSec sync_mma_ceiling() const {
    return peaks.sync_mma_tflops > 0 ? std::min(bf16_tflops, peaks.sync_mma_tflops) : bf16_tflops;
  }

  Bytes memory_bytes() const { return memory_mib * kMiB; }
  Bytes usable_bytes() const { return (memory_mib - reserved_mib) * kMiB; }
};

std::string_view to_string(LinkKind k);
std::string_view to_string(DeviceFamily f);  // "cuda", "tpu", "neuron", "rocm"

}  // namespace cpplan
