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

// `here`: the executor binary's commands (exec/commands.h), to run them in this process too.
inline CliResult run_cli(std::vector<std::string> args, const cli::Commands* here = nullptr) {
  args.insert(args.begin(), "cpplan");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  CliResult r;
  r.code = cli::run(static_cast<int>(argv.size()), argv.data(), out, err, here);
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace cpplan::test
