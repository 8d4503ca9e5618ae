#include "session/jobs/planner_speed.h"

#include "session/query/query.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "costmodel/cost_model.h"
#include "planner/planner.h"
#include "planner/validate.h"

namespace cpplan::session {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Fastest of `reps` timings of `f` (ms): the least disturbed by the rest of the machine.
double best_ms(int reps, const std::function<void()>& f) {
  double best = 1e300;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, ms_since(t0));
  }
  return best;
}

Query query_for(const ProfileCatalog& c, const std::string& model, int gpus, Resolution res, int frames) {
  Query q;
  q.model = c.find_model(model);
  q.hardware = c.find_hardware(kFallbackHardware);
  q.gpus = gpus;
  q.resolution = res;
  q.frames = frames;
  q.steps = q.model->default_steps;
  q.sequence = *compute_sequence(*q.model, res, frames, q.model->text_tokens);
  return q;
}

// ---------------------------------------------------------------------------- planner
}  // namespace

json planner_speed(const ProfileCatalog& c, bool quick) {
  json j;
  const Query q64 = query_for(c, "flux.1-dev", 64, {1024, 1024}, 1);
  const costmodel::DatasheetModel hw(*q64.hardware);
  const costmodel::CostModel cost(hw);
  std::vector<Plan> valid;
  for (const auto& cfg : planner::enumerate(q64.gpus)) {
    Plan p = planner::make_plan(q64, cfg);
    if (p.valid()) valid.push_back(p);
  }
  // Plans per second through the cost model (the hot loop of sweeps, the GUI and the heatmap).
  const double budget_ms = quick ? 300 : 2000;
  long long predicted = 0;
  double sink = 0;
  const auto t0 = Clock::now();
  while (ms_since(t0) < budget_ms)
    for (const Plan& p : valid) {
      sink += cost.predict(q64, p.config, p.variant).step_ms;
      ++predicted;
    }
  j["plans_per_second"] = predicted / (ms_since(t0) / 1e3);
  j["cost_model_sink"] = sink > 0;
  // Whole ranking (enumerate + validate + cost + sort) for growing GPU counts.
  const planner::Planner planner(cost);
  json ranks = json::object();
  for (int gpus : {1, 8, 64, 512, 4096}) {
    const Query q = query_for(c, "flux.1-dev", gpus, {1024, 1024}, 1);
    std::size_t plans = 0;
    const double ms = best_ms(quick ? 20 : 100, [&] { plans = planner.plan(q).plans.size(); });
    ranks[std::to_string(gpus)] = {{"ms", ms}, {"plans", plans}};
  }
  j["rank_all_plans"] = ranks;
  j["plan_ms_4096_gpus"] = ranks["4096"]["ms"];
  return j;
}


}  // namespace cpplan::session
