#include "executor/device.h"

#include "executor/memory.h"

#include <c10/util/Logging.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <stdexcept>

#ifdef CPPLAN_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif
#ifdef CPPLAN_NCCL
#include <torch/csrc/cuda/nccl.h>
#endif

namespace cpplan::executor {

bool cuda_built() {
#ifdef CPPLAN_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count() {
#ifdef CPPLAN_CUDA
  return static_cast<int>(c10::cuda::device_count());
#else
  return 0;
#endif
}

at::Device use_cuda_device(int index) {
  const int n = cuda_device_count();
  if (index < 0 || index >= n)
    throw std::runtime_error("GPU " + std::to_string(index) + " asked for, " + std::to_string(n) + " visible" +
                             (cuda_built() ? "" : " (this cpplan was built without CUDA)"));
#ifdef CPPLAN_CUDA
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
#endif
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::string cuda_device_name(int index) {
#ifdef CPPLAN_CUDA
  if (index >= 0 && index < cuda_device_count()) return at::cuda::getDeviceProperties(index)->name;
#endif
  (void)index;
  return {};
}

CudaVersions cuda_versions() {
  CudaVersions v;
#ifdef CPPLAN_CUDA
  auto dotted = [](int x) { return std::to_string(x / 1000) + "." + std::to_string(x % 1000 / 10); };
  int runtime = 0, driver = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) v.runtime = dotted(runtime);
  if (cudaDriverGetVersion(&driver) == cudaSuccess) v.driver = dotted(driver);
#endif
#ifdef CPPLAN_NCCL
  // LibTorch packs it as major << 32 | minor << 16 | patch (torch.cuda.nccl.version() unpacks it).
  const std::uint64_t n = torch::cuda::nccl::version();
  v.nccl = std::to_string(n >> 32) + "." + std::to_string((n >> 16) & 0xffff) + "." + std::to_string(n & 0xffff);
#endif
  return v;
}

double cuda_memory_bytes(int index) {
#ifdef CPPLAN_CUDA
  if (index >= 0 && index < cuda_device_count())
    return static_cast<double>(at::cuda::getDeviceProperties(index)->totalGlobalMem);
#endif
  (void)index;
  return 0;
}

void synchronize(const at::Device& device) {
#ifdef CPPLAN_CUDA
  if (device.is_cuda()) c10::cuda::device_synchronize();
#endif
  (void)device;
}

struct StepTimer::Impl {
  bool cuda = false;
  std::chrono::steady_clock::time_point t0;
#ifdef CPPLAN_CUDA
  at::cuda::CUDAEvent begin{cudaEventDefault}, end{cudaEventDefault};
#endif
};

StepTimer::StepTimer(const at::Device& device) : impl_(new Impl) { impl_->cuda = device.is_cuda(); }
StepTimer::~StepTimer() { delete impl_; }

void StepTimer::start() {
#ifdef CPPLAN_CUDA
  if (impl_->cuda) {
    impl_->begin.record();
    return;
  }
#endif
  impl_->t0 = std::chrono::steady_clock::now();
}

double StepTimer::stop_ms() {
#ifdef CPPLAN_CUDA
  if (impl_->cuda) {
    impl_->end.record();
    impl_->end.synchronize();
    return impl_->begin.elapsed_time(impl_->end);
  }
#endif
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - impl_->t0).count();
}

namespace {

// The bytes in tensors the rank held when its peak was last reset: not the phase's own.
double g_baseline_bytes = 0;

}  // namespace
struct DeviceIntervals::Impl {
  std::size_t closed = 0;  // intervals recorded since the last take_seconds()
  bool open = false;
#ifdef CPPLAN_CUDA
  // Interval i is [begins[i], ends[i]]; a deque: events are created in place and never moved.
  std::deque<at::cuda::CUDAEvent> begins, ends;
#endif
};

DeviceIntervals::DeviceIntervals() : impl_(new Impl) {}
DeviceIntervals::~DeviceIntervals() { delete impl_; }

void DeviceIntervals::begin(const at::Device& device) {
#ifdef CPPLAN_CUDA
  if (!device.is_cuda()) return;
  Impl& i = *impl_;
  if (i.closed == i.begins.size()) {
    i.begins.emplace_back(cudaEventDefault);  // timing events (CUDAEvent's default cannot time)
    i.ends.emplace_back(cudaEventDefault);
  }
  i.begins[i.closed].record(at::cuda::getCurrentCUDAStream(device.index()));
  i.open = true;
#endif
  (void)device;
}

void DeviceIntervals::end(const at::Device& device) {
#ifdef CPPLAN_CUDA
  Impl& i = *impl_;
  if (!i.open) return;
  i.ends[i.closed].record(at::cuda::getCurrentCUDAStream(device.index()));
  ++i.closed;
  i.open = false;
#endif
  (void)device;
}

double DeviceIntervals::take_seconds() {
  double ms = 0;
#ifdef CPPLAN_CUDA
  Impl& i = *impl_;
  if (i.closed > 0) {
    // One stream, in order: once the last end event has passed, every earlier one has too.
    i.ends[i.closed - 1].synchronize();
    for (std::size_t k = 0; k < i.closed; ++k) ms += i.begins[k].elapsed_time(i.ends[k]);
  }
#endif
  impl_->closed = 0;
  return ms * 1e-3;
}

double memory_in_use_bytes(const at::Device& device) {
#ifdef CPPLAN_CUDA
  // Index 0 of a stat array is the aggregate over pool kinds (StatType::AGGREGATE), in every
  // LibTorch that has these stats.
  if (device.is_cuda())
    return static_cast<double>(c10::cuda::CUDACachingAllocator::getDeviceStats(device.index()).allocated_bytes[0].current);
#endif
  (void)device;
  return static_cast<double>(cpu_tensor_bytes());
}

double peak_memory_bytes(const at::Device& device) {
#ifdef CPPLAN_CUDA
  if (device.is_cuda())
    return std::max(0.0, static_cast<double>(c10::cuda::CUDACachingAllocator::getDeviceStats(device.index())
                                                 .allocated_bytes[0].peak) - g_baseline_bytes);
#endif
  (void)device;
  return std::max(0.0, static_cast<double>(peak_cpu_tensor_bytes()) - g_baseline_bytes);
}

void reset_peak_memory(const at::Device& device) {
#ifdef CPPLAN_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
    g_baseline_bytes = memory_in_use_bytes(device);
    return;
  }
#endif
  count_cpu_tensors();
  reset_peak_cpu_tensor_bytes();
  g_baseline_bytes = memory_in_use_bytes(device);
}

void limit_memory(const at::Device& device, int64_t bytes) {
#ifdef CPPLAN_CUDA
  if (device.is_cuda()) {
    const double total = static_cast<double>(at::cuda::getDeviceProperties(device.index())->totalGlobalMem);
    c10::cuda::CUDACachingAllocator::setMemoryFraction(std::min(1.0, static_cast<double>(bytes) / total),
                                                       device.index());
    return;
  }
#endif
  (void)device;
  limit_cpu_memory(bytes);
}

void quiet_torch_logs() {
  FLAGS_caffe2_log_level = 3;  // c10's FATAL
#ifdef C10_USE_GLOG
  FLAGS_minloglevel = 3;       // google::GLOG_FATAL
#endif
}

}  // namespace cpplan::executor
