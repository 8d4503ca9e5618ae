#include "session/engine/engine.h"

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

Result<Resolved> Engine::resolve(const Options& o, const Rendering& how) const {
  return session::resolve(o, how, catalog_, machine_ ? machine_ : MachineSource(no_machine));
}

Result<std::unique_ptr<Recommendation>> Engine::recommend(const Resolved& r) const { return session::recommend(r); }

Result<std::unique_ptr<CheckResult>> Engine::check(const Resolved& r) const { return session::check(r); }

Result<ParallelConfig> Engine::best(const Resolved& r) const {
  auto rec = recommend(r);
  if (!rec) return rec.error();
  const planner::RankedPlan* best = (*rec)->top();
  if (!best) return Error{fmt::format("no valid plan for {} GPUs", (*rec)->query().gpus)};
  return best->plan.config;
}

Result<std::vector<planner::RankedPlan>> Engine::top(const Resolved& r, int k) const {
  auto rec = recommend(r);
  if (!rec) return rec.error();
  std::vector<planner::RankedPlan> plans;
  if (k <= 0) {
    for (const planner::RankedPlan& p : (*rec)->report.plans)
      if (p.plan.valid()) plans.push_back(p);
    return plans;
  }
  for (const Row& row : (*rec)->rows) {
    if (static_cast<int>(plans.size()) == k) break;
    plans.push_back(*row.plan);
  }
  return plans;
}

namespace {

// The best plan of `base` at one size and GPU count, ranked as `request` asks and priced by `cost`.
HeatCell heat_cell(const ProfileCatalog& catalog, Options base, Resolution res, int gpus, const costmodel::CostModel* cost,
                   const Request& request) {
  HeatCell cell;
  cell.resolution = res;
  cell.gpus = gpus;
  base.res = std::to_string(res.width) + "x" + std::to_string(res.height);
  base.gpus = std::to_string(gpus);
  std::optional<Query> q;
  try {
    std::ostringstream notes;
    q = resolve_query(base, catalog, notes).query;
  } catch (const InvalidInput& e) {
    cell.error = e.message;
    return cell;
  }
  if (!cost) {
    cell.error = "unknown hardware";
    return cell;
  }
  const planner::PlanReport report = ranking(*q, *cost, request);
  if (const planner::RankedPlan* best = planner::best_plan(report)) {
    const std::string format_cache = planner::format_cache_label(*q, *best);
    cell.label = plan_label(best->plan.config) + (format_cache.empty() ? "" : " (" + format_cache + ")");
    cell.variant = best->plan.variant;
    cell.step_ms = planner::ranking_ms(*q, *best);  // the mean step: a cached plan's reused steps count
    cell.fits = best->predicted->fits_memory;
  }
  return cell;
}

// The options of r's query at every cell: its model (a model config's profile, in r's catalog) on
// its hardware's datasheet (a topology's hardware), without the topology.
Options heatmap_base(const Resolved& r) {
  Options base = r.request.options;
  base.model = r.query().model->name;
  base.model_config.clear();
  base.model_config_json.clear();
  base.hardware = r.query().hardware ? r.query().hardware->name : base.hardware;
  base.topology.clear();
  base.topology_file.clear();
  base.nodes.clear();
  return base;
}

}  // namespace

Heatmap Engine::heatmap(const Resolved& r, std::vector<Resolution> resolutions, const std::vector<int>& gpu_counts) const {
  Heatmap h;
  h.resolutions = resolutions.empty() ? heatmap_resolutions(*r.query().model) : std::move(resolutions);
  h.gpu_counts = gpu_counts;
  const Options base = heatmap_base(r);
  const HardwareProfile* hw = r.catalog().find_hardware(base.hardware);
  std::optional<costmodel::DatasheetModel> hardware;
  std::optional<costmodel::CostModel> cost;
  if (hw) {
    hardware.emplace(*hw);
    cost.emplace(*hardware);
  }
  Request request = r.request;  // each cell's best plan: the invalid ones are not kept
  request.planner.keep_invalid = false;
  for (const Resolution& res : h.resolutions)
    for (int gpus : gpu_counts)
      h.cells.push_back(heat_cell(r.catalog(), base, res, gpus, cost ? &*cost : nullptr, request));
  return h;
}

Result<planner::FleetReport> Engine::fleet(const Resolved& r, std::optional<double> slo_ms) const {
  if (r.query().topology) return Error{"with a topology: not done (replicas are planned without placement)"};
  return planner::plan_fleet(planner::Planner(r.model->cost()), r.query(), slo_ms ? slo_ms : r.request.slo_ms,
                             r.request.planner, replica_plans(r.request));
}

Plan Engine::plan_of(const Resolved& r, const ParallelConfig& config) const { return planner::make_plan(r.query(), config); }

RunPrediction Engine::predict_run(const Resolved& r, const Query& as_run, const Plan& plan) const {
  const Query& q = r.query();
  const costmodel::DatasheetModel hw(*q.hardware);
  RunPrediction out;
  out.ranked.plan = plan;
  out.ranked.precision = as_run.precision;
  out.ranked.cache = as_run.cache;
  out.ranked.predicted = costmodel::CostModel(hw).predict(as_run, plan.config, plan.variant);
  planner::place_for_frameworks(q, q.hardware->memory_bytes(), out.ranked);
  out.scripts = plan_scripts(q, out.ranked);
  return out;
}

std::optional<LocalRunPrediction> Engine::predict_local_run(const Resolved& r, const data::Store& store,
                                                            const Machine& here, const ParallelConfig& config) const {
  const auto local = load_local_model(store, here);
  if (!local) return std::nullopt;
  attach_runtime(*local, r.catalog());
  LocalRunPrediction out;
  out.prediction = predict_local(*local, r.query(), config);
  out.calibration_version = out.prediction.calibrated ? local->calibration->version : 0;
  out.hardware = out.calibration_version ? fmt::format("local (calibration v{})", out.calibration_version) : "local";
  return out;
}

}  // namespace cpplan::session
