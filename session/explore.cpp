#include "session/explore.h"

#include <algorithm>
#include <sstream>

#include "costmodel/cost_model.h"
#include "costmodel/hardware_model.h"

namespace cpplan::session {

std::vector<Resolution> heatmap_resolutions(const ModelProfile& m) {
  const int step = m.pixel_granularity();
  std::vector<Resolution> out;
  for (double scale : {0.5, 0.75, 1.0, 1.5, 2.0}) {
    auto round = [&](int v) { return std::max(step, static_cast<int>(v * scale / step + 0.5) * step); };
    const Resolution r{round(m.default_width), round(m.default_height)};
    if (out.empty() || out.back().width != r.width || out.back().height != r.height) out.push_back(r);
  }
  return out;
}

std::vector<int> heatmap_gpu_counts() { return {1, 2, 4, 8, 16, 32, 64}; }

namespace {

// The best plan of `base` at one size and GPU count, priced by `cost`.
HeatCell heat_cell(const ProfileCatalog& catalog, Options base, Resolution res, int gpus,
                   const costmodel::CostModel* cost, const planner::PlannerOptions* options,
                   const std::string& options_error) {
  HeatCell cell;
  cell.resolution = res;
  cell.gpus = gpus;
  base.res = std::to_string(res.width) + "x" + std::to_string(res.height);
  base.gpus = std::to_string(gpus);
  base.topology.clear();
  base.topology_file.clear();
  base.nodes.clear();
  std::optional<Query> q;
  try {
    std::ostringstream notes;
    q = resolve_query(base, catalog, notes).query;
  } catch (const InvalidInput& e) {
    cell.error = e.message;
    return cell;
  }
  if (!cost || !options) {
    cell.error = !cost ? "unknown hardware" : options_error;
    return cell;
  }
  const auto report = planner::Planner(*cost).plan(*q, *options);
  if (!report.plans.empty()) {  // ranked: fitting plans come first
    const planner::RankedPlan& best = report.plans.front();
    cell.label = plan_label(best.plan.config);
    cell.variant = best.plan.variant;
    cell.step_ms = best.predicted->step_ms;
    cell.fits = best.predicted->fits_memory;
  }
  return cell;
}

}  // namespace

Heatmap heatmap(const ProfileCatalog& catalog, const Options& base, const std::vector<Resolution>& resolutions,
                const std::vector<int>& gpu_counts, bool allow_anything) {
  Heatmap h;
  h.resolutions = resolutions;
  h.gpu_counts = gpu_counts;
  const HardwareProfile* hw = catalog.find_hardware(base.hardware);
  std::optional<costmodel::DatasheetModel> hardware;
  std::optional<costmodel::CostModel> cost;
  if (hw) {
    hardware.emplace(*hw);
    cost.emplace(*hardware);
  }
  std::optional<planner::PlannerOptions> options;  // one parse for every cell; unset: its error in each
  std::string options_error;
  try {
    options = planner_options(base, false);
    options->allow_anything = allow_anything;
  } catch (const InvalidInput& e) {
    options_error = e.message;
  }
  for (const Resolution& res : resolutions)
    for (int gpus : gpu_counts)
      h.cells.push_back(heat_cell(catalog, base, res, gpus, cost ? &*cost : nullptr, options ? &*options : nullptr,
                                  options_error));
  return h;
}

Result<planner::FleetReport> fleet(const Query& q, const costmodel::CostModel& cost, std::optional<double> slo_ms,
                                   bool allow_anything, const planner::ReplicaPlans& plans) {
  if (q.topology) return Error{"with a topology: not done (replicas are planned without placement)"};
  planner::PlannerOptions options;
  options.allow_anything = allow_anything;
  return planner::plan_fleet(planner::Planner(cost), q, slo_ms, options, plans);
}

}  // namespace cpplan::session
