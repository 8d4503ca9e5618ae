#pragma once
// The two calibrations: this machine's executor runs fitted to its measured model (what
// `cpplan calibrate` stores), and the runtime and hardware defaults fitted to end-to-end timings of
// real pipelines (`cpplan calibrate --import`, `--pipeline-runs`). The fronts render the results.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/profiles.h"
#include "data/store.h"
#include "costmodel/calibration.h"
#include "costmodel/timing_row.h"
#include "planner/runtime_calibration.h"
#include "session/query/machine.h"

namespace cpplan::session {

// The metric (value 1) of a GPU run made with --sync-collectives: its communication was
// serialised with its computation, so the calibration leaves it out.
inline constexpr const char* kSyncCollectivesMetric = "sync_collectives";
// The metric of a run made with a step cache (cpplan run --cache; its value: the cached steps).
// The calibration leaves such a run out: its step time is not the full step the features
// describe, and its computed steps, which are, also store the residual between cached steps.
// The cached step is predicted from the calibration of full steps (cached_step_terms).
inline constexpr const char* kStepCacheMetric = "cache.cached_steps";
// The metric (value 1) of a run whose blocks' linear weights were held int8 (cpplan run --weights
// int8). The calibration leaves such a run out: this machine's model is fitted to its measured
// kernels in the compute dtype, which price no dequantization of the weights before each matmul.
inline constexpr const char* kInt8WeightsMetric = "weights.int8";
// The metric of a run's host (rank 0's): of its CPU time during the timed steps, the share the
// hypervisor gave to other guests (/proc/stat's steal). Above kMaxStealFraction the run measured
// a machine slowed by its neighbours, not this machine (lock-step ranks wait for whichever lost
// its core), and the calibration leaves it out.
inline constexpr const char* kStealMetric = "host.steal_fraction";
inline constexpr double kMaxStealFraction = 0.05;
// The line a front prints when the hypervisor gave `steal_fraction` of the host's CPU time to
// other guests `during` a measurement ("during the steps", "while the probe ran"), with what it
// means for `consequence`; empty at or under kMaxStealFraction (or unread, negative).
std::string contended_line(double steal_fraction, std::string_view during, std::string_view consequence);
// The kStealMetric a run recorded; empty where it recorded none (or could not read it).
std::optional<double> steal_fraction(const data::RunRecord& run);
// contended_line for a run's timed steps: what `cpplan run` prints and a front shows of a stored run.
std::string contended_run_line(double steal_fraction);

// The calibration fitted to this machine's ok executor runs in the store at `db`, stored there as
// a new version. InvalidInput without a probe of the machine or with fewer than 4 runs.
struct LocalCalibration {
  costmodel::Calibration calibration;
  long long version = 0;
  std::string db;  // the store's path
};
LocalCalibration calibrate_local(const std::string& db, const ProfileCatalog& catalog, const Machine& machine, int folds);

// How a runtime fit is named, where it is written, and what it starts from.
struct RuntimeFitRequest {
  std::string source;   // the timings' file or database, named in the fit's provenance
  std::string name;     // the fit's name (default: the output's stem, else "fit")
  std::string output;   // a .toml file to write, or ""
  int folds = 5;
  int repeats = 5;                    // of the cross-validation
  bool shrinkage_by_groups = false;   // the ridge chosen by leaving GPU kinds, sources, checkpoints out
  std::vector<std::string> profiles;  // extra profile directories
  std::string exe;                    // locates the installed profiles
};
// Fills the default name and checks the output (InvalidInput), before any timings are read.
void complete_fit_request(RuntimeFitRequest& request);
// The fit of `rows` from the profiles' priors, written to request.output when set. InvalidInput
// on a bad output name or rows the fit cannot use.
planner::RuntimeCalibration fit_runtimes(const std::vector<costmodel::TimingRow>& rows, RuntimeFitRequest request);
// `rows` predicted by the shipped profiles (fits applied) of request.profiles, fitting nothing;
// InvalidInput on rows they cannot predict.
planner::RuntimeCalibration check_shipped(const std::vector<costmodel::TimingRow>& rows, const RuntimeFitRequest& request);

// How imported rows name what the file does not: `runtime` for rows that name none, and
// KEY=VALUE pairs (--runtime-for SOURCE=RUNTIME, --model-for SOURCE=MODEL, --topology-for BOX=TOPOLOGY,
// --warmup-for SOURCE=W).
struct TimingMappings {
  std::string runtime;
  std::vector<std::string> runtime_for, model_for, topology_for;
  std::vector<std::string> warmup_for;  // SOURCE=W: the PipeFusion warm-up of its rows that state none
};
// The rows of every imported timings file (.json, .csv or .jsonl), one fit's worth. InvalidInput
// (one line) names the file, row, field and rule, or a --model-for or --warmup-for SOURCE or a
// --topology-for BOX no row has (a mistyped name would otherwise leave its rows as they were).
std::vector<costmodel::TimingRow> import_timings(const std::vector<std::string>& files, const TimingMappings& mappings);
// The pipeline runs (cpplan import-runs) of the store at `db` as timing rows; InvalidInput when
// it is missing or holds fewer than 2.
std::vector<costmodel::TimingRow> pipeline_timing_rows(const std::string& db, std::string& store_path);

}  // namespace cpplan::session
