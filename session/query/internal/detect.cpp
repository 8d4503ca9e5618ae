#include "session/query/internal/detect.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

namespace cpplan::session {

namespace {

// Whether an executable nvidia-smi is on PATH: without one, no shell is started for it (a
// planning query should answer in milliseconds).
bool nvidia_smi_on_path() {
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "";
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (!dir.empty() && access((dir + "/nvidia-smi").c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace

std::optional<LocalGpu> query_nvidia_smi() {
  if (!nvidia_smi_on_path()) return std::nullopt;
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
  while (std::fgets(line, sizeof line, pipe.get()))
    if (std::string_view(line).find(',') != std::string_view::npos) ++gpu.count;
  return gpu;
}

const HardwareProfile* match_hardware(const ProfileCatalog& catalog, const LocalGpu& gpu) {
  return catalog.match_gpu(gpu.name, gpu.memory_mib);
}

}  // namespace cpplan::session
