#pragma once
// `cpplan run`: runs one plan for real through the executor (as the local launcher, as one rank
// under torchrun/srun/mpirun, or in-process for one rank), records it in the SQLite store and
// prints the measurement beside the prediction.

#include <iosfwd>

#include "cli/args.h"

namespace cpplan::cli {

// The metric (value 1) of a GPU run made with --sync-collectives: its communication was
// serialised with its computation, so calibrate leaves it out.
inline constexpr const char* kSyncCollectivesMetric = "sync_collectives";

void add_run_options(CLI::App& run, Args& a);

// The identity of a run's configuration, as recorded in the store (resume and merge use it).
std::string run_key(const std::string& model, Resolution res, int frames, int steps, const ParallelConfig& c,
                    int batch, long long seed, const std::string& dtype = "fp32");
// argv: the original command line (the launcher starts the ranks with it).
int run_command(const Args& a, int argc, const char* const* argv, const std::string& exe, std::ostream& out,
                std::ostream& err);

}  // namespace cpplan::cli
