#include "cli/tune_command.h"

#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "core/text.h"
#include "session/jobs/tune.h"

namespace cpplan::cli {

namespace {

using session::TuneReport;
using session::TuneRow;
using session::TuneStatus;

std::atomic<bool> g_cancel{false};
extern "C" void on_interrupt(int) { g_cancel.store(true); }

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string figure(const std::optional<double>& v, double scale, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v / scale) : std::string("-");
}

// One line per launch (not a terminal), or a bar with the ETA redrawn in place (a terminal).
struct Progress {
  std::ostream& err;
  bool terminal;
  double elapsed_s = 0;

  void bar(int done, int total, const std::string& what) {
    const double eta_s = done > 0 ? elapsed_s / done * (total - done) : 0;
    const int width = 24, filled = total > 0 ? width * done / total : width;
    fmt::print(err, "\r[{}{}] {}/{} {} {:<40}", std::string(filled, '#'), std::string(width - filled, '.'), done, total,
               done > 0 ? fmt::format("ETA {:.0f} s", eta_s) : std::string("ETA ?"), what);
    err.flush();
  }
  void started(const TuneReport& r, std::size_t row, int done, int total) {
    const std::string& label = r.rows[row].candidate.label;
    if (!terminal)
      return fmt::print(err, "tune: [{}/{}] launching {} (predicted {:.2f} ms/step)\n", done + 1, total, label,
                        r.rows[row].candidate.predicted_step_ms);
    bar(done, total, label);
  }
  void ended(const TuneReport& r, std::size_t row, int done, int total) {
    const TuneRow& t = r.rows[row];
    elapsed_s += t.outcome.launch_s;
    if (terminal) return bar(done, total, fmt::format("{}: {}", t.candidate.label, to_string(t.outcome.status)));
    fmt::print(err, "tune: {}: {}{} ({:.1f} s)\n", t.candidate.label, to_string(t.outcome.status),
               t.outcome.step_ms ? fmt::format(", {:.2f} ms/step", *t.outcome.step_ms) : ": " + t.outcome.error,
               t.outcome.launch_s);
  }
};

std::string measured_status(const TuneRow& row) {
  std::string s(to_string(row.outcome.status));
  if (row.outcome.resumed) s += " (earlier)";
  return s;
}

// The launch's measured hit rate and the assumed one, "0.33 (0.50)"; "" without a step cache.
std::string hit_rate_cell(const TuneReport& r, const TuneRow& row) {
  if (!r.cache.active()) return "";
  const auto& c = row.outcome.cache;
  return fmt::format(" {:>12}", fmt::format("{} ({:.2f})", c ? fmt::format("{:.2f}", c->hit_rate) : "-", r.assumed_hit_rate));
}

void print_table(std::ostream& out, const TuneReport& r) {
  fmt::print(out, "{:>4}  {:<24} {:<26} {:>10} {:>9} {:>10} {:>10} {:>8} {:>9}{}  {}\n", "rank", "plan", "why",
             "pred ms", "pred GiB", "fitted ms", "meas ms", "image s", "peak GiB",
             r.cache.active() ? fmt::format(" {:>12}", "hit (assumed)") : "", "status");
  for (const TuneRow& row : r.rows) {
    const auto& c = row.candidate;
    const auto& o = row.outcome;
    fmt::print(out, "{:>4}  {:<24} {:<26} {:>10.2f} {:>9.1f} {:>10.2f} {:>10} {:>8} {:>9}{}  {}\n", c.predicted_rank,
               c.label, c.why, c.predicted_step_ms, c.predicted_peak_bytes / kGiB, row.calibrated_step_ms,
               figure(o.step_ms, 1, "{:.2f}"), figure(o.image_ms, 1000, "{:.3f}"), figure(o.peak_bytes, kGiB, "{:.2f}"),
               hit_rate_cell(r, row), measured_status(row));
  }
  for (const TuneRow& row : r.rows)
    if (!row.outcome.error.empty() && row.outcome.status != TuneStatus::kOk)
      fmt::print(out, "  {}: {}: {}\n", row.candidate.label, to_string(row.outcome.status), row.outcome.error);
}

// A threshold cache's hit rate: measured (and where later queries read it) or why not.
void print_hit_rate(std::ostream& out, const TuneReport& r) {
  if (!session::threshold_cache(r.cache)) return;
  const std::string_view policy = to_string(r.cache.policy);
  if (!r.hit_rate) {
    fmt::print(out, "cache: {} hit rate not measured (assumed {:.2f}; the notes say why)\n", policy, r.assumed_hit_rate);
    return;
  }
  fmt::print(out, "cache: {} hit rate measured {:.2f} over {} run{} ({} of {} steps after the warm-up cached; assumed "
             "{:.2f}), written to {}\n",
             policy, r.hit_rate->hit_rate(), r.hit_rate->runs, r.hit_rate->runs == 1 ? "" : "s", r.hit_rate->cached_steps,
             r.hit_rate->counted_steps, r.assumed_hit_rate, r.hit_rate->path);
  fmt::print(out, "  cpplan --db {} --cache {} (no --cache-hit-rate) prices with it\n", r.db, policy);
}

nlohmann::json cache_counts_json(const std::optional<session::CacheCounts>& c) {
  if (!c) return nullptr;
  return {{"computed_steps", c->computed_steps}, {"cached_steps", c->cached_steps},
          {"warmup_steps", c->warmup_steps}, {"hit_rate", c->hit_rate}};
}

nlohmann::json optional_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json row_json(const TuneReport& r, const TuneRow& row) {
  const auto& c = row.candidate;
  const auto& o = row.outcome;
  return {{"label", c.label}, {"why", c.why}, {"predicted_rank", c.predicted_rank},
          {"predicted_step_ms", c.predicted_step_ms}, {"predicted_peak_bytes", c.predicted_peak_bytes},
          {"fitted_step_ms", row.calibrated_step_ms}, {"status", to_string(o.status)}, {"resumed", o.resumed},
          {"step_ms", optional_json(o.step_ms)}, {"image_ms", optional_json(o.image_ms)},
          {"peak_bytes", optional_json(o.peak_bytes)}, {"error", o.error}, {"cache", cache_counts_json(o.cache)},
          {"assumed_hit_rate", r.cache.active() ? nlohmann::json(r.assumed_hit_rate) : nlohmann::json(nullptr)}};
}

// The report as one JSON object: the rows, the best, the calibration and the cache's hit rate.
void print_json(std::ostream& out, const TuneReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const TuneRow& row : r.rows) rows.push_back(row_json(r, row));
  nlohmann::json families = nlohmann::json::object();
  for (const auto& [family, factor] : r.fit.family) families[std::string(to_string(family))] = factor;
  nlohmann::json cache = nullptr;
  if (r.cache.active())
    cache = {{"policy", to_string(r.cache.policy)}, {"assumed_hit_rate", r.assumed_hit_rate},
             {"measured_hit_rate", r.hit_rate ? nlohmann::json(r.hit_rate->hit_rate()) : nlohmann::json(nullptr)},
             {"runs", r.hit_rate ? r.hit_rate->runs : 0}, {"path", r.hit_rate ? r.hit_rate->path : ""}};
  const nlohmann::json j{
      {"rows", rows},
      {"best", r.best ? nlohmann::json(r.rows[*r.best].candidate.label) : nlohmann::json(nullptr)},
      {"regret", optional_json(r.regret)},
      {"stopped_early", r.stopped_early},
      {"calibration", {{"scale", r.fit.scale}, {"families", families}, {"runs", r.fit.runs},
                       {"path", r.calibration_path}, {"source", r.calibration_source}}},
      {"cache", cache},
      {"prediction_source", r.prediction_source},
      {"notes", r.notes},
      {"db", r.db}};
  out << j.dump(2) << '\n';
}

void print_summary(std::ostream& out, const TuneReport& r, const session::TuneRequest& request) {
  if (!r.best) {
    fmt::print(out, "no candidate was measured: nothing to choose from\n");
    return;
  }
  const TuneRow& best = r.rows[*r.best];
  std::string script = request.script;
  for (const std::string& a : request.script_args) script += " " + a;
  fmt::print(out, "measured best: {}: {:.2f} ms/step, {} s/image; script: {}\n", best.candidate.label,
             *best.outcome.step_ms, figure(best.outcome.image_ms, 1000, "{:.3f}"), printable(script));
  fmt::print(out, "top-1 regret: {}\n",
             r.regret ? fmt::format("{:.1f}% (the predicted best over the measured best)", *r.regret * 100)
                      : std::string("unknown (the predicted best measured nothing)"));
  if (r.stopped_early) fmt::print(out, "stopped early: the measured best beats the predictions of the plans not run by more than the margin\n");
  std::string families;
  for (const auto& [family, factor] : r.fit.family) families += fmt::format(", {} x{:.3f}", to_string(family), factor);
  fmt::print(out, "calibration: scale {:.4g}{} from {} runs, written to {}\n", r.fit.scale, families, r.fit.runs,
             r.calibration_path);
  if (r.calibration_source == "local")
    fmt::print(out, "  cpplan --hardware local --db {} uses it\n", r.db);
  else if (r.calibration_source.rfind("cluster-", 0) == 0)
    fmt::print(out, "  cpplan --cluster {} --db {} uses it\n", r.calibration_source.substr(8), r.db);
  else
    fmt::print(out, "  (predicted from the {} profile: a tune with --hardware local or --cluster NAME writes the "
               "calibration those queries use)\n", r.calibration_source);
  print_hit_rate(out, r);
  fmt::print(out, "records: {}\n", r.db);
}

}  // namespace

void add_tune_options(CLI::App& tune, TuneArgs& t) {
  tune.add_option("script", t.script, "your script: applies cpplan.current_plan() and records with cpplan.record")
      ->required();
  tune.add_option("args", t.script_args, "the script's arguments, after --");
  tune.add_option("--top", t.top, "candidates to measure, at most (default 4)");
  tune.add_option("--launcher", t.launcher, "torchrun (default) | srun | mpirun");
  tune.add_option("--timeout-s", t.timeout_s, "per launch, seconds (default 1800)");
  tune.add_option("--device", t.device, "where the script runs: cuda (default) | cpu");
  tune.add_option("--margin", t.margin, "candidates within this fraction of the best, and the early stop's (default 0.1)");
}

int tune_command(const TuneArgs& t, const Args& a, const std::string& exe, const session::MachineSource& machine,
                 std::ostream& out, std::ostream& err) {
  session::TuneRequest request;
  request.options = a;
  request.script = t.script;
  request.script_args = t.script_args;
  request.launcher = t.launcher;
  request.timeout_s = t.timeout_s;
  request.device = t.device;
  request.margin = t.margin;
  request.top = t.top;
  request.exe = exe;
  request.machine = machine;
  Progress progress{err, &err == &std::cerr && isatty(STDERR_FILENO)};
  session::TuneEvents events;
  events.launch_started = [&](const TuneReport& r, std::size_t i, int d, int n) { progress.started(r, i, d, n); };
  events.launch_ended = [&](const TuneReport& r, std::size_t i, int d, int n) { progress.ended(r, i, d, n); };
  events.cancel = &g_cancel;
  g_cancel.store(false);
  struct sigaction action {}, old_int{}, old_term{};
  action.sa_handler = on_interrupt;
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);
  auto report = session::tune(request, events);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (progress.terminal) err << '\n';
  if (!report) {
    fmt::print(err, "cpplan tune: {}\n", report.error().message);
    return kExitInvalid;
  }
  for (const std::string& note : report->notes) err << note << '\n';
  if (a.json) {
    print_json(out, *report);
  } else {
    print_table(out, *report);
    print_summary(out, *report, request);
  }
  if (report->cancelled) {
    fmt::print(err, "cpplan tune: cancelled; what finished is recorded in {} (rerun the same command to go on)\n",
               report->db);
    return 130;
  }
  return kExitOk;
}

}  // namespace cpplan::cli
