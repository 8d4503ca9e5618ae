#pragma once
// Human and JSON output of the planner's results (schema: docs/usage.md, "JSON output").

#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>

#include "core/profiles.h"
#include "session/engine/engine.h"
#include "session/engine/explain.h"
#include "session/render/plan_json.h"
#include "session/engine/recommend.h"

namespace cpplan::cli {

// What priced a group's collective, in words (session/engine/explain.h).
using session::CollectiveSource;

// The JSON forms live in the session library, shared with the executor and the Python module.
using session::plan_json;
using session::placement_json;
using session::query_json;
using session::topology_query_json;

// `cpplan [recommend]`: the query, the ranked rows (--top of them, every form with --all), the
// rejected plans, the top plan, each framework's choice, the placement; with --explain the
// per-group bandwidths and cost terms of the top plan (session::print_explain).
void print_recommendation(std::ostream& out, const session::Recommendation& rec);
// --objective throughput: the uniform replica splits ranked, the mixed one when it is better
// (planner/fleet.h); --top rows (every row with --all).
void print_fleet(std::ostream& out, const session::Recommendation& rec);
// `cpplan check`: one plan's verdict, prediction and placement.
void print_check(std::ostream& out, const session::CheckResult& c);
void print_models(std::ostream& out, const ProfileCatalog& c);
void print_hardware(std::ostream& out, const ProfileCatalog& c);
nlohmann::json models_json(const ProfileCatalog& c);
nlohmann::json hardware_json(const ProfileCatalog& c);
// `cpplan list frameworks`: each framework file, and per model the features it offers.
void print_frameworks(std::ostream& out, const ProfileCatalog& c);
nlohmann::json frameworks_json(const ProfileCatalog& c);
// The diffusers transformer classes (profiles/classes/): whether each plans, else why not.
void print_classes(std::ostream& out, const ProfileCatalog& c);
nlohmann::json classes_json(const ProfileCatalog& c);

// Topology-aware placement (cli/render_topology.cpp).
std::string placement_summary(const planner::topology::Placement& p);  // "u:382 r:40@2n" (busbw GB/s, nodes spanned)
void print_topologies(std::ostream& out, const ProfileCatalog& c);
nlohmann::json topologies_json(const ProfileCatalog& c);

}  // namespace cpplan::cli
