#pragma once
// `cpplan tune SCRIPT [-- SCRIPT ARGS] --gpus N [query flags] [--top K] [--launcher L]
// [--timeout-s T] [--device D] [--margin M] [--db F]`: the best candidates measured on the
// user's own pipeline (session/jobs/tune.h); this file parses, shows progress and prints the table.

#include <iosfwd>
#include <string>
#include <vector>

#include "cli/args.h"
#include "session/engine/recommend.h"

namespace cpplan::cli {

struct TuneArgs {
  std::string script;
  std::vector<std::string> script_args;
  std::string launcher = "torchrun", device = "cuda";
  double timeout_s = 1800, margin = 0.1;
  int top = 4;
};

void add_tune_options(CLI::App& tune, TuneArgs& t);
int tune_command(const TuneArgs& t, const Args& a, const std::string& exe, const session::MachineSource& machine,
                 std::ostream& out, std::ostream& err);

}  // namespace cpplan::cli
