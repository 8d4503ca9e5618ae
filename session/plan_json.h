#pragma once
// The JSON forms of a query and its plans (schema: docs/usage.md, "JSON output"), as every front prints
// them: `cpplan --json`, `cpplan check --json`, `cpplan run --json`, the Python module.

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "planner/planner.h"
#include "session/query.h"

namespace cpplan::session {

nlohmann::json query_json(const Query& q);
// A plan with its prediction, frameworks, snippets, diffusers config and xDiT arguments.
nlohmann::json plan_json(const Query& q, const planner::RankedPlan& p);
nlohmann::json placement_json(const planner::topology::Placement& p);
nlohmann::json topology_query_json(const Query& q);

struct ReportJsonOptions {
  bool all = false;  // list the invalid plans too (they are counted always)
  std::string prediction_source = "datasheet figures";  // prediction_source() (session/planning.h)
};
nlohmann::json report_json(const Query& q, const planner::PlanReport& r, const ReportJsonOptions& o);

// The ranking `cpplan --json` prints for the options `a`, over the datasheet model or `a.cluster`'s
// (not --hardware local, which needs the executor's probe); throws InvalidInput. `exe` locates the
// installed profiles (profile_search_path); notes (the hardware guessed, the GPUs nvidia-smi
// lists) go to `notes`.
nlohmann::json recommend_json(const Options& a, const std::string& exe, std::ostream& notes);

}  // namespace cpplan::session
