#include "session/planning.h"

#include <fmt/format.h>

namespace cpplan::session {

QueryCostModel::QueryCostModel(const Query& q)
    : datasheet_(std::make_unique<costmodel::DatasheetModel>(*q.hardware)),
      cost_(std::make_unique<costmodel::CostModel>(*datasheet_)) {}

QueryCostModel::QueryCostModel(Query& q, const std::string& db, const Machine& machine, const ProfileCatalog& catalog)
    : local_(open_local_model(db, machine)) {
  attach_runtime(*local_, catalog);
  as_run_ = std::make_unique<ModelProfile>(as_executed(*q.model, !local_->cuda));
  q.model = as_run_.get();
  q.hardware = &local_->profile;
  q.runtime = &local_->runtime;
  local_->model->set_concurrent_ranks(q.gpus);
  cost_ = std::make_unique<costmodel::CostModel>(*local_->model, local_correction(*local_));
}

std::string prediction_source(const std::vector<planner::RankedPlan>& plans, const LocalModel* local) {
  const bool predicted = !plans.empty() && plans.front().predicted;
  std::string s = fmt::format("{} figures", predicted ? costmodel::to_string(plans.front().predicted->source) : "datasheet");
  if (predicted && plans.front().predicted->calibrated) {
    s += ", step times calibrated to this machine's runs";
    if (local && local->calibration) s += fmt::format(" (calibration v{})", local->calibration->version);
  }
  return s;
}

}  // namespace cpplan::session
