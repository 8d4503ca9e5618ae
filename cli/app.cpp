#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <ostream>

#include "cli/args.h"
#include "cli/calibrate_import.h"
#ifdef CPPLAN_HAVE_EXECUTOR  // the one place the CLI knows the executor is optional
#include "cli/bench_command.h"
#include "cli/calibrate_commands.h"
#include "cli/sweep_command.h"
#include "cli/db_command.h"
#include "cli/store_commands.h"
#include "cli/import_runs_command.h"
#include "cli/run_command.h"
#endif
#ifdef CPPLAN_HAVE_REPORT  // built with the GUI's Qt (report/)
#include "cli/report_command.h"
#endif
#include "cli/render.h"
#include "cli/topo_command.h"
#include "core/profiles.h"
#include "core/text.h"
#include "core/version.h"
#include "costmodel/cost_model.h"
#include "planner/planner.h"

namespace cpplan::cli {

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  Args a;
  CLI::App app{"cpplan: plans, predicts and ranks multi-GPU parallel configurations for diffusion transformers",
               "cpplan"};
  app.set_version_flag("--version", std::string("cpplan ") + kVersion);
  app.fallthrough();
  add_query_options(app, a);
  app.add_option("--top", a.top, "ranked plans to show (default 10)");
  app.add_flag("--all", a.all, "show every plan, invalid ones with their reasons");

  CalibrateArgs calibrate_args;
  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "fit the cost model: to the runs measured here, or to imported end-to-end timings (--import)");
  add_calibrate_import_options(*calibrate, calibrate_args);
  CLI::App* recommend = app.add_subcommand("recommend", "rank every plan (the default command)");
  recommend->fallthrough();
  CLI::App* check = app.add_subcommand("check", "one plan's verdict: exit 0 valid, 3 invalid");
  check->fallthrough();
  add_plan_options(*check, a);
#ifdef CPPLAN_HAVE_EXECUTOR
  CLI::App* run_cmd = app.add_subcommand("run", "run one plan for real (LibTorch) and record it in SQLite");
  run_cmd->fallthrough();
  add_run_options(*run_cmd, a);
  BenchArgs bench_args;
  CLI::App* bench_cmd = app.add_subcommand("bench", "measure cpplan's own speed (docs/performance.md)");
  add_bench_options(*bench_cmd, bench_args);
  app.add_option("--db", a.db, "with --hardware local: the database of this machine's probes (default "
                             "$XDG_DATA_HOME/cpplan/cpplan.db)");
  CLI::App* db_cmd = app.add_subcommand("db", "the measurement store");
  CLI::App* db_check = db_cmd->add_subcommand("check", "integrity check of the database");
  db_check->add_option("--db", a.db, kDbHelp);
  db_check->add_flag("--json", a.json, "machine-readable output");
  StoreArgs store_args;
  CLI::App* db_merge = add_db_merge_command(*db_cmd, store_args);
  CLI::App* import_nccl = add_import_nccl_tests_command(app, store_args);
  CLI::App* import_runs = add_import_runs_command(app, store_args);
  db_cmd->require_subcommand(1);
  ProbeArgs probe_args;
  CLI::App* probe_cmd = app.add_subcommand("probe", "measure this machine's collectives and kernels");
  add_probe_options(*probe_cmd, probe_args);
  add_calibrate_options(*calibrate, probe_args);
  SweepArgs sweep_args;
  CLI::App* sweep_cmd = app.add_subcommand("sweep", "run a benchmark sweep through the executor");
  add_sweep_options(*sweep_cmd, sweep_args);
#endif
#ifdef CPPLAN_HAVE_REPORT
  ReportArgs report_args;
  CLI::App* report_cmd = add_report_command(app, report_args);
#endif
  CLI::App* list = app.add_subcommand("list", "list the model or hardware profiles");
  list->fallthrough();
  list->add_option("what", a.what, "models | hardware | topologies")->required();
  CLI::App* topo = app.add_subcommand("topo", "topologies for placement (docs/topology.md)");
  topo->fallthrough();
  topo->require_subcommand(1);
  CLI::App* topo_import = topo->add_subcommand("import", "turn `nvidia-smi topo -m` output into a topology file");
  topo_import->fallthrough();
  add_topo_import_options(*topo_import, a);
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
    if (list->parsed()) {
      auto catalog = ProfileCatalog::load(profile_search_path(a.profiles, exe));
      if (!catalog) throw InvalidInput{catalog.error().message};
      if (a.what != "models" && a.what != "hardware" && a.what != "topologies")
        throw InvalidInput{fmt::format("list {}: must be models, hardware or topologies", a.what)};
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
    if (topo_import->parsed()) return topo_import_command(a, exe, out);
    if (calibrate->parsed() && !calibrate_args.import.empty()) return calibrate_import_command(calibrate_args, a, exe, out);
#ifndef CPPLAN_HAVE_EXECUTOR
    if (calibrate->parsed())
      throw InvalidInput{"calibrate: without --import it fits the runs of this machine, which needs the executor "
                         "(a build with CPPLAN_EXECUTOR=ON)"};
#endif

#ifdef CPPLAN_HAVE_EXECUTOR
    if (run_cmd->parsed()) return run_command(a, argc, argv, exe, out, err);
    if (bench_cmd->parsed()) return bench_command(bench_args, a, exe, out, err);
    if (db_check->parsed()) return db_check_command(a.db, a.json, out, err);
    if (db_merge->parsed()) return db_merge_command(store_args, out, err);
    if (import_nccl->parsed()) return import_nccl_tests_command(store_args, out, err);
    if (import_runs->parsed()) return import_runs_command(store_args, out, err);
    if (probe_cmd->parsed()) return probe_command(probe_args, a, exe, out, err);
    if (calibrate->parsed() && calibrate_args.pipeline_runs)
      return calibrate_pipeline_runs_command(probe_args, calibrate_args, a, exe, out);
    if (calibrate->parsed()) {
      probe_args.folds = calibrate_args.folds;
      return calibrate_command(probe_args, a, exe, out, err);
    }
    if (sweep_cmd->parsed()) return sweep_command(sweep_args, a, exe, out, err);
#endif
#ifdef CPPLAN_HAVE_REPORT
    if (report_cmd->parsed()) return report_command(report_args, out, err);
#endif
    Context ctx = build_query(a, exe, err);
    // --hardware local: this machine's probes (and calibration) from the store, for plans run as
    // the executor runs them there (fp32 on its CPU, bf16 on its GPUs).
    const costmodel::HardwareModel* measured = nullptr;
    costmodel::StepCorrection correction;
#ifdef CPPLAN_HAVE_EXECUTOR
    std::unique_ptr<LocalModel> local;
    ModelProfile as_run;
    if (ctx.local_hardware) {
      local = open_local_model(a.db);
      attach_runtime(*local, ctx.catalog);
      as_run = as_executed(*ctx.query.model, !local->cuda);
      ctx.query.model = &as_run;
      ctx.query.hardware = &local->profile;
      ctx.query.runtime = &local->runtime;
      local->model->set_concurrent_ranks(ctx.query.gpus);
      measured = local->model.get();
      correction = local_correction(*local);
    }
#endif
    if (!ctx.query.hardware)
      throw InvalidInput{"--hardware = local: this build has no measurement store (built with CPPLAN_EXECUTOR=OFF)"};
    const costmodel::DatasheetModel datasheet(*ctx.query.hardware);
    const costmodel::CostModel cost(measured ? *measured : datasheet, correction);
    const planner::Planner planner(cost);

    if (check->parsed()) {
      const auto plan = planner.evaluate(ctx.query, plan_config(a));
      if (a.json) out << plan_json(ctx.query, plan).dump(2) << '\n';
      else print_check(out, ctx.query, plan, a.explain);
      return plan.plan.valid() ? kExitOk : kExitInvalid;
    }

    RenderOptions options;
    options.top = parse_int("--top", a.top, 1, 1 << 30);
    options.all = a.all;
    options.hardware_guessed = ctx.hardware_guessed;
    options.explain = a.explain;
    const auto report = planner.plan(ctx.query, {.allow_anything = true, .keep_invalid = true});
    if (a.json) out << report_json(ctx.query, report, options).dump(2) << '\n';
    else print_report(out, ctx.query, report, options);
    return kExitOk;
  } catch (const InvalidInput& e) {
    fmt::print(err, "cpplan: {}\n", e.message);
    return kExitInvalid;
  } catch (const std::exception& e) {
    fmt::print(err, "cpplan: internal error: {}\n", e.what());
    return kExitRuntime;
  }
}

}  // namespace cpplan::cli
