#include "exec/machine.h"

#include "session/query/query.h"
#include "executor/device.h"
#include "executor/rendezvous.h"

#include <torch/version.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

namespace cpplan::exec {

using session::env;
using session::InvalidInput;
using session::parse_int;

namespace {
data::HardwareFingerprint cpu_fingerprint() {
  data::HardwareFingerprint h;
  h.device_kind = "cpu";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      h.cpu_name = line.substr(line.find(':') + 2);
      break;
    }
  h.cpu_count = static_cast<int>(std::thread::hardware_concurrency());
  h.torch = TORCH_VERSION;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  h.host = host;
  return h;
}

// This rank's GPU: cuda:LOCAL_RANK as torchrun places ranks, or the only one it sees where the
// launcher gives each task its own (srun --gpus-per-task=1 sets CUDA_VISIBLE_DEVICES per task).
int local_gpu() {
  const std::string text = env("LOCAL_RANK");
  const int local = text.empty() ? 0 : parse_int("LOCAL_RANK", text, 0, 1023);
  const int visible = executor::cuda_device_count();
  if (visible == 1) return 0;
  if (visible > 0 && local >= visible)
    throw InvalidInput{fmt::format("LOCAL_RANK = {}: one GPU per rank, and {} are visible", local, visible)};
  return local;
}

}  // namespace

session::Machine machine(bool cuda) {
  session::Machine m;
  data::HardwareFingerprint& h = m.fingerprint;
  h = cpu_fingerprint();
  m.memory_mib = session::physical_memory_mib();
  if (!cuda) return m;
  m.memory_mib = executor::cuda_memory_bytes(0) / (1 << 20);
  h.device_kind = "cuda";
  h.gpu_name = executor::cuda_device_name(0);
  h.gpu_count = executor::cuda_device_count();
  const executor::CudaVersions v = executor::cuda_versions();
  h.driver = v.driver;
  h.cuda = v.runtime;
  h.nccl = v.nccl;
  return m;
}

bool local_is_cuda() { return executor::cuda_built() && executor::cuda_device_count() > 0; }

executor::DeviceSpec rank_device(const std::string& device, const std::string& dtype) {
  const std::string kind = device.empty() ? (local_is_cuda() ? "cuda" : "cpu") : device;
  if (kind != "cpu" && kind != "cuda") throw InvalidInput{fmt::format("--device = {}: must be cpu or cuda", kind)};
  if (kind == "cuda" && !executor::cuda_built())
    throw InvalidInput{"--device = cuda: this build's LibTorch has no CUDA; build against a CUDA LibTorch "
                       "(docs/running.md, \"GPU build\")"};
  if (!dtype.empty() && dtype != "fp32" && dtype != "bf16")
    throw InvalidInput{fmt::format("--dtype = {}: must be fp32 or bf16", dtype)};
  executor::DeviceSpec d;
  if (kind == "cuda") d.device = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(local_gpu()));
  d.dtype = dtype == "bf16" || (dtype.empty() && kind == "cuda") ? at::kBFloat16 : at::kFloat;
  return d;
}

void check_local_gpus(const executor::DeviceSpec& device, int nproc) {
  if (device.cuda() && nproc > executor::cuda_device_count())
    throw InvalidInput{fmt::format("--nproc = {}: one GPU per rank, and {} are visible", nproc,
                                   executor::cuda_device_count())};
}

std::optional<launch::LaunchEnv> adopt_launcher() {
  std::optional<launch::LaunchEnv> job;
  try {
    job = launch::launch_env();
  } catch (const std::invalid_argument& e) {
    throw InvalidInput{e.what()};
  }
  if (!job) return std::nullopt;
  const bool sets_rank = job->launcher == launch::Launcher::kEnv || job->launcher == launch::Launcher::kTorchrun;
  if (!sets_rank && job->world_size == 1) return std::nullopt;
  launch::export_launch_env(*job);
  return job;
}

executor::Rendezvous rendezvous_env(std::chrono::milliseconds timeout) {
  try {
    return executor::rendezvous_from_env(timeout);
  } catch (const std::invalid_argument& e) {
    throw InvalidInput{e.what()};
  }
}

}  // namespace cpplan::exec
