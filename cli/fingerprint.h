#pragma once
// This machine's hardware fingerprint, the key of its runs, probes and calibrations; and the
// small facts of the moment the commands record beside it.

#include "data/store.h"

namespace cpplan::cli {

data::HardwareFingerprint cpu_fingerprint();

// Now, as ISO-8601 UTC ("2026-11-29T17:40:00Z").
std::string now_utc();

// An environment variable, or "" when unset.
std::string env(const char* name);

}  // namespace cpplan::cli
