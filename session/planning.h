#pragma once
// The cost model a query is planned with, as both fronts plan: the datasheet figures of its
// hardware profile, or, with `--hardware local`, this machine's measured (and calibrated) model,
// the query then run as the executor runs it here (fp32 on its CPU, bf16 on its GPUs).

#include <memory>
#include <optional>
#include <string>

#include "costmodel/cost_model.h"
#include "planner/planner.h"
#include "session/local_model.h"

namespace cpplan::session {

class QueryCostModel {
 public:
  QueryCostModel(const QueryCostModel&) = delete;
  QueryCostModel& operator=(const QueryCostModel&) = delete;

  // The datasheet model of q.hardware.
  explicit QueryCostModel(const Query& q);
  // This machine's model from the store `db` (default path when empty); points `q` at it (its
  // hardware, runtime and the model as executed). InvalidInput without a probe of `machine`.
  QueryCostModel(Query& q, const std::string& db, const Machine& machine, const ProfileCatalog& catalog);

  const costmodel::CostModel& cost() const { return *cost_; }
  // The local model, or null for a datasheet one.
  const LocalModel* local() const { return local_.get(); }

 private:
  std::unique_ptr<LocalModel> local_;
  std::unique_ptr<ModelProfile> as_run_;
  std::unique_ptr<costmodel::DatasheetModel> datasheet_;
  std::unique_ptr<costmodel::CostModel> cost_;
};

// Where ranked plans' predictions come from, as both fronts state it: "datasheet figures",
// "measured figures", with ", step times calibrated to this machine's runs (calibration vN)" when
// `local` (may be null) has a calibration.
std::string prediction_source(const std::vector<planner::RankedPlan>& plans, const LocalModel* local);

}  // namespace cpplan::session
