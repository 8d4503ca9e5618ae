// gather(): the store's runs, samples and calibrations as the report's figures.
#include "report/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "core/parallel_config.h"
#include "costmodel/calibration.h"
#include "report/detail.h"

namespace cpplan::report {

namespace fs = std::filesystem;

namespace {


std::string machine_name(const data::HardwareFingerprint& h) {
  std::string name;
  if (!h.gpu_name.empty()) name = h.gpu_count > 1 ? fmt::format("{} x {}", h.gpu_count, h.gpu_name) : h.gpu_name;
  else name = h.cpu_name.empty() ? h.device_kind : h.cpu_name;
  return h.host.empty() ? name : fmt::format("{} ({})", name, h.host);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Accuracy accuracy_of(const std::string& group, const std::vector<const RunPoint*>& points) {
  Accuracy a;
  a.group = group;
  a.runs = static_cast<int>(points.size());
  std::vector<double> predicted, measured;
  for (const RunPoint* p : points) {
    predicted.push_back(p->predicted_ms);
    measured.push_back(p->measured_ms);
    if (predicted.size() == 1 || std::abs(p->error()) > std::abs(a.worst.error())) a.worst = *p;
  }
  a.mape = costmodel::mape(predicted, measured);
  if (points.size() >= 3) a.spearman = costmodel::spearman(predicted, measured);
  return a;
}

MemoryAccuracy memory_accuracy_of(const std::string& group, const std::vector<const MemoryPoint*>& points) {
  MemoryAccuracy a;
  a.group = group;
  a.runs = static_cast<int>(points.size());
  std::vector<double> predicted, measured;
  for (const MemoryPoint* p : points) {
    predicted.push_back(p->predicted_bytes);
    measured.push_back(p->measured_bytes);
    if (predicted.size() == 1 || std::abs(p->error()) > std::abs(a.worst.error())) a.worst = *p;
  }
  a.mape = costmodel::mape(predicted, measured);
  return a;
}

// Median busbw per size of every (collective, uneven, ranks) of one machine's samples.
std::vector<BusbwCurve> curves_of(const std::string& machine, const std::vector<costmodel::CollectiveSample>& samples) {
  std::map<std::tuple<int, bool, int>, std::map<Bytes, std::vector<double>>> grouped;
  for (const auto& s : samples)
    grouped[{static_cast<int>(s.kind), s.uneven, s.ranks}][s.bytes].push_back(s.busbw_gbps);
  std::vector<BusbwCurve> curves;
  for (const auto& [key, sizes] : grouped) {
    BusbwCurve c;
    c.machine = machine;
    c.collective = static_cast<costmodel::Collective>(std::get<0>(key));
    c.uneven = std::get<1>(key);
    c.ranks = std::get<2>(key);
    for (const auto& [bytes, values] : sizes) c.points.emplace_back(bytes, median(values));
    curves.push_back(std::move(c));
  }
  return curves;
}

// Adds one Machine per fingerprint (labels made unique by a key prefix); returns hardware key -> index.
std::map<std::string, std::size_t> add_machines(Figures& f, const std::vector<data::HardwareFingerprint>& hardware) {
  std::map<std::string, std::size_t> index;  // hardware key -> machines
  std::map<std::string, int> names;          // how many machines share a name
  for (const auto& h : hardware) names[machine_name(h)]++;
  for (const auto& h : hardware) {
    Machine m;
    m.hardware = h;
    m.key = h.key();
    m.label = machine_name(h);
    if (names[m.label] > 1) m.label = fmt::format("{} {}", m.label, m.key.substr(0, 8));  // other versions
    index[m.key] = f.machines.size();
    f.machines.push_back(std::move(m));
  }
  return index;
}

// The run's load phase, measured and predicted, when it recorded both.
void add_load_point(Figures& f, const Machine& m, const data::StoredRun& s) {
  double measured = 0, predicted = 0;
  for (const auto& [name, value] : s.run.metrics) {
    constexpr std::string_view kLoad = ".load_phase_bytes";  // rankN.load_phase_bytes
    if (name.size() > kLoad.size() && name.compare(name.size() - kLoad.size(), kLoad.size(), kLoad) == 0)
      measured = std::max(measured, value);
    if (name == "predicted.load_transformer_bytes") predicted = value;
  }
  if (measured > 0 && predicted > 0)
    f.load_points.push_back({s.id, m.label, s.run.model, plan_label(data::parallel_config(s.run)), measured, predicted});
}

// Counts one run by status and adds its memory point and its predicted-vs-measured point when it has them.
void add_run(Figures& f, Machine& m, const data::StoredRun& s) {
  const data::RunRecord& r = s.run;
  ++f.runs_total;
  if (r.status == "failed") ++f.runs_failed, ++m.runs_failed;
  if (r.status == "cancelled") ++f.runs_cancelled, ++m.runs_cancelled;
  if (r.status != "ok") return;
  ++f.runs_ok, ++m.runs_ok;
  // Peak memory, like with like: an executor run measures the transformer's loop alone. A
  // pipeline run's peak is the whole pipeline's, and import-runs records no prediction beside it.
  if (r.source == "executor" && r.peak_mem_bytes && *r.peak_mem_bytes > 0) {
    if (r.predicted_transformer_peak_bytes && *r.predicted_transformer_peak_bytes > 0)
      f.memory_points.push_back({s.id, m.label, r.model, plan_label(data::parallel_config(r)), *r.peak_mem_bytes,
                                 *r.predicted_transformer_peak_bytes});
    else
      ++f.memory_unpredicted;
  }
  if (r.source == "executor") add_load_point(f, m, s);
  if (!r.step_ms || *r.step_ms <= 0) {
    ++f.runs_unmeasured;
    return;
  }
  if (!r.predicted_step_ms || *r.predicted_step_ms <= 0) {
    ++f.runs_without_prediction;
    return;
  }
  ++m.runs_compared;
  f.points.push_back({s.id, m.label, plan_kind(r), r.model, plan_label(data::parallel_config(r)),
                      r.predicted_hardware.empty() ? "unknown" : r.predicted_hardware, *r.step_ms,
                      *r.predicted_step_ms});
}

// Sorts the step-time points by run id and adds their accuracy overall, per machine, plan kind and source.
void add_step_accuracy(Figures& f) {
  std::sort(f.points.begin(), f.points.end(), [](const RunPoint& a, const RunPoint& b) { return a.run_id < b.run_id; });
  std::vector<const RunPoint*> all;
  std::map<std::string, std::vector<const RunPoint*>> by_machine, by_kind, by_source;
  for (const RunPoint& p : f.points) {
    all.push_back(&p);
    by_machine[p.machine].push_back(&p);
    by_kind[p.kind].push_back(&p);
    by_source[p.predicted_with].push_back(&p);
  }
  if (!all.empty()) f.overall = accuracy_of("all", all);
  for (const Machine& m : f.machines)
    if (by_machine.count(m.label)) f.by_machine.push_back(accuracy_of(m.label, by_machine[m.label]));
  for (const auto& [kind, points] : by_kind) f.by_kind.push_back(accuracy_of(kind, points));
  for (const auto& [source, points] : by_source) f.by_source.push_back(accuracy_of(source, points));
}

// Sorts the peak-memory points by run id and adds their accuracy overall and per machine.
void add_memory_accuracy(Figures& f) {
  std::sort(f.memory_points.begin(), f.memory_points.end(),
            [](const MemoryPoint& a, const MemoryPoint& b) { return a.run_id < b.run_id; });
  std::vector<const MemoryPoint*> all_memory;
  std::map<std::string, std::vector<const MemoryPoint*>> memory_by_machine;
  for (const MemoryPoint& p : f.memory_points) {
    all_memory.push_back(&p);
    memory_by_machine[p.machine].push_back(&p);
  }
  if (!all_memory.empty()) f.memory_overall = memory_accuracy_of("all", all_memory);
  std::vector<const MemoryPoint*> loads;
  for (const MemoryPoint& p : f.load_points) loads.push_back(&p);
  if (!loads.empty()) f.load_overall = memory_accuracy_of("all", loads);
  for (const Machine& m : f.machines)
    if (memory_by_machine.count(m.label))
      f.memory_by_machine.push_back(memory_accuracy_of(m.label, memory_by_machine[m.label]));
}

// Adds each machine's sample counts, busbw curves and latest calibration; an error when the store cannot be read.
Result<bool> add_measurements(Figures& f, const data::Store& store) {
  for (Machine& m : f.machines) {
    auto samples = store.measurements(m.key);
    if (!samples) return samples.error();
    m.collective_samples = static_cast<int>(samples.value().collectives.size());
    m.kernel_samples = static_cast<int>(samples.value().kernels.size());
    for (BusbwCurve& c : curves_of(m.label, samples.value().collectives)) f.busbw.push_back(std::move(c));
    auto calibration = store.latest_calibration(m.key);
    if (!calibration) return calibration.error();
    m.calibration = calibration.value();
  }
  return true;
}

}  // namespace

std::string plan_kind(const data::RunRecord& run) {
  const ParallelConfig c = data::parallel_config(run);
  std::vector<std::string> parts;
  const CpVariant variant = classify(c.context_parallel_config);
  if (variant != CpVariant::kNone) parts.emplace_back(display_name(variant));
  if (run.tp > 1) parts.emplace_back("TP");
  if (run.cfg > 1) parts.emplace_back("CFG");
  if (run.dp > 1) parts.emplace_back("DP");
  if (parts.empty()) return "single rank";
  std::string kind = parts.front();
  for (std::size_t i = 1; i < parts.size(); ++i) kind += " + " + parts[i];
  return kind;
}

std::optional<GBps> BusbwCurve::busbw_at(Bytes bytes) const {
  if (points.empty() || bytes < points.front().first || bytes > points.back().first) return std::nullopt;
  const auto hi = std::lower_bound(points.begin(), points.end(), bytes,
                                   [](const auto& p, Bytes b) { return p.first < b; });
  if (hi->first == bytes) return hi->second;
  const auto lo = std::prev(hi);
  // Bandwidth grows as a power of the size between two measured sizes (straight on log-log axes),
  // as the measured model interpolates it (costmodel/measured_model.h); linear where one is 0.
  const double t = (std::log(bytes) - std::log(lo->first)) / (std::log(hi->first) - std::log(lo->first));
  if (lo->second <= 0 || hi->second <= 0) return lo->second + t * (hi->second - lo->second);
  return std::exp(std::log(lo->second) + t * (std::log(hi->second) - std::log(lo->second)));
}

std::string BusbwCurve::collective_name() const {
  const std::string name(costmodel::to_string(collective));
  return uneven ? name + " (uneven)" : name;
}

const std::vector<Bytes>& busbw_table_sizes() {
  static const std::vector<Bytes> kSizes = {4 * 1024.0, 64 * 1024.0, kMiB, 16 * kMiB, 256 * kMiB};
  return kSizes;
}

Result<Figures> gather(const data::Store& store) {
  Figures f;
  f.db_path = store.path();
  f.schema_version = store.schema_version();
  auto hardware = store.hardware();
  if (!hardware) return hardware.error();
  auto runs = store.runs();
  if (!runs) return runs.error();
  const std::map<std::string, std::size_t> index = add_machines(f, hardware.value());
  for (const data::StoredRun& s : runs.value()) add_run(f, f.machines.at(index.at(s.hardware.key())), s);
  add_step_accuracy(f);
  add_memory_accuracy(f);
  if (auto read = add_measurements(f, store); !read) return read.error();
  return f;
}

Result<bool> prepare_output_dir(const std::string& out_dir) {
  std::error_code ec;
  if (out_dir.empty()) return Error{"--out \"\": must name a directory"};
  if (fs::exists(out_dir, ec) && !fs::is_directory(out_dir, ec))
    return Error{fmt::format("--out {}: is not a directory", out_dir)};
  fs::create_directories(out_dir, ec);
  if (ec) return Error{fmt::format("--out {}: cannot create the directory: {}", out_dir, ec.message())};
  // Probe with a file of our own: access(W_OK) would be wrong for root and on some mounts.
  const fs::path probe = fs::path(out_dir) / ".cpplan-report-write-test";
  {
    std::ofstream out(probe, std::ios::binary | std::ios::trunc);
    if (!out) return Error{fmt::format("--out {}: cannot write in the directory: {}", out_dir, std::strerror(errno))};
  }
  fs::remove(probe, ec);
  return true;
}

Result<Written> write_report(const Figures& figures, const std::string& out_dir, const Options& options) {
  if (options.width_px < 200 || options.width_px > 8192)
    return Error{fmt::format("width_px = {}: must be between 200 and 8192", options.width_px)};
  if (options.height_px < 150 || options.height_px > 8192)
    return Error{fmt::format("height_px = {}: must be between 150 and 8192", options.height_px)};
  auto ready = prepare_output_dir(out_dir);
  if (!ready) return ready.error();
  auto plots = detail::render_plots(figures, out_dir, options);
  if (!plots) return plots.error();
  Written w;
  w.markdown_path = (fs::path(out_dir) / "REPORT.md").string();
  w.plots = std::move(plots).value();
  std::ofstream out(w.markdown_path, std::ios::binary | std::ios::trunc);
  out << markdown(figures, w.plots);
  out.close();
  if (!out) return Error{fmt::format("{}: cannot write: {}", w.markdown_path, std::strerror(errno))};
  return w;
}

}  // namespace cpplan::report
