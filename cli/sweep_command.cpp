#include "cli/sweep_command.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/app.h"
#include "cli/fingerprint.h"
#include "cli/run_command.h"
#include "data/store.h"
#include "executor/launcher.h"

namespace cpplan::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The run's identity as `cpplan run` records it (resume skips runs recorded under it).
std::string key_of(const SweepRun& r) {
  return run_key(r.model, r.size, r.frames, r.steps, r.config, 1, r.seed, r.dtype);
}

struct Outcome {
  int code = -1;
  json result;
};

// One `cpplan run` as a child that dies with the sweep (a killed sweep leaves no orphan that
// could record a run after the sweep was resumed).
Outcome run_child(const std::string& exe, const std::vector<std::string>& args, const std::string& db) {
  const fs::path out = fs::temp_directory_path() / fmt::format("cpplan-sweep-{}.json", getpid());
  std::vector<std::string> argv = {exe, "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--db", db, "--json"});
  Outcome o;
  o.code = executor::run_to_file(argv, out.string());
  std::ifstream in(out);
  try {
    o.result = json::parse(in);
  } catch (...) {
  }
  std::error_code ec;
  fs::remove(out, ec);
  return o;
}

int emit(const SweepArgs& s, const std::vector<SweepRun>& runs, std::ostream& out) {
  if (s.emit == "torchrun") {
    fmt::print(out, "#!/usr/bin/env bash\n# cpplan sweep {} as torchrun jobs: each writes its own database (SQLite on a\n"
               "# shared filesystem is unsafe); merge them with: cpplan db merge sweep-*.db --into all.db\nset -u\n", s.file);
    for (std::size_t i = 0; i < runs.size(); ++i)
      fmt::print(out, "torchrun --nproc-per-node {} --no-python cpplan run {} --db sweep-{}.db\n", runs[i].gpus,
                 fmt::join(runs[i].run_args, " "), i);
    return kExitOk;
  }
  fmt::print(out, "#!/usr/bin/env bash\n#SBATCH --job-name=cpplan-sweep\n#SBATCH --array=0-{}\n#SBATCH --exclusive\n"
             "# cpplan sweep {} as a Slurm array: job i writes sweep-i.db; merge with\n"
             "#   cpplan db merge sweep-*.db --into all.db\nset -u\ncase \"$SLURM_ARRAY_TASK_ID\" in\n",
             runs.size() - 1, s.file);
  for (std::size_t i = 0; i < runs.size(); ++i)
    fmt::print(out, "  {}) NPROC={}; ARGS=\"{}\" ;;\n", i, runs[i].gpus, fmt::join(runs[i].run_args, " "));
  fmt::print(out, "esac\nexport MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1) MASTER_PORT=29500\n"
             "srun --ntasks=$NPROC bash -c 'RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS LOCAL_RANK=$SLURM_LOCALID "
             "exec cpplan run '\"$ARGS\"' --db sweep-$SLURM_ARRAY_TASK_ID.db'\n");
  return kExitOk;
}

}  // namespace

void add_sweep_options(CLI::App& sweep, SweepArgs& s) {
  sweep.add_option("file", s.file, "sweep file (TOML; docs/calibration.md)")->required();
  sweep.add_option("--db", s.db, kDbHelp);
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
  auto loaded = load_sweep(s.file, *catalog);
  if (!loaded) throw InvalidInput{loaded.error().message};
  const std::vector<SweepRun>& runs = *loaded;
  if (!s.emit.empty()) return emit(s, runs, out);

  const std::string db = s.db.empty() ? data::Store::default_path() : s.db;
  std::set<std::string> done;
  {
    auto store = data::Store::open(db);
    if (!store) throw InvalidInput{store.error().message};
    if (s.resume) {
      // This machine as the sweep's runs see it (a sweep has one device).
      const bool cuda = !runs.empty() && runs.front().device == "cuda";
      const std::string me = machine_fingerprint(cuda).key();
      auto recorded = store.value().runs();
      if (!recorded) throw InvalidInput{recorded.error().message};
      for (const auto& r : recorded.value())
        if (r.run.status == "ok" && r.hardware.key() == me) done.insert(r.run.run_key);
    }
  }
  if (s.dry_run) {
    for (const SweepRun& r : runs)
      fmt::print(out, "{} {} {}x{} frames {}: {}{}\n", done.count(key_of(r)) ? "skip" : "run ", r.model, r.resolution,
                 r.gpus, r.frames, r.label, done.count(key_of(r)) ? " (recorded)" : "");
    fmt::print(out, "{} runs, {} already recorded\n", runs.size(), done.size());
    return kExitOk;
  }

  const std::string csv_path = s.csv.empty() ? fs::path(s.file).replace_extension(".csv").string() : s.csv;
  // A resumed sweep adds to the CSV of the runs before it.
  const bool append = s.resume && fs::exists(csv_path);
  std::ofstream csv(csv_path, append ? std::ios::app : std::ios::trunc);
  if (!append) csv << "model,resolution,frames,ranks,plan,status,measured_step_ms,predicted_step_ms,error_pct\n";
  const auto start = std::chrono::steady_clock::now();
  int finished = 0, failed = 0, skipped = 0, executed = 0;
  std::vector<std::string> summary;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const SweepRun& r = runs[i];
    if (done.count(key_of(r))) {
      ++skipped;
      continue;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double eta = executed > 0 ? elapsed / executed * static_cast<double>(runs.size() - i) : 0;
    const int width = 30, filled = static_cast<int>(width * static_cast<double>(i) / runs.size());
    fmt::print(err, "\rsweep [{}{}] {}/{} ETA {:4.0f}s  {} {} {:<24.24}", std::string(filled, '#'),
               std::string(width - filled, '.'), i, runs.size(), eta, r.model, r.resolution, r.label);
    err.flush();
    const Outcome o = run_child(exe, r.run_args, db);
    ++executed;
    const bool ok = o.code == 0 && o.result.is_object();
    ok ? ++finished : ++failed;
    const double measured = ok ? o.result["measured"].value("step_ms", 0.0) : 0.0;
    const double predicted = ok && o.result["predicted"].is_object() ? o.result["predicted"].value("step_ms", 0.0) : 0.0;
    const double error_pct = measured > 0 && predicted > 0 ? 100.0 * (predicted - measured) / measured : 0.0;
    csv << fmt::format("{},{},{},{},{},{},{:.4f},{:.4f},{:.2f}\n", r.model, r.resolution, r.frames, r.gpus, r.label,
                       ok ? "ok" : "failed", measured, predicted, error_pct);
    csv.flush();
    summary.push_back(fmt::format("  {:<12} {:>9} {:>5}  {:<28} {:>10} {:>10} {:>8}", r.model, r.resolution, r.gpus, r.label,
                                  ok ? fmt::format("{:.2f}", measured) : "failed",
                                  predicted > 0 ? fmt::format("{:.2f}", predicted) : "-",
                                  predicted > 0 && measured > 0 ? fmt::format("{:+.1f}%", error_pct) : "-"));
  }
  fmt::print(err, "\n");
  fmt::print(out, "sweep {}: {} runs, {} ran ({} ok, {} failed), {} already recorded; database {}\n", s.file, runs.size(),
             executed, finished, failed, skipped, db);
  fmt::print(out, "  {:<12} {:>9} {:>5}  {:<28} {:>10} {:>10} {:>8}\n", "model", "size", "ranks", "plan", "measured", "predicted",
             "error");
  for (const auto& line : summary) fmt::print(out, "{}\n", line);
  fmt::print(out, "predicted vs measured per run: {}\n", csv_path);
  return failed > 0 ? kExitRuntime : kExitOk;
}

}  // namespace cpplan::cli
