#pragma once
// This machine's hardware fingerprint, the key of its runs, probes and calibrations.

#include "data/store.h"

namespace cpplan::cli {

data::HardwareFingerprint cpu_fingerprint();

}  // namespace cpplan::cli
