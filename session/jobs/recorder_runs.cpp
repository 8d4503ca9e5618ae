#include "session/jobs/recorder_runs.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <initializer_list>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "core/text.h"
#include "core/version.h"
#include "session/query/query.h"

namespace cpplan::session {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr long long kRecorderVersion = 1;  // the "cpplan_record" of the lines this code reads

// Every key of a recorder line (python/cpplan_record.py, docs/calibration.md), in its order.
constexpr std::array<std::string_view, 33> kKeys = {
    "cpplan_record", "model",          "runtime",     "hardware",      "device",         "gpu_name",
    "gpu_count",     "world_size",     "torch",       "cuda",          "host",           "started_at",
    "finished_at",   "width",          "height",      "frames",        "steps",          "batch",
    "ring_degree",   "ulysses_degree", "tp_degree",   "cfg_degree",    "dp_degree",      "ulysses_anything",
    "ring_anything", "text_encoder",   "vae",         "step_ms",       "text_encode_ms", "vae_decode_ms",
    "image_ms",      "peak_mem_bytes", "peak_mem_kind"};

// Keys a line may leave out (lines written before the recorder measured them).
constexpr std::array<std::string_view, 6> kOptionalKeys = {"phase_mem",          "cache_probe",
                                                           "cache_computed_steps", "cache_cached_steps",
                                                           "cache_warmup_steps", "cache_hit_rate"};
// The phases of phase_mem, in order (MemoryPhase's).
constexpr std::array<std::string_view, 4> kPhases = {"load", "encode", "denoise", "decode"};

// What is wrong with one line: "field = value: rule".
struct BadLine {
  std::string message;
};

// A value as the message shows it: its JSON, control characters escaped, long ones cut.
std::string shown(const json& v) {
  std::string text = v.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return printable(text);
}

// Reads one line's fields, each checked against its rule; throws BadLine.
class Fields {
 public:
  explicit Fields(const json& j) : j_(j) {}

  const json& at(std::string_view key) const { return j_.at(std::string(key)); }

  [[noreturn]] void fail(std::string_view key, std::string_view rule) const {
    throw BadLine{fmt::format("{} = {}: {}", key, shown(at(key)), rule)};
  }

  std::string text(std::string_view key, bool may_be_empty = false) const {
    const json& v = at(key);
    if (!v.is_string()) fail(key, "must be a string");
    if (!may_be_empty && v.get_ref<const std::string&>().empty()) fail(key, "must not be empty");
    return v.get<std::string>();
  }

  std::string optional_text(std::string_view key) const {
    if (at(key).is_null()) return "";
    if (!at(key).is_string() || at(key).get_ref<const std::string&>().empty()) fail(key, "must be a non-empty string or null");
    return at(key).get<std::string>();
  }

  std::string choice(std::string_view key, std::initializer_list<std::string> options) const {
    const json& v = at(key);
    if (!v.is_string() || std::find(options.begin(), options.end(), v.get<std::string>()) == options.end()) {
      fail(key, fmt::format("must be {}", join_or(std::vector<std::string>(options))));
    }
    return v.get<std::string>();
  }

  int integer(std::string_view key, long long lowest, long long highest) const {
    const json& v = at(key);
    if (!v.is_number_integer()) fail(key, "must be an integer");
    // The parser reads every non-negative integer as unsigned, a negative one as signed.
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(highest)) {
      fail(key, fmt::format("must be at most {}", highest));
    }
    const long long x = v.get<std::int64_t>();
    if (x < lowest) fail(key, fmt::format("must be at least {}", lowest));
    if (x > highest) fail(key, fmt::format("must be at most {}", highest));
    return static_cast<int>(x);
  }

  bool boolean(std::string_view key) const {
    if (!at(key).is_boolean()) fail(key, "must be true or false");
    return at(key).get<bool>();
  }

  // A time in ms or bytes: finite, above 0 (`positive`) or at least 0.
  double number(std::string_view key, bool positive) const {
    const json& v = at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>())) fail(key, "must be a number");
    const double x = v.get<double>();
    if (positive ? !(x > 0) : x < 0) fail(key, positive ? "must be above 0" : "must be at least 0");
    return x;
  }

  std::optional<double> optional_number(std::string_view key) const {
    if (at(key).is_null()) return std::nullopt;
    if (!at(key).is_number()) fail(key, "must be a number or null");
    return number(key, false);
  }

  // ISO-8601 UTC to the second, as the recorder and cpplan write it (so that text order is time order).
  std::string timestamp(std::string_view key) const {
    static const std::regex kIso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)");
    if (!at(key).is_string() || !std::regex_match(at(key).get<std::string>(), kIso)) {
      fail(key, "must be ISO-8601 UTC to the second, e.g. 2025-12-01T09:00:00Z");
    }
    return at(key).get<std::string>();
  }

  std::vector<double> times(std::string_view key) const {
    const json& v = at(key);
    if (!v.is_array() || v.empty()) fail(key, "must be a non-empty list of step times in ms");
    std::vector<double> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const json& x = v[i];
      if (!x.is_number() || !std::isfinite(x.get<double>()) || !(x.get<double>() > 0)) {
        throw BadLine{fmt::format("{}[{}] = {}: must be a number above 0", key, i, shown(x))};
      }
      out.push_back(x.get<double>());
    }
    return out;
  }

 private:
  const json& j_;
};

// The p-quantile of `sorted` by linear interpolation between closest ranks, as the executor's
// step statistics (executor/runner.cpp, RunFigures::percentile_step_ms) and numpy's default.
double quantile(const std::vector<double>& sorted, double p) {
  const double pos = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

// 16 hex digits of FNV-1a 64 (as HardwareFingerprint::key()) over `bytes`.
std::string fnv1a(std::string_view bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", hash);
}

// One bytes figure of phase_mem: a non-negative number or null.
std::optional<double> phase_bytes(const json& v, const std::string& key) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_number() || !(v.get<double>() >= 0) || !std::isfinite(v.get<double>()))
    throw BadLine{fmt::format("{} = {}: must be a number of bytes (>= 0) or null", key, shown(v))};
  return v.get<double>();
}

// phase_mem (optional): per phase null or {"peak_bytes", "start_bytes"}, into the run's metrics
// as phase.NAME.peak_bytes and phase.NAME.start_bytes.
void add_phase_memory(const json& j, data::RunRecord& r) {
  if (!j.contains("phase_mem") || j.at("phase_mem").is_null()) return;
  const json& phases = j.at("phase_mem");
  if (!phases.is_object()) throw BadLine{fmt::format("phase_mem = {}: must be an object of the phases", shown(phases))};
  for (const auto& [name, value] : phases.items()) {
    const std::string key = "phase_mem." + name;
    if (std::find(kPhases.begin(), kPhases.end(), name) == kPhases.end())
      throw BadLine{fmt::format("{} = {}: not a phase (load, encode, denoise, decode)", key, shown(value))};
    if (value.is_null()) continue;
    if (!value.is_object() || value.size() != 2 || !value.contains("peak_bytes") || !value.contains("start_bytes"))
      throw BadLine{fmt::format("{} = {}: must be null or {{\"peak_bytes\", \"start_bytes\"}}", key, shown(value))};
    for (const char* figure : {"peak_bytes", "start_bytes"})
      if (const auto bytes = phase_bytes(value.at(figure), key + "." + figure))
        r.metrics.emplace_back(fmt::format("phase.{}.{}", name, figure), *bytes);
  }
}

// The step cache's counts (optional, all null when the recorder watched no block): into the run's
// metrics as cache.computed_steps, cache.cached_steps, cache.warmup_steps and cache.hit_rate.
void add_cache_counts(const json& j, const Fields& f, data::RunRecord& r) {
  if (!j.contains("cache_probe") || j.at("cache_probe").is_null()) {
    for (std::size_t i = 2; i < kOptionalKeys.size(); ++i)
      if (j.contains(std::string(kOptionalKeys[i])) && !j.at(std::string(kOptionalKeys[i])).is_null())
        f.fail(kOptionalKeys[i], "must be null when cache_probe is null (no block watched)");
    return;
  }
  f.text("cache_probe");
  for (std::size_t i = 2; i < kOptionalKeys.size(); ++i)
    if (!j.contains(std::string(kOptionalKeys[i])))
      throw BadLine{fmt::format("{}: missing (cache_probe names a watched block)", kOptionalKeys[i])};
  const int computed = f.integer("cache_computed_steps", 0, r.steps);
  const int cached = f.integer("cache_cached_steps", 0, r.steps);
  if (computed + cached != r.steps)
    f.fail("cache_cached_steps", fmt::format("must be steps = {} less cache_computed_steps = {}", r.steps, computed));
  const int warmup = f.integer("cache_warmup_steps", 0, r.steps);
  const double hit_rate = f.number("cache_hit_rate", false);
  if (hit_rate > 1) f.fail("cache_hit_rate", "must be at most 1 (a share of the steps after the warm-up)");
  r.metrics.emplace_back("cache.computed_steps", computed);
  r.metrics.emplace_back("cache.cached_steps", cached);
  r.metrics.emplace_back("cache.warmup_steps", warmup);
  r.metrics.emplace_back("cache.hit_rate", hit_rate);
}

// One line's object as a run and its machine; throws BadLine.
MeasuredRun to_run(const json& j) {
  // The version first: a line of another version may well have other keys.
  if (!j.contains("cpplan_record")) throw BadLine{"cpplan_record: missing (every key of the recorder's line must be present)"};
  const json& version = j.at("cpplan_record");
  if (!version.is_number_integer() || version.get<long long>() != kRecorderVersion) {
    throw BadLine{fmt::format("cpplan_record = {}: must be {} (the version of the recorder's lines this cpplan reads)",
                              shown(version), kRecorderVersion)};
  }
  std::vector<std::string> known(kKeys.begin(), kKeys.end());
  known.insert(known.end(), kOptionalKeys.begin(), kOptionalKeys.end());
  for (const auto& [key, value] : j.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::vector<std::string> near = closest_names(key, known, 2);
    throw BadLine{fmt::format("{} = {}: unknown key{}", printable(key), shown(value),
                              near.empty() ? " (the recorder's keys: docs/calibration.md)"
                                           : fmt::format(" (did you mean {}?)", join_or(near)))};
  }
  for (std::string_view key : kKeys) {
    if (!j.contains(std::string(key))) throw BadLine{fmt::format("{}: missing (every key of the recorder's line must be present)", key)};
  }
  const Fields f(j);

  data::HardwareFingerprint hw;
  hw.device_kind = f.choice("device", {"cuda", "cpu"});
  const std::string processor = f.text("gpu_name");
  const int processors = f.integer("gpu_count", 1, kMaxGpus);
  if (hw.device_kind == "cuda") {
    hw.gpu_name = processor;
    hw.gpu_count = processors;
  } else {  // the recorder names the CPU and counts its cores there
    hw.cpu_name = processor;
    hw.cpu_count = processors;
  }
  hw.torch = f.text("torch");
  hw.cuda = f.optional_text("cuda");
  hw.host = f.text("host");

  data::RunRecord r;
  r.source = "pipeline";
  r.status = "ok";
  r.model = f.text("model");
  r.runtime = f.choice("runtime", {"diffusers", "xdit", "compiled", "cpplan"});
  r.predicted_hardware = f.optional_text("hardware");
  r.width = f.integer("width", 1, 1 << 16);
  r.height = f.integer("height", 1, 1 << 16);
  r.frames = f.integer("frames", 1, 100000);
  r.steps = f.integer("steps", 1, 100000);
  r.batch = f.integer("batch", 1, 4096);
  r.ring = f.integer("ring_degree", 1, kMaxGpus);
  r.ulysses = f.integer("ulysses_degree", 1, kMaxGpus);
  r.tp = f.integer("tp_degree", 1, kMaxGpus);
  r.cfg = f.integer("cfg_degree", 1, kMaxGpus);
  r.dp = f.integer("dp_degree", 1, kMaxGpus);
  r.ulysses_anything = f.boolean("ulysses_anything");
  r.ring_anything = f.boolean("ring_anything");
  r.world_size = f.integer("world_size", 1, kMaxGpus);
  const long long ranks = 1LL * r.ring * r.ulysses * r.tp * r.cfg * r.dp;
  if (ranks != r.world_size) {
    f.fail("world_size", fmt::format("must equal ring x ulysses x tp x cfg x dp = {}", ranks));
  }
  r.text_encoder = f.choice("text_encoder", {"replicated", "offloaded", "sequential", "sharded"});
  r.vae = f.choice("vae", {"single", "parallel"});
  r.started_at = f.timestamp("started_at");
  r.finished_at = f.timestamp("finished_at");
  if (r.finished_at < r.started_at) f.fail("finished_at", fmt::format("must not be before started_at = {}", r.started_at));

  r.step_times_ms = f.times("step_ms");
  if (r.step_times_ms.size() != static_cast<std::size_t>(r.steps)) {
    f.fail("step_ms", fmt::format("must hold steps = {} times, holds {}", r.steps, r.step_times_ms.size()));
  }
  std::vector<double> sorted = r.step_times_ms;
  std::sort(sorted.begin(), sorted.end());
  r.step_ms = quantile(sorted, 0.5);
  r.step_ms_p10 = quantile(sorted, 0.1);
  r.step_ms_p90 = quantile(sorted, 0.9);
  r.steps_per_sec = 1e3 / *r.step_ms;
  r.text_encode_ms = f.optional_number("text_encode_ms");
  r.vae_decode_ms = f.optional_number("vae_decode_ms");
  r.image_ms = f.number("image_ms", true);
  r.peak_mem_bytes = f.optional_number("peak_mem_bytes");
  if (r.peak_mem_bytes) f.choice("peak_mem_kind", {"cuda_allocated", "cpu_maxrss"});
  else if (!f.at("peak_mem_kind").is_null()) f.fail("peak_mem_kind", "must be null when peak_mem_bytes is null");
  add_phase_memory(j, r);
  add_cache_counts(j, f, r);

  // What cpplan knows of the run beyond the line: the executor's defaults for a GPU (bf16) or CPU
  // (fp32) run; the framework's attention backend, warm-up and seed are not recorded.
  r.dtype = hw.device_kind == "cuda" ? "bf16" : "fp32";
  r.attention_backend = "";
  r.warmup = 0;
  r.seed = 0;
  r.cpplan_version = kVersion;
  // The line's content (keys sorted by the parser, numbers as read): the same line, the same run.
  r.run_key = "pipeline-" + fnv1a(j.dump());
  return {hw, r};
}

}  // namespace

Result<std::vector<MeasuredRun>> parse_recorder_runs(std::string_view text, const std::string& file) {
  std::vector<MeasuredRun> runs;
  std::size_t line_number = 0;
  for (std::size_t begin = 0; begin < text.size();) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank lines
    json j;
    try {
      j = json::parse(line);
    } catch (const json::parse_error& e) {
      std::string what = e.what();
      if (const auto cut = what.find("] "); cut != std::string::npos) what = what.substr(cut + 2);
      return Error{fmt::format("{}:{}: not JSON: {}", file, line_number, printable(what))};
    }
    if (!j.is_object()) return Error{fmt::format("{}:{}: {}: must be a JSON object (one run)", file, line_number, shown(j))};
    try {
      runs.push_back(to_run(j));
    } catch (const BadLine& bad) {
      return Error{fmt::format("{}:{}: {}", file, line_number, bad.message)};
    }
  }
  if (runs.empty()) return Error{fmt::format("{}: no runs (no JSON lines)", file)};
  return runs;
}

}  // namespace cpplan::session
