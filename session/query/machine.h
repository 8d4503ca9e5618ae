#pragma once
// "This machine", the key of its runs, probes and calibrations. Its fingerprint names the LibTorch,
// CUDA and NCCL versions and the GPUs a run sees, which only a LibTorch process can read: the
// planning binary and the GUI ask the executor binary, cpplan-exec, found beside them.

#include <string>

#include "data/store.h"

namespace cpplan::session {

// The name of the executor binary, installed beside `cpplan` (CMake builds both in cli/).
inline constexpr const char* kExecutorBinary = "cpplan-exec";

struct Machine {
  data::HardwareFingerprint fingerprint;  // cpu or cuda, as a run on this machine records it
  double memory_mib = 0;                  // the GPU's memory, or the host's for a CPU machine
  bool cuda() const { return fingerprint.device_kind == "cuda"; }
};

// The executor binary beside `exe` (a path to cpplan, cpplan-gui or cpplan-exec), or beside its
// build tree sibling cli/; "" when there is none.
std::string executor_binary(const std::string& exe);

// This machine as `cpplan-exec fingerprint [--device D]` reports it: `device` cpu or cuda as a run
// on that device records it; empty: its GPUs when that binary has CUDA and sees one, else its
// CPU. Throws InvalidInput when there is no executor binary or it fails.
Machine this_machine(const std::string& exe, const std::string& device = "");

// The host's physical memory in MiB.
double physical_memory_mib();

// The JSON line `cpplan-exec fingerprint` prints, and its reading (InvalidInput on a bad line).
std::string machine_json(const Machine& m);
Machine machine_from_json(const std::string& text);

// An environment variable, or "" when unset.
std::string env(const char* name);

}  // namespace cpplan::session
