#include "cli/sweep_command.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include "cli/app.h"
#include "data/store.h"
#include "session/query/machine.h"
#include "session/jobs/sweep.h"

namespace cpplan::cli {

namespace fs = std::filesystem;

namespace {

void print_progress(std::ostream& err, const session::SweepProgress& p) {
  const session::SweepRun& r = *p.run;
  const int width = 30, filled = static_cast<int>(width * static_cast<double>(p.index) / p.total);
  fmt::print(err, "\rsweep [{}{}] {}/{} ETA {:4.0f}s  {} {} {:<24.24}", std::string(filled, '#'),
             std::string(width - filled, '.'), p.index, p.total, p.eta_s, r.model, r.resolution, r.label);
  err.flush();
}

std::string summary_line(const session::SweepOutcome& o) {
  const session::SweepRun& r = *o.run;
  return fmt::format("  {:<12} {:>9} {:>5}  {:<28} {:>10} {:>10} {:>8}", r.model, r.resolution, r.gpus, r.label,
                     o.ok ? fmt::format("{:.2f}", o.measured_ms) : "failed",
                     o.predicted_ms > 0 ? fmt::format("{:.2f}", o.predicted_ms) : "-",
                     o.predicted_ms > 0 && o.measured_ms > 0 ? fmt::format("{:+.1f}%", o.error_pct()) : "-");
}

int dry_run(const std::vector<session::SweepRun>& runs, const std::vector<std::string>& recorded, std::ostream& out) {
  std::size_t skipped = 0;
  for (const session::SweepRun& r : runs) {
    const bool done = std::find(recorded.begin(), recorded.end(), session::run_key(r)) != recorded.end();
    skipped += done;
    fmt::print(out, "{} {} {}x{} frames {}: {}{}{}\n", done ? "skip" : "run ", r.model, r.resolution, r.gpus, r.frames,
               r.label, r.peak_phase.empty() ? "" : fmt::format(" (peak {})", r.peak_phase), done ? " (recorded)" : "");
    fmt::print(out, "      cpplan run {}\n", fmt::join(r.run_args, " "));
  }
  fmt::print(out, "{} runs, {} already recorded\n", runs.size(), skipped);
  return kExitOk;
}

}  // namespace

void add_sweep_options(CLI::App& sweep, SweepArgs& s) {
  sweep.add_option("file", s.file, "sweep file (TOML; docs/calibration.md)")->required();
  session::add_field_option(sweep, "db", s.db);
  sweep.add_flag("--resume", s.resume, "skip runs already recorded ok on this machine");
  sweep.add_flag("--dry-run", s.dry_run, "list the runs, run nothing");
  sweep.add_option("--csv", s.csv, "predicted vs measured per run (default: FILE with .csv)");
  sweep.add_option("--emit", s.emit, "slurm | torchrun: print a cluster launch script instead of running");
}

int sweep_command(const SweepArgs& s, const Args& a, const std::string& exe, std::ostream& out, std::ostream& err) {
  auto catalog = ProfileCatalog::load(profile_search_path(a.profiles, exe));
  if (!catalog) throw InvalidInput{catalog.error().message};
  if (!s.emit.empty() && s.emit != "slurm" && s.emit != "torchrun")
    throw InvalidInput{fmt::format("--emit = {}: must be slurm or torchrun", s.emit)};
  auto loaded = session::load_sweep(s.file, *catalog);
  if (!loaded) throw InvalidInput{loaded.error().message};
  const std::vector<session::SweepRun>& runs = *loaded;
  if (!s.emit.empty()) {
    out << session::emit_sweep(s.emit, s.file, runs);
    return kExitOk;
  }
  const std::string db = s.db.empty() ? data::Store::default_path() : s.db;
  std::vector<std::string> recorded;
  if (auto store = data::Store::open(db); !store) throw InvalidInput{store.error().message};  // refuse a foreign file first
  if (s.resume)  // this machine as the sweep's runs see it (a sweep has one device)
    recorded = session::recorded_run_keys(
        db, session::this_machine(exe, runs.empty() ? "" : runs.front().device).fingerprint.key());
  if (s.dry_run) return dry_run(runs, recorded, out);

  const std::string csv_path = s.csv.empty() ? fs::path(s.file).replace_extension(".csv").string() : s.csv;
  session::SweepCallbacks callbacks;
  callbacks.starting = [&err](const session::SweepProgress& p) { print_progress(err, p); };
  // A resumed sweep adds to the CSV of the runs before it.
  const auto summary = session::run_sweep(exe, runs, recorded, db, csv_path, s.resume && fs::exists(csv_path), callbacks);
  fmt::print(err, "\n");
  fmt::print(out, "sweep {}: {} runs, {} ran ({} ok, {} failed), {} already recorded; database {}\n", s.file, runs.size(),
             summary.outcomes.size(), summary.ok, summary.failed, summary.skipped, db);
  fmt::print(out, "  {:<12} {:>9} {:>5}  {:<28} {:>10} {:>10} {:>8}\n", "model", "size", "ranks", "plan", "measured", "predicted",
             "error");
  for (const auto& o : summary.outcomes) fmt::print(out, "{}\n", summary_line(o));
  fmt::print(out, "predicted vs measured per run: {}\n", csv_path);
  return summary.failed > 0 ? kExitRuntime : kExitOk;
}

}  // namespace cpplan::cli
