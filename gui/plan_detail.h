#pragma once
// The selected plan: its figures as the CLI's "top plan:" line (the runtime, host against GPU
// time per step, the text-encoder and VAE placement, the per-image split) or, when invalid, every
// broken rule; with a topology, its placement (the GPUs of each communication group) and each
// group's bandwidths, as `cpplan --topology T --explain` prints them (a tab beside the charts);
// the step time per block type and the memory per phase as charts; and the
// diffusers script / xDiT launch line with Copy (only the chosen framework's, when the ranking is
// restricted to one).

#include <QWidget>
#include <optional>

#include "core/plan.h"
#include "session/engine/recommend.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTabWidget;

namespace cpplan::gui {

class BreakdownChart;
class MemoryChart;

using session::plan_snippets;  // the plan's scripts as the plan detail shows them (session/engine/recommend.h)

// With a topology (p.placement set): session::placement_text, the CLI's own lines: the mesh axes
// innermost first, each axis' groups (the first three), whether they span nodes and their link,
// the fully-sharded weight groups (fs_degree > 1), the device order, then --explain's group table:
// per communication group its collective, nodes spanned, raw and effective bandwidth (GB/s),
// alpha (us), ms per step and the binding link or cut. "" for a plan without placement.
std::string topology_placement_text(const Query& q, const planner::RankedPlan& p);

class PlanDetail : public QWidget {
  Q_OBJECT

 public:
  explicit PlanDetail(QWidget* parent = nullptr);
  // `p` null: nothing selected. `q` must outlive the next call. `framework`: the one the ranking
  // is restricted to (planner::PlanReport::framework), whose snippet alone is shown; none: every
  // framework's.
  // `report`: the ranking `p` belongs to: a framework that cannot run `p` shows its own fastest plan
  // there and that plan's script.
  void set_plan(const Query* q, const planner::RankedPlan* p,
                std::optional<planner::Framework> framework = std::nullopt, const planner::PlanReport* report = nullptr);

  QString summary_text() const;
  QString snippet_text() const;
  QString topology_text() const;  // the placement shown; "" when the plan has none
  QString kernels_text() const;   // the Kernels tab: cpplan --explain's kernels of the plan; "" without one
  bool placement_shown() const;   // the Placement tab is the current view
  QPushButton* copy_button() { return copy_; }
  QPushButton* run_button() { return run_; }

 signals:
  void run_requested();

 private:
  void show_placement(const Query* q, const planner::RankedPlan* p);
  void show_no_figures(const QString& summary, double gpu_gib);  // nothing selected, or an invalid plan

  QLabel* summary_;
  BreakdownChart* breakdown_;
  MemoryChart* memory_;
  QPlainTextEdit* placement_;  // its tab disabled without a placement
  QPlainTextEdit* kernels_;    // each kernel kind's kernel, binding resource and source (--explain's)
  QTabWidget* views_;          // the step and memory charts; the placement; the kernels
  QPlainTextEdit* snippet_;
  QPushButton* copy_;
  QPushButton* run_;
};

}  // namespace cpplan::gui
