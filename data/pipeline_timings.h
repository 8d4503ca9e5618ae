#pragma once
// The runs a user's own pipeline recorded (source "pipeline": python/cpplan_record.py, then
// `cpplan import-runs`) as end-to-end timings for `cpplan calibrate --pipeline-runs`, which fits
// the runtime profiles to them as `--import` does to a file.

#include <vector>

#include "costmodel/timing_row.h"
#include "data/store.h"

namespace cpplan::data {

// Every ok run of source "pipeline" with a step time: its model, hardware (the profile the line
// named, else "gpu:" + the GPU's name for the catalog to match), runtime, size, plan and
// placements, its median step and its image time. `where` names the database and the run id.
std::vector<costmodel::TimingRow> pipeline_timings(const std::vector<StoredRun>& runs, const std::string& db);

}  // namespace cpplan::data
