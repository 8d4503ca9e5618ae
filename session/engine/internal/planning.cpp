#include "session/engine/internal/planning.h"

#include <fmt/format.h>

namespace cpplan::session {

QueryCostModel::QueryCostModel(const Query& q)
    : datasheet_(std::make_unique<costmodel::DatasheetModel>(*q.hardware)),
      cost_(std::make_unique<costmodel::CostModel>(*datasheet_)) {}

QueryCostModel::QueryCostModel(Query& q, const std::string& db, const Machine& machine, const ProfileCatalog& catalog,
                               bool tune)
    : local_(open_local_model(db, machine)) {
  attach_runtime(*local_, catalog);
  as_run_ = std::make_unique<ModelProfile>(as_executed(*q.model, !local_->cuda));
  q.model = as_run_.get();
  q.hardware = &local_->profile;
  q.runtime = &local_->runtime;
  local_->model->set_concurrent_ranks(q.gpus);
  costmodel::StepCorrection correction = local_correction(*local_);
  if (tune)
    tune_ = read_tune_calibration(db.empty() ? data::Store::default_path() : db, "local", machine.fingerprint.host);
  if (tune_) correction = with_tune(std::move(correction), tune_->fit);
  cost_ = std::make_unique<costmodel::CostModel>(*local_->model, std::move(correction));
}

QueryCostModel::QueryCostModel(const Query& q, const std::string& db, const std::string& cluster, bool tune)
    : cluster_(open_cluster_model(db, cluster, *q.hardware)) {
  if (tune)
    tune_ = read_tune_calibration(db.empty() ? data::Store::default_path() : db, tune_source(false, cluster, ""),
                                  this_host_name());
  cost_ = std::make_unique<costmodel::CostModel>(*cluster_->model,
                                                 tune_ ? with_tune({}, tune_->fit) : costmodel::StepCorrection{});
}

std::unique_ptr<QueryCostModel> make_cost_model(Query& q, const CostModelChoice& choice,
                                                const std::function<Machine()>& machine,
                                                const ProfileCatalog& catalog) {
  if (choice.local_hardware && !choice.cluster.empty())
    throw InvalidInput{fmt::format("--cluster = {}: prices a hardware profile's collectives from the cluster's "
                                   "imports; not with --hardware local (this machine's probes)",
                                   choice.cluster)};
  if (choice.local_hardware)
    return std::make_unique<QueryCostModel>(q, choice.db, machine(), catalog, choice.tune_calibration);
  if (!choice.cluster.empty())
    return std::make_unique<QueryCostModel>(q, choice.db, choice.cluster, choice.tune_calibration);
  return std::make_unique<QueryCostModel>(q);
}

std::string prediction_source(const std::vector<planner::RankedPlan>& plans, const LocalModel* local,
                              const ClusterModel* cluster, const TuneCalibration* tune) {
  const bool predicted = !plans.empty() && plans.front().predicted;
  std::string s = fmt::format("{} figures", predicted ? costmodel::to_string(plans.front().predicted->source) : "datasheet");
  // A tune's correction alone also marks the step calibrated: its own text says so below.
  if (predicted && plans.front().predicted->calibrated && (!tune || (local && local->calibration))) {
    s += ", step times calibrated to this machine's runs";
    if (local && local->calibration) s += fmt::format(" (calibration v{})", local->calibration->version);
  }
  if (cluster) s += fmt::format(", collectives measured on cluster {} ({})", cluster->name, cluster->gpu_name);
  if (tune) s += tune_source_text(*tune);
  return s;
}

}  // namespace cpplan::session
