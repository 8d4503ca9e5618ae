#pragma once
// The cpplan-gui window: the query panel on the left; tabs for the plans (table, Pareto chart,
// selected plan's details), the heatmap, the run history, runs, the store's calibrations,
// sweeps and the fleet (replicas for throughput). Planning and the heatmap run
// on Qt's thread pool; a new request while one runs replaces any waiting one, and a result
// older than the newest request is dropped, so the window never waits on the planner.

#include <QFutureWatcher>
#include <QMainWindow>
#include <cstdint>
#include <optional>

#include "gui/planning.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QTableView;
class QTabWidget;

namespace cpplan::gui {

class CalibrationPanel;
class FleetPanel;
class HeatmapView;
class HistoryPanel;
class ParetoChart;
class PlanDetail;
class PlanFilterProxy;
class PlanTableModel;
class QueryPanel;
class RecommendationView;
class RunPanel;
class TunePanel;
class SweepPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // `db_path` "": data::Store::default_path(). Runs use the cpplan binary beside the executable.
  MainWindow(CatalogPtr catalog, const QString& db_path, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Shows `in` and plans it.
  void set_query(const QueryInput& in);
  // Once the plans of the current query are shown (and the heatmap, when its tab is current),
  // renders the window to `path` and emits screenshot_taken.
  void screenshot_when_ready(const QString& path);
  // Makes the tab titled `name` (plans, heatmap, history, run, calibration, sweep, fleet; any case)
  // current; false if none.
  bool show_tab(const QString& name);

  // The selected plan's index in the model's vector, -1 when none.
  int selected_plan() const;
  void select_plan_row(int proxy_row);
  bool planning() const;  // a plan request is running or waiting: plans_shown() will follow
  QString status_text() const;
  const std::optional<PlanResult>& result() const { return result_; }

  QueryPanel* query_panel() { return query_; }
  PlanTableModel* plan_model() { return plans_; }
  PlanFilterProxy* plan_proxy() { return proxy_; }
  QTableView* plan_table() { return table_; }
  QCheckBox* show_invalid_box() { return show_invalid_; }
  QCheckBox* fits_only_box() { return fits_only_; }
  QComboBox* variant_box() { return variant_; }
  PlanDetail* plan_detail() { return detail_; }
  ParetoChart* pareto() { return pareto_; }
  HeatmapView* heatmap() { return heatmap_; }
  HistoryPanel* history() { return history_; }
  RunPanel* run_panel() { return run_; }
  TunePanel* tune_panel() { return tune_; }
  CalibrationPanel* calibration() { return calibration_; }
  SweepPanel* sweep() { return sweep_; }
  FleetPanel* fleet() { return fleet_; }
  RecommendationView* recommendation() { return recommendation_; }
  QTabWidget* tabs() { return tabs_; }

 signals:
  void plans_shown(int rows);  // a plan result was applied; rows: the table's visible rows
  void heatmap_shown();
  void screenshot_taken(bool ok, const QString& message);

 private:
  void request_plan(const QueryInput& in);
  void start_plan();
  void apply_plan(PlanResult r);
  void request_heatmap(const QueryInput& in);
  void start_heatmap();
  void on_selection();
  void update_counts();
  void maybe_screenshot();
  void take_screenshot();

  CatalogPtr catalog_;
  QueryPanel* query_;
  PlanTableModel* plans_;
  PlanFilterProxy* proxy_;
  QTableView* table_;
  QCheckBox* show_invalid_;
  QCheckBox* fits_only_;
  QComboBox* variant_;
  QLabel* counts_;
  PlanDetail* detail_;
  ParetoChart* pareto_;
  HeatmapView* heatmap_;
  QLabel* heatmap_title_;
  HistoryPanel* history_;
  RunPanel* run_;
  TunePanel* tune_;
  CalibrationPanel* calibration_;
  SweepPanel* sweep_;
  FleetPanel* fleet_;
  RecommendationView* recommendation_;
  QTabWidget* tabs_;
  QLabel* status_;

  // in flight until its finished() is handled (the future itself may be done earlier)
  QFutureWatcher<PlanResult> plan_watcher_;
  bool plan_in_flight_ = false;
  std::optional<QueryInput> plan_pending_;
  std::uint64_t plan_generation_ = 0;
  std::optional<PlanResult> result_;  // the shown query (its report's plans moved into plans_)

  QFutureWatcher<HeatmapResult> heat_watcher_;
  bool heat_in_flight_ = false;
  std::optional<QueryInput> heat_pending_;
  std::optional<QueryInput> heat_last_;  // the last requested heatmap query (size and GPUs ignored)
  std::uint64_t heat_generation_ = 0;

  QString screenshot_path_;
};

}  // namespace cpplan::gui
