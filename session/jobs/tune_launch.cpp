#include "session/jobs/tune_launch.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <regex>
#include <thread>

#include "core/text.h"
#include "core/version.h"
#include "launch/launcher.h"
#include "session/jobs/recorder_runs.h"
#include "session/engine/internal/tune_calibration.h"

namespace cpplan::session {

namespace {

constexpr std::string_view kTimeoutPrefix = "timed out";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The log's first exception line ("NotImplementedError: ...": the cause, before the launcher's
// own report of the failed ranks; a line two ranks wrote into each other is passed over), else
// its last line.
std::string error_line(const std::string& log) {
  static const std::regex exception(R"(^[A-Za-z_][\w.]*(Error|Exception|Interrupt)(: .*)?$)");
  std::string last;
  for (std::size_t begin = 0; begin < log.size();) {
    const std::size_t end = std::min(log.find('\n', begin), log.size());
    const std::string line = log.substr(begin, end - begin);
    begin = end + 1;
    if (std::regex_match(line, exception) && line.find("ChildFailedError") == std::string::npos &&
        line.find("File \"") == std::string::npos)
      return line;
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return last;
}

// torch's words for an allocation that failed: CUDA's OutOfMemoryError ("CUDA out of memory"), the
// CPU allocator's "can't allocate memory".
bool out_of_memory(const std::string& log) {
  for (const char* words : {"OutOfMemoryError", "out of memory", "can't allocate memory"})
    if (log.find(words) != std::string::npos) return true;
  return false;
}

std::string shortened(std::string text) {
  text = printable(text);
  if (text.size() > 300) text = text.substr(0, 297) + "...";
  return text;
}

// A record for a launch that measured nothing: the plan, the query and why.
data::RunRecord failed_record(const TuneRequest& r, const Query& q, const TuneCandidate& c, const TuneOutcome& o) {
  data::RunRecord run;
  run.model = q.model->name;
  run.width = q.resolution.width;
  run.height = q.resolution.height;
  run.frames = q.frames;
  run.steps = q.steps;
  run.world_size = static_cast<int>(c.config.world_size());
  run.status = o.status == TuneStatus::kOom ? "oom" : "failed";
  run.error = o.error.empty() ? "failed" : o.error;
  run.started_at = run.finished_at = now_utc();
  run.cpplan_version = kVersion;
  run.source = "pipeline";
  run.runtime = q.runtime ? q.runtime->name : "";
  run.dtype = r.device == "cpu" ? "fp32" : "bf16";
  return run;
}

// The step a tune compares: the median step, or with a step cache the mean of the steps.
std::optional<double> measured_step_ms(const data::RunRecord& run, bool mean_step) {
  if (!mean_step || run.step_times_ms.empty()) return run.step_ms;
  double sum = 0;
  for (double ms : run.step_times_ms) sum += ms;
  return sum / static_cast<double>(run.step_times_ms.size());
}

std::optional<double> metric(const data::RunRecord& run, std::string_view name) {
  for (const auto& [key, value] : run.metrics)
    if (key == name) return value;
  return std::nullopt;
}

}  // namespace

int CacheCounts::cached_after_warmup() const { return static_cast<int>(std::lround(hit_rate * steps_after_warmup())); }

std::optional<CacheCounts> cache_counts_of(const data::RunRecord& run) {
  const auto computed = metric(run, "cache.computed_steps"), cached = metric(run, "cache.cached_steps");
  const auto warmup = metric(run, "cache.warmup_steps"), hit_rate = metric(run, "cache.hit_rate");
  if (!computed || !cached || !warmup || !hit_rate) return std::nullopt;
  return CacheCounts{static_cast<int>(*computed), static_cast<int>(*cached), static_cast<int>(*warmup), *hit_rate};
}

data::HardwareFingerprint this_host(const std::string& device) {
  data::HardwareFingerprint hw;
  hw.device_kind = device;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      hw.cpu_name = line.substr(line.find(':') + 2);
      break;
    }
  hw.cpu_count = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  hw.host = this_host_name();
  return hw;
}

std::vector<std::string> launch_command(const TuneRequest& r, int ranks) {
  const std::string n = std::to_string(ranks);
  std::vector<std::string> argv;
  if (r.launcher == "torchrun") {
    argv = {"torchrun", "--nproc_per_node", n, "--master_addr", "127.0.0.1", "--master_port",
            std::to_string(launch::free_loopback_port()), r.script};
  } else {
    argv = r.launcher == "srun" ? std::vector<std::string>{"srun", "--ntasks", n}
                                : std::vector<std::string>{"mpirun", "-np", n};
    if (r.script.size() > 3 && r.script.substr(r.script.size() - 3) == ".py") argv.emplace_back("python3");
    argv.push_back(r.script);
  }
  argv.insert(argv.end(), r.script_args.begin(), r.script_args.end());
  return argv;
}

LaunchResult read_launch(const TuneRequest& r, const Query& q, const TuneCandidate& c, const launch::ChildOutcome& child,
                         const std::string& out, const std::string& log, const std::string& run_key) {
  LaunchResult result;
  TuneOutcome& o = result.outcome;
  const std::string text = read_file(out), output = read_file(log);
  if (child.timed_out) {
    o.status = TuneStatus::kTimeout;
    o.error = fmt::format("{} after {:g} s", kTimeoutPrefix, r.timeout_s);
  } else if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    o.status = out_of_memory(output) ? TuneStatus::kOom : TuneStatus::kFailed;
    o.error = child.exit_code == 0 ? "the script exited without a record (no cpplan.record block ran to its end)"
                                   : fmt::format("exit code {}: {}", child.exit_code, error_line(output));
  } else if (auto runs = parse_recorder_runs(text, out); !runs) {
    o.status = TuneStatus::kFailed;
    o.error = runs.error().message;
  } else {
    auto [hw, run] = runs->back();
    run.run_key = run_key;
    data::set_plan(run, c.config);
    o.status = TuneStatus::kOk;
    o.step_ms = measured_step_ms(run, q.cache.active());
    o.image_ms = run.image_ms;
    o.peak_bytes = run.peak_mem_bytes;
    o.cache = cache_counts_of(run);
    result.records.emplace_back(hw, run);
    return result;
  }
  o.error = shortened(o.error);
  data::RunRecord run = failed_record(r, q, c, o);
  run.run_key = run_key;
  data::set_plan(run, c.config);
  result.records.emplace_back(this_host(r.device), run);
  return result;
}

TuneOutcome outcome_of(const data::RunRecord& run, bool mean_step) {
  TuneOutcome o;
  o.resumed = true;
  o.error = run.error;
  if (run.status == "ok") {
    o.status = TuneStatus::kOk;
    o.step_ms = measured_step_ms(run, mean_step);
    o.cache = cache_counts_of(run);
    o.image_ms = run.image_ms;
    o.peak_bytes = run.peak_mem_bytes;
  } else if (run.status == "oom") {
    o.status = TuneStatus::kOom;
  } else {
    o.status = run.error.rfind(kTimeoutPrefix, 0) == 0 ? TuneStatus::kTimeout : TuneStatus::kFailed;
  }
  return o;
}

}  // namespace cpplan::session
