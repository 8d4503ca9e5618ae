#include "session/query/machine.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/units.h"
#include "launch/launcher.h"
#include "session/query/query.h"

namespace cpplan::session {

namespace fs = std::filesystem;
using nlohmann::json;

std::string executor_binary(const std::string& exe) {
  const fs::path dir = fs::path(exe).parent_path();
  for (const fs::path& candidate : {dir / kExecutorBinary, dir / ".." / "cli" / kExecutorBinary}) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0)
      return fs::weakly_canonical(candidate, ec).string();
  }
  return "";
}

Machine this_machine(const std::string& exe, const std::string& device) {
  const std::string binary = executor_binary(exe);
  if (binary.empty())
    throw InvalidInput{fmt::format("this machine: {} is not beside {} (scripts/build.sh builds it)",
                                   kExecutorBinary, exe)};
  const fs::path out = fs::temp_directory_path() / fmt::format("cpplan-machine-{}.json", getpid());
  std::vector<std::string> argv{binary, "fingerprint"};
  if (!device.empty()) argv.insert(argv.end(), {"--device", device});
  const int code = launch::run_to_file(argv, out.string());
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  std::error_code ec;
  fs::remove(out, ec);
  if (code != 0) throw InvalidInput{fmt::format("this machine: {} fingerprint exited with {}", binary, code)};
  return machine_from_json(text.str());
}

double physical_memory_mib() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE)) / kMiB;
}

std::string machine_json(const Machine& m) {
  const data::HardwareFingerprint& h = m.fingerprint;
  return json{{"device_kind", h.device_kind}, {"gpu_name", h.gpu_name}, {"gpu_count", h.gpu_count},
              {"cpu_name", h.cpu_name},       {"cpu_count", h.cpu_count}, {"driver", h.driver},
              {"cuda", h.cuda},               {"nccl", h.nccl},           {"torch", h.torch},
              {"host", h.host},               {"memory_mib", m.memory_mib}}
      .dump();
}

Machine machine_from_json(const std::string& text) {
  try {
    const json j = json::parse(text);
    Machine m;
    data::HardwareFingerprint& h = m.fingerprint;
    h.device_kind = j.at("device_kind");
    h.gpu_name = j.at("gpu_name");
    h.gpu_count = j.at("gpu_count");
    h.cpu_name = j.at("cpu_name");
    h.cpu_count = j.at("cpu_count");
    h.driver = j.at("driver");
    h.cuda = j.at("cuda");
    h.nccl = j.at("nccl");
    h.torch = j.at("torch");
    h.host = j.at("host");
    m.memory_mib = j.at("memory_mib");
    return m;
  } catch (const json::exception& e) {
    throw InvalidInput{fmt::format("this machine: {} fingerprint printed no fingerprint ({})", kExecutorBinary, e.what())};
  }
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace cpplan::session
