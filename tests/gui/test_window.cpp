// The query-to-table path with real widgets, off-screen: the window plans on the thread pool,
// fills the table, selects the top plan and shows its details, snippet, chart and run command;
// filters and invalid rows; a burst of queries ends on the last one; the heatmap; the flags.
#include <catch2/catch.hpp>

#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QGuiApplication>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QTableWidget>
#include <filesystem>

#include "gui/args.h"
#include "gui/charts.h"
#include "gui/heatmap_view.h"
#include "gui/main_window.h"
#include "gui/plan_detail.h"
#include "gui/plan_table_model.h"
#include "gui/query_panel.h"
#include "gui/run_panel.h"
#include "tests/gui/gui_support.h"

using cpplan::gui::MainWindow;
using cpplan::gui::PlanTableModel;
using cpplan::gui::QueryInput;
using cpplan::test::gui_app;
using cpplan::test::shared_catalog;
using cpplan::test::wait_for;

namespace {

QueryInput flux(int gpus, int width, int height) {
  QueryInput in;
  in.gpus = gpus;
  in.width = width;
  in.height = height;
  return in;
}

// Sets the query and waits until its plans are in the table.
void plan_and_wait(MainWindow& w, const QueryInput& in) {
  w.set_query(in);
  while (w.planning()) REQUIRE(wait_for(&w, &MainWindow::plans_shown));
  REQUIRE(w.result().has_value());
  REQUIRE(w.result()->input == w.query_panel()->input());
}

}  // namespace

TEST_CASE("A query fills the table with the valid plans and details the top one", "[gui][window]") {
  gui_app();
  cpplan::test::TempDir dir;
  MainWindow w(shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  plan_and_wait(w, flux(4, 1008, 1008));

  const auto& r = *w.result();
  REQUIRE(r.error.empty());
  CHECK(r.report.valid_count == 5);
  CHECK(w.plan_model()->rowCount() == 23);
  CHECK(w.plan_proxy()->rowCount() == 5);
  CHECK(w.plan_table()->model()->rowCount() == 5);
  CHECK(w.selected_plan() == 0);
  CHECK(w.pareto()->point_count() == 5);
  CHECK(w.status_text().contains("23 plans: 5 valid"));
  CHECK(w.query_panel()->facts_text().contains("3969 image + 512 text = 4481 tokens"));
  CHECK(w.query_panel()->facts_text().contains("24 heads"));

  const auto& top = w.plan_model()->plan(0);
  const std::string expected = cpplan::gui::plan_snippets(*r.query, top);
  CHECK(w.plan_detail()->snippet_text().toStdString() == expected);
  CHECK(w.plan_detail()->snippet_text().contains("ContextParallelConfig(ulysses_degree=4"));
  CHECK(w.plan_detail()->snippet_text().contains("# xDiT: cannot run this plan"));
  CHECK(w.plan_detail()->summary_text().contains("ulysses 4"));
  REQUIRE(w.plan_detail()->copy_button()->isEnabled());
  w.plan_detail()->copy_button()->click();
  CHECK(QGuiApplication::clipboard()->text().toStdString() == expected);

  const QStringList args = w.run_panel()->arguments();
  CHECK(args.join(' ').toStdString() ==
        "run --model flux.1-dev --res 1008x1008 --steps 28 --gpus 4 --hardware h100-sxm --attention-backend flash "
        "--ring 1 --ulysses 4 --tp 1 --cfg 1 --dp 1 --rotate-method allgather --ulysses-anything --db " +
            dir.file("runs.db"));
  CHECK(!std::filesystem::exists(dir.file("runs.db")));  // reading the history creates nothing
}

TEST_CASE("Showing invalid plans adds their rows and selecting one shows its reasons", "[gui][window][invalid]") {
  gui_app();
  cpplan::test::TempDir dir;
  MainWindow w(shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  plan_and_wait(w, flux(4, 1008, 1008));
  w.show_invalid_box()->setChecked(true);
  REQUIRE(w.plan_proxy()->rowCount() == 23);
  w.select_plan_row(5);  // the first invalid row
  const int index = w.selected_plan();
  REQUIRE(index == 5);
  const auto& p = w.plan_model()->plan(index);
  REQUIRE(!p.plan.valid());
  for (const auto& reason : p.plan.reasons)
    CHECK(w.plan_detail()->summary_text().contains(QString::fromStdString(reason).toHtmlEscaped()));
  CHECK(w.plan_detail()->snippet_text().isEmpty());
  CHECK(!w.plan_detail()->copy_button()->isEnabled());
  CHECK(w.run_panel()->arguments().isEmpty());

  const int ulysses_anything = w.variant_box()->findText("Ulysses Anything");
  REQUIRE(ulysses_anything > 0);
  w.variant_box()->setCurrentIndex(ulysses_anything);
  int expected = 0;
  for (const auto& plan : w.plan_model()->plans()) expected += plan.plan.variant == cpplan::CpVariant::kUlyssesAnything;
  CHECK(w.plan_proxy()->rowCount() == expected);
  w.fits_only_box()->setChecked(true);
  for (int i = 0; i < w.plan_proxy()->rowCount(); ++i)
    CHECK(w.plan_proxy()->index(i, PlanTableModel::kFits).data().toString() == "yes");
}

TEST_CASE("Editing the query re-plans and a burst of edits ends on the last one", "[gui][window][async]") {
  gui_app();
  cpplan::test::TempDir dir;
  MainWindow w(shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  plan_and_wait(w, flux(4, 1024, 1024));
  const int before = w.plan_model()->rowCount();

  for (int gpus : {8, 16, 1024, 2, 64, 8}) w.query_panel()->gpus_box()->setValue(gpus);
  CHECK(w.planning());  // the window did not wait for the planner
  while (w.planning()) REQUIRE(wait_for(&w, &MainWindow::plans_shown));
  REQUIRE(w.result()->input.gpus == 8);
  CHECK(w.plan_model()->rowCount() != before);
  CHECK(w.plan_model()->rowCount() == w.result()->report.valid_count + w.result()->report.invalid_count);

  // a size the model cannot denoise: no plans, the reason in the status bar and the facts
  w.query_panel()->width_box()->setValue(1000);
  while (w.planning()) REQUIRE(wait_for(&w, &MainWindow::plans_shown));
  CHECK(w.plan_model()->rowCount() == 0);
  CHECK(w.status_text().contains("1000"));
  CHECK(w.query_panel()->facts_text().contains("1000"));
  CHECK(w.selected_plan() == -1);
}

TEST_CASE("The heatmap holds the best plan over resolutions x GPU counts", "[gui][window][heatmap]") {
  gui_app();
  cpplan::test::TempDir dir;
  MainWindow w(shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  QueryInput in = flux(4, 1024, 1024);
  in.model = "wan2.1-t2v-1.3b";
  in.width = in.height = 0;
  w.set_query(in);
  REQUIRE(wait_for(&w, &MainWindow::heatmap_shown));  // the first grid asked for (FLUX) was superseded
  REQUIRE(w.heatmap()->rowCount() == 5);
  CHECK(w.heatmap()->verticalHeaderItem(2)->text() == "832x480");
  const auto* m = shared_catalog()->find_model("wan2.1-t2v-1.3b");
  CHECK(w.heatmap()->rowCount() == static_cast<int>(cpplan::gui::heatmap_resolutions(*m).size()));
  CHECK(w.heatmap()->columnCount() == 7);
  CHECK(w.heatmap()->horizontalHeaderItem(0)->text() == "1 GPU");
  const QString one_gpu = w.heatmap()->item(2, 0)->text();
  CHECK(one_gpu.startsWith("single GPU\n"));
  CHECK(one_gpu.contains(" ms"));
}

TEST_CASE("The heatmap grid and its cells match the planner", "[gui][heatmap]") {
  const auto* m = shared_catalog()->find_model("flux.1-dev");
  const auto resolutions = cpplan::gui::heatmap_resolutions(*m);
  REQUIRE(resolutions.size() == 5);
  CHECK(resolutions[0].width == 512);
  CHECK(resolutions[2].width == 1024);
  CHECK(resolutions[4].height == 2048);
  QueryInput in;
  const auto r = cpplan::gui::compute_heatmap(shared_catalog(), in, resolutions, {1, 4}, 3);
  REQUIRE(r.cells.size() == 10);
  CHECK(r.generation == 3);
  const auto full = cpplan::gui::compute_plans(shared_catalog(), flux(4, 1024, 1024), 1);
  const auto& best = full.report.plans.front();
  CHECK(r.at(2, 1).label == cpplan::plan_label(best.plan.config));
  CHECK(r.at(2, 1).step_ms == Approx(best.predicted->step_ms));
  CHECK(r.at(2, 0).label == "single GPU");
}

TEST_CASE("cpplan-gui's flags: the CLI's query flags, exit 2 for usage and 3 for bad values", "[gui][args]") {
  auto parse = [](std::vector<const char*> argv) {
    argv.insert(argv.begin(), "cpplan-gui");
    return cpplan::gui::parse_args(static_cast<int>(argv.size()), argv.data(), "");
  };
  auto ok = parse({"--gpus", "8", "--res", "1280x720", "--frames", "81", "--model", "wan2.1-t2v-14b", "--hardware",
                   "h200-sxm", "--steps", "30", "--attention-backend", "cudnn", "--offload-text-encoders"});
  REQUIRE(ok.exit_code == -1);
  CHECK(ok.options.input.gpus == 8);
  CHECK(ok.options.input.width == 1280);
  CHECK(ok.options.input.frames == 81);
  CHECK(ok.options.input.backend == cpplan::AttentionBackend::kCudnn);
  CHECK(ok.options.input.offload_text_encoders);
  CHECK(ok.catalog != nullptr);

  auto unknown = parse({"--gpu", "4"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.message.find("--gpu") != std::string::npos);
  auto zero = parse({"--gpus", "0"});
  CHECK(zero.exit_code == 3);
  CHECK(zero.message == "cpplan-gui: --gpus = 0: must be between 1 and 131072");
  auto size = parse({"--res", "1000x1000"});
  CHECK(size.exit_code == 3);
  CHECK(size.message.find('\n') == std::string::npos);
  CHECK(parse({"--model", "flux-1-dev"}).exit_code == 3);
  CHECK(parse({"--attention-backend", "xformers"}).exit_code == 3);
}
