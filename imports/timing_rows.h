#pragma once
// End-to-end timings of real pipelines, as people publish or record them: one row
// (costmodel::TimingRow) per measured configuration. Read from JSON (an array of rows, or an object
// with "points" and per-source "sources" as ../shared/reference/published-flux.json), CSV (a
// header of the same keys) or the JSON lines python/cpplan_record.py writes. Schema:
// docs/calibration.md, "End-to-end timings".

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "costmodel/timing_row.h"

namespace cpplan::imports {

using costmodel::TimingRow;

struct TimingImportOptions {
  std::string default_runtime;                           // for rows without one ("" : an error)
  std::map<std::string, std::string> runtime_for_source; // --runtime-for SOURCE=RUNTIME
  std::map<std::string, std::string> model_for_source;   // --model-for SOURCE=MODEL (over the rows' "model")
  std::map<std::string, std::string> topology_for_box;   // --topology-for BOX=TOPOLOGY (the rows' "box")
  std::map<std::string, int> warmup_for_source;           // --warmup-for SOURCE=W: the PipeFusion warm-up
                                                          // steps of its rows that state none (else xDiT's, 1)
};

// Parses `text` (the content of `path`; its extension .json, .jsonl or .csv picks the format, and
// JSON lines are recognised by their "cpplan_record" key). Every row is checked; the first bad one
// is an error naming the file, the row, the field, the value and the rule.
Result<std::vector<TimingRow>> parse_timing_rows(std::string_view text, const std::string& path,
                                                 const TimingImportOptions& options);

}  // namespace cpplan::imports
