#pragma once
// This machine as the executor sees it (its fingerprint: the key of its runs, probes and
// calibrations; session/machine.h asks this binary for it), and a rank's device and rendezvous.

#include <chrono>

#include "executor/device.h"
#include "session/machine.h"

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
// takes cuda:LOCAL_RANK, as torchrun places ranks (cuda:0 before launch). Bad values, or cuda in
// a build without it, are InvalidInput.
executor::DeviceSpec rank_device(const std::string& device, const std::string& dtype);
// `nproc` local ranks on `device`: a GPU each. InvalidInput naming --nproc when too few are visible.
void check_local_gpus(const executor::DeviceSpec& device, int nproc);

// This rank's RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (executor::rendezvous_from_env); a
// bad value is InvalidInput.
executor::Rendezvous rendezvous_env(std::chrono::milliseconds timeout);

}  // namespace cpplan::exec
