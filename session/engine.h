#pragma once
// The engine every front goes through: `cpplan` (cli/), cpplan-gui (gui/), the Python module
// (python/), cpplan-exec (exec/) and the sweeps. It owns the profile catalog (and asks this
// machine's probe only for --hardware local) and answers each question with a self-contained value
// that owns its query and cost model: a recommendation, a check, a heatmap, a fleet, the best plan,
// the plan `cpplan run` executes and its prediction. The fronts and the renderers (render/, cli's
// text) only render those values.
//
// The best plan is chosen in one place, planner::best_plan(report): cpplan's first row, the GUI's,
// Python's plans[0], a heatmap cell, a sweep's "top 1" and `cpplan run --plan best` are that plan
// of the same query.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/profiles.h"
#include "core/result.h"
#include "planner/fleet.h"
#include "planner/planner.h"
#include "session/explore.h"
#include "session/query.h"
#include "session/recommend.h"

namespace cpplan::session {

// What `cpplan run` executes: the plan, and its prediction on the datasheet of its hardware as the
// ranks run it (with the frameworks' placements, for its JSON).
struct RunPrediction {
  planner::RankedPlan ranked;
  PlanScripts scripts;
};

class Engine {
 public:
  explicit Engine(ProfileCatalog catalog, MachineSource machine = {});
  explicit Engine(std::shared_ptr<const ProfileCatalog> catalog, MachineSource machine = {});
  // The catalog of the extra profile directories `profiles` and the installed ones (`exe` locates them).
  static Result<Engine> open(const std::vector<std::string>& profiles, const std::string& exe, MachineSource machine = {});

  const ProfileCatalog& catalog() const { return *catalog_; }
  const std::shared_ptr<const ProfileCatalog>& shared_catalog() const { return catalog_; }

  // The whole recommendation of a parsed request (session/recommend.h).
  Result<std::unique_ptr<Recommendation>> recommend(const Request& r) const;
  // The same of options (parse_request first).
  Result<std::unique_ptr<Recommendation>> recommend(const Options& o) const;
  // `cpplan check`: one plan's verdict and prediction.
  Result<std::unique_ptr<CheckResult>> check(const Options& o) const;

  // The best plan of `o` (best_plan of its ranking); an error when the query is invalid or has no
  // valid plan.
  Result<ParallelConfig> best(const Options& o) const;
  // The plans of the first `k` rows of `o`'s ranking (k <= 0: every valid plan, each form).
  Result<std::vector<ParallelConfig>> top(const Options& o, int k) const;

  // `base` at every resolution x GPU count on the datasheet of its hardware, without placement
  // (session/explore.h); each cell the best plan of that query.
  Heatmap heatmap(const Options& base, const std::vector<Resolution>& resolutions, const std::vector<int>& gpu_counts,
                  bool allow_anything) const;
  // The replica splits of query `q` priced by `cost` (planner::plan_fleet), latency target slo_ms,
  // ranked with `options` (the request's, as `cpplan --objective throughput` ranks); refused with a
  // topology (replicas are planned without placement). `plans`: which plans replicas come from
  // (replica_plans of the request).
  Result<planner::FleetReport> fleet(const Query& q, const costmodel::CostModel& cost, std::optional<double> slo_ms,
                                     const planner::PlannerOptions& options, const planner::ReplicaPlans& plans = {}) const;

  // A plan of query `q` with its verdict (the rules it breaks).
  Plan plan_of(const Query& q, const ParallelConfig& config) const;
  // The prediction of `plan` for the query as the ranks ran it (`as_run`: the profiles as executed),
  // on the datasheet of q.hardware, with the frameworks' placements and scripts.
  RunPrediction predict_run(const Query& q, const Query& as_run, const Plan& plan) const;

 private:
  std::shared_ptr<const ProfileCatalog> catalog_;
  MachineSource machine_;
};

}  // namespace cpplan::session
