#pragma once
// cpplan import-runs FILE.jsonl [--db FILE] [--json]
//   records the runs python/cpplan_record.py timed in a user's own pipeline (one JSON line per
//   run, docs/calibration.md "Pipeline runs") as runs of source "pipeline", once each.

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/store_commands.h"  // StoreArgs
#include "session/jobs/recorder_runs.h"

namespace cpplan::cli {

using session::MeasuredRun;
using session::parse_recorder_runs;

CLI::App* add_import_runs_command(CLI::App& app, StoreArgs& s);

// Exit 0, 3 (bad input: one line, the database untouched; a --db in a missing directory) or 4
// (the store failed).
int import_runs_command(const StoreArgs& s, std::ostream& out, std::ostream& err);

}  // namespace cpplan::cli
