#pragma once
// One `cpplan tune` launch: the launcher's command line, the plan in the environment, and what
// came back (the recorder's line, or why there is none) as a store record.

#include <string>
#include <vector>

#include "data/store.h"
#include "launch/child.h"
#include "session/jobs/tune.h"

namespace cpplan::session {

// The launcher's argv for `ranks` ranks of the script: torchrun --nproc_per_node N (a free
// loopback port), srun --ntasks N, mpirun -np N; a .py script runs under python3 with srun and
// mpirun (torchrun runs it itself).
std::vector<std::string> launch_command(const TuneRequest& r, int ranks);

// What a finished launch measured, read from its recorder file `out` and its output `log`.
struct LaunchResult {
  TuneOutcome outcome;
  std::vector<std::pair<data::HardwareFingerprint, data::RunRecord>> records;  // to store (one)
};
LaunchResult read_launch(const TuneRequest& r, const Query& q, const TuneCandidate& c, const launch::ChildOutcome& child,
                         const std::string& out, const std::string& log, const std::string& run_key);

// The outcome a stored tune record stands for (resume); `mean_step`: its step_ms the mean of its
// step times (a query with a step cache), else the median the record holds.
TuneOutcome outcome_of(const data::RunRecord& run, bool mean_step);

// The recorder's cache counts among a run's metrics (recorder_runs.h); none when it watched no block.
std::optional<CacheCounts> cache_counts_of(const data::RunRecord& run);

// This machine as a failed launch's record names it (no recorder line to say it).
data::HardwareFingerprint this_host(const std::string& device);

}  // namespace cpplan::session
