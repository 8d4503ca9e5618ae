#pragma once
// Human and JSON output of the planner's results (schema: README.md, "JSON output").

#include <iosfwd>
#include <nlohmann/json.hpp>

#include "core/profiles.h"
#include "planner/planner.h"

namespace cpplan::cli {

struct RenderOptions {
  int top = 10;           // ranked rows shown
  bool all = false;       // every plan, invalid ones with their reasons
  bool hardware_guessed = false;
};

nlohmann::json query_json(const Query& q);
nlohmann::json plan_json(const Query& q, const planner::RankedPlan& p);
nlohmann::json report_json(const Query& q, const planner::PlanReport& r, const RenderOptions& o);

void print_report(std::ostream& out, const Query& q, const planner::PlanReport& r, const RenderOptions& o);
void print_check(std::ostream& out, const Query& q, const planner::RankedPlan& p);
void print_models(std::ostream& out, const ProfileCatalog& c);
void print_hardware(std::ostream& out, const ProfileCatalog& c);
nlohmann::json models_json(const ProfileCatalog& c);
nlohmann::json hardware_json(const ProfileCatalog& c);

}  // namespace cpplan::cli
