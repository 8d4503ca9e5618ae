#pragma once
// The selected plan: its figures as the CLI's "top plan:" line (the runtime, host against GPU
// time per step, the text-encoder and VAE placement, the per-image split) or, when invalid, every
// broken rule; with a topology, its placement (the GPUs of each communication group) and each
// group's bandwidths, as `cpplan --topology T --explain` prints them (a tab beside the charts);
// the step time per block type and the memory per phase as charts; and the
// diffusers script / xDiT launch line with Copy.

#include <QWidget>

#include "core/plan.h"
#include "planner/planner.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTabWidget;

namespace cpplan::gui {

class BreakdownChart;
class MemoryChart;

// The diffusers script and the xDiT line of a valid plan, each where planner::unsupported_reason
// allows it, else a comment saying why not; empty for an invalid plan.
std::string plan_snippets(const Query& q, const planner::RankedPlan& p);

// With a topology (p.placement set): the mesh axes innermost first, each axis' groups (the first
// three) and whether they span nodes, the device order, then per communication group its
// collective, nodes spanned, raw and effective bandwidth (GB/s), alpha (us), ms per step and the
// binding link or cut. "" for a plan without placement.
std::string topology_placement_text(const Query& q, const planner::RankedPlan& p);

class PlanDetail : public QWidget {
  Q_OBJECT

 public:
  explicit PlanDetail(QWidget* parent = nullptr);
  // `p` null: nothing selected. `q` must outlive the next call.
  void set_plan(const Query* q, const planner::RankedPlan* p);

  QString summary_text() const;
  QString snippet_text() const;
  QString topology_text() const;  // the placement shown; "" when the plan has none
  bool placement_shown() const;   // the Placement tab is the current view
  QPushButton* copy_button() { return copy_; }
  QPushButton* run_button() { return run_; }

 signals:
  void run_requested();

 private:
  QLabel* summary_;
  BreakdownChart* breakdown_;
  MemoryChart* memory_;
  QPlainTextEdit* placement_;  // its tab disabled without a placement
  QTabWidget* views_;          // the step and memory charts; the placement
  QPlainTextEdit* snippet_;
  QPushButton* copy_;
  QPushButton* run_;
};

}  // namespace cpplan::gui
