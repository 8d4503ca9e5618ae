// The Run tab's process handling with real processes: the live log and exit, Cancel ending the
// process, a missing binary; locating cpplan beside cpplan-gui; and, where this build has
// `cpplan run` (the executor), a real tiny run from the window that then shows in History.
#include <catch2/catch.hpp>

#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QComboBox>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QTableView>
#include <filesystem>
#include "core/cache.h"
#include <fstream>

#include "gui/history_panel.h"
#include "gui/main_window.h"
#include "gui/plan_table_model.h"
#include "gui/run_panel.h"
#include "gui/tune_panel.h"
#include "tests/gui/gui_support.h"
#include "tests/support/fixtures.h"
#include "tests/support/skip.h"

using cpplan::gui::RunPanel;
using cpplan::test::wait_for;

TEST_CASE("The Run tab shows the live log and the exit status of the process", "[gui][run]") {
  cpplan::test::gui_app();
  RunPanel panel;
  panel.set_program(QStringLiteral("/bin/echo"));
  panel.set_command(QStringLiteral("ulysses 2"), {QStringLiteral("measured:"), QStringLiteral("1.00 ms/step")});
  panel.start();
  CHECK(panel.running());
  REQUIRE(wait_for(&panel, &RunPanel::run_finished));
  CHECK(!panel.running());
  CHECK(panel.log_text().contains("measured: 1.00 ms/step"));
  CHECK(panel.status_text().contains("exit 0"));
}

TEST_CASE("Cancel ends a running process and the run counts as finished", "[gui][run][cancel]") {
  cpplan::test::gui_app();
  RunPanel panel;
  panel.set_program(QStringLiteral("/bin/sleep"));
  panel.set_command(QStringLiteral("ring 2"), {QStringLiteral("60")});
  panel.start();
  REQUIRE(panel.running());
  panel.cancel();
  REQUIRE(wait_for(&panel, &RunPanel::run_finished, 10000));
  CHECK(!panel.running());
  CHECK(panel.status_text().contains("ended by a signal"));
}

TEST_CASE("Without a cpplan binary, Run says so and starts nothing", "[gui][run][errors]") {
  cpplan::test::gui_app();
  RunPanel panel;
  panel.set_command(QStringLiteral("tp 2"), {QStringLiteral("run")});
  panel.start();
  CHECK(!panel.running());
  CHECK(panel.log_text().contains("no cpplan binary"));
  CHECK(cpplan::gui::find_cpplan(QStringLiteral("/nonexistent")).isEmpty());
}

TEST_CASE("cpplan is found in the build tree (../cli/cpplan) or beside cpplan-gui", "[gui][run]") {
  cpplan::test::TempDir dir;
  const QString root = QString::fromStdString(dir.file(""));
  QDir().mkpath(root + "/gui");
  QDir().mkpath(root + "/cli");
  QFile exe(root + "/cli/cpplan");
  REQUIRE(exe.open(QIODevice::WriteOnly));
  exe.close();
  CHECK(cpplan::gui::find_cpplan(root + "/gui").isEmpty());  // not executable yet
  exe.setPermissions(QFile::ReadOwner | QFile::ExeOwner);
  CHECK(cpplan::gui::find_cpplan(root + "/gui") == QFileInfo(root + "/cli/cpplan").canonicalFilePath());
  CHECK(cpplan::gui::find_cpplan(root + "/cli") == QFileInfo(root + "/cli/cpplan").canonicalFilePath());
}

TEST_CASE("A tiny plan run from the window records a run that History then shows", "[gui][run][multirank]") {
#ifdef CPPLAN_RUN_BINARY
  const QString cpplan = QStringLiteral(CPPLAN_RUN_BINARY);
#else
  const QString cpplan = qEnvironmentVariable("CPPLAN_TEST_RUN_BINARY");  // a cpplan with `run`, by hand
#endif
  if (cpplan.isEmpty()) CPPLAN_SKIP("this build has no `cpplan run` (CPPLAN_EXECUTOR=OFF)");
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  const QString db = QString::fromStdString(dir.file("runs.db"));
  cpplan::gui::MainWindow w(cpplan::test::shared_catalog(), db);
  w.run_panel()->set_program(cpplan);
  cpplan::gui::QueryInput in;
  in.model = "flux-tiny";
  in.gpus = 2;
  in.width = in.height = 128;
  in.steps = 2;
  w.set_query(in);
  while (w.planning()) REQUIRE(wait_for(&w, &cpplan::gui::MainWindow::plans_shown));
  REQUIRE(w.plan_proxy()->rowCount() > 0);
  REQUIRE(w.selected_plan() == 0);
  const QString args = w.run_panel()->arguments().join(' ');
  INFO(args.toStdString());
  w.run_panel()->start();
  REQUIRE(wait_for(w.run_panel(), &RunPanel::run_finished, 300000));
  INFO(w.run_panel()->log_text().toStdString());
  CHECK(w.run_panel()->status_text().contains("exit 0"));
  CHECK(w.run_panel()->log_text().contains("recorded: run 1"));
  REQUIRE(w.history()->model()->rowCount() == 1);  // reloaded on finish
  CHECK(w.history()->model()->run(0).run.model == "flux-tiny");
  CHECK(w.history()->model()->run(0).run.status == "ok");
}

TEST_CASE("The Run tab's command carries a PipeFusion plan's stages, patches and warm-up steps", "[gui][run][pipefusion]") {
  const cpplan::Query q = cpplan::test::make_query("flux-tiny", 2, 128, 128);
  cpplan::ParallelConfig c;
  c.pipefusion = {2, 4, 1};
  const QString args = cpplan::gui::run_arguments(q, c, {}).join(' ');
  INFO(args.toStdString());
  CHECK(args.contains(QStringLiteral("--pipefusion 2 --num-pipeline-patch 4 --pipefusion-warmup-steps 1")));
  CHECK_FALSE(cpplan::gui::run_arguments(q, cpplan::ParallelConfig{}, {}).join(' ').contains(QStringLiteral("pipefusion")));
}

TEST_CASE("The Run tab's command carries the fully-sharded degree and the query's model config",
          "[gui][run][fully_shard]") {
  const cpplan::Query q = cpplan::test::make_query("flux-tiny", 2, 128, 128);
  cpplan::ParallelConfig c;
  c.context_parallel_config.ulysses_degree = 2;
  c.fs_degree = 2;
  const QString args = cpplan::gui::run_arguments(q, c, {}).join(' ');
  INFO(args.toStdString());
  CHECK(args.contains(QStringLiteral("--ulysses 2")));
  CHECK(args.contains(QStringLiteral("--fully-shard 2")));
  CHECK(args.contains(QStringLiteral("--model flux-tiny")));
  const QString plain = cpplan::gui::run_arguments(q, cpplan::ParallelConfig{}, {}).join(' ');
  CHECK_FALSE(plain.contains(QStringLiteral("fully-shard")));
  // A query planned from a diffusers config runs that config (cpplan run --model-config), not --model.
  const QStringList from_config = cpplan::gui::run_arguments(q, c, {}, QStringLiteral("/ckpt/transformer/config.json"));
  CHECK(from_config.join(' ').contains(QStringLiteral("--model-config /ckpt/transformer/config.json")));
  CHECK_FALSE(from_config.contains(QStringLiteral("--model")));
}

TEST_CASE("The Tune box reads the tune's launch lines into its table", "[gui][run][tune]") {
  using cpplan::gui::parse_tune_line;
  // The lines cli/tune_command.cpp prints off a terminal, one per launch and one per outcome.
  const auto launching = parse_tune_line(QStringLiteral("tune: [1/4] launching ring 2 x ulysses 2 (predicted 15.23 ms/step)"));
  REQUIRE(launching);
  CHECK(launching->launching);
  CHECK(launching->label == QStringLiteral("ring 2 x ulysses 2"));
  CHECK(*launching->predicted_ms == Approx(15.23));
  const auto ok = parse_tune_line(QStringLiteral("tune: ulysses 2: ok, 100.34 ms/step (3.1 s)"));
  REQUIRE(ok);
  CHECK_FALSE(ok->launching);
  CHECK(ok->label == QStringLiteral("ulysses 2"));
  CHECK(ok->status == QStringLiteral("ok"));
  CHECK(*ok->measured_ms == Approx(100.34));
  const auto timeout = parse_tune_line(QStringLiteral("tune: tp 2: timeout: timed out after 40 s (40.0 s)"));
  REQUIRE(timeout);
  CHECK(timeout->status == QStringLiteral("timeout"));
  CHECK(timeout->error == QStringLiteral("timed out after 40 s"));
  CHECK_FALSE(timeout->measured_ms);
  CHECK_FALSE(parse_tune_line(QStringLiteral("calibration: scale 3.968 from 3 runs")));
}

TEST_CASE("The Tune box launches cpplan tune with the query's model config, size and GPUs", "[gui][run][tune]") {
  const cpplan::Query q = cpplan::test::make_query("flux-tiny", 2, 128, 128);
  cpplan::gui::TuneOptions o;
  o.script = QStringLiteral("run.py");
  o.script_args = {QStringLiteral("--prompt"), QStringLiteral("a cat")};
  o.top = 3;
  o.device = QStringLiteral("cpu");
  const QStringList a = cpplan::gui::tune_arguments(q, o, QStringLiteral("t.db"), QStringLiteral("cfg.json"));
  const QString args = a.join(' ');
  INFO(args.toStdString());
  CHECK(a.mid(0, 2) == QStringList{"tune", "run.py"});
  // The query's fields in the field table's order, the config instead of --model (flux-tiny's
  // profile: 4 steps by default).
  CHECK(args.contains(QStringLiteral("--gpus 2 --res 128x128 --model-config cfg.json --hardware h100-sxm --steps 4 --top")));
  CHECK_FALSE(a.contains(QStringLiteral("--model")));
  CHECK(args.contains(QStringLiteral("--top 3 --launcher torchrun --timeout-s 1800 --device cpu --db t.db")));
  CHECK(a.mid(a.size() - 3) == QStringList{"--", "--prompt", "a cat"});
}

TEST_CASE("A tune from the Run tab measures the CPU example's candidates live, and History then shows them",
          "[gui][run][tune][multirank]") {
#ifdef CPPLAN_RUN_BINARY
  const QString cpplan = QStringLiteral(CPPLAN_RUN_BINARY);
#else
  const QString cpplan;
#endif
  if (cpplan.isEmpty()) CPPLAN_SKIP("this build has no cpplan binary with the executor (CPPLAN_EXECUTOR=OFF)");
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  const std::string root = std::string(CPPLAN_TEST_PROFILES) + "/..";
  const QString config = QString::fromStdString(root + "/docs/examples/tune_cpu_config.json");
  // Debian's torchrun (torch 1.13) needs the repo's mended launcher (tests/cluster/torchrun.py).
  std::filesystem::create_directories(dir.path() / "bin");
  const std::string torchrun = (dir.path() / "bin" / "torchrun").string();
#ifdef CPPLAN_PYTHON
  const std::string python = CPPLAN_PYTHON;  // the python3 with Debian's torch
#else
  const std::string python = "python3";
#endif
  std::ofstream(torchrun) << "#!/bin/sh\nexec " << python << " " << root << "/tests/cluster/torchrun.py \"$@\"\n";
  std::filesystem::permissions(torchrun, std::filesystem::perms::owner_all);
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("PATH"), QString::fromStdString((dir.path() / "bin").string()) + ":" + env.value("PATH"));
  // Not torchrun's default 29500: the cluster and tune tests may hold it at the same time.
  env.insert(QStringLiteral("PET_MASTER_PORT"), QStringLiteral("29517"));

  const QString db = QString::fromStdString(dir.file("tune.db"));
  cpplan::gui::MainWindow w(cpplan::test::shared_catalog(), db);
  cpplan::gui::QueryInput in;
  in.model_config = config.toStdString();
  in.gpus = 2;
  in.width = in.height = 256;
  in.steps = 4;
  w.set_query(in);
  while (w.planning()) REQUIRE(wait_for(&w, &cpplan::gui::MainWindow::plans_shown));
  cpplan::gui::TunePanel& tune = *w.tune_panel();
  tune.set_program(cpplan);
  tune.set_environment(env);
  tune.script()->setText(QString::fromStdString(root + "/docs/examples/tune_cpu.py"));
  tune.script_args()->setText(QStringLiteral("--config \"%1\" --res 256x256 --steps 4").arg(config));
  tune.top()->setValue(2);
  tune.device()->setCurrentText(QStringLiteral("cpu"));
  REQUIRE(tune.tune_button()->isEnabled());
  tune.start();
  REQUIRE(wait_for(&tune, &cpplan::gui::TunePanel::tune_finished, 600000));
  INFO(tune.log_text().toStdString());
  CHECK(tune.status_text() == QStringLiteral("finished (exit 0)"));
  // Two candidates, each with the prediction it was launched with and what it measured.
  REQUIRE(tune.table()->rowCount() == 2);
  for (int r = 0; r < 2; ++r) {
    CHECK(tune.table()->item(r, 1)->text().toDouble() > 0);
    CHECK(tune.table()->item(r, 2)->text().toDouble() > 0);
    CHECK(tune.table()->item(r, 3)->text() == QStringLiteral("ok"));
  }
  CHECK(tune.log_text().contains(QStringLiteral("top-1 regret: ")));
  CHECK(w.history()->model()->rowCount() == 2);  // reloaded on finish: the tune's two records
}

TEST_CASE("The Run tab's command carries a fixed cache schedule and no other cache", "[gui][run][cache]") {
  const cpplan::Query q = cpplan::test::make_query("flux-tiny", 1, 128, 128);
  cpplan::CacheSpec fixed = cpplan::cache_defaults(cpplan::CachePolicy::kFixed);
  fixed.first_blocks = 1;
  fixed.last_blocks = 1;
  fixed.warmup_steps = 2;
  fixed.every = 3;
  const QString args = cpplan::gui::run_arguments(q, cpplan::ParallelConfig{}, {}, {}, {}, fixed).join(' ');
  INFO(args.toStdString());
  CHECK(args.contains(QStringLiteral("--cache fixed")));
  CHECK(args.contains(QStringLiteral("--cache-fn 1")));
  CHECK(args.contains(QStringLiteral("--cache-bn 1")));
  CHECK(args.contains(QStringLiteral("--cache-warmup 2")));
  CHECK(args.contains(QStringLiteral("--cache-every 3")));
  // A threshold policy is not the executor's: the plan's command runs it without one.
  const QString fb = cpplan::gui::run_arguments(q, cpplan::ParallelConfig{}, {}, {}, {},
                                                cpplan::cache_defaults(cpplan::CachePolicy::kFbcache))
                         .join(' ');
  CHECK_FALSE(fb.contains(QStringLiteral("--cache")));
}
