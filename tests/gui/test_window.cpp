// The query-to-table path with real widgets, off-screen: the window plans on the thread pool,
// fills the table, selects the top plan and shows its details, snippet, chart and run command;
// filters and invalid rows; a burst of queries ends on the last one; the runtime, placement and
// framework combos; the heatmap; the flags.
#include <catch2/catch.hpp>

#include <QCheckBox>
#include <QAbstractBarSeries>
#include <QBarSet>
#include <QChart>
#include <QClipboard>
#include <QComboBox>
#include <QGuiApplication>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QTableWidget>
#include <algorithm>
#include <filesystem>

#include "gui/args.h"
#include "gui/charts.h"
#include "gui/heatmap_view.h"
#include "gui/main_window.h"
#include "gui/plan_detail.h"
#include "gui/plan_table_model.h"
#include "gui/query_panel.h"
#include "gui/run_panel.h"
#include "planner/snippets.h"
#include "session/engine/explain.h"
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
  // 8 valid of 28: the 5 of the anything modes and TP, and pipefusion 4 with 4, 8 and 16 patches
  // (tests/planner/test_enumerate.cpp counts them by hand); 20 invalid: the 30 of
  // test_plan_table.cpp less the 10 data-parallel ones, not listed for one image
  CHECK(r.report.valid_count == 8);
  CHECK(w.plan_model()->rowCount() == 28);
  CHECK(w.plan_proxy()->rowCount() == 8);
  CHECK(w.plan_table()->model()->rowCount() == 8);
  CHECK(w.selected_plan() == 0);
  CHECK(w.pareto()->point_count() == 8);
  CHECK(w.status_text().contains("28 plans: 8 valid"));
  CHECK(w.query_panel()->facts_text().contains("3969 image + 512 text = 4481 tokens"));
  CHECK(w.query_panel()->facts_text().contains("24 heads"));

  const auto& top = w.plan_model()->plan(0);
  const std::string expected = cpplan::gui::plan_snippets(*r.query, top, std::nullopt, &r.recommendation->report);
  CHECK(w.plan_detail()->snippet_text().toStdString() == expected);
  CHECK(w.plan_detail()->snippet_text().contains("ContextParallelConfig(ulysses_degree=4"));
  CHECK(w.plan_detail()->snippet_text().contains("# xDiT: cannot run this plan"));
  CHECK(w.plan_detail()->summary_text().contains("ulysses 4"));
  // The Kernels tab: the CLI's --explain kernels of the plan, from the same library call.
  const auto ex = cpplan::session::explain(*r.query, top);
  REQUIRE(ex);
  CHECK(w.plan_detail()->kernels_text().toStdString() == cpplan::session::kernels_text(*ex));
  CHECK(w.plan_detail()->kernels_text().contains("attention: torch SDPA"));  // diffusers' pick on an H100
  CHECK(w.plan_detail()->kernels_text().contains("source: src/diffusers/models/attention_dispatch.py"));
  REQUIRE(w.plan_detail()->copy_button()->isEnabled());
  w.plan_detail()->copy_button()->click();
  CHECK(QGuiApplication::clipboard()->text().toStdString() == expected);

  const QStringList args = w.run_panel()->arguments();
  CHECK(args.join(' ').toStdString() ==
        // the query's fields that differ from the table's defaults, in its order (flux.1-dev and
        // flash are the defaults), then the plan's
        "run --gpus 4 --res 1008x1008 --hardware h100-sxm --steps 28 --ulysses 4 --ulysses-anything --db " +
            dir.file("runs.db"));
  CHECK(!std::filesystem::exists(dir.file("runs.db")));  // reading the history creates nothing
}

TEST_CASE("Showing invalid plans adds their rows and selecting one shows its reasons", "[gui][window][invalid]") {
  gui_app();
  cpplan::test::TempDir dir;
  MainWindow w(shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  plan_and_wait(w, flux(4, 1008, 1008));
  w.show_invalid_box()->setChecked(true);
  REQUIRE(w.plan_proxy()->rowCount() == 28);  // 8 valid and 20 invalid
  w.select_plan_row(8);  // the first invalid row
  const int index = w.selected_plan();
  REQUIRE(index == 8);
  const auto& p = w.plan_model()->plan(index);
  REQUIRE(!p.plan.valid());
  for (const auto& reason : p.plan.reasons())
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

namespace {

// The plan of the shown result with `label` and `variant`, or null.
const cpplan::planner::RankedPlan* find_plan(MainWindow& w, const std::string& label, cpplan::CpVariant variant) {
  for (const auto& p : w.plan_model()->plans())
    if (cpplan::plan_label(p.plan.config) == label && p.plan.variant == variant) return &p;
  return nullptr;
}

// Picks `text` in `box` (which re-plans) and waits for the new plans.
void choose(MainWindow& w, QComboBox* box, const QString& text) {
  const int i = box->findText(text);
  REQUIRE(i >= 0);
  box->setCurrentIndex(i);
  REQUIRE(w.planning());
  while (w.planning()) REQUIRE(wait_for(&w, &MainWindow::plans_shown));
}

}  // namespace

TEST_CASE("The runtime combo re-plans: compiled code steps faster than eager diffusers", "[gui][window][runtime]") {
  gui_app();
  cpplan::test::TempDir dir;
  MainWindow w(shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  plan_and_wait(w, flux(4, 1024, 1024));
  QComboBox* runtime = w.query_panel()->runtime_box();
  QStringList names;
  for (int i = 0; i < runtime->count(); ++i) names << runtime->itemText(i);
  for (const std::string& name : shared_catalog()->runtime_names()) CHECK(names.contains(QString::fromStdString(name)));
  // First "framework's" (no --runtime): the framework's runtime, diffusers' for any framework.
  CHECK(runtime->count() == static_cast<int>(shared_catalog()->runtime_names().size()) + 1);
  CHECK(runtime->itemText(0) == "framework's");
  CHECK(runtime->currentText() == "framework's");
  CHECK(w.result()->input.runtime.empty());
  CHECK(w.result()->query->runtime->name == "diffusers");

  REQUIRE(w.selected_plan() == 0);
  const auto& top = w.plan_model()->plan(0);
  const std::string label = cpplan::plan_label(top.plan.config);
  const cpplan::CpVariant variant = top.plan.variant;
  const double eager_ms = top.predicted->step_ms;
  CHECK(top.predicted->runtime == "diffusers");
  CHECK(w.plan_detail()->summary_text().contains("with the diffusers runtime"));
  CHECK(w.plan_detail()->summary_text().contains(QStringLiteral("host %1 ms vs GPU").arg(top.predicted->host_ms, 0, 'f', 2)));

  choose(w, runtime, QStringLiteral("compiled"));
  CHECK(w.result()->input.runtime == "compiled");
  CHECK(w.result()->query->runtime->name == "compiled");
  const auto* same = find_plan(w, label, variant);
  REQUIRE(same != nullptr);
  CHECK(same->predicted->runtime == "compiled");
  CHECK(same->predicted->step_ms < eager_ms);
  CHECK(w.plan_detail()->summary_text().contains("with the compiled runtime"));
  // `cpplan run` predicts as it runs (the cpplan runtime): the Run tab does not pass --runtime
  CHECK(!w.run_panel()->arguments().contains("--runtime"));

  // Back to the framework's runtime: xDiT's plans are priced as xDiT runs them.
  choose(w, runtime, QStringLiteral("framework's"));
  choose(w, w.query_panel()->framework_box(), QStringLiteral("xdit"));
  CHECK(w.result()->input.runtime.empty());
  CHECK(w.result()->query->runtime->name == "xdit");
  CHECK(w.plan_model()->plan(0).predicted->runtime == "xdit");
  CHECK(w.plan_detail()->summary_text().contains("with the xdit runtime"));
}

TEST_CASE("Forcing the text encoder and VAE shows them in the table, the summary and the run", "[gui][window][placement]") {
  gui_app();
  cpplan::test::TempDir dir;
  MainWindow w(shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  plan_and_wait(w, flux(4, 1024, 1024));
  QComboBox* te = w.query_panel()->text_encoder_box();
  QComboBox* vae = w.query_panel()->vae_box();
  QStringList items;
  for (int i = 0; i < te->count(); ++i) items << te->itemText(i);
  CHECK(items.join('|') == "auto|replicated|offloaded|sequential|sharded|fully-sharded|fully-sharded-host");
  items.clear();
  for (int i = 0; i < vae->count(); ++i) items << vae->itemText(i);
  CHECK(items.join('|') == "auto|single|parallel|tiled|sliced");
  CHECK(te->currentText() == "auto");
  CHECK(!w.result()->input.text_encoder);
  CHECK(w.plan_detail()->summary_text().contains(QStringLiteral("text encoder %1 (auto)").arg(QString::fromStdString(std::string(cpplan::to_string(w.plan_model()->plan(0).predicted->pipeline.text_encoder))))));
  CHECK(!w.run_panel()->arguments().contains("--text-encoder"));

  choose(w, te, QStringLiteral("sharded"));
  REQUIRE(w.result()->input.text_encoder == cpplan::TextEncoderPlacement::kSharded);
  for (int i = 0; i < w.plan_proxy()->rowCount(); ++i)
    CHECK(w.plan_proxy()->index(i, PlanTableModel::kPlacement).data().toString().startsWith("sharded/"));
  CHECK(w.plan_detail()->summary_text().contains("text encoder sharded (forced)"));
  CHECK(w.run_panel()->arguments().join(' ').contains("--text-encoder sharded"));

  choose(w, vae, QStringLiteral("parallel"));
  REQUIRE(w.result()->input.vae == cpplan::VaePlacement::kParallel);
  for (int i = 0; i < w.plan_proxy()->rowCount(); ++i)
    CHECK(w.plan_proxy()->index(i, PlanTableModel::kPlacement).data().toString() == "sharded/parallel");
  CHECK(w.plan_detail()->summary_text().contains("VAE parallel (forced)"));
  CHECK(w.run_panel()->arguments().join(' ').contains("--text-encoder sharded --vae parallel"));

  choose(w, te, QStringLiteral("auto"));  // back to the planner's pick
  CHECK(!w.result()->input.text_encoder);
  CHECK(!w.run_panel()->arguments().contains("--text-encoder"));

  // set_input shows a query's placements in the combos (the flags' path)
  QueryInput in = flux(4, 1024, 1024);
  in.text_encoder = cpplan::TextEncoderPlacement::kOffloaded;
  in.runtime = "xdit";
  plan_and_wait(w, in);
  CHECK(te->currentText() == "offloaded");
  CHECK(vae->currentText() == "auto");
  CHECK(w.query_panel()->runtime_box()->currentText() == "xdit");
  CHECK(w.plan_model()->plan(0).predicted->pipeline.text_encoder == cpplan::TextEncoderPlacement::kOffloaded);
}

TEST_CASE("The snippet pane follows the framework selector", "[gui][window][framework]") {
  gui_app();
  cpplan::test::TempDir dir;
  MainWindow w(shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  QComboBox* framework = w.query_panel()->framework_box();
  QStringList items;
  for (int i = 0; i < framework->count(); ++i) items << framework->itemText(i);
  CHECK(items.join('|') == "any|diffusers|xdit|cache-dit|sglang|vllm-omni|cpplan");
  CHECK(framework->toolTip() == "rank only the plans this framework runs");
  CHECK(framework->currentText() == "any");

  // qwen-image at 1328x1328: 6889 image tokens (83 x 83 latent patches), which only Ulysses Anything
  // splits 4 ways; diffusers' fastest plan is ulysses 4.
  QueryInput in = flux(4, 1328, 1328);
  in.model = "qwen-image";
  in.framework = "diffusers";
  plan_and_wait(w, in);
  CHECK(framework->currentText() == "diffusers");
  REQUIRE(w.selected_plan() == 0);
  const auto& top = w.plan_model()->plan(0);
  CHECK(cpplan::plan_label(top.plan.config) == "ulysses 4");
  const QString diffusers = w.plan_detail()->snippet_text();
  CHECK(diffusers.startsWith("# diffusers\n"));
  CHECK(diffusers.contains("ContextParallelConfig(ulysses_degree=4, ulysses_anything=True)"));
  CHECK(!diffusers.contains("xDiT"));
  CHECK(!diffusers.contains("# cache-dit"));
  CHECK(diffusers.toStdString() ==
        cpplan::gui::plan_snippets(*w.result()->query, top, cpplan::planner::Framework::kDiffusers));

  // "any": every framework's part for the selected plan, here the top plan that none runs.
  choose(w, framework, QStringLiteral("any"));
  CHECK(w.result()->input.framework == "any");
  CHECK(!w.status_text().contains("left out"));
  REQUIRE(w.selected_plan() == 0);
  const QString any = w.plan_detail()->snippet_text();
  CHECK(any.toStdString() ==
        cpplan::planner::framework_snippets(*w.result()->query, w.plan_model()->plan(0), &w.result()->recommendation->report));
  for (const char* part : {"# diffusers", "# cache-dit", "# xDiT", "# SGLang Diffusion", "# vLLM-Omni"})
    CHECK(any.contains(part));

  // One framework and a plan it cannot run: only its "cannot run" line (a table restricted to that
  // framework lists no such valid plan; plan_snippets answers for any plan).
  const auto& any_top = w.plan_model()->plan(0);
  const std::string xdit = cpplan::gui::plan_snippets(*w.result()->query, any_top, cpplan::planner::Framework::kXdit);
  CHECK(xdit.rfind("# xDiT: cannot run this plan: ", 0) == 0);
  CHECK(std::count(xdit.begin(), xdit.end(), '\n') == 1);

  // cache-dit: its script under its heading.
  choose(w, framework, QStringLiteral("cache-dit"));
  CHECK(w.plan_detail()->snippet_text().startsWith("# cache-dit\n# torchrun --nproc_per_node="));
  CHECK(!w.plan_detail()->snippet_text().contains("# diffusers"));
}

TEST_CASE("The charts add up: step bars to the step, the memory phases to the peak", "[gui][window][charts]") {
  gui_app();
  cpplan::test::TempDir dir;
  MainWindow w(shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  QueryInput in = flux(8, 512, 512);  // eager diffusers, short kernels: host-bound blocks
  in.text_encoder = cpplan::TextEncoderPlacement::kSequential;  // the encoding phase loads the encoder
  plan_and_wait(w, in);
  REQUIRE(w.selected_plan() == 0);
  const auto& pr = *w.plan_model()->plan(0).predicted;

  auto* breakdown = w.plan_detail()->findChild<cpplan::gui::BreakdownChart*>();
  REQUIRE(breakdown != nullptr);
  const auto step_series = breakdown->chart()->series();
  REQUIRE(step_series.size() == 1);
  double step_sum = 0, host_beyond = 0;
  for (QBarSet* set : static_cast<QAbstractBarSeries*>(step_series.front())->barSets()) {
    step_sum += set->sum();
    if (set->label() == "host beyond GPU") host_beyond = set->sum();
  }
  CHECK(step_sum == Approx(pr.calibrated ? pr.uncalibrated_step_ms : pr.step_ms));
  bool host_bound = false;
  for (int i = 0; i < pr.block_count; ++i) host_bound = host_bound || pr.blocks[i].host_bound();
  CHECK((host_beyond > 0) == (host_bound || pr.step_rest.host_bound()));
  CHECK(breakdown->chart()->title().contains(QStringLiteral("host %1 ms").arg(pr.host_ms, 0, 'f', 2)));

  auto* memory = w.plan_detail()->findChild<cpplan::gui::MemoryChart*>();
  REQUIRE(memory != nullptr);
  const auto memory_series = memory->chart()->series();
  REQUIRE(memory_series.size() == 1);
  const auto sets = static_cast<QAbstractBarSeries*>(memory_series.front())->barSets();
  double phase[4] = {0, 0, 0, 0};  // decoding, denoising, encoding, loading (bottom-up)
  bool working = false;
  for (QBarSet* set : sets) {
    for (int k = 0; k < 4; ++k) phase[k] += set->at(k);
    if (set->label() == "working set") {  // each phase's own bytes
      working = true;
      CHECK(set->at(2) == Approx(pr.memory.text_encode / cpplan::kGiB));
      CHECK(set->at(0) == Approx(pr.memory.vae_decode / cpplan::kGiB));
    }
  }
  CHECK(working);
  // Each bar is the cost model's phase, the runtime's reserve and the load phase included.
  const auto phases = pr.memory.phases();
  for (int k = 0; k < 4; ++k) CHECK(phase[3 - k] == Approx(phases[k] / cpplan::kGiB));
  CHECK(std::max({phase[0], phase[1], phase[2], phase[3]}) == Approx(pr.peak_mem_bytes / cpplan::kGiB));
  CHECK(memory->chart()->title().contains(QStringLiteral("Peak memory %1 of").arg(pr.peak_mem_bytes / cpplan::kGiB, 0, 'f', 1)));
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
  CHECK(ok.options.input.text_encoder == cpplan::TextEncoderPlacement::kOffloaded);  // the alias
  CHECK(!ok.options.input.vae);
  CHECK(ok.options.input.runtime.empty());  // the framework's
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

TEST_CASE("cpplan-gui's --runtime, --text-encoder and --vae: the CLI's values and one-line errors", "[gui][args]") {
  auto parse = [](std::vector<const char*> argv) {
    argv.insert(argv.begin(), "cpplan-gui");
    return cpplan::gui::parse_args(static_cast<int>(argv.size()), argv.data(), "");
  };
  auto ok = parse({"--runtime", "compiled", "--text-encoder", "sharded", "--vae", "parallel"});
  REQUIRE(ok.exit_code == -1);
  CHECK(ok.options.input.runtime == "compiled");
  CHECK(ok.options.input.text_encoder == cpplan::TextEncoderPlacement::kSharded);
  CHECK(ok.options.input.vae == cpplan::VaePlacement::kParallel);
  auto defaults = parse({});
  REQUIRE(defaults.exit_code == -1);
  CHECK(defaults.options.input.runtime.empty());  // the framework's
  CHECK(!defaults.options.input.text_encoder);
  CHECK(!defaults.options.input.vae);
  auto both = parse({"--offload-text-encoders", "--text-encoder", "offloaded"});  // the alias agrees
  REQUIRE(both.exit_code == -1);
  CHECK(both.options.input.text_encoder == cpplan::TextEncoderPlacement::kOffloaded);

  auto te = parse({"--text-encoder", "gpu"});
  CHECK(te.exit_code == 3);
  CHECK(te.message == "cpplan-gui: --text-encoder = gpu: must be replicated, offloaded, sequential, sharded, fully-sharded or fully-sharded-host");
  auto vae = parse({"--vae", "tile"});
  CHECK(vae.exit_code == 3);
  CHECK(vae.message == "cpplan-gui: --vae = tile: must be single, parallel, tiled or sliced");
  auto contradiction = parse({"--offload-text-encoders", "--text-encoder", "sharded"});
  CHECK(contradiction.exit_code == 3);
  CHECK(contradiction.message == "cpplan-gui: --offload-text-encoders: contradicts --text-encoder = sharded");
  auto runtime = parse({"--runtime", "torch"});
  CHECK(runtime.exit_code == 3);
  CHECK(runtime.message.rfind("cpplan-gui: --runtime = torch: ", 0) == 0);
  CHECK(runtime.message.find('\n') == std::string::npos);
  auto empty = parse({"--text-encoder", "auto"});  // "auto" is the GUI's word for leaving it out, not a value
  CHECK(empty.exit_code == 3);
}
