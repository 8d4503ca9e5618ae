#pragma once
// The JSON forms of a query and its plans (schema: docs/usage.md, "JSON output"), as every front prints
// them: `cpplan --json`, `cpplan check --json`, `cpplan run --json`, the Python module.

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "core/result.h"
#include "planner/planner.h"
#include "session/query.h"

namespace cpplan::session {

nlohmann::json query_json(const Query& q);
// A plan with its prediction, frameworks, snippets, diffusers config and xDiT arguments.
nlohmann::json plan_json(const Query& q, const planner::RankedPlan& p);
nlohmann::json placement_json(const planner::topology::Placement& p);
nlohmann::json topology_query_json(const Query& q);

struct Recommendation;

// The ranking `cpplan --json` prints: the query, the counts, each framework's best plan, the
// prediction source and the plans (the invalid ones with --all).
nlohmann::json report_json(const Recommendation& rec);
// report_json with the recommendation's rendered parts: "rows" (merged forms), "rejected" (groups
// with their lever), "framework_choices" (each framework's plan, gap and script lines), "notes".
// The Python module reads this.
nlohmann::json recommendation_json(const Recommendation& rec);
// --objective throughput: the uniform replica splits ranked, and the mixed one when it is better.
nlohmann::json fleet_json(const Recommendation& rec);

// recommendation_json for the options `a`, over the datasheet model or `a.cluster`'s (not
// --hardware local, which needs the executor's probe); the error names the field, its value and
// the rule. `exe` locates the installed profiles (profile_search_path).
Result<nlohmann::json> recommend_json(const Options& a, const std::string& exe);

}  // namespace cpplan::session
