#pragma once
// `cpplan bench`'s flags: cpplan's own speed against its limits and against what users would run
// instead, in one run (docs/performance.md). It runs in cpplan-exec (exec/bench_command.cpp).

#include <iosfwd>

#include "cli/args.h"

namespace cpplan::cli {

struct BenchArgs {
  bool quick = false;
  bool json = false;
  bool markdown = false;
  std::string worker;  // internal: "collectives" when started as a rank by the bench itself
};

void add_bench_options(CLI::App& bench, BenchArgs& b);

}  // namespace cpplan::cli
