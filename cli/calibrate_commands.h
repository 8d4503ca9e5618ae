#pragma once
// The calibration loop on the command line: `cpplan probe` measures this machine,
// `cpplan calibrate` fits the cost model to the runs recorded on it, and load_local_model()
// gives the measured (and calibrated) model that `--hardware local` and `cpplan run` use.

#include <iosfwd>
#include <memory>
#include <optional>

#include "cli/args.h"
#include "cli/calibrate_import.h"
#include "costmodel/calibration.h"
#include "costmodel/measured_model.h"
#include "data/store.h"

namespace cpplan::cli {

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
std::unique_ptr<LocalModel> load_local_model(const data::Store& store, const data::HardwareFingerprint& hw);
// `--hardware local`: this machine's model from the database `db` (default path when empty);
// throws InvalidInput when the file is no cpplan database or holds no probe of this machine.
std::unique_ptr<LocalModel> open_local_model(const std::string& db);

// The prediction of a run as it executes on this CPU (fp32), through `local`; the calibrated
// step time when a calibration exists.
struct LocalPrediction {
  costmodel::Prediction raw;
  double step_ms = 0;  // calibrated where possible
  bool calibrated = false;
};
LocalPrediction predict_local(LocalModel& local, const Query& q, const ParallelConfig& c);
// The calibration of `local` as a step correction for this machine's cores; empty without one.
costmodel::StepCorrection local_correction(const LocalModel& local);
// The model of a query as the executor runs it: fp32 weights and activations on the CPU (`fp32`),
// the profile's own precision (bf16) on GPUs.
ModelProfile as_executed(const ModelProfile& m, bool fp32);

struct ProbeArgs {
  std::string nproc = "2", db, device, worker;  // device: empty = this machine's (local_is_cuda)
  std::vector<std::string> models = {"flux-tiny", "wan-tiny"};
  bool quick = false;
  std::string folds = "5";
};

void add_probe_options(CLI::App& probe, ProbeArgs& p);
void add_calibrate_options(CLI::App& calibrate, ProbeArgs& p);
int probe_command(const ProbeArgs& p, const Args& a, const std::string& exe, std::ostream& out, std::ostream& err);
int calibrate_command(const ProbeArgs& p, const Args& a, const std::string& exe, std::ostream& out, std::ostream& err);
// `cpplan calibrate --pipeline-runs [--db F]`: the runtime fit of the database's pipeline runs.
int calibrate_pipeline_runs_command(const ProbeArgs& p, const CalibrateArgs& c, const Args& a, const std::string& exe,
                                    std::ostream& out);

}  // namespace cpplan::cli
