#pragma once
// This machine's measured (and calibrated) cost model: what `--hardware local`, `cpplan run`'s
// prediction and `cpplan calibrate` predict with, from the probes and the latest calibration in the
// store.

#include <memory>
#include <optional>
#include <string>

#include "costmodel/calibration.h"
#include "costmodel/measured_model.h"
#include "data/store.h"
#include "session/query/machine.h"
#include "session/query/query.h"

namespace cpplan::session {

// This machine's measured model; not movable (the model refers to the profile beside it).
struct LocalModel {
  costmodel::MeasurementSet measurements;
  HardwareProfile profile;
  std::unique_ptr<costmodel::DatasheetModel> fallback;
  std::unique_ptr<costmodel::MeasuredModel> model;
  std::optional<costmodel::Calibration> calibration;
  bool cuda = false;  // probed on GPUs (bf16 runs) rather than the CPU (fp32 runs)
  // How the executor runs here: the cpplan runtime's op counts at the probe's measured time of
  // the smallest op (set by attach_runtime).
  RuntimeProfile runtime;
};

// Sets local.runtime from the catalog's "cpplan" runtime (kernel launches when it has none) with
// the probe's per-op time.
void attach_runtime(LocalModel& local, const ProfileCatalog& catalog);

// Null when the store holds no measurements of `hw`.
std::unique_ptr<LocalModel> load_local_model(const data::Store& store, const Machine& machine);
// `--hardware local`: this machine's model from the database `db` (default path when empty);
// throws InvalidInput when the file is no cpplan database or holds no probe of this machine.
std::unique_ptr<LocalModel> open_local_model(const std::string& db, const Machine& machine);

// The prediction of a run as it executes on this CPU (fp32), through `local`; the calibrated
// step time when a calibration exists.
struct LocalPrediction {
  costmodel::Prediction raw;
  double step_ms = 0;         // calibrated where possible
  double cached_step_ms = 0;  // --cache: a cached step, calibrated where possible (raw.cached_step_ms)
  bool calibrated = false;
};
LocalPrediction predict_local(LocalModel& local, const Query& q, const ParallelConfig& c);
// The calibration of `local` as a step correction for this machine's cores; empty without one.
costmodel::StepCorrection local_correction(const LocalModel& local);
// The model of a query as the executor runs it: fp32 weights and activations on the CPU (`fp32`),
// the profile's own precision (bf16) on GPUs.
ModelProfile as_executed(const ModelProfile& m, bool fp32);
// The executor's runtime as a run uses it: on its math attention path (`math`: no flash kernel for
// the device, dtype or head size; every CPU rank) each attention call holds three fp32 score
// tensors at once (executor/attention/common.cpp), which the fused kernel never writes.
RuntimeProfile as_executed(const RuntimeProfile& rt, bool math);

// The store at `db` (the default path when empty); InvalidInput when it cannot be opened.
data::Store open_store(const std::string& db);

}  // namespace cpplan::session
