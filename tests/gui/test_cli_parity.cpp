// The GUI and the CLI answer the same query with the same plans: for ten queries, the real `cpplan`
// binary's JSON (--all; the GUI's "list every plan") against the GUI's computation and its widgets
// (the plans table, the plan detail's snippets): the same plans in the same order, the same
// verdicts and reasons, step times, memory verdicts, frameworks, and the same framework snippets
// for the top plan; restricted to one framework, the same ranking as `cpplan --framework`; a
// diffusers config as `--model-config`, an older xDiT as `--framework-version xdit-2025`.
#include <algorithm>
#include <catch2/catch.hpp>

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "costmodel/calibration.h"
#include "data/store.h"
#include "gui/main_window.h"
#include "gui/plan_detail.h"
#include "gui/plan_table_model.h"
#include "gui/planning.h"
#include "gui/query_panel.h"
#include "gui/run_panel.h"
#include "session/query/machine.h"
#include "session/engine/internal/planning.h"
#include "tests/gui/gui_support.h"

using cpplan::gui::QueryInput;
using nlohmann::json;

namespace {

// What `cpplan ARGS` prints on stdout, or with `stderr_only` on stderr (a fixed argv: no user text
// reaches the shell).
std::string cpplan_stdout(const std::vector<std::string>& args, bool stderr_only = false) {
  std::string command = CPPLAN_BINARY;
  for (const std::string& a : args) command += " '" + a + "'";
  command += stderr_only ? " 2>&1 >/dev/null" : " 2>/dev/null";
  return cpplan::test::command_output(command);
}

struct Case {
  std::vector<std::string> args;  // the CLI's flags
  QueryInput in;                  // the same query as the GUI's panel holds it
};

QueryInput input(const std::string& model, const std::string& hardware, int gpus, int width = 0, int height = 0) {
  QueryInput in;
  in.model = model;
  in.hardware = hardware;
  in.gpus = gpus;
  in.width = width;
  in.height = height;
  return in;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({{"--model", "flux.1-dev", "--hardware", "h100-sxm", "--gpus", "4", "--res", "1008x1008"},
               input("flux.1-dev", "h100-sxm", 4, 1008, 1008)});
  Case xdit{{"--model", "flux.1-dev", "--hardware", "h100-sxm", "--gpus", "8", "--res", "1024x1024", "--runtime", "xdit"},
            input("flux.1-dev", "h100-sxm", 8, 1024, 1024)};
  xdit.in.runtime = "xdit";
  c.push_back(xdit);
  // No runtime: --framework xdit's own (frameworks/xdit.toml), in both fronts.
  Case xdit_framework{{"--model", "flux.1-dev", "--hardware", "l20", "--gpus", "4", "--framework", "xdit"},
                      input("flux.1-dev", "l20", 4)};
  xdit_framework.in.framework = "xdit";
  c.push_back(xdit_framework);
  c.push_back({{"--model", "wan2.1-t2v-14b", "--hardware", "h100-sxm", "--gpus", "8"}, input("wan2.1-t2v-14b", "h100-sxm", 8)});
  c.push_back({{"--model", "sd3.5-large", "--hardware", "l40s", "--gpus", "2"}, input("sd3.5-large", "l40s", 2)});
  Case compiled{{"--model", "qwen-image", "--hardware", "h200-sxm", "--gpus", "4", "--runtime", "compiled"},
                input("qwen-image", "h200-sxm", 4)};
  compiled.in.runtime = "compiled";
  c.push_back(compiled);
  Case topo{{"--model", "flux.1-dev", "--topology", "dgx-h100", "--nodes", "2", "--res", "1024x1024"},
            input("flux.1-dev", "", 0, 1024, 1024)};
  topo.in.topology = "dgx-h100";
  topo.in.nodes = 2;
  c.push_back(topo);
  Case sharded{{"--model", "flux.1-dev", "--hardware", "rtx4090", "--gpus", "4", "--text-encoder", "sharded"},
               input("flux.1-dev", "rtx4090", 4)};
  sharded.in.text_encoder = cpplan::TextEncoderPlacement::kSharded;
  c.push_back(sharded);
  Case batch{{"--model", "flux.1-dev", "--hardware", "l20", "--gpus", "4", "--batch", "2", "--vae", "parallel"},
             input("flux.1-dev", "l20", 4)};
  batch.in.batch = 2;
  batch.in.vae = cpplan::VaePlacement::kParallel;
  c.push_back(batch);
  c.push_back({{"--model", "hunyuanvideo", "--hardware", "h100-sxm", "--gpus", "8", "--frames", "33"},
               [] {
                 QueryInput in = input("hunyuanvideo", "h100-sxm", 8);
                 in.frames = 33;
                 return in;
               }()});
  c.push_back({{"--model", "flux.1-dev", "--hardware", "a100-sxm-80g", "--gpus", "3", "--steps", "20"},
               [] {
                 QueryInput in = input("flux.1-dev", "a100-sxm-80g", 3);
                 in.steps = 20;
                 return in;
               }()});
  return c;
}

std::vector<std::string> names(const json& a) { return a.get<std::vector<std::string>>(); }

// The CLI's one-line error for `args`, as the GUI shows it: without "cpplan: " and the newline.
std::string cpplan_error(const std::vector<std::string>& args) {
  std::string err = cpplan_stdout(args, true);
  if (err.rfind("cpplan: ", 0) == 0) err.erase(0, 8);
  while (!err.empty() && err.back() == '\n') err.pop_back();
  return err;
}

// A diffusers config of tests/data/diffusers (one folder per built-in profile).
std::string diffusers_fixture(const std::string& relative) {
  return std::string(CPPLAN_TEST_PROFILES) + "/../tests/data/diffusers/" + relative;
}

// Runs the window's event loop until it has shown the plans of its latest query.
void wait_for_plans(cpplan::gui::MainWindow& w) {
  while (w.planning()) REQUIRE(cpplan::test::wait_for(&w, &cpplan::gui::MainWindow::plans_shown));
  REQUIRE(w.result());
}

// The table's column `column` as shown, row by row.
std::vector<std::string> shown_column(cpplan::gui::MainWindow& w, int column) {
  std::vector<std::string> out;
  const QAbstractItemModel* table = w.plan_table()->model();
  for (int row = 0; row < table->rowCount(); ++row)
    out.push_back(table->index(row, column).data().toString().toStdString());
  return out;
}

// The plan detail's snippets of the top plan (planner::framework_snippets) in the CLI's text, which
// heads each framework's part (in its own order) "diffusers:" with the script indented below, or
// for a framework that cannot run the top plan "xDiT: cannot run the top plan: <reason>; the
// fastest plan it runs: ..." where the detail says "cannot run this plan".
bool snippets_in(const std::string& snippets, const std::string& cli) {
  std::istringstream lines(snippets);
  std::size_t from = 0;  // in the current framework's part of `cli`
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    std::string wanted = "  " + line;  // a script line
    bool heading = false;
    for (const char* name : {"diffusers", "cache-dit", "xDiT", "SGLang Diffusion", "vLLM-Omni"})
      if (line == std::string("# ") + name || line.rfind(std::string("# ") + name + ":", 0) == 0) heading = true;
    if (heading) {
      const std::string cannot = ": cannot run this plan: ";
      const auto at = line.find(cannot);
      if (at != std::string::npos)
        wanted = line.substr(2, at - 2) + ": cannot run the top plan: " + line.substr(at + cannot.size());
      else  // "xDiT:", or "xDiT (its placement: ...):" where its placement is not the plan's
        wanted = "\n" + line.substr(2) + (line.find(':') == std::string::npos ? "" : "");
      from = 0;  // the CLI orders the frameworks its own way
    }
    const auto at = cli.find(wanted, from);
    if (at == std::string::npos) {
      UNSCOPED_INFO("snippet line not in the CLI's output: " << wanted);
      return false;
    }
    from = at + wanted.size();
  }
  return true;
}

}  // namespace

TEST_CASE("The GUI and the CLI print the same plans, times, verdicts and snippets for ten queries", "[gui][parity]") {
  cpplan::test::gui_app();
  for (const Case& c : cases()) {
    std::vector<std::string> args = c.args;
    INFO("cpplan " << [&] { std::string s; for (const auto& a : args) s += a + " "; return s; }());
    args.insert(args.end(), {"--json", "--all"});
    const json cli = json::parse(cpplan_stdout(args));
    QueryInput in = c.in;
    in.all_plans = true;  // as --all: the fully-sharded twins of every valid plan, dp for one image
    const auto gui = cpplan::gui::compute_plans(cpplan::test::shared_catalog(), in, 1);
    REQUIRE(gui.error.empty());
    const auto& plans = gui.report.plans;
    REQUIRE(cli.at("plans").size() == plans.size());
    CHECK(cli.at("valid_plans") == gui.report.valid_count);
    CHECK(cli.at("invalid_plans") == gui.report.invalid_count);

    cpplan::gui::PlanTableModel table;
    table.set_plans(plans);
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const json& j = cli["plans"][i];
      const auto& p = plans[i];
      INFO("plan " << i << ": " << j.at("label"));
      const int row = static_cast<int>(i);
      CHECK(table.index(row, cpplan::gui::PlanTableModel::kPlan).data().toString().toStdString() == j.at("label"));
      CHECK(std::string(cpplan::to_string(p.plan.variant)) == j.at("cp_variant"));
      CHECK(p.plan.valid() == j.at("valid").get<bool>());
      CHECK(p.plan.reasons() == j.at("reasons").get<std::vector<std::string>>());
      if (!p.plan.valid()) continue;
      CHECK(p.predicted->step_ms == Approx(j.at("predicted").at("step_ms").get<double>()).epsilon(1e-12));
      CHECK(table.index(row, cpplan::gui::PlanTableModel::kStepMs).data().toString() ==
            QString::number(j.at("predicted").at("step_ms").get<double>(), 'f', 2));
      CHECK(p.predicted->fits_memory == j.at("fits_memory").get<bool>());
      CHECK(p.frameworks.names() == names(j.at("frameworks")));
    }

    // The framework snippets of the top plan: the plan detail's text, line by line in the CLI's.
    if (gui.report.valid_count == 0) continue;
    cpplan::gui::PlanDetail detail;
    detail.set_plan(&*gui.query, &plans.front(), gui.report.framework, &gui.report);  // as the window: the chosen one's
    const std::string snippets = detail.snippet_text().toStdString();
    CHECK_FALSE(snippets.empty());
    CHECK(snippets_in(snippets, cpplan_stdout(c.args)));
  }
}

TEST_CASE("The GUI plans --hardware local from this machine's probes and latest calibration, as the CLI", "[gui][local]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  const std::string db = dir.file("local.db");
  // This machine as the executor binary beside cpplan reports it, with GEMMs and all-gathers
  // "measured" and a calibration whose step is 7 ms flat: an easy figure to find again.
  const cpplan::session::Machine machine = cpplan::session::this_machine(CPPLAN_BINARY);
  cpplan::costmodel::MeasurementSet m;
  m.kernels.push_back({cpplan::costmodel::KernelKind::kGemm, "small", 1e6, 0, 16, 1, 10});
  m.kernels.push_back({cpplan::costmodel::KernelKind::kGemm, "large", 1e10, 0, 4096, 1, 1e4});
  m.collectives.push_back({cpplan::costmodel::Collective::kAllGather, 2, false, 1e3, 40, 0.025, 0.0125});
  m.collectives.push_back({cpplan::costmodel::Collective::kAllGather, 2, false, 1e8, 1e5, 1, 0.5});
  cpplan::costmodel::Calibration cal;
  cal.features = {"gemm", "attention", "memory", "launch", "comm", "constant", "oversubscribed"};
  cal.coefficients = {0, 0, 0, 0, 0, 7.0, 0};
  cal.runs = 6;
  cal.folds = 3;
  {
    auto store = cpplan::data::Store::open(db);
    REQUIRE(store);
    REQUIRE(store.value().record_measurements(machine.fingerprint, m, "probe").ok());
    REQUIRE(store.value().record_calibration(machine.fingerprint, cal).ok());
  }
  QueryInput in = input("flux-tiny", "local", 2, 256, 256);
  in.db = db;
  const auto gui = cpplan::gui::compute_plans(cpplan::test::shared_catalog(), in, 1);
  REQUIRE(gui.error.empty());
  REQUIRE(gui.report.valid_count > 0);
  const json cli = json::parse(cpplan_stdout({"--model", "flux-tiny", "--hardware", "local", "--db", db, "--gpus", "2",
                                              "--res", "256x256", "--json"}));
  REQUIRE(cli.at("plans").size() == static_cast<std::size_t>(gui.report.valid_count));
  for (std::size_t i = 0; i < cli["plans"].size(); ++i) {
    const auto& p = gui.report.plans[i];
    CHECK(plan_label(p.plan.config) == cli["plans"][i].at("label"));
    CHECK(p.predicted->calibrated);
    CHECK(p.predicted->step_ms == Approx(7.0));
    CHECK(cli["plans"][i]["predicted"]["step_ms"] == Approx(7.0));
  }
  CHECK_THAT(cpplan::session::prediction_source(gui.report.plans, gui.recommendation->model->local()),
             Catch::EndsWith(" figures, step times calibrated to this machine's runs (calibration v1)"));

  // The window states it in its status bar.
  cpplan::gui::MainWindow w(cpplan::test::shared_catalog(), QString::fromStdString(db));
  w.set_query(in);
  while (w.planning()) REQUIRE(cpplan::test::wait_for(&w, &cpplan::gui::MainWindow::plans_shown));
  INFO(w.status_text().toStdString());
  CHECK(w.status_text().contains(QStringLiteral("step times calibrated to this machine's runs (calibration v1)")));
}

TEST_CASE("The GUI plans --cluster from a cluster's nccl-tests imports, as the CLI", "[gui][nodes]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  const std::string db = dir.file("cluster.db");
  const std::string logs = std::string(CPPLAN_TEST_PROFILES) + "/../tests/data/nccl-tests/";
  for (const char* log : {"alltoall_perf-kubectl-2nodes.txt", "alltoall_perf-1node.txt"})
    cpplan_stdout({"import-nccl-tests", logs + log, "--db", db});
  QueryInput in = input("flux.2-dev", "h100-sxm", 16, 1024, 1024);
  in.topology = "dgx-h100";
  in.nodes = 2;
  in.db = db;
  in.cluster = "nccl-tests-worker";
  const auto gui = cpplan::gui::compute_plans(cpplan::test::shared_catalog(), in, 1);
  REQUIRE(gui.error.empty());
  const json cli = json::parse(cpplan_stdout({"--model", "flux.2-dev", "--hardware", "h100-sxm", "--gpus", "16",
                                              "--res", "1024x1024", "--topology", "dgx-h100", "--nodes", "2",
                                              "--cluster", "nccl-tests-worker", "--db", db, "--json", "--top",
                                              "1000"}));
  REQUIRE(cli.at("plans").size() == static_cast<std::size_t>(gui.report.valid_count));
  for (std::size_t i = 0; i < cli["plans"].size(); ++i) {
    CHECK(plan_label(gui.report.plans[i].plan.config) == cli["plans"][i].at("label"));
    CHECK(gui.report.plans[i].predicted->step_ms == Approx(cli["plans"][i]["predicted"]["step_ms"].get<double>()));
  }
  CHECK(cpplan::session::prediction_source(gui.report.plans, gui.recommendation->model->local(), gui.recommendation->model->cluster()) ==
        cli.at("prediction_source"));

  // An unknown cluster: the CLI's line.
  in.cluster = "lab";
  const auto unknown = cpplan::gui::compute_plans(cpplan::test::shared_catalog(), in, 1);
  CHECK(unknown.error == "--cluster = lab: " + db + " holds no imports of that cluster (there: nccl-tests-worker)");
}

TEST_CASE("With framework diffusers the GUI ranks the plans `cpplan --framework diffusers` ranks",
          "[gui][parity][framework]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  // qwen-image's fastest plan, ulysses 2 x cfg 2, runs on no framework; diffusers runs ulysses 4
  // (Ulysses Anything) and tp 4.
  const json cli = json::parse(cpplan_stdout({"--model", "qwen-image", "--hardware", "h100-sxm", "--gpus", "4", "--res",
                                              "1328x1328", "--framework", "diffusers", "--json"}));
  QueryInput in = input("qwen-image", "h100-sxm", 4, 1328, 1328);
  in.framework = "diffusers";
  cpplan::gui::MainWindow w(cpplan::test::shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  w.set_query(in);
  while (w.planning()) REQUIRE(cpplan::test::wait_for(&w, &cpplan::gui::MainWindow::plans_shown));
  REQUIRE(w.result()->error.empty());
  CHECK(w.query_panel()->framework_box()->currentText() == "diffusers");

  // The table as shown (valid plans, ranked), row by row against the CLI's plans.
  QAbstractItemModel* table = w.plan_table()->model();
  REQUIRE(table->rowCount() == static_cast<int>(cli.at("plans").size()));
  REQUIRE(table->rowCount() > 0);
  CHECK(table->index(0, cpplan::gui::PlanTableModel::kPlan).data().toString() == "ulysses 4");
  for (int row = 0; row < table->rowCount(); ++row) {
    const json& j = cli["plans"][row];
    CHECK(table->index(row, cpplan::gui::PlanTableModel::kPlan).data().toString().toStdString() == j.at("label"));
    CHECK(table->index(row, cpplan::gui::PlanTableModel::kStepMs).data().toString() ==
          QString::number(j.at("predicted").at("step_ms").get<double>(), 'f', 2));
    const auto runs = names(j.at("frameworks"));
    CHECK(std::find(runs.begin(), runs.end(), "diffusers") != runs.end());
  }
  CHECK(cli.at("valid_plans") == w.result()->report.valid_count);
  CHECK(cli.at("invalid_plans") == w.result()->report.invalid_count);
  const int hidden = cli.at("hidden_plans").get<int>();
  CHECK(hidden == w.result()->report.hidden_count);
  REQUIRE(hidden > 1);
  // The status bar says what the CLI prints under its table.
  INFO(w.status_text().toStdString());
  CHECK(w.status_text().contains(
      QStringLiteral("%1 valid plans that diffusers cannot run are left out (framework any shows them)").arg(hidden)));
}

TEST_CASE("A diffusers config plans as cpplan --model-config and as the built-in model it describes",
          "[gui][parity][model_config]") {
  cpplan::test::gui_app();
  const std::string config = diffusers_fixture("flux.1-dev/config.json");
  const json cli = json::parse(cpplan_stdout(
      {"--model-config", config, "--hardware", "h100-sxm", "--gpus", "4", "--res", "1024x1024", "--json", "--all"}));
  QueryInput in = input("flux.1-dev", "h100-sxm", 4, 1024, 1024);
  in.all_plans = true;
  const auto builtin = cpplan::gui::compute_plans(cpplan::test::shared_catalog(), in, 1);
  in.model_config = config;
  const auto derived = cpplan::gui::compute_plans(cpplan::test::shared_catalog(), in, 1);
  REQUIRE(builtin.error.empty());
  REQUIRE(derived.error.empty());
  CHECK(derived.query->model->name == cli.at("model"));  // named after the config's folder
  CHECK(derived.input.model_config == config);           // the result keeps the query as asked
  REQUIRE(derived.report.plans.size() == cli.at("plans").size());
  REQUIRE(derived.report.plans.size() == builtin.report.plans.size());
  CHECK(derived.report.valid_count == cli.at("valid_plans"));
  for (std::size_t i = 0; i < cli.at("plans").size(); ++i) {
    const auto& d = derived.report.plans[i];
    const auto& b = builtin.report.plans[i];
    const json& j = cli["plans"][i];
    INFO("plan " << i << ": " << j.at("label"));
    CHECK(plan_label(d.plan.config) == j.at("label"));
    CHECK(plan_label(b.plan.config) == j.at("label"));
    CHECK(d.plan.variant == b.plan.variant);
    CHECK(d.plan.valid() == j.at("valid").get<bool>());
    CHECK(b.plan.valid() == d.plan.valid());
    CHECK(d.plan.reasons() == j.at("reasons").get<std::vector<std::string>>());
    if (!d.plan.valid()) continue;
    CHECK(d.predicted->step_ms == Approx(j.at("predicted").at("step_ms").get<double>()).epsilon(1e-12));
    CHECK(d.predicted->step_ms == Approx(b.predicted->step_ms).epsilon(1e-12));
    CHECK(d.frameworks.names() == names(j.at("frameworks")));
    CHECK(d.frameworks.names() == b.frameworks.names());
  }

  // Through the panel: the model list is disabled and the window shows the CLI's rows.
  cpplan::test::TempDir dir;
  cpplan::gui::MainWindow w(cpplan::test::shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  w.set_query(input("flux.1-dev", "h100-sxm", 4, 1024, 1024));
  wait_for_plans(w);
  cpplan::gui::QueryPanel* panel = w.query_panel();
  REQUIRE(panel->set_model_config(QString::fromStdString(config)));
  CHECK_FALSE(panel->model_box()->isEnabled());
  CHECK(panel->clear_config_button()->isEnabled());
  CHECK(panel->config_error_label()->isHidden());
  CHECK(panel->width_box()->value() == 1024);  // the config's profile's default size
  CHECK(panel->facts_text().contains(QStringLiteral("4096 image + 512 text")));
  wait_for_plans(w);
  REQUIRE(w.result()->error.empty());
  CHECK(w.result()->input.model_config == config);
  const json top = json::parse(cpplan_stdout({"--model-config", config, "--hardware", "h100-sxm", "--gpus", "4",
                                              "--res", "1024x1024", "--json", "--top", "1000"}));
  std::vector<std::string> labels;
  for (const json& j : top.at("plans")) labels.push_back(j.at("label"));
  CHECK(shown_column(w, cpplan::gui::PlanTableModel::kPlan) == labels);
  // the Run tab runs the config, not a profile of that name
  const QString run = w.run_panel()->arguments().join(' ');
  CHECK(run.contains(QStringLiteral("--model-config ") + QString::fromStdString(config)));

  panel->clear_config_button()->click();
  CHECK(panel->model_box()->isEnabled());
  CHECK(panel->input().model_config.empty());
  wait_for_plans(w);
  CHECK(w.result()->query->model->name == "flux.1-dev");
}

// The Run tab asks the session what `cpplan run --list-unsupported` asks: a valid plan of a
// structure the executor's blocks lack (ConsisID's face cross-attention) disables Run with the reason.
TEST_CASE("The Run tab says why cpplan run cannot run a valid ConsisID plan, as --list-unsupported does",
          "[gui][parity][model_config]") {
  cpplan::test::gui_app();
  const std::string config = diffusers_fixture("consisid/config.json");
  cpplan::test::TempDir dir;
  cpplan::gui::MainWindow w(cpplan::test::shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  QueryInput in = input("cogvideox-5b", "h100-sxm", 2, 720, 480);
  in.model_config = config;
  w.set_query(in);
  wait_for_plans(w);
  REQUIRE(w.result()->error.empty());
  REQUIRE(w.result()->report.valid_count > 0);  // a valid plan is selected (the first row)
  CHECK(w.run_panel()->arguments().isEmpty());
  CHECK(w.run_panel()->plan_text().endsWith(
      QStringLiteral(": cpplan run does not run it: side_cross_every = 2: the executor's blocks have no "
                     "cross-attention to conditioning tokens (ConsisID's face tokens)")));
}

TEST_CASE("A model config that cannot be read shows the CLI's one-line error and keeps the plans shown",
          "[gui][model_config][errors]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  cpplan::gui::MainWindow w(cpplan::test::shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  w.set_query(input("flux.1-dev", "h100-sxm", 4, 1024, 1024));
  wait_for_plans(w);
  const std::vector<std::string> before = shown_column(w, cpplan::gui::PlanTableModel::kPlan);
  REQUIRE(!before.empty());
  cpplan::gui::QueryPanel* panel = w.query_panel();
  int emitted = 0;
  QObject::connect(panel, &cpplan::gui::QueryPanel::changed, [&] { ++emitted; });

  const std::string unmapped = dir.file("config.json");  // a class no mapping knows
  std::FILE* f = std::fopen(unmapped.c_str(), "w");
  REQUIRE(f);
  std::fputs(R"({"_class_name": "NoSuchTransformer2DModel", "num_layers": 2})", f);
  std::fclose(f);
  for (const std::string& path : {dir.file("missing/config.json"), unmapped}) {
    INFO(path);
    const std::string expected = cpplan_error({"--model-config", path, "--hardware", "h100-sxm", "--gpus", "4"});
    REQUIRE(!expected.empty());
    CHECK(expected.find('\n') == std::string::npos);
    CHECK_FALSE(panel->set_model_config(QString::fromStdString(path)));
    CHECK(panel->config_error_label()->text().toStdString() == expected);
    CHECK_FALSE(panel->config_error_label()->isHidden());
    CHECK(emitted == 0);  // nothing re-planned: the table stays
    CHECK_FALSE(w.planning());
    CHECK(shown_column(w, cpplan::gui::PlanTableModel::kPlan) == before);
    CHECK(panel->input().model_config.empty());
    CHECK(panel->model_box()->isEnabled());
  }

  // A path typed into the field is read when the field is left; a good one clears the error.
  const std::string schnell = diffusers_fixture("flux.1-schnell/config.json");
  panel->model_config_edit()->setText(QString::fromStdString(schnell));
  emit panel->model_config_edit()->editingFinished();
  CHECK(emitted == 1);
  CHECK(panel->config_error_label()->isHidden());
  wait_for_plans(w);
  CHECK(w.result()->error.empty());
  const json cli =
      json::parse(cpplan_stdout({"--model-config", schnell, "--hardware", "h100-sxm", "--gpus", "4", "--json"}));
  CHECK(w.result()->query->model->name == cli.at("model").get<std::string>());
}

TEST_CASE("xDiT version xdit-2025 changes xDiT's verdicts and launch line as cpplan --framework-version does",
          "[gui][parity][framework_version]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  // sd3.5-medium: xDiT main has no pipeline for it, the 2025 example scripts ran it (sd3_example.py).
  const std::vector<std::string> args = {"--model", "sd3.5-medium", "--hardware", "h100-sxm", "--gpus", "4"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = args;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const json cli_main = json::parse(cpplan_stdout(with({"--json", "--top", "1000"})));
  const json cli_2025 =
      json::parse(cpplan_stdout(with({"--json", "--top", "1000", "--framework-version", "xdit-2025"})));
  cpplan::gui::MainWindow w(cpplan::test::shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  // The frameworks of each valid plan shown, in rank order (as the CLI's JSON lists them).
  auto shown_frameworks = [&] {
    std::vector<std::vector<std::string>> out;
    for (const auto& p : w.plan_model()->plans())
      if (p.plan.valid()) out.push_back(p.frameworks.names());
    return out;
  };
  auto cli_frameworks = [](const json& cli) {
    std::vector<std::vector<std::string>> out;
    for (const json& p : cli.at("plans")) out.push_back(names(p.at("frameworks")));
    return out;
  };
  w.set_query(input("sd3.5-medium", "h100-sxm", 4));
  wait_for_plans(w);
  const auto main_frameworks = shown_frameworks();
  const std::vector<std::string> main_column = shown_column(w, cpplan::gui::PlanTableModel::kFrameworks);
  CHECK(main_frameworks == cli_frameworks(cli_main));

  QComboBox* version = w.query_panel()->framework_version_box(cpplan::Framework::kXdit);
  REQUIRE(version != nullptr);
  CHECK(w.query_panel()->framework_version_box(cpplan::Framework::kDiffusers) == nullptr);  // one file only
  CHECK(version->itemText(0).startsWith(QStringLiteral("default: main")));
  REQUIRE(version->findData(QStringLiteral("xdit-2025")) == 1);
  version->setCurrentIndex(1);
  CHECK(w.query_panel()->input().framework_versions == std::vector<std::string>{"xdit-2025"});
  wait_for_plans(w);
  const auto old_frameworks = shown_frameworks();
  CHECK(old_frameworks == cli_frameworks(cli_2025));
  // Some plan's xDiT verdict changed, in the table's frameworks column too.
  REQUIRE(old_frameworks.size() == main_frameworks.size());
  CHECK(old_frameworks != main_frameworks);
  CHECK(shown_column(w, cpplan::gui::PlanTableModel::kFrameworks) != main_column);
  // The top plan's xDiT line: the example script's torchrun command, as the CLI prints it.
  const std::string snippets = w.plan_detail()->snippet_text().toStdString();
  CHECK_THAT(snippets, Catch::Contains("examples/sd3_example.py"));
  CHECK(snippets_in(snippets, cpplan_stdout(with({"--framework-version", "xdit-2025"}))));
}

TEST_CASE("List every plan adds the fully-sharded twins, as cpplan --all", "[gui][parity][all_plans]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  const json cli = json::parse(cpplan_stdout({"--model", "flux.1-dev", "--hardware", "h100-sxm", "--gpus", "4", "--res",
                                              "1024x1024", "--all", "--json"}));
  cpplan::gui::MainWindow w(cpplan::test::shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  w.set_query(input("flux.1-dev", "h100-sxm", 4, 1024, 1024));
  wait_for_plans(w);
  auto fully_sharded = [&] {
    int n = 0;
    for (const auto& p : w.plan_model()->plans()) n += p.plan.config.fs() > 1;
    return n;
  };
  CHECK(fully_sharded() == 0);  // every plan fits: no twin is needed
  QCheckBox* all = w.query_panel()->all_plans_box();
  all->setChecked(true);
  CHECK(w.query_panel()->input().all_plans);
  wait_for_plans(w);
  CHECK(fully_sharded() > 0);
  CHECK(w.result()->report.valid_count == cli.at("valid_plans"));
  CHECK(w.result()->report.invalid_count == cli.at("invalid_plans"));
  REQUIRE(w.plan_model()->rowCount() == static_cast<int>(cli.at("plans").size()));
  int cli_sharded = 0;
  for (const json& p : cli.at("plans")) cli_sharded += p.at("fs_degree").get<int>() > 1;
  CHECK(fully_sharded() == cli_sharded);
  // the table and the detail name the fs degree
  w.show_invalid_box()->setChecked(true);
  bool labelled = false;
  for (const std::string& label : shown_column(w, cpplan::gui::PlanTableModel::kPlan))
    labelled = labelled || label.find(" x fs ") != std::string::npos;
  CHECK(labelled);
}
