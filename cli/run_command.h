#pragma once
// `cpplan run`'s flags. The command runs one plan for real in the executor binary (cpplan-exec,
// exec/run_command.cpp), which `cpplan run` starts with the same command line.

#include "cli/args.h"

namespace cpplan::cli {

void add_run_options(CLI::App& run, Args& a);

}  // namespace cpplan::cli
