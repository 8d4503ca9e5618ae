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

QueryCostModel::QueryCostModel(const Query& q, const std::string& db, const std::string& cluster)
    : cluster_(open_cluster_model(db, cluster, *q.hardware)),
      cost_(std::make_unique<costmodel::CostModel>(*cluster_->model)) {}

std::unique_ptr<QueryCostModel> make_cost_model(Query& q, const CostModelChoice& choice,
                                                const std::function<Machine()>& machine,
                                                const ProfileCatalog& catalog) {
  if (choice.local_hardware && !choice.cluster.empty())
    throw InvalidInput{fmt::format("--cluster = {}: prices a hardware profile's collectives from the cluster's "
                                   "imports; not with --hardware local (this machine's probes)",
                                   choice.cluster)};
  if (choice.local_hardware) return std::make_unique<QueryCostModel>(q, choice.db, machine(), catalog);
  if (!choice.cluster.empty()) return std::make_unique<QueryCostModel>(q, choice.db, choice.cluster);
  return std::make_unique<QueryCostModel>(q);
}

std::string prediction_source(const std::vector<planner::RankedPlan>& plans, const LocalModel* local,
                              const ClusterModel* cluster) {
  const bool predicted = !plans.empty() && plans.front().predicted;
  std::string s = fmt::format("{} figures", predicted ? costmodel::to_string(plans.front().predicted->source) : "datasheet");
  if (predicted && plans.front().predicted->calibrated) {
    s += ", step times calibrated to this machine's runs";
    if (local && local->calibration) s += fmt::format(" (calibration v{})", local->calibration->version);
  }
  if (cluster) s += fmt::format(", collectives measured on cluster {} ({})", cluster->name, cluster->gpu_name);
  return s;
}

}  // namespace cpplan::session
