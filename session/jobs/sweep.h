#pragma once
// A benchmark sweep (models x sizes x GPU counts x plans, session/jobs/sweep_file.h) run through the
// executor one `cpplan run` at a time, each run committed to the store on its own: a killed
// sweep loses nothing finished, and a resumed one records every run exactly once. The fronts
// show the progress (callbacks) and may cancel between runs.

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "session/jobs/sweep_file.h"

namespace cpplan::session {

// The identity of a run's configuration, as recorded in the store (resume and merge use it).
std::string run_key(const std::string& model, Resolution res, int frames, int steps, const ParallelConfig& c,
                    int batch, long long seed, const std::string& dtype = "fp32");
// A step cache's part of a run key ("|cache-fixed-f1b0w2e2"; empty without a cache), so that a
// cached run never stands for the uncached run of its plan (cpplan run appends it too).
std::string cache_key(const CacheSpec& c);
// Int8 weights' part of a run key ("|weights-int8"; empty otherwise: `int8` false), so that an int8
// run never stands for the run of its plan in the compute dtype (cpplan run appends it too).
std::string weights_key(bool int8);
// The same of a sweep's run, its weights' and cache's parts included.
std::string run_key(const SweepRun& r);

// The run keys recorded ok in the store at `db` on this machine (`machine_key`).
std::vector<std::string> recorded_run_keys(const std::string& db, const std::string& machine_key);

// What became of one run of the sweep.
struct SweepOutcome {
  const SweepRun* run = nullptr;
  bool ok = false;
  double measured_ms = 0, predicted_ms = 0;  // 0 where unknown
  double error_pct() const { return measured_ms > 0 && predicted_ms > 0 ? 100.0 * (predicted_ms - measured_ms) / measured_ms : 0; }
};

struct SweepProgress {
  std::size_t index = 0, total = 0;  // the run about to start, of all
  double eta_s = 0;                  // from the runs executed so far
  const SweepRun* run = nullptr;
};

struct SweepCallbacks {
  std::function<void(const SweepProgress&)> starting;  // before each run executed
  std::function<void(const SweepOutcome&)> finished;   // after it
  const std::atomic<bool>* cancel = nullptr;           // checked between runs
};

struct SweepSummary {
  std::vector<SweepOutcome> outcomes;  // of the runs executed, in order
  int ok = 0, failed = 0, skipped = 0;
  bool cancelled = false;
};

// Runs each of `runs` whose key is not in `skip` as `<cpplan> run ARGS --db DB --json` (a child
// that dies with this process), appending a line per run to the CSV at `csv_path` (`append`: to
// the one a resumed sweep left).
SweepSummary run_sweep(const std::string& cpplan, const std::vector<SweepRun>& runs, const std::vector<std::string>& skip,
                       const std::string& db, const std::string& csv_path, bool append, const SweepCallbacks& callbacks);

// The sweep as a cluster launch script: `slurm` (an array job) or `torchrun` lines, each run
// writing its own database. InvalidInput for another kind.
std::string emit_sweep(const std::string& kind, const std::string& file, const std::vector<SweepRun>& runs);

}  // namespace cpplan::session
