#pragma once
// The device a rank computes on and what differs between CPU and CUDA ranks: where tensors live,
// their precision, how a step is timed (CUDA events on the GPU, the steady clock on CPU) and how
// peak memory is read (the CUDA caching allocator's peak on the GPU, the peak RSS on CPU).
//
// CUDA code is compiled only when LibTorch has CUDA (CMake defines CPPLAN_CUDA); a CPU build
// answers cuda_built() == false and never touches a GPU.

#include <ATen/ATen.h>

#include <string>

namespace cpplan::executor {

// How a rank holds the linear weights of the transformer blocks (their attention and FFN
// projections, the planner's block_linear_params): in the compute dtype, or int8 with one scale per
// output channel, dequantized to the compute dtype for each matmul (weight-only int8: `cpplan run
// --weights int8`, executor/model.cpp).
enum class WeightStorage { kComputeDtype, kInt8 };

struct DeviceSpec {
  at::Device device = at::Device(at::kCPU);
  at::ScalarType dtype = at::kFloat;  // weights and activations; LSE merges and latents stay fp32
  WeightStorage weights = WeightStorage::kComputeDtype;  // the blocks' linear weights
  bool cuda() const { return device.is_cuda(); }
  at::TensorOptions options() const { return at::TensorOptions().device(device).dtype(dtype); }
};

// Whether this binary was built against a CUDA LibTorch.
bool cuda_built();
// GPUs visible to this process (0 in a CPU build or without a driver).
int cuda_device_count();
// The GPU `index` for this process: made current for every later CUDA call of the thread.
// Throws std::runtime_error with one line when there is no such GPU.
at::Device use_cuda_device(int index);
// "NVIDIA H200" etc.; empty in a CPU build.
std::string cuda_device_name(int index);
// The GPU's memory in bytes; 0 in a CPU build.
double cuda_memory_bytes(int index);

// Versions for the hardware fingerprint: CUDA runtime and driver ("12.8"), NCCL ("2.27.3");
// empty in a CPU build (NCCL's also without CPPLAN_NCCL).
struct CudaVersions {
  std::string runtime, driver, nccl;
};
CudaVersions cuda_versions();

// Waits for the device's queued work (no-op on CPU).
void synchronize(const at::Device& device);

// Times one interval of device work: CUDA events on the current stream on a GPU (what the
// kernels took, not when the host queued them), the steady clock on CPU.
class StepTimer {
 public:
  explicit StepTimer(const at::Device& device);
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;
  void start();
  double stop_ms();  // waits for the interval's work to finish

 private:
  struct Impl;
  Impl* impl_;
};

// Intervals of a GPU's work timed without waiting for them: a pair of CUDA events per interval on
// the device's current stream, read (and summed) later, when the caller waits anyway. The events
// are reused from one reading to the next. On CPU nothing is recorded: take_seconds() is 0.
class DeviceIntervals {
 public:
  DeviceIntervals();
  ~DeviceIntervals();
  DeviceIntervals(const DeviceIntervals&) = delete;
  DeviceIntervals& operator=(const DeviceIntervals&) = delete;
  void begin(const at::Device& device);  // opens an interval at this point of the current stream
  void end(const at::Device& device);    // closes the open one (no-op when none is open)
  // Waits for the last interval's end; the seconds of every closed interval since the last call.
  double take_seconds();

 private:
  struct Impl;
  Impl* impl_;
};

// Bytes this rank holds in tensors now: the caching allocator's allocated bytes on a GPU, the
// counted CPU allocator's (count_cpu_tensors) on CPU.
double memory_in_use_bytes(const at::Device& device);
// The most bytes in tensors since the last reset, less what the rank held at the reset: a phase's
// own peak when the reset opens it. Not the CUDA context, not the process's resident set: on a
// CPU that also grows by LibTorch's code paged in as each kernel first runs and by malloc's
// retained arenas (flux-tiny: 11 MiB of code pages over a run, docs/cost-model.md), which no
// prediction of the job's tensors holds.
double peak_memory_bytes(const at::Device& device);
// Opens a phase: the peak starts over from the bytes held now (on CPU, counting starts if need be).
void reset_peak_memory(const at::Device& device);

// Caps what the rank may allocate on `device`: the CUDA caching allocator's memory fraction on a
// GPU (its out-of-memory error names the bytes asked), limit_cpu_memory() on CPU.
void limit_memory(const at::Device& device, int64_t bytes);

// Silences LibTorch's own logging (glog or c10's) below FATAL: c10d reports socket errors there,
// and cpplan reports the failure once, in one line.
void quiet_torch_logs();

}  // namespace cpplan::executor
