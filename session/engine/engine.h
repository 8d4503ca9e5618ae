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
#include "session/engine/explore.h"
#include "session/engine/local_model.h"
#include "session/query/query.h"
#include "session/engine/recommend.h"

namespace cpplan::session {

// `cpplan run`'s prediction on this machine's measured model (and its calibration): what it
// records beside the measurement, and the hardware it names ("local", "local (calibration vN)").
struct LocalRunPrediction {
  LocalPrediction prediction;
  std::string hardware;
  int calibration_version = 0;  // 0: uncalibrated
};

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

  // The door: request `o` parsed and checked (one line naming the field, its value and the rule on
  // error), its query resolved on the catalog (a model config's profile added), and the cost model
  // it is priced with (this machine's with --hardware local, a cluster's with --cluster). `how`:
  // what the front will render of the answers. Every question below takes what it returns.
  Result<Resolved> resolve(const Options& o, const Rendering& how = {}) const;

  // The whole recommendation (session/engine/recommend.h).
  Result<std::unique_ptr<Recommendation>> recommend(const Resolved& r) const;
  // `cpplan check`: the verdict and prediction of the plan of r's plan flags.
  Result<std::unique_ptr<CheckResult>> check(const Resolved& r) const;
  // The best plan (best_plan of the ranking); an error when the query has no valid plan.
  Result<ParallelConfig> best(const Resolved& r) const;
  // The first `k` rows' plans of the ranking, predicted (k <= 0: every valid plan, each form).
  Result<std::vector<planner::RankedPlan>> top(const Resolved& r, int k) const;

  // r's model and options at every resolution x GPU count, on the datasheet of its hardware (a
  // topology's without placement: the grid spans GPU counts its nodes do not hold); each cell the
  // best plan of that query (session/engine/explore.h). No resolutions: heatmap_resolutions of the model.
  Heatmap heatmap(const Resolved& r, std::vector<Resolution> resolutions, const std::vector<int>& gpu_counts) const;
  // The replica splits of r's query priced by its cost model (planner::plan_fleet), latency target
  // slo_ms (none: r's --slo-ms), ranked with r's planner options as `cpplan --objective throughput`;
  // refused with a topology (replicas are planned without placement).
  Result<planner::FleetReport> fleet(const Resolved& r, std::optional<double> slo_ms) const;

  // The plan `config` of r's query with its verdict (the rules it breaks).
  Plan plan_of(const Resolved& r, const ParallelConfig& config) const;
  // The prediction of `plan` for r's query as the ranks ran it (`as_run`: the profiles as
  // executed), on the datasheet of its hardware, with the frameworks' placements and scripts.
  RunPrediction predict_run(const Resolved& r, const Query& as_run, const Plan& plan) const;
  // The prediction of plan `config` of r's query on the model this machine's probes in `store`
  // measured (calibrated when it was); none when `here` was never probed there.
  std::optional<LocalRunPrediction> predict_local_run(const Resolved& r, const data::Store& store, const Machine& here,
                                                      const ParallelConfig& config) const;

 private:
  std::shared_ptr<const ProfileCatalog> catalog_;
  MachineSource machine_;
};

}  // namespace cpplan::session
