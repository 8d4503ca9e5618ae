// The Fleet tab with real widgets, off-screen: the window's query split into replicas, the
// scatter of every fitting candidate split, the Pareto frontier, the SLO line and the best split;
// the counts checked against the Planner called directly for each replica size.
#include <catch2/catch.hpp>

#include <QChart>
#include <QDoubleSpinBox>
#include <QLineSeries>
#include <QScatterSeries>
#include <QTabWidget>

#include "gui/fleet_panel.h"
#include "gui/main_window.h"
#include "tests/gui/gui_support.h"

using cpplan::gui::FleetPanel;
using cpplan::gui::MainWindow;
using cpplan::gui::QueryInput;
using cpplan::test::gui_app;
using cpplan::test::shared_catalog;
using cpplan::test::wait_for;

namespace {

// Fitting, valid, dp 1 computations (one per merged row) of q on every k = 1..gpus, batch 1:
// the candidate splits, counted with the Planner itself.
int candidate_count(const cpplan::planner::Planner& planner, cpplan::Query q, int gpus) {
  int n = 0;
  for (int k = 1; k <= gpus; ++k) {
    q.gpus = k;
    q.batch = 1;
    const auto report = planner.plan(q);
    for (const auto& row : cpplan::planner::merged_rows(report))
      n += row.plan->plan.config.dp_degree == 1 && row.plan->predicted->fits_memory;
  }
  return n;
}

QLineSeries* series_named(QChart* chart, const QString& prefix) {
  for (QAbstractSeries* s : chart->series())
    if (s->name().startsWith(prefix)) return qobject_cast<QLineSeries*>(s);
  return nullptr;
}

}  // namespace

TEST_CASE("The Fleet tab plots every candidate split, the frontier, the SLO line and names the best split",
          "[gui][fleet]") {
  gui_app();
  cpplan::test::TempDir dir;
  MainWindow w(shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  REQUIRE(w.show_tab("fleet"));
  CHECK(w.tabs()->currentWidget() == w.fleet());
  QueryInput in;
  in.gpus = 8;
  w.set_query(in);
  // the plans of the query first, then its fleet
  while (w.planning()) REQUIRE(wait_for(&w, &MainWindow::plans_shown));
  while (w.fleet()->busy()) REQUIRE(wait_for(w.fleet(), &FleetPanel::fleet_shown));
  REQUIRE(w.fleet()->result().has_value());
  REQUIRE(w.fleet()->result()->report.has_value());
  const auto& fleet = *w.fleet()->result()->report;
  CHECK(fleet.gpus == 8);

  const auto& r = *w.result();
  const cpplan::planner::Planner planner(r.recommendation->model->cost());
  const int expected = candidate_count(planner, *r.query, 8);
  CHECK(w.fleet()->chart()->point_count() == expected);
  CHECK(w.fleet()->chart()->frontier_count() ==
        static_cast<int>(cpplan::planner::pareto_frontier(fleet.points).size()));
  CHECK(w.fleet()->chart()->frontier_count() >= 1);
  CHECK_FALSE(w.fleet()->chart()->shows_slo());
  CHECK(w.fleet()->best_text().startsWith("Best: "));
  CHECK(w.fleet()->best_text().contains("images per hour"));

  // An SLO between the fastest and the slowest candidates: the line at it, and the best split meets it.
  double fastest = 1e300, slowest = 0;
  for (const auto& p : fleet.points)
    if (p.fits) fastest = std::min(fastest, p.image_ms), slowest = std::max(slowest, p.image_ms);
  const double slo_ms = std::round((fastest + slowest) / 2);
  w.fleet()->set_slo_ms(slo_ms);
  while (w.fleet()->busy()) REQUIRE(wait_for(w.fleet(), &FleetPanel::fleet_shown));
  CHECK(w.fleet()->slo_box()->value() == slo_ms);
  CHECK(w.fleet()->chart()->shows_slo());
  QLineSeries* slo = series_named(w.fleet()->chart()->chart(), "SLO");
  REQUIRE(slo);
  REQUIRE(slo->count() == 2);
  CHECK(slo->at(0).x() == Approx(slo_ms / 1e3));
  CHECK(slo->at(1).x() == Approx(slo_ms / 1e3));
  const auto& with_slo = *w.fleet()->result()->report;
  REQUIRE(!with_slo.rows.empty());
  CHECK(with_slo.rows.front().image_ms <= slo_ms);
  QLineSeries* front = series_named(w.fleet()->chart()->chart(), "Pareto");
  REQUIRE(front);
  CHECK(front->count() == w.fleet()->chart()->frontier_count());
}

TEST_CASE("The Fleet tab says why a query with a topology has no fleet", "[gui][fleet]") {
  gui_app();
  QueryInput in;
  in.topology = "dgx-h100";
  in.hardware.clear();
  in.gpus = 0;
  auto resolved = cpplan::gui::resolve(shared_catalog(), in);
  REQUIRE(resolved);
  cpplan::gui::FleetRequest request{std::make_shared<const cpplan::session::Resolved>(*resolved), ""};
  const auto r = cpplan::gui::compute_fleet(request, std::nullopt, 1);
  CHECK_FALSE(r.report.has_value());
  CHECK(r.error == "with a topology: not done (replicas are planned without placement)");
}

TEST_CASE("The Fleet tab builds replicas from the plans the query's framework runs, as cpplan --framework does",
          "[gui][fleet][frameworks]") {
  gui_app();
  cpplan::test::TempDir dir;
  MainWindow w(shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  REQUIRE(w.show_tab("fleet"));
  // Wan2.1-14B on 11 GPUs with diffusers: diffusers has no CFG parallelism and refuses context and
  // tensor parallelism together (shared/reference/frameworks.md), so no replica uses either.
  QueryInput in;
  in.model = "wan2.1-t2v-14b";
  in.gpus = 11;
  in.framework = "diffusers";
  w.set_query(in);
  while (w.planning()) REQUIRE(wait_for(&w, &MainWindow::plans_shown));
  while (w.fleet()->busy()) REQUIRE(wait_for(w.fleet(), &FleetPanel::fleet_shown));
  REQUIRE(w.fleet()->result().has_value());
  REQUIRE(w.fleet()->result()->report.has_value());
  const auto& fleet = *w.fleet()->result()->report;
  REQUIRE(fleet.plans.framework.has_value());
  CHECK(*fleet.plans.framework == cpplan::Framework::kDiffusers);
  REQUIRE_FALSE(fleet.rows.empty());
  for (const auto& row : fleet.rows) {
    const auto& c = row.replica.plan.config;
    INFO(cpplan::plan_label(c));
    CHECK(row.replica.frameworks.has(cpplan::Framework::kDiffusers));
    CHECK(c.cfg_degree == 1);
    CHECK_FALSE((c.tp() > 1 && c.context_parallel_config.degree() > 1));
  }
}
