#pragma once
// The commands of the executor binary, cpplan-exec: those that load LibTorch (run, probe, the
// executor half of bench, this machine's fingerprint) or Qt (report). `cpplan` parses them as it
// parses every command (cli/app.cpp) and starts cpplan-exec with the same command line, which
// parses it again and runs them here.

#include <iosfwd>
#include <string>

#include "cli/app.h"
#include "cli/bench_command.h"
#include "cli/calibrate_commands.h"
#include "cli/report_command.h"

namespace cpplan::exec {

using cli::Args;

// argv: the original command line (the launcher starts the ranks with it).
int run_command(const Args& a, int argc, const char* const* argv, const std::string& exe, std::ostream& out,
                std::ostream& err);
int probe_command(const cli::ProbeArgs& p, const Args& a, const std::string& exe, std::ostream& out, std::ostream& err);
int bench_command(const cli::BenchArgs& b, const Args& a, const std::string& exe, std::ostream& out, std::ostream& err);
// Exit 0; 3 when the database is missing or not a cpplan database (left untouched) or --out
// cannot be written (one line naming it and the reason); 4 when reading or rendering fails.
int report_command(const cli::ReportArgs& r, std::ostream& out, std::ostream& err);
// This machine's fingerprint as one JSON line (session::machine_json); `device` cpu | cuda | "".
int fingerprint_command(const std::string& device, std::ostream& out);

// The handlers above, for cli::run (report is null in a build without Qt).
const cli::Commands& commands();

}  // namespace cpplan::exec
