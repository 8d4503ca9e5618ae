#pragma once
// The planner's own speed, as `cpplan bench` reports it (docs/performance.md): plans per second
// through the cost model, and the whole ranking at 1 to 4,096 GPUs. Here, below the fronts, so that
// cpplan-exec's bench times the planner without calling it itself.

#include <nlohmann/json.hpp>

#include "core/profiles.h"

namespace cpplan::session {

// {"plans_per_second", "cost_model_sink", "rank_all_plans": {GPUs: {ms, plans}}, "plan_ms_4096_gpus"};
// `quick`: shorter measurements (CI).
nlohmann::json planner_speed(const ProfileCatalog& catalog, bool quick);

}  // namespace cpplan::session
