#include "cli/detect.h"

#include <cmath>
#include <cstdio>
#include <memory>

namespace cpplan::cli {

std::optional<LocalGpu> query_nvidia_smi() {
  // A fixed command line: nothing from the user reaches the shell.
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(
      popen("nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits 2>/dev/null", "r"), pclose);
  if (!pipe) return std::nullopt;
  char line[512];
  if (!std::fgets(line, sizeof line, pipe.get())) return std::nullopt;
  std::string s(line);
  const auto comma = s.rfind(',');
  if (comma == std::string::npos) return std::nullopt;
  LocalGpu gpu;
  gpu.name = s.substr(0, comma);
  try {
    gpu.memory_mib = std::stod(s.substr(comma + 1));
  } catch (...) {
    return std::nullopt;
  }
  return gpu;
}

const HardwareProfile* match_hardware(const ProfileCatalog& catalog, const LocalGpu& gpu) {
  return catalog.match_gpu(gpu.name, gpu.memory_mib);
}

}  // namespace cpplan::cli
