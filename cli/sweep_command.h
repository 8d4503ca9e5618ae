#pragma once
// `cpplan sweep FILE [--db FILE] [--resume] [--dry-run] [--csv FILE] [--emit slurm|torchrun]`:
// an automated benchmark sweep (models x sizes x GPU counts x plans) run through the executor
// one run at a time, each run committed on its own, so a killed sweep loses nothing finished and
// --resume completes it with every run recorded exactly once.

#include <iosfwd>
#include <string>
#include <vector>

#include "cli/args.h"
#include "core/result.h"

namespace cpplan::cli {

struct SweepArgs {
  std::string file, db, csv, emit;
  bool resume = false;
  bool dry_run = false;
};

// One run of a sweep: the arguments of `cpplan run` after "run", and its identity.
struct SweepRun {
  std::string model;
  std::string resolution;
  int frames = 1;
  int gpus = 1;
  std::vector<std::string> plan_flags;  // --ring 2 --ulysses 2 ...
  std::string label;                    // human label of the plan
  std::vector<std::string> run_args;    // everything after `cpplan run`
  std::string run_key;                  // as recorded by `cpplan run`
};

// Parses a sweep file and expands it into runs (errors name the file, line and field).
Result<std::vector<SweepRun>> load_sweep(const std::string& path, const ProfileCatalog& catalog);

void add_sweep_options(CLI::App& sweep, SweepArgs& s);
int sweep_command(const SweepArgs& s, const Args& a, const std::string& exe, std::ostream& out, std::ostream& err);

}  // namespace cpplan::cli
