#pragma once
// Human and JSON output of the planner's results (schema: docs/usage.md, "JSON output").

#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>

#include "core/profiles.h"
#include "planner/fleet.h"
#include "planner/planner.h"
#include "session/explain.h"
#include "session/plan_json.h"

namespace cpplan::cli {

// What priced a group's collective, in words (session/explain.h).
using session::CollectiveSource;

struct RenderOptions {
  int top = 10;           // ranked rows shown
  bool all = false;       // every plan, invalid ones with their reasons
  bool hardware_guessed = false;
  bool explain = false;   // per-group bandwidths and cost terms of the top plan
  std::string prediction_source = "datasheet figures";  // session::prediction_source()
  CollectiveSource collective_source;                    // --explain's "priced by" lines; none when empty
};

// The JSON forms live in the session library, shared with the executor and the Python module.
using session::plan_json;
using session::placement_json;
using session::query_json;
using session::topology_query_json;

// --objective throughput: the uniform replica splits ranked, the mixed one when it is better
// (planner/fleet.h); o.top rows (every row with o.all).
nlohmann::json fleet_json(const Query& q, const planner::FleetReport& f);
void print_fleet(std::ostream& out, const Query& q, const planner::FleetReport& f, const RenderOptions& o);

void print_report(std::ostream& out, const Query& q, const planner::PlanReport& r, const RenderOptions& o);
void print_check(std::ostream& out, const Query& q, const planner::RankedPlan& p, bool explain = false,
                 const CollectiveSource& source = {});
void print_models(std::ostream& out, const ProfileCatalog& c);
void print_hardware(std::ostream& out, const ProfileCatalog& c);
nlohmann::json models_json(const ProfileCatalog& c);
nlohmann::json hardware_json(const ProfileCatalog& c);
// `cpplan list frameworks`: each framework file, and per model the features it offers.
void print_frameworks(std::ostream& out, const ProfileCatalog& c);
nlohmann::json frameworks_json(const ProfileCatalog& c);

// Topology-aware placement (cli/render_topology.cpp).
std::string placement_summary(const planner::topology::Placement& p);  // "u:382 r:40@2n" (busbw GB/s, nodes spanned)
// The layout, CUDA_VISIBLE_DEVICES, launch lines and DeviceMesh of a placed plan (session::print_placement).
void print_placement(std::ostream& out, const Query& q, const planner::RankedPlan& p);
// Per-group bandwidths (placed or from the hardware profile) and the cost terms of one plan
// (session::explain, session::print_explain).
void print_explain(std::ostream& out, const Query& q, const planner::RankedPlan& p, const CollectiveSource& source);
void print_topologies(std::ostream& out, const ProfileCatalog& c);
nlohmann::json topologies_json(const ProfileCatalog& c);

}  // namespace cpplan::cli
