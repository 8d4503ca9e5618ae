#include "cli/app.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <iostream>
#include <ostream>

#include "cli/args.h"
#include "cli/bench_command.h"
#include "cli/calibrate_commands.h"
#include "cli/calibrate_import.h"
#include "cli/db_command.h"
#include "cli/import_runs_command.h"
#include "cli/profile_command.h"
#include "cli/render.h"
#include "cli/report_command.h"
#include "cli/run_command.h"
#include "cli/store_commands.h"
#include "cli/sweep_command.h"
#include "cli/topo_command.h"
#include "cli/tune_command.h"
#include "core/profiles.h"
#include "core/text.h"
#include "core/version.h"
#include "session/engine/engine.h"
#include "session/query/machine.h"
#include "session/engine/recommend.h"

namespace cpplan::cli {

namespace {

// Every command's flags, parsed into these values; the subcommands, to see which one was given.
struct Parsed {
  Args a;
  CalibrateArgs calibrate_args;
  ProbeArgs probe_args;
  BenchArgs bench_args;
  SweepArgs sweep_args;
  TuneArgs tune_args;
  StoreArgs store_args;
  ReportArgs report_args;
  ProfileImportArgs profile_args;
  std::string fingerprint_device;
  CLI::App* calibrate = nullptr;
  CLI::App* check = nullptr;
  CLI::App* list = nullptr;
  CLI::App* topo_import = nullptr;
  CLI::App* profile_import = nullptr;
  // Run by cpplan-exec (run, bench, probe, fingerprint, report), started with the same command line.
  CLI::App* run = nullptr;
  CLI::App* bench = nullptr;
  CLI::App* probe = nullptr;
  CLI::App* fingerprint = nullptr;
  CLI::App* report = nullptr;
  CLI::App* db_check = nullptr;
  CLI::App* db_merge = nullptr;
  CLI::App* import_nccl = nullptr;
  CLI::App* import_runs = nullptr;
  CLI::App* sweep = nullptr;
  CLI::App* tune = nullptr;
};

void add_planning_commands(CLI::App& app, Parsed& p) {
  add_query_options(app, p.a);
  p.calibrate = app.add_subcommand(
      "calibrate", "fit the cost model: to the runs measured here, or to imported end-to-end timings (--import)");
  add_calibrate_import_options(*p.calibrate, p.calibrate_args);
  app.add_subcommand("recommend", "rank every plan (the default command)")->fallthrough();
  p.check = app.add_subcommand("check", "one plan's verdict: exit 0 valid, 3 invalid");
  p.check->fallthrough();
  add_plan_options(*p.check, p.a);
  p.list = app.add_subcommand("list", "list the model or hardware profiles");
  p.list->fallthrough();
  p.list->add_option("what", p.a.what, "models | hardware | topologies | frameworks | classes")->required();
  CLI::App* topo = app.add_subcommand("topo", "topologies for placement (docs/topology.md)");
  topo->fallthrough();
  topo->require_subcommand(1);
  p.topo_import = topo->add_subcommand("import", "turn `nvidia-smi topo -m` output into a topology file");
  p.topo_import->fallthrough();
  add_topo_import_options(*p.topo_import, p.a);
  CLI::App* profile = app.add_subcommand("profile", "model profiles (docs/profiles.md)");
  profile->fallthrough();
  profile->require_subcommand(1);
  p.profile_import = profile->add_subcommand("import", "a model profile from a diffusers config.json or pipeline folder");
  p.profile_import->fallthrough();
  add_profile_import_options(*p.profile_import, p.profile_args);
}

void add_executor_commands(CLI::App& app, Parsed& p) {
  p.run = app.add_subcommand("run", "run one plan for real (LibTorch) and record it in SQLite; its own launcher, or one "
                                     "rank under torchrun, srun or mpirun");
  p.run->fallthrough();
  add_run_options(*p.run, p.a);
  p.bench = app.add_subcommand("bench", "measure cpplan's own speed (docs/performance.md)");
  add_bench_options(*p.bench, p.bench_args);
  session::add_field_option(app, "db", p.a.db);
  session::add_field_option(app, "cluster", p.a.cluster)->check(kClusterName);
  CLI::App* db_cmd = app.add_subcommand("db", "the measurement store");
  p.db_check = db_cmd->add_subcommand("check", "integrity check of the database");
  session::add_field_option(*p.db_check, "db", p.a.db);
  p.db_check->add_flag("--json", p.a.json, "machine-readable output");
  p.db_merge = add_db_merge_command(*db_cmd, p.store_args);
  p.import_nccl = add_import_nccl_tests_command(app, p.store_args);
  p.import_runs = add_import_runs_command(app, p.store_args);
  db_cmd->require_subcommand(1);
  p.probe = app.add_subcommand("probe", "measure this machine's collectives and kernels");
  add_probe_options(*p.probe, p.probe_args);
  add_calibrate_options(*p.calibrate, p.probe_args);
  p.sweep = app.add_subcommand("sweep", "run a benchmark sweep through the executor");
  add_sweep_options(*p.sweep, p.sweep_args);
  p.tune = app.add_subcommand("tune", "measure the best candidates on your own pipeline (SCRIPT [-- ARGS]), learn "
                                       "from each run, answer with the measured best");
  p.tune->fallthrough();
  add_tune_options(*p.tune, p.tune_args);
  p.fingerprint = app.add_subcommand("fingerprint", "internal: this machine's fingerprint as JSON");
  p.fingerprint->group("");
  p.fingerprint->add_option("--device", p.fingerprint_device, "cpu | cuda");
  p.report = add_report_command(app, p.report_args);
}

bool parsed(const CLI::App* cmd) { return cmd && cmd->parsed(); }

// Starts the executor binary with this command line; returns only when it cannot.
int start_executor(int argc, const char* const* argv, const std::string& exe, const char* command, std::ostream& err) {
  const std::string binary = session::executor_binary(exe);
  if (binary.empty()) {
    fmt::print(err, "cpplan {}: needs {} beside {} (scripts/build.sh builds both)\n", command,
               session::kExecutorBinary, exe);
    return kExitRuntime;
  }
  std::vector<char*> args{const_cast<char*>(binary.c_str())};
  for (int i = 1; i < argc; ++i) args.push_back(const_cast<char*>(argv[i]));
  args.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  execv(binary.c_str(), args.data());
  fmt::print(err, "cpplan {}: cannot start {}: {}\n", command, binary, std::strerror(errno));
  return kExitRuntime;
}

// The commands of the executor binary: run here, or in cpplan-exec with the same command line.
std::optional<int> executor_command(const Parsed& p, int argc, const char* const* argv, const std::string& exe,
                                    std::ostream& out, std::ostream& err, const Commands* here) {
  const char* command = parsed(p.run)     ? "run"
                        : parsed(p.probe) ? "probe"
                        : parsed(p.bench) ? "bench"
                        : parsed(p.report) ? "report"
                        : parsed(p.fingerprint) ? "fingerprint"
                                                : nullptr;
  if (!command) return std::nullopt;
  if (!here) return start_executor(argc, argv, exe, command, err);
  if (parsed(p.run)) return here->run(p.a, argc, argv, exe, out, err);
  if (parsed(p.probe)) return here->probe(p.probe_args, p.a, exe, out, err);
  if (parsed(p.bench)) return here->bench(p.bench_args, p.a, exe, out, err);
  if (parsed(p.fingerprint)) return here->fingerprint(p.fingerprint_device, out);
  if (!here->report) throw InvalidInput{"report: this build has no Qt (configure with CPPLAN_GUI=ON)"};
  return here->report(p.report_args, out, err);
}

int list_command(const Args& a, const std::string& exe, std::ostream& out) {
  // Every file parsed and checked: a list refuses a broken profile (a query parses only its own).
  CatalogOptions every_file;
  every_file.validate_all = true;
  auto catalog = ProfileCatalog::load(profile_search_path(a.profiles, exe), every_file);
  if (!catalog) throw InvalidInput{catalog.error().message};
  if (a.what != "models" && a.what != "hardware" && a.what != "topologies" && a.what != "frameworks" &&
      a.what != "classes")
    throw InvalidInput{fmt::format("list {}: must be models, hardware, topologies, frameworks or classes", a.what)};
  if (a.what == "classes") {
    if (a.json) out << classes_json(*catalog).dump(2) << '\n';
    else print_classes(out, *catalog);
    return kExitOk;
  }
  if (a.what == "frameworks") {
    if (a.json) out << frameworks_json(*catalog).dump(2) << '\n';
    else print_frameworks(out, *catalog);
    return kExitOk;
  }
  if (a.what == "topologies") {
    if (a.json) out << topologies_json(*catalog).dump(2) << '\n';
    else print_topologies(out, *catalog);
    return kExitOk;
  }
  if (a.json) out << (a.what == "models" ? models_json(*catalog) : hardware_json(*catalog)).dump(2) << '\n';
  else if (a.what == "models") print_models(out, *catalog);
  else print_hardware(out, *catalog);
  return kExitOk;
}

// The commands other than planning itself; nothing when the command line asks for a plan.
std::optional<int> store_and_calibration_command(Parsed& p, const std::string& exe, std::ostream& out, std::ostream& err) {
  if (parsed(p.list)) return list_command(p.a, exe, out);
  if (parsed(p.topo_import)) return topo_import_command(p.a, exe, out);
  if (parsed(p.profile_import)) return profile_import_command(p.profile_args, p.a, exe, out);
  if (parsed(p.calibrate) && !p.calibrate_args.import.empty())
    return calibrate_import_command(p.calibrate_args, p.a, exe, out);
  if (parsed(p.calibrate) && p.calibrate_args.check)
    throw InvalidInput{"--check: needs --import FILE (it predicts imported timings with the shipped profiles)"};
  if (parsed(p.db_check)) return db_check_command(p.a.db, p.a.json, out, err);
  if (parsed(p.db_merge)) return db_merge_command(p.store_args, out, err);
  if (parsed(p.import_nccl)) return import_nccl_tests_command(p.store_args, out, err);
  if (parsed(p.import_runs)) return import_runs_command(p.store_args, out, err);
  if (parsed(p.calibrate) && p.calibrate_args.pipeline_runs)
    return calibrate_pipeline_runs_command(p.probe_args, p.calibrate_args, p.a, exe, out);
  if (parsed(p.calibrate)) {
    if (p.calibrate_args.shrinkage_by != "rows")
      throw InvalidInput{fmt::format("--shrinkage-by = {}: needs --import FILE or --pipeline-runs (the calibration of "
                                     "this machine's runs chooses its ridge by k-fold over them)",
                                     p.calibrate_args.shrinkage_by)};
    p.probe_args.folds = p.calibrate_args.folds;
    return calibrate_command(p.probe_args, p.a, exe, out, err);
  }
  if (parsed(p.sweep)) return sweep_command(p.sweep_args, p.a, exe, out, err);
  return std::nullopt;
}

// This machine, for --hardware local: asked of cpplan-exec (the executor's probe).
session::MachineSource machine_source(const std::string& exe) {
  return [exe] { return session::this_machine(exe); };
}

// A request the session refused: its one line (field, value, rule), exit 3.
int refused(std::ostream& err, const Error& e) {
  fmt::print(err, "cpplan: {}\n", e.message);
  return kExitInvalid;
}

void print_notes(std::ostream& err, const std::vector<std::string>& notes) {
  for (const std::string& note : notes) err << note << '\n';
}

// `cpplan check`: one plan's verdict (exit 3 when invalid).
int check_command(const Args& a, const std::string& exe, std::ostream& out, std::ostream& err) {
  auto engine = session::Engine::open(a.profiles, exe, machine_source(exe));
  if (!engine) return refused(err, engine.error());
  auto resolved = engine->resolve(a);
  if (!resolved) return refused(err, resolved.error());
  auto checked = engine->check(*resolved);
  if (!checked) return refused(err, checked.error());
  const session::CheckResult& c = **checked;
  print_notes(err, c.notes);
  if (a.json) out << session::check_json(c).dump(2) << '\n';
  else print_check(out, c);
  return c.plan.plan.valid() ? kExitOk : kExitInvalid;
}

// `cpplan [recommend]`: the session's recommendation, rendered as text or JSON; with --objective
// throughput, the replica splits (planner/fleet.h).
int plan_command(const Parsed& p, const std::string& exe, std::ostream& out, std::ostream& err) {
  const Args& a = p.a;
  if (parsed(p.check)) return check_command(a, exe, out, err);
  if (parsed(p.tune)) return tune_command(p.tune_args, a, exe, machine_source(exe), out, err);
  // JSON lists the invalid plans only with --all (it counts them always): the ranking need not keep
  // them (at 4,096 GPUs, thousands); the text groups them.
  // The JSON prints each plan's scripts; the text only the frameworks' choices.
  const session::Rendering how{!a.json || a.all, a.json};
  auto engine = session::Engine::open(a.profiles, exe, machine_source(exe));
  if (!engine) return refused(err, engine.error());
  auto resolved = engine->resolve(a, how);
  if (!resolved) return refused(err, resolved.error());
  auto answer = engine->recommend(*resolved);
  if (!answer) return refused(err, answer.error());
  const session::Recommendation& rec = **answer;
  print_notes(err, rec.notes);
  if (rec.fleet) {
    if (a.json) out << session::fleet_json(rec).dump(2) << '\n';
    else print_fleet(out, rec);
  } else if (a.json) {
    out << session::report_json(rec).dump(2) << '\n';
  } else {
    print_recommendation(out, rec);
  }
  return kExitOk;
}

}  // namespace

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err, const Commands* here) {
  Parsed p;
  CLI::App app{"cpplan: plans, predicts and ranks multi-GPU parallel configurations for diffusion transformers",
               "cpplan"};
  app.set_version_flag("--version", std::string("cpplan ") + kVersion);
  app.fallthrough();
  add_planning_commands(app, p);
  add_executor_commands(app, p);
  app.require_subcommand(0, 1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::CallForVersion&) {
    out << "cpplan " << kVersion << "\n";
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    fmt::print(err, "cpplan: {} (see cpplan --help)\n", e.what());
    return kExitUsage;
  }

  // The installed profiles sit beside the real executable, wherever it was started from.
  std::error_code ec;
  std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) exe = argc > 0 ? argv[0] : "";
  try {
    if (auto code = executor_command(p, argc, argv, exe, out, err, here)) return *code;
    if (auto code = store_and_calibration_command(p, exe, out, err)) return *code;
    return plan_command(p, exe, out, err);
  } catch (const InvalidInput& e) {
    fmt::print(err, "cpplan: {}\n", e.message);
    return kExitInvalid;
  } catch (const std::exception& e) {
    fmt::print(err, "cpplan: internal error: {}\n", e.what());
    return kExitRuntime;
  }
}

}  // namespace cpplan::cli
