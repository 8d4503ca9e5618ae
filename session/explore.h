#pragma once
// What the GUI explores besides one ranking, computed here so that the front only renders: the
// best plan over a grid of resolutions x GPU counts (the heatmap), and the replica splits of a
// query already planned (the Fleet tab).

#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/profiles.h"
#include "core/result.h"
#include "planner/fleet.h"
#include "planner/planner.h"
#include "session/query.h"

namespace cpplan::session {

// The best plan (fitting first, as ranked) of one grid cell.
struct HeatCell {
  Resolution resolution;
  int gpus = 0;
  std::string label;    // plan_label of the best plan; "" when no plan is valid
  CpVariant variant = CpVariant::kNone;
  double step_ms = 0;
  bool fits = false;
  std::string error;    // the query itself is invalid at this size
};

struct Heatmap {
  std::vector<Resolution> resolutions;  // rows
  std::vector<int> gpu_counts;          // columns
  std::vector<HeatCell> cells;          // row-major: resolutions x gpu_counts
  const HeatCell& at(int row, int column) const { return cells[row * gpu_counts.size() + column]; }
};

// Square-ish sizes around the model's default, multiples of its pixel granularity.
std::vector<Resolution> heatmap_resolutions(const ModelProfile& m);
// 1, 2, 4, ..., 64.
std::vector<int> heatmap_gpu_counts();

// The query `base` (its --model a profile of `catalog`) at every resolution x GPU count, on the
// datasheet of base.hardware, without placement; `allow_anything` as PlannerOptions'. A cell whose
// query is invalid holds the error; an options error fills every cell.
Heatmap heatmap(const ProfileCatalog& catalog, const Options& base, const std::vector<Resolution>& resolutions,
                const std::vector<int>& gpu_counts, bool allow_anything);

// The replica splits of query `q` priced by `cost` (planner::plan_fleet), latency target slo_ms;
// refused with a topology (replicas are planned without placement).
// `plans`: which plans replicas come from (session::replica_plans of the request).
Result<planner::FleetReport> fleet(const Query& q, const costmodel::CostModel& cost, std::optional<double> slo_ms,
                                   bool allow_anything, const planner::ReplicaPlans& plans = {});

}  // namespace cpplan::session
