#pragma once
// The runs python/cpplan_record.py times in a user's own pipeline (one JSON line per run,
// docs/calibration.md "Pipeline runs"), read into store records: what `cpplan import-runs`
// records as runs of source "pipeline", and the runtime fit reads back.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "data/store.h"

namespace cpplan::session {

using MeasuredRun = std::pair<data::HardwareFingerprint, data::RunRecord>;

// The runs of a recorder file's `text`, one per non-blank line, each with the machine it ran
// on; the run_key is a hash of the line's content (its parsed JSON), so the same line is the same
// run. The first bad line is an error "FILE:LINE: field = value: rule" (`file` names the file);
// unknown and missing keys are errors, and cpplan_record must be 1.
Result<std::vector<MeasuredRun>> parse_recorder_runs(std::string_view text, const std::string& file);

}  // namespace cpplan::session
