#pragma once
// `cpplan tune`: the best candidates measured on the user's own pipeline, each launch recorded as
// it finishes, the machine's correction refitted after each, the rest re-ranked, an early stop
// when the measured best beats every remaining prediction by the margin, and the measured best.
// A rerun with the same arguments skips what the database already holds.

#include <atomic>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/cache.h"
#include "core/result.h"
#include "session/query/query.h"
#include "session/engine/recommend.h"
#include "session/engine/internal/tune_hit_rate.h"
#include "session/jobs/tune_candidates.h"
#include "session/jobs/tune_fit.h"

namespace cpplan::session {

struct TuneRequest {
  Options options;  // the query (model, gpus, resolution, steps, framework, hardware, db, ...)
  std::string script;
  std::vector<std::string> script_args;
  std::string launcher = "torchrun";  // torchrun | srun | mpirun
  double timeout_s = 1800;            // per launch
  std::string device = "cuda";        // where the script runs: cuda | cpu (the recorder's clocks)
  double margin = 0.1;                // 0.1: within 10%
  int top = 4;
  std::string exe;  // this binary: locates the profiles and the Python module beside it
  MachineSource machine;  // this machine, for --hardware local
};

enum class TuneStatus { kPending, kOk, kOom, kFailed, kTimeout, kNotRun, kCancelled };
std::string_view to_string(TuneStatus s);  // "pending", "ok", "oom", "failed", "timeout", "not run", "cancelled"

// What the recorder counted of a launch's step cache: the steps its watched middle block ran in
// (computed) and not (cached), and the hit rate over the steps after `warmup_steps`.
struct CacheCounts {
  int computed_steps = 0, cached_steps = 0, warmup_steps = 0;
  double hit_rate = 0;
  // The cached steps after the warm-up: hit_rate x (steps - warm-up), rounded.
  int cached_after_warmup() const;
  int steps_after_warmup() const { return computed_steps + cached_steps - warmup_steps; }
};

// What one candidate's launch gave.
struct TuneOutcome {
  TuneStatus status = TuneStatus::kPending;
  // Measured (ok): step_ms the median step, or with a step cache the mean step (computed and cached
  // steps together, as the ranking's mean step); per image; peak bytes.
  std::optional<double> step_ms, image_ms, peak_bytes;
  std::optional<CacheCounts> cache;                      // the recorder's counts, when it watched a block
  std::string error;                                     // one line, when not ok
  bool resumed = false;                                  // read from an earlier tune's record
  double launch_s = 0;                                   // wall time of the launch
};

struct TuneRow {
  TuneCandidate candidate;
  TuneOutcome outcome;
  double calibrated_step_ms = 0;  // the final fit's prediction
  std::string key;                // the run_key of its record
  std::string log;                // the launch's output
};

struct TuneReport {
  std::vector<TuneRow> rows;  // in the order chosen
  std::optional<std::size_t> best;       // fastest measured
  std::optional<double> regret;          // predicted best's measured step over the best's, minus 1
  TuneFit fit;
  std::set<PlanFamily> measured_before;  // families this machine had ok runs of before the tune
  bool stopped_early = false, cancelled = false;
  std::string db, calibration_path, prediction_source, model;
  std::string calibration_source;  // "local", "cluster-NAME" (what later queries read), or the hardware's name
  // The query's step cache and steps; a threshold policy's hit_rate is the one the predictions
  // hold: the stated one (assumed_hit_rate), then the one measured.
  CacheSpec cache;
  int steps = 0;
  double assumed_hit_rate = 0;  // a fixed schedule's: its cached steps after the warm-up over those steps
  std::optional<MeasuredHitRate> hit_rate;  // pooled over the ok launches' counts (threshold policies)
  std::vector<std::string> notes;
};

// Called as launches start and end (the front's progress); `cancel` stops the launch running.
struct TuneEvents {
  std::function<void(const TuneReport&, std::size_t row, int done, int total)> launch_started, launch_ended;
  const std::atomic<bool>* cancel = nullptr;
};

// Checks the request (InvalidInput names the field), plans, launches and records.
Result<TuneReport> tune(const TuneRequest& r, const TuneEvents& events);

// The plan's JSON the launch reads (CPPLAN_PLAN): `plan` plus "tune": model, runtime, width,
// height, frames, steps, device, out.
std::string launch_plan_json(const TuneRequest& r, const Query& q, const TuneCandidate& c, const std::string& out);

}  // namespace cpplan::session
