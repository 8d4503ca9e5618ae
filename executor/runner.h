#pragma once
// One rank of a run: builds the mesh and the model, applies the context-parallel plan, runs the
// denoising loop (flow-matching Euler steps, true CFG where the model has it), measures, and
// gathers the figures and the final latents on rank 0.

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/result.h"
#include "executor/cache.h"
#include "executor/device.h"

namespace cpplan::executor {

class WeightDraws;  // model.h

struct RunSpec {
  const ModelProfile* model = nullptr;
  Resolution resolution;
  int frames = 1;
  int steps = 4;
  int warmup = 1;       // forward passes before timing (their output is discarded)
  int batch = 1;
  ParallelConfig config;
  uint64_t seed = 0;
  double guidance_scale = 5.0;  // true CFG only
  std::chrono::milliseconds timeout{60000};
  int64_t max_memory_bytes = 0;  // per rank; 0: none beyond the device's (see limit_memory)
  // CPU in fp32 by default; a GPU rank names its device (cuda:LOCAL_RANK) and runs in bf16.
  DeviceSpec device;
  bool sync_collectives = false;  // NCCL: time collectives between device synchronisations (Comm)
  // Ranks that run as threads of one process may share one: the first to build a model draws its
  // weights, the others read them (model.h). Null: each rank draws its own, as separate processes do.
  std::shared_ptr<WeightDraws> weight_draws;
  // The step cache's fixed schedule (executor/cache.h); empty (the default): no cache. Warm-up
  // passes run the plain model and leave the cache empty; the timed steps follow the schedule.
  CacheSchedule cache;
};

// Whether `spec.cache` runs on the spec's model and plan (nothing to check when it is empty):
// validate(cache, steps, blocks), no PipeFusion (its stages hold different blocks), no long-skip
// blocks (the skips the middle blocks leave have no residual), and in a two-transformer pipeline
// the first step of the second transformer computed (the cache is cleared at the switch: the
// first transformer's residual is not the second's). The error names the field, value and rule.
Result<bool> check_cache(const RunSpec& spec);

struct RunFigures {
  std::vector<double> step_ms;          // per timed step, the slowest rank's (CUDA events on GPU)
  // step_ms split by the spec's cache schedule, in step order: its computed steps (every step
  // without a cache) and its cached ones.
  std::vector<double> computed_step_ms, cached_step_ms;
  double compute_ms = 0;                // per step, mean over steps, slowest rank
  double comm_ms = 0;                   // per step: time inside collectives, slowest rank
  double bytes_sent = 0;                // per rank per step (the most loaded rank)
  // Per rank, the denoising phase: the most bytes in tensors from the transformers' build to the
  // end (peak_memory_bytes: the caching allocator's on a GPU, the counted CPU allocator's on CPU).
  std::vector<double> peak_mem_bytes;
  // Per rank, the load phase: the bytes the transformers hold once built (the weights as the rank
  // holds them), and the most bytes in tensors while they were built (drawing them needs more:
  // run_parts.h, LoadFigures); peak_mem_bytes holds the weights too. Empty: not recorded.
  std::vector<double> load_mem_bytes, load_build_peak_bytes;
  // Per rank, the bytes of the weights it holds counted from the tensors themselves (int8 weights
  // and their scales under WeightStorage::kInt8); on CPU, whose counted allocator sees exactly the
  // bytes the tensors ask for, load_mem_bytes too. Empty: not recorded.
  std::vector<double> param_bytes;
  // Of rank 0's host's CPU time during the timed steps, the share the hypervisor gave to other
  // guests (/proc/stat's steal): a run whose share is large ran slower than this machine runs,
  // its lock-step ranks waiting for whichever lost its core. -1: not read (no /proc/stat).
  double steal_fraction = -1;
  at::Tensor latents;                   // final latents [batch, S_img, in_channels], fp32 on CPU, rank 0 only
  double median_step_ms() const;
  double percentile_step_ms(double p) const;  // p in [0, 1]
  double median_computed_step_ms() const;     // 0 without computed steps
  double median_cached_step_ms() const;       // 0 without cached steps
};

// The p-th percentile (p in [0, 1], linear between neighbours) of `ms`; 0 when it is empty.
double percentile_ms(std::vector<double> ms, double p);

// Runs this rank's share; every rank of `world` must call it. Figures are complete on rank 0.
// A spec that check_cache() refuses throws std::invalid_argument with its line.
RunFigures run_rank(const RunSpec& spec, const c10::intrusive_ptr<c10d::Store>& store, int rank, int world);

// CPU threads for one of `local_ranks` ranks sharing this host's cores: an equal share, at least
// one (what torchrun's OMP_NUM_THREADS default aims at; without it every rank spawns a thread
// per core and they fight); the cores our launcher bound the rank to (CPPLAN_RANK_CORES) when it
// did. Applied to LibTorch's intra-op pool and to OpenBLAS's own threads where LibTorch's GEMMs
// run in OpenBLAS (Debian's build).
void share_cpu_threads(int local_ranks);

// OpenBLAS's thread count where LibTorch's GEMMs run in OpenBLAS; -1 under another BLAS.
int blas_threads();

// Token split of `length` over `parts` ranks: even when it divides, else the first
// length % parts ranks take one more (torch.tensor_split).
std::vector<int64_t> split_lengths(int64_t length, int parts);

}  // namespace cpplan::executor
