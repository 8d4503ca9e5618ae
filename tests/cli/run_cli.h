#pragma once
// Runs the cpplan command in-process, as the binary does, capturing stdout, stderr and the exit code.

#include <sstream>
#include <string>
#include <vector>

#include "cli/app.h"

namespace cpplan::test {

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

inline CliResult run_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "cpplan");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  CliResult r;
  r.code = cli::run(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace cpplan::test
