#include "cli/sweep_command.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "cli/app.h"
#include "cli/fingerprint.h"
#include "cli/run_command.h"
#include "costmodel/cost_model.h"
#include "data/store.h"
#include "executor/launcher.h"
#include "planner/planner.h"

namespace cpplan::cli {

namespace fs = std::filesystem;
using nlohmann::json;

std::string toml_text(const toml::node& n);

namespace {

std::string where(const std::string& path, const toml::node& n) {
  return fmt::format("{}:{}", path, n.source().begin.line);
}

std::vector<std::string> plan_flags(const ParallelConfig& c) {
  const ContextParallelConfig& cp = c.context_parallel_config;
  std::vector<std::string> f;
  auto degree = [&](const char* flag, int v) {
    if (v != 1) f.insert(f.end(), {flag, std::to_string(v)});
  };
  degree("--ring", cp.ring_degree);
  degree("--ulysses", cp.ulysses_degree);
  degree("--tp", c.tp());
  degree("--cfg", c.cfg_degree);
  degree("--dp", c.dp_degree);
  if (cp.ulysses_anything) f.emplace_back("--ulysses-anything");
  if (cp.ring_anything) f.emplace_back("--ring-anything");
  if (cp.rotate_method != RotateMethod::kAllGather) f.insert(f.end(), {"--rotate-method", std::string(to_string(cp.rotate_method))});
  return f;
}

// Reads `plans` entries given as tables: { ring = 2, ulysses = 1, tp = 1, cfg = 1, dp = 1,
// ulysses_anything = false, ring_anything = false, rotate_method = "allgather" }.
Result<ParallelConfig> plan_from_table(const toml::table& t, const std::string& path) {
  ParallelConfig c;
  auto& cp = c.context_parallel_config;
  for (const auto& [key, node] : t) {
    const std::string k(key.str());
    auto integer = [&](int& out) -> std::optional<Error> {
      if (!node.is_integer() || node.as_integer()->get() < 1 || node.as_integer()->get() > 1 << 17)
        return Error{fmt::format("{}: plans.{} = {}: must be a positive integer", where(path, node), k, toml_text(node))};
      out = static_cast<int>(node.as_integer()->get());
      return std::nullopt;
    };
    std::optional<Error> e;
    if (k == "ring") e = integer(cp.ring_degree);
    else if (k == "ulysses") e = integer(cp.ulysses_degree);
    else if (k == "tp") e = integer(c.tensor_parallel_config.tp_degree);
    else if (k == "cfg") e = integer(c.cfg_degree);
    else if (k == "dp") e = integer(c.dp_degree);
    else if (k == "ulysses_anything" && node.is_boolean()) cp.ulysses_anything = node.as_boolean()->get();
    else if (k == "ring_anything" && node.is_boolean()) cp.ring_anything = node.as_boolean()->get();
    else if (k == "rotate_method" && node.is_string() && rotate_method_from_string(node.as_string()->get()))
      cp.rotate_method = *rotate_method_from_string(node.as_string()->get());
    else
      e = Error{fmt::format("{}: plans.{} = {}: unknown field or wrong type (ring, ulysses, tp, cfg, dp: integers; "
                            "ulysses_anything, ring_anything: booleans; rotate_method: allgather or p2p)",
                            where(path, node), k, toml_text(node))};
    if (e) return *e;
  }
  return c;
}

}  // namespace

std::string toml_text(const toml::node& n) {
  std::ostringstream s;
  if (n.is_string()) s << '"' << n.as_string()->get() << '"';
  else if (n.is_integer()) s << n.as_integer()->get();
  else if (n.is_boolean()) s << (n.as_boolean()->get() ? "true" : "false");
  else s << "...";
  return s.str();
}

Result<std::vector<SweepRun>> load_sweep(const std::string& path, const ProfileCatalog& catalog) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Error{fmt::format("{}: not a readable file", path)};
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return Error{fmt::format("{}:{}: invalid TOML: {}", path, e.source().begin.line, e.description())};
  }
  const std::set<std::string> known = {"models", "resolutions", "frames", "gpus", "steps", "warmup", "seed", "plans", "hardware"};
  for (const auto& [key, node] : root)
    if (!known.count(std::string(key.str())))
      return Error{fmt::format("{}: {}: unknown field (models, resolutions, frames, gpus, steps, warmup, seed, plans, hardware)",
                               where(path, node), key.str())};
  auto strings = [&](const char* key, bool required) -> Result<std::vector<std::string>> {
    std::vector<std::string> out;
    const toml::node* n = root.get(key);
    if (!n) {
      if (required) return Error{fmt::format("{}: {}: required", path, key)};
      return out;
    }
    if (!n->is_array()) return Error{fmt::format("{}: {} = {}: must be an array of strings", where(path, *n), key, toml_text(*n))};
    for (const auto& e : *n->as_array()) {
      if (!e.is_string()) return Error{fmt::format("{}: {}: every entry must be a string", where(path, e), key)};
      out.push_back(e.as_string()->get());
    }
    if (out.empty()) return Error{fmt::format("{}: {}: must not be empty", where(path, *n), key)};
    return out;
  };
  auto integers = [&](const char* key, long long lo, long long hi) -> Result<std::vector<int>> {
    std::vector<int> out;
    const toml::node* n = root.get(key);
    if (!n) return out;
    if (!n->is_array()) return Error{fmt::format("{}: {}: must be an array of integers", where(path, *n), key)};
    for (const auto& e : *n->as_array()) {
      if (!e.is_integer() || e.as_integer()->get() < lo || e.as_integer()->get() > hi)
        return Error{fmt::format("{}: {} = {}: every entry must be an integer between {} and {}", where(path, e), key,
                                 toml_text(e), lo, hi)};
      out.push_back(static_cast<int>(e.as_integer()->get()));
    }
    return out;
  };
  auto integer = [&](const char* key, int fallback, long long lo, long long hi) -> Result<int> {
    const toml::node* n = root.get(key);
    if (!n) return fallback;
    if (!n->is_integer() || n->as_integer()->get() < lo || n->as_integer()->get() > hi)
      return Error{fmt::format("{}: {} = {}: must be an integer between {} and {}", where(path, *n), key, toml_text(*n), lo, hi)};
    return static_cast<int>(n->as_integer()->get());
  };
  auto models = strings("models", true);
  if (!models) return models.error();
  auto resolutions = strings("resolutions", false);
  if (!resolutions) return resolutions.error();
  auto frames = integers("frames", 1, 2049);
  if (!frames) return frames.error();
  auto gpus = integers("gpus", 1, 1 << 17);
  if (!gpus) return gpus.error();
  auto steps = integer("steps", 10, 1, 100000);
  if (!steps) return steps.error();
  auto warmup = integer("warmup", 2, 0, 1000);
  if (!warmup) return warmup.error();
  auto seed = integer("seed", 0, 0, 1 << 30);
  if (!seed) return seed.error();

  // plans: "all", "top K", or an array of plan tables
  enum class Mode { kAll, kTop, kList } mode = Mode::kAll;
  int top = 0;
  std::vector<ParallelConfig> listed;
  if (const toml::node* n = root.get("plans")) {
    if (n->is_string()) {
      const std::string s = n->as_string()->get();
      if (s == "all") mode = Mode::kAll;
      else if (s.rfind("top ", 0) == 0 && std::sscanf(s.c_str() + 4, "%d", &top) == 1 && top > 0) mode = Mode::kTop;
      else return Error{fmt::format("{}: plans = \"{}\": must be \"all\", \"top K\" or an array of plan tables", where(path, *n), s)};
    } else if (n->is_array()) {
      mode = Mode::kList;
      for (const auto& e : *n->as_array()) {
        if (!e.is_table()) return Error{fmt::format("{}: plans: every entry must be a table like {{ ring = 2 }}", where(path, e))};
        auto c = plan_from_table(*e.as_table(), path);
        if (!c) return c.error();
        listed.push_back(*c);
      }
    } else {
      return Error{fmt::format("{}: plans: must be \"all\", \"top K\" or an array of plan tables", where(path, *n))};
    }
  }
  if (mode != Mode::kList && gpus->empty()) return Error{fmt::format("{}: gpus: required with plans = \"all\" or \"top K\"", path)};

  std::vector<SweepRun> runs;
  for (const std::string& name : *models) {
    auto model = catalog.model(name);
    if (!model) return Error{fmt::format("{}: models: {}", path, model.error().message)};
    const ModelProfile& m = **model;
    std::vector<std::string> sizes = *resolutions;
    if (sizes.empty()) sizes.push_back(fmt::format("{}x{}", m.default_width, m.default_height));
    std::vector<int> frame_counts = *frames;
    if (frame_counts.empty()) frame_counts.push_back(m.default_frames);
    for (const std::string& size : sizes)
      for (int f : frame_counts) {
        auto res = parse_resolution(size);
        if (!res) return Error{fmt::format("{}: resolutions: {}", path, res.error().message)};
        auto seq = compute_sequence(m, *res, f, m.text_tokens);
        if (!seq) return Error{fmt::format("{}: {}", path, seq.error().message)};
        Query q;
        q.model = &m;
        q.hardware = catalog.find_hardware("h100-sxm");
        q.resolution = *res;
        q.frames = f;
        q.steps = *steps;
        q.sequence = *seq;
        std::vector<ParallelConfig> configs;
        if (mode == Mode::kList) {
          configs = listed;
        } else {
          const costmodel::DatasheetModel hw(*q.hardware);
          const costmodel::CostModel cost(hw);
          for (int g : *gpus) {
            q.gpus = g;
            const auto report = planner::Planner(cost).plan(q, {.allow_anything = true, .keep_invalid = false});
            int taken = 0;
            for (const auto& p : report.plans) {
              if (mode == Mode::kTop && taken++ >= top) break;
              configs.push_back(p.plan.config);
            }
          }
        }
        for (const ParallelConfig& c : configs) {
          SweepRun r;
          r.model = m.name;
          r.resolution = size;
          r.frames = f;
          r.gpus = static_cast<int>(c.world_size());
          r.plan_flags = plan_flags(c);
          r.label = plan_label(c);
          r.run_args = {"--model", m.name, "--res", size, "--frames", std::to_string(f), "--steps", std::to_string(*steps),
                        "--warmup", std::to_string(*warmup), "--seed", std::to_string(*seed)};
          r.run_args.insert(r.run_args.end(), r.plan_flags.begin(), r.plan_flags.end());
          r.run_key = run_key(m.name, *res, f, *steps, c, 1, *seed);
          runs.push_back(std::move(r));
        }
      }
  }
  return runs;
}

namespace {

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
  sweep.add_option("--db", s.db, "SQLite database (default $XDG_DATA_HOME/cpplan/cpplan.db)");
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
      const std::string me = cpu_fingerprint().key();
      auto recorded = store.value().runs();
      if (!recorded) throw InvalidInput{recorded.error().message};
      for (const auto& r : recorded.value())
        if (r.run.status == "ok" && r.hardware.key() == me) done.insert(r.run.run_key);
    }
  }
  if (s.dry_run) {
    for (const SweepRun& r : runs)
      fmt::print(out, "{} {} {}x{} frames {}: {}{}\n", done.count(r.run_key) ? "skip" : "run ", r.model, r.resolution,
                 r.gpus, r.frames, r.label, done.count(r.run_key) ? " (recorded)" : "");
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
    if (done.count(r.run_key)) {
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
