#pragma once
// The cost model a query is planned with, as both fronts plan: the datasheet figures of its
// hardware profile, or, with `--hardware local`, this machine's measured (and calibrated) model,
// the query then run as the executor runs it here (fp32 on its CPU, bf16 on its GPUs).

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "costmodel/cost_model.h"
#include "planner/planner.h"
#include "session/engine/cluster_model.h"
#include "session/engine/local_model.h"
#include "session/engine/internal/tune_calibration.h"

namespace cpplan::session {

class QueryCostModel {
 public:
  QueryCostModel(const QueryCostModel&) = delete;
  QueryCostModel& operator=(const QueryCostModel&) = delete;

  // The datasheet model of q.hardware.
  explicit QueryCostModel(const Query& q);
  // This machine's model from the store `db` (default path when empty); points `q` at it (its
  // hardware, runtime and the model as executed). InvalidInput without a probe of `machine`.
  // With `tune`, the calibration of this machine's last `cpplan tune --hardware local` applies.
  QueryCostModel(Query& q, const std::string& db, const Machine& machine, const ProfileCatalog& catalog,
                 bool tune = true);
  // `--cluster NAME`: q.hardware's datasheet, its collectives priced from the nccl-tests imports
  // of cluster `cluster` in the store `db`. InvalidInput as open_cluster_model. With `tune`, the
  // calibration of the last `cpplan tune --cluster NAME` on this host applies.
  QueryCostModel(const Query& q, const std::string& db, const std::string& cluster, bool tune = true);

  const costmodel::CostModel& cost() const { return *cost_; }
  // The local model, or null for a datasheet one.
  const LocalModel* local() const { return local_.get(); }
  // The cluster's model, or null.
  const ClusterModel* cluster() const { return cluster_.get(); }
  // The tune's calibration applied, or null.
  const TuneCalibration* tune() const { return tune_ ? &*tune_ : nullptr; }

 private:
  std::unique_ptr<LocalModel> local_;
  std::unique_ptr<ClusterModel> cluster_;
  std::unique_ptr<ModelProfile> as_run_;
  std::unique_ptr<costmodel::DatasheetModel> datasheet_;
  std::unique_ptr<costmodel::CostModel> cost_;
  std::optional<TuneCalibration> tune_;
};

// What a query is planned with, as the user chose it: `--hardware local` (this machine's probes in
// `db`; `machine` says which machine that is), `--cluster NAME` (a cluster's nccl-tests imports in
// `db`), else the datasheet of q.hardware.
struct CostModelChoice {
  bool local_hardware = false;
  std::string cluster;
  std::string db;
  bool tune_calibration = true;  // false: without the last tune's calibration (a tune plans so)
  // Threshold caches priced with the hit rate a tune measured in `db` (given, and no
  // --cache-hit-rate); false: with the stated one (a tune plans so).
  bool tune_hit_rate = true;
};
// The model of `choice` for `q` (pointed at the local model's hardware with --hardware local);
// InvalidInput (one line) for both choices at once or a store that does not have what they need.
std::unique_ptr<QueryCostModel> make_cost_model(Query& q, const CostModelChoice& choice,
                                                const std::function<Machine()>& machine,
                                                const ProfileCatalog& catalog);

// Where ranked plans' predictions come from, as both fronts state it: "datasheet figures",
// "measured figures", with ", step times calibrated to this machine's runs (calibration vN)" when
// `local` (may be null) has a calibration, and ", collectives measured on cluster NAME" with
// `cluster` (may be null).
// With `tune` (may be null), its tune_source_text.
std::string prediction_source(const std::vector<planner::RankedPlan>& plans, const LocalModel* local,
                              const ClusterModel* cluster = nullptr, const TuneCalibration* tune = nullptr);

}  // namespace cpplan::session
