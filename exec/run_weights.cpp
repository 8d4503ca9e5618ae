#include "exec/run_weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "core/precision.h"
#include "session/engine/calibration.h"
#include "session/jobs/sweep.h"
#include "session/query/query.h"

namespace cpplan::exec {

executor::WeightStorage parse_weights(const std::string& value) {
  if (value.empty() || value == "same") return executor::WeightStorage::kComputeDtype;
  if (value == "int8") return executor::WeightStorage::kInt8;
  throw session::InvalidInput{fmt::format(
      "--weights = {}: must be same (the blocks' linear weights in the --dtype) or int8 (weight-only int8, one scale "
      "per output channel)",
      value)};
}

std::string weights_name(const executor::DeviceSpec& device) {
  if (device.weights == executor::WeightStorage::kInt8) return "int8";
  return device.dtype == at::kBFloat16 ? "bf16" : "fp32";
}

session::Resolved priced_as_held(session::Resolved r, executor::WeightStorage w) {
  if (w != executor::WeightStorage::kInt8) return r;
  auto context = std::make_shared<session::Context>(*r.context);
  context->query.precision = Precision{WeightFormat::kInt8, ActivationScaling::kNone};
  r.context = std::move(context);
  return r;
}

void record_weights(data::RunRecord& r, executor::WeightStorage w) {
  if (w != executor::WeightStorage::kInt8) return;
  r.run_key += session::weights_key(true);
  r.metrics.emplace_back(session::kInt8WeightsMetric, 1);
}

nlohmann::json measured_param_bytes(data::RunRecord& r, const executor::RunFigures& f) {
  if (f.param_bytes.empty()) return nullptr;
  for (std::size_t i = 0; i < f.param_bytes.size(); ++i)
    r.metrics.emplace_back(fmt::format("rank{}.param_bytes", i), f.param_bytes[i]);
  return *std::max_element(f.param_bytes.begin(), f.param_bytes.end());
}

}  // namespace cpplan::exec
