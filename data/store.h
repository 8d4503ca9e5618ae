#pragma once
// The measurement store: every benchmark run, what it was measured on, and what the cost model
// predicted for it, in one SQLite file (schema in data/schema.cpp); since schema v2 also the
// measured collective and kernel samples of each machine and the calibrations fitted on them.
// Several processes may write to the same file at once (WAL, busy timeout, retried transactions).
// A file that is not a cpplan database, or one written by a newer cpplan, is refused and left as
// it was.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/parallel_config.h"
#include "core/result.h"
#include "costmodel/calibration.h"
#include "costmodel/measurements.h"

struct sqlite3;

namespace cpplan::data {

// Identifies the machine a run was measured on.
struct HardwareFingerprint {
  std::string device_kind;  // "cpu" | "cuda"
  std::string gpu_name;
  int gpu_count = 0;
  std::string cpu_name;
  int cpu_count = 0;
  std::string driver, cuda, nccl, torch;  // versions, "" where not applicable
  std::string host;

  // Stable id: 16 lowercase hex digits of a 64-bit FNV-1a over every field, host included, so
  // that identical GPUs in two hosts (other topology, cooling, BIOS) are two machines, and a new
  // driver or torch version is a new machine too.
  std::string key() const;

  bool operator==(const HardwareFingerprint&) const = default;
};

// One benchmark run: its configuration, outcome, measurements and the prediction beside them.
struct RunRecord {
  std::string run_key;  // caller's identity of the run's configuration (resume/merge); may be ""
  std::string model;    // must not be empty
  int width = 0, height = 0, frames = 1, steps = 0, warmup = 0;
  std::string dtype;
  int ring = 1, ulysses = 1, tp = 1, cfg = 1, dp = 1;
  int pipefusion = 1, pipeline_patches = 1, pipefusion_warmup_steps = 0;  // schema v5
  int fs = 1;                                                              // schema v7: fs_degree
  bool ulysses_anything = false, ring_anything = false;
  std::string rotate_method = "allgather";
  bool convert_to_fp32 = true;
  std::string attention_backend;
  int world_size = 1;
  long long seed = 0;
  std::string status;  // "ok" | "failed" | "oom" (out of memory; error says the bytes asked) | "cancelled"
  std::string error;   // reason when not ok
  std::string started_at, finished_at;  // ISO-8601 UTC
  std::string cpplan_version;
  // Measured, over the timed steps (median step); absent when not measured. No NaN (SQLite would
  // store NULL); -0.0 reads back as 0.0 (SQLite keeps integral REALs as integers).
  std::optional<double> step_ms, step_ms_p10, step_ms_p90, steps_per_sec, compute_ms, comm_ms, peak_mem_bytes,
      bytes_sent;
  // The cost model's prediction for the same configuration, and the hardware profile it used (a
  // pipeline run: the profile its recorder named, "" when none, the predicted figures absent).
  std::optional<double> predicted_step_ms, predicted_steps_per_sec, predicted_peak_mem_bytes;
  std::string predicted_hardware;
  // Since schema v3: where the run was measured, "executor" (cpplan run) or "pipeline" (a user's
  // own pipeline timed by python/cpplan_record.py, cpplan import-runs); the runtime that ran it
  // ("diffusers" | "xdit" | "compiled" | "cpplan", "" when not said); where the text encoder ran
  // ("replicated" | "offloaded" | "sequential" | "sharded", "" when none ran) and the VAE
  // ("single" | "parallel", ""); images per call; and, per image, the whole call, the text
  // encoding and the VAE decode in ms (absent when not measured).
  std::string source = "executor";
  std::string runtime, text_encoder, vae;
  int batch = 1;
  std::optional<double> image_ms, text_encode_ms, vae_decode_ms;
  // Since schema v4: the predicted peak of the transformer's denoising loop alone per GPU, bytes
  // (costmodel::Prediction::transformer_peak_bytes), the quantity an executor run's
  // peak_mem_bytes measures; predicted_peak_mem_bytes is the whole pipeline's. Absent for runs
  // recorded before v4 and for runs without a prediction.
  std::optional<double> predicted_transformer_peak_bytes;
  std::vector<double> step_times_ms;                     // every timed step, in order
  std::vector<std::pair<std::string, double>> metrics;  // named extras, e.g. "rank1.peak_mem_bytes"

  bool operator==(const RunRecord&) const = default;
};

// A run's plan as a config (degrees, anything flags, rotate method, fp32 merge), and back.
ParallelConfig parallel_config(const RunRecord& r);
void set_plan(RunRecord& r, const ParallelConfig& c);

struct StoredRun {
  long long id = 0;
  RunRecord run;
  HardwareFingerprint hardware;
};

// What merge_from() did with the other database's rows.
struct MergeSummary {
  long long runs_added = 0;
  long long runs_skipped = 0;  // the same run was here already (see merge_from)
  long long samples_added = 0;  // collective and kernel samples
  long long calibrations_added = 0;
};

// What record_runs() did with the runs it was given.
struct RecordSummary {
  long long added = 0;
  long long skipped = 0;  // the same run was here already (see record_runs)
};

// One open database file. Movable, not copyable; the destructor closes the connection. Use one
// Store per thread (or per process); open it after fork(), never carry it across.
class Store {
 public:
  // Opens `path`, creating it and its parent directories if missing and bringing an older
  // schema up to date. Nothing is written until the file is known to be a cpplan database (or
  // missing, or empty) no newer than this code.
  static Result<Store> open(const std::string& path);

  // In one transaction: adds the machine (once per key), the run and its metrics. Returns the
  // run's id. Rejects (writing nothing) an unknown status, source or device_kind, an empty model
  // or metric name, and NaN in any number.
  Result<long long> record_run(const HardwareFingerprint& hw, const RunRecord& run);

  // In one transaction, every run of `runs` as record_run() adds it, except a run already here
  // by merge_from()'s rule for keyed runs (the same non-empty run_key, machine and started_at,
  // including an earlier run of `runs`), which is skipped. Validates every run first: one invalid
  // run is an error naming its index, and nothing is written.
  Result<RecordSummary> record_runs(const std::vector<std::pair<HardwareFingerprint, RunRecord>>& runs);

  // Every run (or those of `model_filter`, exact match), newest first.
  Result<std::vector<StoredRun>> runs(const std::string& model_filter = "") const;

  // Every machine known (from runs, samples or calibrations), in the order first recorded.
  Result<std::vector<HardwareFingerprint>> hardware() const;

  // In one transaction: adds the machine (once per key) and every sample of `set`, stamped with
  // `source` ("probe" | "nccl-tests") and the current UTC time. Returns the rows written
  // (collectives + kernels). Rejects, writing nothing, another source, an unknown device_kind,
  // ranks or concurrent_ranks below 1, and numbers that are negative, NaN or infinite.
  Result<long long> record_measurements(const HardwareFingerprint& hw, const costmodel::MeasurementSet& set,
                                        const std::string& source);

  // The samples of the machine whose key() is `hardware_key`, each list in the order recorded
  // (every source together); empty when the machine has none.
  Result<costmodel::MeasurementSet> measurements(const std::string& hardware_key) const;

  // Stores `calibration` for `hw` as the machine's next version (1, 2, ...) and returns that
  // version; `calibration.version` is ignored and `calibration.fingerprint` must be "" or
  // hw.key(). Rejects, writing nothing, features and coefficients of different lengths, an empty
  // feature name, runs or folds below 0, and numbers that are NaN or infinite.
  Result<int> record_calibration(const HardwareFingerprint& hw, costmodel::Calibration calibration);

  // The machine's calibration of the highest version (fingerprint and version filled in), or
  // nullopt when it has none.
  Result<std::optional<costmodel::Calibration>> latest_calibration(const std::string& hardware_key) const;

  // Copies into this database, in one transaction, what the cpplan database at `other_path` holds
  // and this one lacks. `other_path` is opened read-only after the checks of open(): a missing,
  // foreign or newer file (or this file itself) is an error naming it, and it stays untouched. A
  // file of an older schema is read as it is (a v1 file has no samples or calibrations).
  //  - hardware: by key; every machine of the other file is added.
  //  - runs (with their step times and metrics): a run is the same run when it has the same
  //    run_key, the same machine (hardware key) and the same started_at; a run whose run_key is
  //    "" is the same only when every column (and the machine) is equal. Same run: skipped.
  //  - samples: by every field (machine, kind, shape or group, sizes, times, source,
  //    recorded_at). Identical samples are counted: this database ends up holding each one as
  //    many times as the larger of the two files does, so merging a file twice adds nothing.
  //  - calibrations: by (machine, fitted_at). An added one becomes the machine's next version
  //    here, in the other file's version order.
  Result<MergeSummary> merge_from(const std::string& other_path);

  // "ok", or sqlite's findings joined by newlines (PRAGMA integrity_check).
  Result<std::string> integrity_check() const;

  // The schema version of the file once open() migrated it (PRAGMA user_version).
  int schema_version() const { return schema_version_; }
  const std::string& path() const { return path_; }

  // $XDG_DATA_HOME/cpplan/cpplan.db (when set and absolute), else
  // $HOME/.local/share/cpplan/cpplan.db, else cpplan.db in the working directory.
  static std::string default_path();

  Store(Store&&) noexcept = default;
  Store& operator=(Store&&) noexcept = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store() = default;

 private:
  struct Closer {
    void operator()(sqlite3* db) const;
  };
  Store(std::unique_ptr<sqlite3, Closer> db, std::string path, int schema_version)
      : db_(std::move(db)), path_(std::move(path)), schema_version_(schema_version) {}

  std::unique_ptr<sqlite3, Closer> db_;
  std::string path_;
  int schema_version_ = 0;
};

}  // namespace cpplan::data
