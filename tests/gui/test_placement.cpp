// The selected plan's placement on a topology in the plan detail: which ranks form each group,
// whether a group spans nodes, and each group's raw and effective bandwidth, as
// `cpplan --topology dgx-h100 --nodes 2 --explain` shows them; nothing without a topology.
#include <catch2/catch.hpp>

#include <QEventLoop>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <cstdio>
#include <string>

#include "gui/main_window.h"
#include "gui/plan_detail.h"
#include "gui/plan_table_model.h"
#include "tests/gui/gui_support.h"

using cpplan::gui::QueryInput;
using cpplan::test::shared_catalog;

namespace {

QueryInput two_dgx_nodes() {
  QueryInput in;
  in.topology = "dgx-h100";
  in.nodes = 2;
  in.gpus = 0;
  in.hardware = "";
  return in;
}

const cpplan::planner::RankedPlan* find_plan(const cpplan::gui::PlanResult& r, int ring, int ulysses) {
  for (const auto& p : r.report.plans) {
    const auto& c = p.plan.config;
    if (p.plan.valid() && c.ring() == ring && c.ulysses() == ulysses && c.tp() == 1 && c.cfg_degree == 1 &&
        c.dp_degree == 1 && !c.context_parallel_config.ulysses_anything && !c.context_parallel_config.ring_anything)
      return &p;
  }
  return nullptr;
}

// The row of `group` in the bandwidth table (below its header): the columns, the name first.
QStringList table_row(const QString& text, const QString& group) {
  bool in_table = false;
  for (const QString& line : text.split('\n')) {
    if (line.contains("busbw GB/s")) in_table = true;
    const QStringList cols = line.split(QRegularExpression(QStringLiteral("\\s+")), Qt::SkipEmptyParts);
    if (in_table && cols.size() >= 10 && cols[0] == group) return cols;
  }
  return {};
}

}  // namespace

TEST_CASE("Ulysses 8 x Ring 2 on two DGX H100 nodes: Ulysses inside a node, Ring across", "[gui][placement]") {
  const auto r = cpplan::gui::compute_plans(shared_catalog(), two_dgx_nodes(), 1);
  REQUIRE(r.error.empty());
  const auto* p = find_plan(r, 2, 8);
  REQUIRE(p != nullptr);
  REQUIRE(p->placement.has_value());
  const QString text = QString::fromStdString(cpplan::gui::topology_placement_text(*r.query, *p));
  INFO(text.toStdString());
  CHECK(text.startsWith("placement on dgx-h100 x 2 nodes (16 GPUs), axes innermost first: ulysses 8, ring 2"));
  // Ranks are numbered with the innermost axis fastest: the 8 Ulysses ranks of a group are the 8
  // GPUs of one node; each Ring pair joins GPU i of node 0 (rank i) and of node 1 (rank 8 + i).
  CHECK(text.contains(QRegularExpression(QStringLiteral("ulysses\\s+8\\s+within a node\\s+\\[0-7\\] \\[8-15\\]"))));
  CHECK(text.contains(QRegularExpression(
      QStringLiteral("ring\\s+2\\s+across 2 nodes\\s+\\[0 8\\] \\[1 9\\] \\[2 10\\] \\.\\.\\. \\(8 groups\\)"))));
  // dgx-h100.toml: NVLink4 450 GB/s per direction through the NVSwitch; one 400 Gb/s (50 GB/s)
  // NIC per GPU, so the 8 concurrent Ring pairs each get a whole NIC.
  const QStringList ulysses = table_row(text, "ulysses");
  REQUIRE(ulysses.size() >= 10);
  CHECK(ulysses[1] == "8");        // ranks
  CHECK(ulysses[2] == "2");        // groups: 16 / 8
  CHECK(ulysses[3] == "all_to_all");
  CHECK(ulysses[4] == "1");        // spans "1 node"
  CHECK(ulysses[6].toDouble() == Approx(450.0));  // raw GB/s
  const QStringList ring = table_row(text, "ring");
  REQUIRE(ring.size() >= 10);
  CHECK(ring[1] == "2");
  CHECK(ring[2] == "8");
  CHECK(ring[4] == "2");           // "2 nodes"
  CHECK(ring[6].toDouble() == Approx(50.0));
  // effective = raw x efficiency, the efficiency at most 1: each column agrees with the others
  for (const QStringList& row : {ulysses, ring}) {
    const double raw = row[6].toDouble(), eff = row[7].toDouble(), busbw = row[8].toDouble();
    CHECK(eff > 0);
    CHECK(eff <= 1.0);
    CHECK(busbw == Approx(raw * eff).margin(raw * 0.005 + 0.05));  // eff is shown to 2 decimals
  }
  CHECK(ulysses[8].toDouble() > ring[8].toDouble());  // NVLink beats the network
}

TEST_CASE("Without a topology the plan detail shows no placement", "[gui][placement]") {
  cpplan::test::gui_app();
  QueryInput in;
  in.gpus = 4;
  const auto r = cpplan::gui::compute_plans(shared_catalog(), in, 1);
  REQUIRE(r.error.empty());
  const auto* p = find_plan(r, 1, 4);
  REQUIRE(p != nullptr);
  CHECK(!p->placement.has_value());
  CHECK(cpplan::gui::topology_placement_text(*r.query, *p).empty());
  cpplan::gui::PlanDetail detail;
  detail.set_plan(&*r.query, p);
  CHECK(detail.topology_text().isEmpty());
  CHECK(!detail.placement_shown());
}

TEST_CASE("The window shows the selected plan's placement on two DGX H100 nodes", "[gui][placement][window]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  cpplan::gui::MainWindow window(shared_catalog(), QString::fromStdString(dir.file("none.db")));
  window.set_query(two_dgx_nodes());
  while (window.planning()) REQUIRE(cpplan::test::wait_for(&window, &cpplan::gui::MainWindow::plans_shown, 30000));
  REQUIRE(window.result().has_value());
  REQUIRE(window.result()->error.empty());
  CHECK(window.result()->query->gpus == 16);
  REQUIRE(window.selected_plan() >= 0);
  const QString text = window.plan_detail()->topology_text();
  INFO(text.toStdString());
  CHECK(text.startsWith("placement on dgx-h100 x 2 nodes (16 GPUs)"));
  CHECK(text.contains("busbw GB/s"));
  CHECK(window.plan_detail()->placement_shown());  // a topology query opens on the placement
  // a symmetric node: the identity device order (docs/topology.md: others only on asymmetric nodes)
  CHECK(text.contains("device_order = 0,1,2,3,4,5,6,7"));

  // back to no topology: no placement, the charts shown again
  QueryInput plain;
  plain.gpus = 4;
  window.set_query(plain);
  while (window.planning()) REQUIRE(cpplan::test::wait_for(&window, &cpplan::gui::MainWindow::plans_shown, 30000));
  CHECK(window.plan_detail()->topology_text().isEmpty());
  CHECK(!window.plan_detail()->placement_shown());
}

TEST_CASE("A fully-sharded plan's placement lists its fs groups of consecutive ranks",
          "[gui][placement][fully_shard]") {
  // ulysses 8 x fs 4 on one 8-GPU node (every plan listed, as cpplan --all): the weight groups are
  // ranks 0-3 and 4-7, as the CLI's check prints them (tests/cli/test_topology_cli.cpp).
  QueryInput in;
  in.topology = "8x-l20-pcie";
  in.gpus = 0;
  in.hardware = "";
  in.model = "flux.2-dev";
  in.width = in.height = 1024;
  in.all_plans = true;
  const auto r = cpplan::gui::compute_plans(shared_catalog(), in, 1);
  REQUIRE(r.error.empty());
  const cpplan::planner::RankedPlan* p = nullptr;
  for (const auto& candidate : r.report.plans)
    if (candidate.plan.valid() && plan_label(candidate.plan.config) == "ulysses 8 x fs 4" &&
        candidate.plan.variant == cpplan::CpVariant::kUlysses)
      p = &candidate;
  REQUIRE(p != nullptr);
  const QString text = QString::fromStdString(cpplan::gui::topology_placement_text(*r.query, *p));
  INFO(text.toStdString());
  CHECK(text.contains(QRegularExpression(QStringLiteral("\\n  fs\\s+4\\s+within a node\\s+\\[0-3\\] \\[4-7\\]"))));
  const QStringList fs = table_row(text, "fs");  // its weight gathers in the bandwidth table
  REQUIRE(fs.size() >= 10);
  CHECK(fs[1] == "4");
  CHECK(fs[2] == "2");
  CHECK(fs[3] == "all_gather");
  // The plan detail names the degree.
  cpplan::test::gui_app();
  cpplan::gui::PlanDetail detail;
  detail.set_plan(&*r.query, p);
  CHECK(detail.summary_text().contains(QStringLiteral("ulysses 8 x fs 4")));
  CHECK(detail.topology_text() == text);
}

TEST_CASE("The placement tab's lines are the CLI's: one module (session/engine/explain.h) for both fronts",
          "[gui][placement][explain]") {
  // ulysses 8 x ring 2 on two DGX H100 nodes: every line the GUI shows is a line of
  // `cpplan check ... --explain` for the same plan (the CLI adds the launch lines, DeviceMesh, the
  // cost terms and what priced each collective).
  const auto r = cpplan::gui::compute_plans(shared_catalog(), two_dgx_nodes(), 1);
  REQUIRE(r.error.empty());
  const auto* p = find_plan(r, 2, 8);
  REQUIRE(p != nullptr);
  const std::string text = cpplan::gui::topology_placement_text(*r.query, *p);
  REQUIRE(!text.empty());
  std::string command = std::string(CPPLAN_BINARY) +
                        " check --topology dgx-h100 --nodes 2 --ring 2 --ulysses 8 --explain 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string cli;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) cli.append(buffer, n);
  pclose(pipe);
  INFO(text);
  INFO(cli);
  std::size_t start = 0, lines = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    start = end == std::string::npos ? text.size() : end + 1;
    if (line.empty()) continue;
    ++lines;
    CHECK(cli.find("\n" + line + "\n") != std::string::npos);
  }
  CHECK(lines >= 8);  // the header, 2 groups, the device order, the table's header, 2 rows and their bottlenecks
}
