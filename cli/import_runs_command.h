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
#include "core/result.h"
#include "data/store.h"

namespace cpplan::cli {

using MeasuredRun = std::pair<data::HardwareFingerprint, data::RunRecord>;

// The runs of a recorder file's `text`, one per non-blank line, each with the machine it ran
// on; the run_key is a hash of the line's content (its parsed JSON), so the same line is the same
// run. The first bad line is an error "FILE:LINE: field = value: rule" (`file` names the file);
// unknown and missing keys are errors, and cpplan_record must be 1.
Result<std::vector<MeasuredRun>> parse_recorder_runs(std::string_view text, const std::string& file);

CLI::App* add_import_runs_command(CLI::App& app, StoreArgs& s);

// Exit 0, 3 (bad input: one line, the database untouched; a --db in a missing directory) or 4
// (the store failed).
int import_runs_command(const StoreArgs& s, std::ostream& out, std::ostream& err);

}  // namespace cpplan::cli
