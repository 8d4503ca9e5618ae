#pragma once
// Measured figures of one machine (its hardware fingerprint): collective timings per group size
// and message size (nccl-tests' definitions), and kernel timings per shape. `cpplan probe` and
// `cpplan import-nccl-tests` produce them, the store keeps them (data/), and MeasuredModel
// (measured_model.h) interpolates them in place of the datasheet.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"
#include "costmodel/hardware_model.h"

namespace cpplan::costmodel {

struct CollectiveSample {
  Collective kind = Collective::kAllGather;
  int ranks = 2;
  bool uneven = false;      // all_to_all with unequal splits (Ulysses Anything)
  Bytes bytes = 0;          // nccl-tests "size"
  Microseconds time_us = 0; // one call, median over repetitions
  GBps algbw_gbps = 0;      // bytes / time
  GBps busbw_gbps = 0;      // algbw x busbw_factor(kind, ranks)
  int nodes = 1;            // nodes the ranks sat on (1: within one node)
};

enum class KernelKind { kGemm, kAttention, kMemory, kConv };
std::string_view to_string(KernelKind k);  // "gemm", "attention", "memory", "conv"
std::optional<KernelKind> kernel_kind_from_string(std::string_view s);
// Inverse of to_string(Collective): "all_gather", "all_to_all", "all_reduce", "reduce_scatter", "send_recv".
std::optional<Collective> collective_from_string(std::string_view s);

struct KernelSample {
  KernelKind kind = KernelKind::kGemm;
  std::string shape;        // human-readable, e.g. "m=4096 n=3072 k=3072" or "q=4608 kv=4608 h=24 d=128"
  Flops flops = 0;          // work of one call (0 for memory-bound kernels)
  Bytes bytes = 0;          // bytes moved by one call
  double rows = 0;          // GEMM rows / attention query block: the size the efficiency saturates with
  int concurrent_ranks = 1; // ranks sharing the device while it ran (CPU contention)
  Microseconds time_us = 0; // one call, median over repetitions
};

struct MeasurementSet {
  std::vector<CollectiveSample> collectives;
  std::vector<KernelSample> kernels;
};

}  // namespace cpplan::costmodel
