#pragma once
// Which plans `cpplan tune` measures: each framework's predicted best, the best of each plan
// family within a margin of the best, and the families this machine has no measurement of yet
// (where the model is least certain), at most K of them.

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cache.h"
#include "core/parallel_config.h"
#include "session/engine/internal/plan_family.h"
#include "session/engine/recommend.h"

namespace cpplan::session {

// One plan to measure, with the prediction it was chosen on.
struct TuneCandidate {
  std::string key;    // the plan and its attention form, unique in a query: "ulysses 2/ulysses"
  std::string label;  // "ulysses 2", "ulysses 2 (anything)"
  ParallelConfig config;
  PlanFamily family = PlanFamily::kSingle;
  std::string why;      // "diffusers' best", "best ring within 10%", "no tp measured here"
  nlohmann::json plan;  // the plan as `cpplan --json` writes it (what the launch applies)
  // The step the tune compares with the measured one: the predicted step, or with a step cache the
  // mean step at the hit rate the tune holds (mean_step_ms_at); of which the computed and cached step.
  double predicted_step_ms = 0, computed_step_ms = 0, cached_step_ms = 0;
  double predicted_image_ms = 0, predicted_peak_bytes = 0;
  int predicted_rank = 0;  // 1: the ranking's fastest of the candidates' rows
};

// The mean step of `c` over `steps` steps with cache `s`: computed steps x computed_step_ms plus
// cached steps x cached_step_ms (core/cache.h's counts), over the steps; computed_step_ms without a cache.
double mean_step_ms_at(const TuneCandidate& c, const CacheSpec& s, int steps);

// A candidate's key for plan `p`: its label and attention form, "ulysses 2/ulysses".
std::string candidate_key(const planner::RankedPlan& p);

// Up to `top` candidates of `rec` (its rows in rank order), in this order of choice: each shown
// framework's plan, the best row of each family whose step time is within `margin` (0.1: 10%) of
// the best row's, the best row of each family not in `measured`. Each plan once.
std::vector<TuneCandidate> choose_candidates(const Recommendation& rec, int top, double margin,
                                             const std::set<PlanFamily>& measured);

}  // namespace cpplan::session
