#pragma once
// The `cpplan` command: parses arguments into a request, calls the library, prints.

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>

#include "session/query/query_flags.h"  // add_field_option: every command's --db and --cluster

namespace cpplan::session {
struct Options;
}

namespace cpplan::cli {

struct ProbeArgs;   // cli/calibrate_commands.h
struct BenchArgs;   // cli/bench_command.h
struct ReportArgs;  // cli/report_command.h

// Exit codes: 0 ok, 2 usage, 3 invalid input or invalid plan, 4 runtime failure.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInvalid = 3;
inline constexpr int kExitRuntime = 4;

// --cluster NAME: a name to record and find imports under, so not empty.
inline const CLI::Validator kClusterName(
    [](std::string& name) { return name.empty() ? std::string("must not be empty") : std::string(); }, "NAME");


// The commands that load LibTorch or Qt, run by the executor binary cpplan-exec (exec/commands.h).
// The planning binary passes none: it parses those commands like the others, then starts
// cpplan-exec (beside it) with the same command line, whose exit code becomes its own.
struct Commands {
  int (*run)(const session::Options&, int argc, const char* const* argv, const std::string& exe, std::ostream& out,
             std::ostream& err) = nullptr;
  int (*probe)(const ProbeArgs&, const session::Options&, const std::string& exe, std::ostream& out,
               std::ostream& err) = nullptr;
  int (*bench)(const BenchArgs&, const session::Options&, const std::string& exe, std::ostream& out,
               std::ostream& err) = nullptr;
  int (*report)(const ReportArgs&, std::ostream& out, std::ostream& err) = nullptr;
  int (*fingerprint)(const std::string& device, std::ostream& out) = nullptr;
};

// `here`: the executor binary's handlers; null in the planning binary.
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err, const Commands* here = nullptr);

}  // namespace cpplan::cli
