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
#include "session/query/query.h"

namespace cpplan::session {

// The best plan (fitting first, as ranked) of one grid cell.
struct HeatCell {
  Resolution resolution;
  int gpus = 0;
  std::string label;    // plan_label of the best plan, with its format and cache when ranked; "" when no plan is valid
  CpVariant variant = CpVariant::kNone;
  double step_ms = 0;   // its mean step (planner::ranking_ms): the step time without a step cache
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

// The heatmap and the fleet are computed by the engine (session/engine/engine.h: Engine::heatmap, Engine::fleet).

}  // namespace cpplan::session
