#pragma once
// The Fleet tab: the query's GPUs split into replicas (planner/fleet.h, as `cpplan --objective
// throughput`). A scatter of latency per image against images per hour of every candidate split
// (each valid plan of each replica size, as many replicas as fit), the Pareto frontier as a line,
// the SLO as a vertical line when set; the best split named above. The fleet is computed on Qt's
// thread pool from the plans tab's query and cost model; a result older than the newest request
// is dropped.

#include <QChartView>
#include <QFutureWatcher>
#include <QWidget>
#include <cstdint>
#include <memory>
#include <optional>

#include "gui/planning.h"

class QDoubleSpinBox;
class QLabel;

namespace cpplan::gui {

// One fleet computation: the report, or why there is none.
struct FleetResult {
  std::uint64_t generation = 0;
  std::optional<double> slo_ms;
  std::optional<planner::FleetReport> report;
  std::string error;
};

// What a fleet is computed from: the request the Engine resolved for the plans (its query, cost
// model and ranking options, as `cpplan --objective throughput` plans with them), or why there is none.
struct FleetRequest {
  std::shared_ptr<const session::Resolved> resolved;  // null: `error` says why
  std::string error;
};

// planner::plan_fleet of the request (no topology: refused as not done), latency target slo_ms.
FleetResult compute_fleet(const FleetRequest& request, std::optional<double> slo_ms, std::uint64_t generation);

// The best usable split in words: the mixed one when the report has it.
QString best_split_text(const planner::FleetReport& report);

// Latency in s per image (x) against images per hour (y).
class FleetChart : public QChartView {
  Q_OBJECT

 public:
  explicit FleetChart(QWidget* parent = nullptr);
  void set_report(const planner::FleetReport* report, std::optional<double> slo_ms);  // null: empty
  int point_count() const { return points_; }
  int frontier_count() const { return frontier_; }
  bool shows_slo() const { return slo_; }

 private:
  int points_ = 0;
  int frontier_ = 0;
  bool slo_ = false;
};

class FleetPanel : public QWidget {
  Q_OBJECT

 public:
  explicit FleetPanel(QWidget* parent = nullptr);
  ~FleetPanel() override;

  // The query to split (from the plans tab's result); computes its fleet.
  void set_request(FleetRequest request);
  // The SLO in ms (<= 0: none); computes the fleet again.
  void set_slo_ms(double ms);
  bool busy() const { return in_flight_ || pending_; }
  const std::optional<FleetResult>& result() const { return result_; }
  QDoubleSpinBox* slo_box() { return slo_; }
  FleetChart* chart() { return chart_; }
  QString best_text() const;

 signals:
  void fleet_shown();

 private:
  void request();
  void start();

  QDoubleSpinBox* slo_;
  QLabel* best_;
  FleetChart* chart_;
  FleetRequest request_;
  QFutureWatcher<FleetResult> watcher_;
  bool in_flight_ = false;
  bool pending_ = false;
  std::uint64_t generation_ = 0;
  std::optional<FleetResult> result_;
};

}  // namespace cpplan::gui
