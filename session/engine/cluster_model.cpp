#include "session/engine/cluster_model.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

#include "data/store.h"
#include "session/engine/local_model.h"
#include "session/query/query.h"

namespace cpplan::session {

namespace {

// The machines recorded under the name `cluster`, and the names there are.
struct ClusterMachines {
  std::vector<data::HardwareFingerprint> matching;
  std::set<std::string> names;
};

ClusterMachines machines_of(const data::Store& store, const std::string& cluster) {
  auto machines = store.hardware();
  if (!machines) throw InvalidInput{machines.error().message};
  ClusterMachines out;
  for (const data::HardwareFingerprint& hw : *machines) {
    out.names.insert(hw.host);
    if (hw.host == cluster) out.matching.push_back(hw);
  }
  return out;
}

}  // namespace

std::unique_ptr<ClusterModel> open_cluster_model(const std::string& db, const std::string& cluster,
                                                 const HardwareProfile& hw) {
  const std::string path = db.empty() ? data::Store::default_path() : db;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))  // a query creates no database
    throw InvalidInput{fmt::format("--cluster = {}: no database at {} (import its nccl-tests logs with cpplan "
                                   "import-nccl-tests FILE --cluster {})",
                                   cluster, path, cluster)};
  const data::Store store = open_store(path);
  const ClusterMachines machines = machines_of(store, cluster);
  if (machines.matching.empty())
    throw InvalidInput{fmt::format("--cluster = {}: {} holds no imports of that cluster (there: {})", cluster, path,
                                   machines.names.empty() ? "none" : fmt::format("{}", fmt::join(machines.names, ", ")))};
  std::set<std::string> gpus;
  for (const data::HardwareFingerprint& m : machines.matching) gpus.insert(m.gpu_name);
  if (gpus.size() > 1)
    throw InvalidInput{fmt::format("--cluster = {}: imports of several GPUs under that name ({}); import each under "
                                   "its own --cluster",
                                   cluster, fmt::join(gpus, ", "))};
  auto out = std::make_unique<ClusterModel>();
  out->name = cluster;
  out->gpu_name = *gpus.begin();
  for (const data::HardwareFingerprint& m : machines.matching) {
    auto set = store.measurements(m.key());
    if (!set) throw InvalidInput{set.error().message};
    out->measurements.collectives.insert(out->measurements.collectives.end(), set->collectives.begin(),
                                         set->collectives.end());
  }
  out->datasheet = std::make_unique<costmodel::DatasheetModel>(hw);
  out->model = std::make_unique<costmodel::MeasuredModel>(hw, out->measurements, *out->datasheet);
  return out;
}

std::string cluster_of_hosts(const std::vector<std::string>& hosts) {
  if (hosts.empty()) return "";
  const auto short_name = [](const std::string& host) { return host.substr(0, host.find('.')); };
  std::string stem = short_name(hosts.front());
  for (const std::string& host : hosts) {
    const std::string name = short_name(host);
    const auto differ = std::mismatch(stem.begin(), stem.end(), name.begin(), name.end());
    stem.erase(differ.first, stem.end());
  }
  // Node numbers and their separators end the stem: gpu07 -> gpu, worker-1 -> worker.
  const auto numbered = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '_'; };
  while (!stem.empty() && numbered(stem.back())) stem.pop_back();
  return stem.empty() ? short_name(hosts.front()) : stem;
}

}  // namespace cpplan::session
