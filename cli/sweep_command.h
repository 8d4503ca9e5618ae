#pragma once
// `cpplan sweep FILE [--db FILE] [--resume] [--dry-run] [--csv FILE] [--emit slurm|torchrun]`:
// an automated benchmark sweep (models x sizes x GPU counts x plans) run through the executor
// one run at a time, each run committed on its own, so a killed sweep loses nothing finished and
// --resume completes it with every run recorded exactly once.

#include <iosfwd>
#include <string>
#include <vector>

#include "cli/args.h"
#include "session/jobs/sweep_file.h"

namespace cpplan::cli {

struct SweepArgs {
  std::string file, db, csv, emit;
  bool resume = false;
  bool dry_run = false;
};

void add_sweep_options(CLI::App& sweep, SweepArgs& s);
int sweep_command(const SweepArgs& s, const Args& a, const std::string& exe, std::ostream& out, std::ostream& err);

}  // namespace cpplan::cli
