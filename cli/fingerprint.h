#pragma once
// This machine's hardware fingerprint, the key of its runs, probes and calibrations; and the
// small facts of the moment the commands record beside it.

#include <chrono>

#include "core/text.h"  // now_utc()
#include "data/store.h"

namespace cpplan::executor {
struct Rendezvous;  // executor/rendezvous.h
}

namespace cpplan::cli {

data::HardwareFingerprint cpu_fingerprint();

// An environment variable, or "" when unset.
std::string env(const char* name);

// This rank's RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (executor::rendezvous_from_env); a
// bad value is InvalidInput.
executor::Rendezvous rendezvous_env(std::chrono::milliseconds timeout);

}  // namespace cpplan::cli
