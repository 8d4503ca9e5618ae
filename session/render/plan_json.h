#pragma once
// The JSON forms of a query and its plans (schema: docs/usage.md, "JSON output"), as every front prints
// them: `cpplan --json`, `cpplan check --json`, `cpplan run --json`, the Python module.

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "core/result.h"
#include "planner/planner.h"
#include "session/query/query.h"
#include "session/engine/recommend.h"

namespace cpplan::session {

nlohmann::json query_json(const Query& q);
// A plan with its prediction, frameworks, and `scripts` (plan_scripts of it, session/engine/recommend.h):
// snippets, diffusers config and the frameworks' arguments. Renders; computes nothing.
nlohmann::json plan_json(const Query& q, const planner::RankedPlan& p, const PlanScripts& scripts);
nlohmann::json placement_json(const planner::topology::Placement& p);
nlohmann::json topology_query_json(const Query& q);
// "transformer": the parameters, parameter bytes and forward FLOPs (one sample) cpplan derives.
nlohmann::json transformer_json(const PlannedQuery& pq);
// `cpplan check --json`: the plan's plan_json with the query's "transformer".
nlohmann::json check_json(const CheckResult& c);


// The ranking `cpplan --json` prints: the query, the counts, each framework's best plan, the
// prediction source and the plans (the invalid ones with --all). `rec` was asked with
// Request::with_scripts (as fleet_json's and recommendation_json's): std::logic_error otherwise.
nlohmann::json report_json(const Recommendation& rec);
// report_json with the recommendation's rendered parts: "rows" (merged forms), "rejected" (groups
// with their lever), "framework_choices" (each framework's plan, gap and script lines), "notes".
// The Python module reads this.
nlohmann::json recommendation_json(const Recommendation& rec);
// --objective throughput: the uniform replica splits ranked, and the mixed one when it is better.
nlohmann::json fleet_json(const Recommendation& rec);

}  // namespace cpplan::session
