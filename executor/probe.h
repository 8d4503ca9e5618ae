#pragma once
// `cpplan probe`: measures this machine through the executor's own process groups and kernels:
// collectives (all_gather, all_to_all even and uneven, all_reduce, send/recv) for every group size
// the planner can use up to the world size, message sizes from 1 KiB up, with nccl-tests'
// algbw/busbw; and the GEMM, attention and memory-bound kernels of the chosen models' blocks at
// their local shard sizes over a range of sequence lengths, alone and with every rank running at
// once (contention of ranks sharing the device).

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/model.h"
#include "costmodel/measurements.h"
#include "executor/device.h"

namespace cpplan::executor {

struct ProbeOptions {
  std::vector<const ModelProfile*> models;   // kernel shapes of these models' blocks
  double max_message_bytes = 256.0 * (1 << 20);
  int max_tokens = 4096;                     // sequence lengths 16, 32, ..., max_tokens
  std::chrono::milliseconds timeout{120000};
  // CPU fp32 by default; on a GPU (cuda:LOCAL_RANK, bf16 kernels) collectives go over NCCL and
  // every time is taken once the device has finished (CUDA events for kernels).
  DeviceSpec device;
  // Progress on rank 0: (fraction done, what is being measured).
  std::function<void(double, const std::string&)> progress;
};

// Every rank of the world calls it; the full MeasurementSet is returned on rank 0.
costmodel::MeasurementSet probe_rank(const ProbeOptions& options, const c10::intrusive_ptr<c10d::Store>& store,
                                     int rank, int world);

}  // namespace cpplan::executor
