#include "cli/fingerprint.h"

#include "cli/args.h"
#include "executor/rendezvous.h"

#include <torch/version.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

namespace cpplan::cli {

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

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

executor::Rendezvous rendezvous_env(std::chrono::milliseconds timeout) {
  try {
    return executor::rendezvous_from_env(timeout);
  } catch (const std::invalid_argument& e) {
    throw InvalidInput{e.what()};
  }
}

}  // namespace cpplan::cli
