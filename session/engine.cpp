#include "session/engine.h"

#include <fmt/format.h>

#include <sstream>

#include "costmodel/cost_model.h"
#include "costmodel/hardware_model.h"
#include "planner/framework_runs.h"
#include "planner/validate.h"

namespace cpplan::session {

Engine::Engine(ProfileCatalog catalog, MachineSource machine)
    : catalog_(std::make_shared<const ProfileCatalog>(std::move(catalog))), machine_(std::move(machine)) {}

Engine::Engine(std::shared_ptr<const ProfileCatalog> catalog, MachineSource machine)
    : catalog_(std::move(catalog)), machine_(std::move(machine)) {}

Result<Engine> Engine::open(const std::vector<std::string>& profiles, const std::string& exe, MachineSource machine) {
  auto catalog = ProfileCatalog::load(profile_search_path(profiles, exe));
  if (!catalog) return catalog.error();
  return Engine(std::move(catalog).value(), std::move(machine));
}

namespace {
// The machine a query without --hardware local never asks for.
Machine no_machine() {
  throw InvalidInput{"--hardware = local: needs this machine's probe, which only the cpplan command runs"};
}
}  // namespace

Result<std::unique_ptr<Recommendation>> Engine::recommend(const Request& r) const {
  return session::recommend(r, *catalog_, machine_ ? machine_ : MachineSource(no_machine));
}

Result<std::unique_ptr<Recommendation>> Engine::recommend(const Options& o) const {
  auto request = parse_request(o);
  if (!request) return request.error();
  return recommend(*request);
}

Result<std::unique_ptr<CheckResult>> Engine::check(const Options& o) const {
  return session::check(o, *catalog_, machine_ ? machine_ : MachineSource(no_machine));
}

Result<ParallelConfig> Engine::best(const Options& o) const {
  auto rec = recommend(o);
  if (!rec) return rec.error();
  const planner::RankedPlan* best = (*rec)->top();
  if (!best) return Error{fmt::format("no valid plan for {} GPUs", (*rec)->query().gpus)};
  return best->plan.config;
}

Result<std::vector<ParallelConfig>> Engine::top(const Options& o, int k) const {
  auto rec = recommend(o);
  if (!rec) return rec.error();
  std::vector<ParallelConfig> configs;
  if (k <= 0) {
    for (const planner::RankedPlan& p : (*rec)->report.plans)
      if (p.plan.valid()) configs.push_back(p.plan.config);
    return configs;
  }
  for (const Row& row : (*rec)->rows) {
    if (static_cast<int>(configs.size()) == k) break;
    configs.push_back(row.plan->plan.config);
  }
  return configs;
}

namespace {

// The best plan of `base` at one size and GPU count, ranked as `request` asks and priced by `cost`.
HeatCell heat_cell(const ProfileCatalog& catalog, Options base, Resolution res, int gpus, const costmodel::CostModel* cost,
                   const Request* request, const std::string& request_error) {
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
  if (!cost || !request) {
    cell.error = !cost ? "unknown hardware" : request_error;
    return cell;
  }
  const planner::PlanReport report = ranking(*q, *cost, *request);
  if (const planner::RankedPlan* best = planner::best_plan(report)) {
    cell.label = plan_label(best->plan.config);
    cell.variant = best->plan.variant;
    cell.step_ms = best->predicted->step_ms;
    cell.fits = best->predicted->fits_memory;
  }
  return cell;
}

}  // namespace

Heatmap Engine::heatmap(const Options& base, const std::vector<Resolution>& resolutions,
                        const std::vector<int>& gpu_counts, bool allow_anything) const {
  Heatmap h;
  h.resolutions = resolutions;
  h.gpu_counts = gpu_counts;
  const HardwareProfile* hw = catalog_->find_hardware(base.hardware);
  std::optional<costmodel::DatasheetModel> hardware;
  std::optional<costmodel::CostModel> cost;
  if (hw) {
    hardware.emplace(*hw);
    cost.emplace(*hardware);
  }
  const auto parsed = parse_request(base, false);  // one parse for every cell; an error in each
  std::optional<Request> request;
  if (parsed) {
    request = *parsed;
    request->planner.allow_anything = allow_anything;
  }
  const std::string request_error = parsed ? "" : parsed.error().message;
  for (const Resolution& res : resolutions)
    for (int gpus : gpu_counts)
      h.cells.push_back(heat_cell(*catalog_, base, res, gpus, cost ? &*cost : nullptr, request ? &*request : nullptr,
                                  request_error));
  return h;
}

Result<planner::FleetReport> Engine::fleet(const Query& q, const costmodel::CostModel& cost, std::optional<double> slo_ms,
                                           const planner::PlannerOptions& options,
                                           const planner::ReplicaPlans& plans) const {
  if (q.topology) return Error{"with a topology: not done (replicas are planned without placement)"};
  return planner::plan_fleet(planner::Planner(cost), q, slo_ms, options, plans);
}

Plan Engine::plan_of(const Query& q, const ParallelConfig& config) const { return planner::make_plan(q, config); }

RunPrediction Engine::predict_run(const Query& q, const Query& as_run, const Plan& plan) const {
  const costmodel::DatasheetModel hw(*q.hardware);
  RunPrediction r;
  r.ranked.plan = plan;
  r.ranked.predicted = costmodel::CostModel(hw).predict(as_run, plan.config, plan.variant);
  planner::place_for_frameworks(q, q.hardware->memory_bytes(), r.ranked);
  r.scripts = plan_scripts(q, r.ranked);
  return r;
}

}  // namespace cpplan::session
