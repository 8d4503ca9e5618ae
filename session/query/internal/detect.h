#pragma once
// The local GPU, as nvidia-smi names it, matched to a hardware profile.

#include <optional>
#include <string>

#include "core/profiles.h"

namespace cpplan::session {

struct LocalGpu {
  std::string name;   // as nvidia-smi prints it
  double memory_mib = 0;
  int count = 1;  // GPUs nvidia-smi lists
};

// First GPU nvidia-smi lists, with how many it lists, or nothing when it is absent or lists none.
std::optional<LocalGpu> query_nvidia_smi();

// The profile whose every `match` substring is in the name; among several, the one whose
// capacity is closest to the GPU's (an RTX 4090 with 24 or 48 GB).
const HardwareProfile* match_hardware(const ProfileCatalog& catalog, const LocalGpu& gpu);

}  // namespace cpplan::session
