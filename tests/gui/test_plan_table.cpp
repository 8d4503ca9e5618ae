// The plans table's adapters over real planner results: one row per plan, the CLI's columns
// and formatting (with the text-encoder/VAE placement and whether the step is host- or
// GPU-bound), sorting by each number with invalid plans last, and the three filters.
#include <catch2/catch.hpp>

#include <QStringList>
#include <algorithm>
#include <functional>

#include "core/units.h"
#include "gui/plan_table_model.h"
#include "gui/planning.h"
#include "tests/gui/gui_support.h"

using cpplan::gui::PlanFilterProxy;
using cpplan::gui::PlanTableModel;
using cpplan::gui::QueryInput;

namespace {

cpplan::gui::PlanResult plan(const std::string& hardware, int gpus, int width, int height,
                             std::function<void(QueryInput&)> edit = {}) {
  QueryInput in;
  in.hardware = hardware;
  in.gpus = gpus;
  in.width = width;
  in.height = height;
  if (edit) edit(in);
  auto r = cpplan::gui::compute_plans(cpplan::test::shared_catalog(), in, 1);
  if (!r.error.empty()) throw std::runtime_error(r.error);
  return r;
}

QString cell(const QAbstractItemModel& m, int row, int column, int role = Qt::DisplayRole) {
  return m.index(row, column).data(role).toString();
}

}  // namespace

TEST_CASE("The table has one row per plan with the CLI's columns and figures", "[gui][table]") {
  const auto r = plan("h100-sxm", 4, 1008, 1008);
  // 8 valid of 28: the 5 of the anything modes and TP, and pipefusion 4 with 4, 8 and 16 patches
  // (tests/planner/test_enumerate.cpp counts them by hand). Of the 30 invalid, the 10
  // data-parallel ones (dp 2 with ring 2 (2 variants), ulysses 2 (2), tp 2 or cfg 2; dp 4; dp 2 x
  // pipefusion 2 with 3 patch counts) are not listed for one image: 30 - 10 = 20.
  REQUIRE(r.report.valid_count == 8);  // as `cpplan --gpus 4 --res 1008x1008` prints
  REQUIRE(r.report.invalid_count == 20);
  PlanTableModel model;
  model.set_plans(r.report.plans);
  REQUIRE(model.rowCount() == 28);
  REQUIRE(model.columnCount() == PlanTableModel::kColumnCount);
  QStringList headers;
  for (int c = 0; c < model.columnCount(); ++c) headers << model.headerData(c, Qt::Horizontal).toString();
  CHECK(headers.join(QStringLiteral("|")).toStdString() ==
        "rank|plan|CP variant|dtype|cache|step ms|steps/s|image s|peak GiB|fits|text enc / VAE|bound|frameworks|"
        "reasons");

  const auto& top = r.report.plans.front();
  const auto& pr = *top.predicted;
  CHECK(cell(model, 0, PlanTableModel::kRank) == "1");
  CHECK(cell(model, 0, PlanTableModel::kPlan).toStdString() == cpplan::plan_label(top.plan.config));
  CHECK(cell(model, 0, PlanTableModel::kVariant).toStdString() == std::string(cpplan::display_name(top.plan.variant)));
  CHECK(cell(model, 0, PlanTableModel::kStepMs) == QString::number(pr.step_ms, 'f', 2));
  CHECK(cell(model, 0, PlanTableModel::kStepsPerSec) == QString::number(pr.steps_per_sec, 'f', 2));
  CHECK(cell(model, 0, PlanTableModel::kImageS) == QString::number(pr.image_ms / 1e3, 'f', 2));
  CHECK(cell(model, 0, PlanTableModel::kPeakGiB) == QString::number(pr.peak_mem_bytes / cpplan::kGiB, 'f', 1));
  CHECK(cell(model, 0, PlanTableModel::kFits) == "yes");
  CHECK(cell(model, 0, PlanTableModel::kPlacement).toStdString() ==
        std::string(cpplan::to_string(pr.pipeline.text_encoder)) + "/" + std::string(cpplan::to_string(pr.pipeline.vae)));
  bool host_bound = false;
  for (int i = 0; i < pr.block_count; ++i) host_bound = host_bound || pr.blocks[i].host_bound();
  CHECK(cell(model, 0, PlanTableModel::kBound) == (host_bound ? "host" : "GPU"));
  CHECK(cell(model, 0, PlanTableModel::kBound, Qt::ToolTipRole).contains("blocks host-bound"));
  CHECK(cell(model, 0, PlanTableModel::kFrameworks) == "diffusers, cache-dit");
  CHECK(cell(model, 0, PlanTableModel::kReasons).isEmpty());
  CHECK(cell(model, 4, PlanTableModel::kRank) == "5");
}

TEST_CASE("An invalid row shows every reason, no figures, and sorts last", "[gui][table][invalid]") {
  const auto r = plan("h100-sxm", 4, 1008, 1008);
  PlanTableModel model;
  model.set_plans(r.report.plans);
  const int row = static_cast<int>(
      std::find_if(r.report.plans.begin(), r.report.plans.end(), [](const auto& p) { return !p.plan.valid(); }) -
      r.report.plans.begin());
  REQUIRE(row == r.report.valid_count);  // the planner ranks invalid plans last
  const auto& reasons = r.report.plans[row].plan.reasons();
  REQUIRE(!reasons.empty());
  QStringList expected;
  for (const auto& s : reasons) expected << QString::fromStdString(s);
  CHECK(cell(model, row, PlanTableModel::kReasons) == expected.join(QStringLiteral("; ")));
  CHECK(cell(model, row, PlanTableModel::kFits) == "invalid");
  CHECK(cell(model, row, PlanTableModel::kRank) == "-");
  CHECK(cell(model, row, PlanTableModel::kStepMs).isEmpty());
  CHECK(cell(model, row, PlanTableModel::kPlacement).isEmpty());
  CHECK(cell(model, row, PlanTableModel::kBound).isEmpty());
  CHECK(cell(model, row, PlanTableModel::kPlan, Qt::ToolTipRole).contains(expected.front()));

  // A Ring plan on 4 GPUs at 1008x1008: 3969 image tokens do not split in 4.
  bool found = false;
  for (int i = 0; i < model.rowCount(); ++i)
    if (cell(model, i, PlanTableModel::kPlan) == "ring 4" && cell(model, i, PlanTableModel::kVariant) == "Ring") {
      CHECK(cell(model, i, PlanTableModel::kReasons).contains("ring_degree = 4: must divide image tokens = 3969"));
      found = true;
    }
  CHECK(found);
}

TEST_CASE("The proxy hides invalid plans until asked, and filters by memory and variant", "[gui][table][filter]") {
  const auto r = plan("rtx4090", 8, 1024, 1024);  // 24 GiB: some valid plans do not fit
  int fitting = 0, ulysses = 0, ulysses_valid = 0;
  for (const auto& p : r.report.plans) {
    fitting += p.predicted && p.predicted->fits_memory;
    if (p.plan.variant == cpplan::CpVariant::kUlysses) {
      ++ulysses;
      ulysses_valid += p.plan.valid();
    }
  }
  REQUIRE(fitting > 0);
  REQUIRE(fitting < r.report.valid_count);
  PlanTableModel model;
  model.set_plans(r.report.plans);
  PlanFilterProxy proxy;
  proxy.setSourceModel(&model);

  CHECK(proxy.rowCount() == r.report.valid_count);
  proxy.set_show_invalid(true);
  CHECK(proxy.rowCount() == r.report.valid_count + r.report.invalid_count);
  proxy.set_variant(cpplan::CpVariant::kUlysses);
  CHECK(proxy.rowCount() == ulysses);
  proxy.set_show_invalid(false);
  CHECK(proxy.rowCount() == ulysses_valid);
  proxy.set_variant(std::nullopt);
  proxy.set_fits_only(true);
  CHECK(proxy.rowCount() == fitting);
  for (int i = 0; i < proxy.rowCount(); ++i) CHECK(cell(proxy, i, PlanTableModel::kFits) == "yes");
  proxy.set_fits_only(false);
  CHECK(proxy.rowCount() == r.report.valid_count);
}

TEST_CASE("Sorting by step time orders the valid plans by it, invalid ones last", "[gui][table][sort]") {
  const auto r = plan("rtx4090", 8, 1024, 1024);
  PlanTableModel model;
  model.set_plans(r.report.plans);
  PlanFilterProxy proxy;
  proxy.setSourceModel(&model);
  proxy.set_show_invalid(true);

  proxy.sort(PlanTableModel::kStepMs, Qt::AscendingOrder);
  std::vector<double> times;
  for (int i = 0; i < r.report.valid_count; ++i) times.push_back(cell(proxy, i, PlanTableModel::kStepMs).toDouble());
  CHECK(std::is_sorted(times.begin(), times.end()));
  // the fastest plan does not fit in 24 GiB, so the planner ranks it below the fitting ones
  CHECK(cell(proxy, 0, PlanTableModel::kFits) == "NO");
  for (int i = r.report.valid_count; i < proxy.rowCount(); ++i) CHECK(cell(proxy, i, PlanTableModel::kFits) == "invalid");

  proxy.sort(PlanTableModel::kStepsPerSec, Qt::AscendingOrder);  // fastest first here too
  CHECK(cell(proxy, 0, PlanTableModel::kStepMs).toDouble() == Approx(times.front()));

  proxy.sort(PlanTableModel::kRank, Qt::AscendingOrder);  // back to the planner's ranking
  for (int i = 0; i < proxy.rowCount(); ++i)
    CHECK(proxy.mapToSource(proxy.index(i, 0)).row() == i);
  CHECK(cell(proxy, 0, PlanTableModel::kFits) == "yes");

  proxy.sort(PlanTableModel::kPeakGiB, Qt::DescendingOrder);  // largest first, invalid still last
  std::vector<double> peaks;
  for (int i = 0; i < r.report.valid_count; ++i) peaks.push_back(cell(proxy, i, PlanTableModel::kPeakGiB).toDouble());
  CHECK(std::is_sorted(peaks.rbegin(), peaks.rend()));
  for (int i = r.report.valid_count; i < proxy.rowCount(); ++i) CHECK(cell(proxy, i, PlanTableModel::kFits) == "invalid");
}

TEST_CASE("A forced text encoder shows in every valid row's placement column", "[gui][table][placement]") {
  const auto chosen = plan("h100-sxm", 4, 1024, 1024);
  const auto forced = plan("h100-sxm", 4, 1024, 1024, [](QueryInput& in) {
    in.text_encoder = cpplan::TextEncoderPlacement::kSharded;
    in.vae = cpplan::VaePlacement::kParallel;
  });
  REQUIRE(forced.report.valid_count == chosen.report.valid_count);
  PlanTableModel model;
  model.set_plans(chosen.report.plans);
  bool sharded_chosen = false;  // the planner does not shard the encoders of a plan that fits without
  for (int i = 0; i < chosen.report.valid_count; ++i)
    sharded_chosen = sharded_chosen || cell(model, i, PlanTableModel::kPlacement).startsWith("sharded");
  CHECK(!sharded_chosen);
  model.set_plans(forced.report.plans);
  for (int i = 0; i < forced.report.valid_count; ++i) CHECK(cell(model, i, PlanTableModel::kPlacement) == "sharded/parallel");
}

TEST_CASE("The bound column says host for host-bound steps and sorts GPU-bound first", "[gui][table][bound]") {
  // Eager diffusers on 2 H100s at 1280x1280: some plans' kernels are short enough to wait on
  // Python's dispatch, others not (as `cpplan --json --all` says per block).
  const auto r = plan("h100-sxm", 2, 1280, 1280);
  PlanTableModel model;
  model.set_plans(r.report.plans);
  int host = 0;
  for (int i = 0; i < r.report.valid_count; ++i) {
    const auto& pr = *r.report.plans[i].predicted;
    bool any = false;
    for (int b = 0; b < pr.block_count; ++b) any = any || pr.blocks[b].host_bound();
    CHECK(cell(model, i, PlanTableModel::kBound) == (any ? "host" : "GPU"));
    host += any;
  }
  REQUIRE(host > 0);
  REQUIRE(host < r.report.valid_count);  // both kinds, so the sort has something to order

  PlanFilterProxy proxy;
  proxy.setSourceModel(&model);
  proxy.set_show_invalid(true);
  proxy.sort(PlanTableModel::kBound, Qt::AscendingOrder);
  const int gpu = r.report.valid_count - host;
  for (int i = 0; i < r.report.valid_count; ++i) CHECK(cell(proxy, i, PlanTableModel::kBound) == (i < gpu ? "GPU" : "host"));
  for (int i = r.report.valid_count; i < proxy.rowCount(); ++i) CHECK(cell(proxy, i, PlanTableModel::kFits) == "invalid");
  proxy.sort(PlanTableModel::kPlacement, Qt::DescendingOrder);  // a text column sorts too, invalid still last
  for (int i = r.report.valid_count; i < proxy.rowCount(); ++i) CHECK(cell(proxy, i, PlanTableModel::kFits) == "invalid");
}
