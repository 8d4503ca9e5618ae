#pragma once
// `cpplan report`'s library: how far to trust the cost model on the machines a store knows.
// gather() reads a data::Store into plain figures (accuracy of the predicted step time per
// machine and per plan kind, the latest calibrations, collective bus bandwidth per message size);
// write_report() renders them as REPORT.md and PNG plots (Qt Charts, off-screen). No LibTorch.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/units.h"
#include "costmodel/calibration.h"
#include "costmodel/hardware_model.h"
#include "data/store.h"

namespace cpplan::report {

// One ok run with both a measured and a predicted median step time (both > 0).
struct RunPoint {
  long long run_id = 0;
  std::string machine;  // Machine::label of the machine it ran on
  std::string kind;     // plan_kind() of its configuration
  std::string model;
  std::string plan;     // plan_label(), e.g. "ring 2 x ulysses 2"
  std::string predicted_with;  // RunRecord::predicted_hardware, e.g. "local (calibration v2)", "h100-sxm"
  double measured_ms = 0, predicted_ms = 0;

  // (predicted - measured) / measured: +0.25 = predicted 25% too slow.
  double error() const { return (predicted_ms - measured_ms) / measured_ms; }
};

// Prediction accuracy over one group of runs.
struct Accuracy {
  std::string group;               // machine label, plan kind, prediction source, or "all"
  int runs = 0;
  double mape = 0;                 // mean |error()|, fraction (0.1 = 10%)
  std::optional<double> spearman;  // rank correlation predicted vs measured; only from 3 runs
  RunPoint worst;                  // the run of largest |error()|
};

// One ok executor run with a measured peak memory and a predicted transformer peak (both > 0): the
// same quantity on both sides, the transformer's denoising loop per rank (weights, activations);
// not the whole pipeline's predicted peak, which adds text encoders and the VAE the executor lacks.
struct MemoryPoint {
  long long run_id = 0;
  std::string machine;  // Machine::label
  std::string model;
  std::string plan;     // plan_label()
  Bytes measured_bytes = 0, predicted_bytes = 0;  // the largest rank's; the prediction's

  // (predicted - measured) / measured.
  double error() const { return (predicted_bytes - measured_bytes) / measured_bytes; }
};

// Peak-memory accuracy over one group of runs.
struct MemoryAccuracy {
  std::string group;  // machine label, or "all"
  int runs = 0;
  double mape = 0;    // mean |error()|, fraction
  MemoryPoint worst;  // the run of largest |error()|
};

// Median bus bandwidth (nccl-tests' busbw) per message size of one collective and group size.
struct BusbwCurve {
  std::string machine;  // Machine::label
  costmodel::Collective collective = costmodel::Collective::kAllGather;
  int ranks = 2;
  bool uneven = false;                         // all_to_all with unequal splits
  std::vector<std::pair<Bytes, GBps>> points;  // by increasing bytes, one per measured size

  // The busbw at `bytes`: measured, or interpolated log-log between the two measured sizes around
  // it; nullopt outside the measured range.
  std::optional<GBps> busbw_at(Bytes bytes) const;
  // e.g. "all_to_all (uneven)".
  std::string collective_name() const;
};

// One machine (hardware fingerprint) and what the store holds of it.
struct Machine {
  data::HardwareFingerprint hardware;
  std::string key;    // hardware.key()
  std::string label;  // e.g. "8 x NVIDIA H100 80GB HBM3 (node7)"; unique within a report
  int runs_ok = 0, runs_failed = 0, runs_cancelled = 0;
  int runs_compared = 0;  // ok runs with a measured and a predicted step time
  int collective_samples = 0, kernel_samples = 0;
  std::optional<costmodel::Calibration> calibration;  // the latest version
};

struct Figures {
  std::string db_path;
  int schema_version = 0;
  int runs_total = 0, runs_ok = 0, runs_failed = 0, runs_cancelled = 0;
  int runs_unmeasured = 0;        // ok but without a measured step time
  int runs_without_prediction = 0;  // ok and measured but without a predicted step time
  std::vector<Machine> machines;  // in the order the store first recorded them
  std::vector<RunPoint> points;   // by run id
  std::optional<Accuracy> overall;
  std::vector<Accuracy> by_machine;  // machines with compared runs, in machines' order
  std::vector<Accuracy> by_kind;     // plan kinds, alphabetical
  std::vector<Accuracy> by_source;   // RunPoint::predicted_with, alphabetical
  std::vector<BusbwCurve> busbw;     // by machine, collective, uneven, ranks
  // Peak memory: executor runs with a measured peak and a predicted transformer peak, by run id;
  // the accuracy over all of them and per machine (in machines' order).
  std::vector<MemoryPoint> memory_points;
  std::optional<MemoryAccuracy> memory_overall;
  std::vector<MemoryAccuracy> memory_by_machine;
  // Ok executor runs with a measured peak but no predicted transformer peak: recorded before
  // schema v4 (beside only the whole pipeline's predicted peak) or without a prediction.
  int memory_unpredicted = 0;
  // The load phase of executor runs that recorded it: what building the transformers left
  // allocated (the largest rank's, metrics rankN.load_phase_bytes) against the predicted
  // transformer weights per rank (predicted.load_transformer_bytes).
  std::vector<MemoryPoint> load_points;
  std::optional<MemoryAccuracy> load_overall;
};

// "single rank", or the CP variant's display name with "+ TP", "+ CFG", "+ DP" for the other axes
// in use, e.g. "Ulysses", "Ring + CFG", "TP + DP".
std::string plan_kind(const data::RunRecord& run);

// Every figure of the report; an error only when the store cannot be read.
Result<Figures> gather(const data::Store& store);

// The message sizes of the markdown's busbw table (4 KiB ... 256 MiB, powers of 16).
const std::vector<Bytes>& busbw_table_sizes();

// One plot of the report: written to `file` (a name inside the output directory), or skipped
// with the reason.
struct Plot {
  enum class Section { kAccuracy, kBandwidth };  // where the markdown links it
  Section section = Section::kAccuracy;
  std::string file;     // e.g. "scatter.png", inside the output directory
  std::string title;    // alt text of the image link
  std::string skipped;  // "" when written, else why not (one sentence); then `file` is not written
};

// The report's markdown over `figures`, linking the written `plots` and naming the skipped ones.
std::string markdown(const Figures& figures, const std::vector<Plot>& plots);

struct Options {
  int width_px = 960, height_px = 600;  // every PNG: 200..8192 x 150..8192
};

struct Written {
  std::string markdown_path;  // <out_dir>/REPORT.md
  std::vector<Plot> plots;    // in the markdown's order
};

// Creates `out_dir` (and its parents) if missing and checks that a file can be written in it.
// Error (one line naming the directory and the reason) when it is not a directory or not writable.
Result<bool> prepare_output_dir(const std::string& out_dir);

// Renders every plot as PNG and writes REPORT.md into `out_dir` (prepared as above). Plots run on
// Qt's off-screen platform unless QT_QPA_PLATFORM chose another; a QApplication is created when
// the process has none. Figures without data give skipped plots, not errors.
Result<Written> write_report(const Figures& figures, const std::string& out_dir, const Options& options = {});

}  // namespace cpplan::report
