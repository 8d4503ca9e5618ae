#pragma once
// This machine as the executor sees it (its fingerprint: the key of its runs, probes and
// calibrations; session/query/machine.h asks this binary for it), and a rank's device and rendezvous.

#include <chrono>
#include <optional>

#include "executor/device.h"
#include "launch/launch_env.h"
#include "session/query/machine.h"

namespace cpplan::executor {
struct Rendezvous;  // executor/rendezvous.h
}

namespace cpplan::exec {

// The machine as a run on `cuda` GPUs (or its CPU) sees it: the CPU fingerprint, plus GPU name
// and count, driver, CUDA and NCCL versions for a GPU; the memory of that GPU, or the host's.
session::Machine machine(bool cuda);
// "This machine" of probe, calibrate and --hardware local: its GPUs when this build has CUDA and
// sees one, else its CPU.
bool local_is_cuda();

// The device of one rank of `cpplan run` or `cpplan probe`: `device` cpu | cuda (empty: this
// machine's, local_is_cuda), `dtype` fp32 | bf16 (empty: fp32 on cpu, bf16 on cuda); a GPU rank
// takes cuda:LOCAL_RANK, as torchrun places ranks (cuda:0 before launch, and where it sees one GPU:
// srun --gpus-per-task=1). Bad values, or cuda in
// a build without it, are InvalidInput.
executor::DeviceSpec rank_device(const std::string& device, const std::string& dtype);
// `nproc` local ranks on `device`: a GPU each. InvalidInput naming --nproc when too few are visible.
void check_local_gpus(const executor::DeviceSpec& device, int nproc);

// The job this process is one rank of, started by torchrun, srun or mpirun (launch/launch_env.h),
// its figures exported as RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT for everything that reads those. nullopt when no launcher started it, and for the
// single task of an srun or mpirun: that one starts the plan's ranks itself. Bad values are
// InvalidInput. Call it before any thread starts.
std::optional<launch::LaunchEnv> adopt_launcher();

// This rank's RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (executor::rendezvous_from_env); a
// bad value is InvalidInput.
executor::Rendezvous rendezvous_env(std::chrono::milliseconds timeout);

}  // namespace cpplan::exec
