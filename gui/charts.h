#pragma once
// Qt Charts views of the planner's predictions: the Pareto scatter of step time against peak
// memory over every valid plan, one plan's step time per block type, and its memory stack.

#include <QChartView>
#include <optional>
#include <vector>

#include "core/plan.h"
#include "session/engine/engine.h"

class QScatterSeries;

namespace cpplan::gui {

// Predicted step ms (x) against peak GiB (y) of the valid plans; the plans no other plan beats
// on both axes are joined by the Pareto front; a horizontal line marks the GPU's memory.
class ParetoChart : public QChartView {
  Q_OBJECT

 public:
  explicit ParetoChart(QWidget* parent = nullptr);
  // `plans` as ranked by the planner; `gpu_memory_gib` is the hardware's capacity.
  // `q`: the query the plans rank for; a step cache's plans are placed at their mean step (computed
  // and cached steps together, as they rank). Null: at the step time.
  void set_plans(const std::vector<planner::RankedPlan>& plans, double gpu_memory_gib, const Query* q = nullptr);
  // Index into the plans of set_plans (-1: none) drawn larger, in red.
  void set_selected(int plan_index);
  int point_count() const { return static_cast<int>(indices_.size()); }

 signals:
  void plan_clicked(int plan_index);

 private:
  void add_points(QScatterSeries* s, const std::vector<planner::RankedPlan>& plans, bool fitting);

  std::vector<planner::RankedPlan> plans_;
  std::optional<Query> query_;  // what set_plans ranked them for
  double step_of(const planner::RankedPlan& p) const;  // the x of a predicted plan
  std::vector<int> indices_;  // plan index of every scatter point, in the order added
  QScatterSeries* selected_ = nullptr;
};

// Stacked bars: per block group (and the rest of the step), GEMM, attention, memory-bound, the
// host's time beyond the GPU's (host-bound blocks), communication and waiting at collectives,
// milliseconds of one denoising step; each bar is its group's BlockCost::time_ms().
class BreakdownChart : public QChartView {
  Q_OBJECT

 public:
  explicit BreakdownChart(QWidget* parent = nullptr);
  void set_prediction(const costmodel::Prediction* p);  // null: empty chart
};

// One stacked bar per phase of an image (encoding the prompt, denoising, decoding) of the memory
// per GPU: weights, runtime reserve and the phase's working set (the text encoding's, the
// activations and the attention's extra, the VAE decode's); the largest is the peak
// (MemoryBreakdown::peak); the axis reaches the GPU's memory.
class MemoryChart : public QChartView {
  Q_OBJECT

 public:
  explicit MemoryChart(QWidget* parent = nullptr);
  void set_prediction(const costmodel::Prediction* p, double gpu_memory_gib);
};

}  // namespace cpplan::gui
