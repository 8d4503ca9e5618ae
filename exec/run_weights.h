#pragma once
// `cpplan run --weights same|int8`: how the ranks hold the transformer blocks' linear weights
// (executor::WeightStorage), the query the predictions price the run with (int8: the planner's
// int8-weight-only), and the run's marks in the store (its key, metrics and JSON).

#include <nlohmann/json.hpp>

#include <string>

#include "data/store.h"
#include "executor/device.h"
#include "executor/runner.h"
#include "session/engine/recommend.h"

namespace cpplan::exec {

// --weights: "" or "same" the compute dtype's, "int8" weight-only int8; else InvalidInput naming
// the value and the choices.
executor::WeightStorage parse_weights(const std::string& value);

// What a run's weights are as its JSON and text say: "int8", else the compute dtype ("fp32", "bf16").
std::string weights_name(const executor::DeviceSpec& device);

// `r` with its query's linear layers at `w`: int8 weights priced as the planner's
// int8-weight-only (one byte per block linear weight, dequantized into a GEMM in the compute
// dtype); unchanged otherwise. The Resolved's copies share its context: this one gets its own.
session::Resolved priced_as_held(session::Resolved r, executor::WeightStorage w);

// Int8 weights into the record: the key ends in `|weights-int8` (an int8 run never replaces the
// run of its plan in the compute dtype: a sweep resumes by key) and session::kInt8WeightsMetric
// marks it (calibrate leaves it out). Nothing for the compute dtype's weights.
void record_weights(data::RunRecord& r, executor::WeightStorage w);

// The weights' bytes each rank held, counted from its tensors, into the record's metrics
// (rankN.param_bytes); the largest rank's (null when the ranks recorded none).
nlohmann::json measured_param_bytes(data::RunRecord& r, const executor::RunFigures& f);

}  // namespace cpplan::exec
