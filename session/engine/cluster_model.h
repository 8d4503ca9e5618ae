#pragma once
// A cluster's measured collectives: the nccl-tests logs imported under one cluster name
// (`cpplan import-nccl-tests FILE --cluster NAME`) price the collectives of `--cluster NAME`
// queries, each group from the curve measured on as many nodes (costmodel/measured_model.h); the
// kernels keep the hardware profile's datasheet figures.

#include <memory>
#include <string>
#include <vector>

#include "costmodel/measured_model.h"

namespace cpplan::session {

// Not movable: the models refer to each other and to the profile they were given.
struct ClusterModel {
  std::string name;
  std::string gpu_name;  // as the imported logs name the GPUs
  costmodel::MeasurementSet measurements;
  std::unique_ptr<costmodel::DatasheetModel> datasheet;
  std::unique_ptr<costmodel::MeasuredModel> model;
};

// The imports of `cluster` in the database `db` (default path when empty) over `hw`'s datasheet.
// InvalidInput (one line) when there is no database, no import of that cluster (naming those
// there), or imports of several GPU kinds under the name.
std::unique_ptr<ClusterModel> open_cluster_model(const std::string& db, const std::string& cluster,
                                                 const HardwareProfile& hw);

// The cluster an import of ranks on `hosts` belongs to when the user names none: the stem the
// host names share, without the node numbers and domain (gpu07, gpu12 -> gpu; worker-0,
// worker-1 -> worker); the first host's short name when they share none; "" without hosts.
std::string cluster_of_hosts(const std::vector<std::string>& hosts);

}  // namespace cpplan::session
