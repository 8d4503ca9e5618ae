#include "session/jobs/tune_candidates.h"

#include <fmt/format.h>

#include "costmodel/cost_model.h"

#include "session/render/plan_json.h"

namespace cpplan::session {

namespace {


TuneCandidate candidate_of(const Query& q, const planner::RankedPlan& p, int rank, std::string why) {
  TuneCandidate c;
  c.plan = plan_json(q, p, plan_scripts(q, p));
  c.config = p.plan.config;
  c.family = family_of(c.config);
  const std::string variant = c.plan.value("cp_variant", "none");
  c.key = candidate_key(p);
  c.label = c.plan.value("label", "");
  if (variant.find("anything") != std::string::npos) c.label += " (anything)";
  c.why = std::move(why);
  c.predicted_step_ms = costmodel::mean_step_ms(*p.predicted, q.steps);
  c.computed_step_ms = p.predicted->step_ms;
  c.cached_step_ms = p.predicted->cached_step_ms;
  c.predicted_image_ms = p.predicted->image_ms;
  c.predicted_peak_bytes = p.predicted->peak_mem_bytes;
  c.predicted_rank = rank;
  return c;
}

// Adds row `i` of `rec` unless its plan is in already or `out` is full.
void add(std::vector<TuneCandidate>& out, const Recommendation& rec, std::size_t i, int top, std::string why) {
  if (static_cast<int>(out.size()) >= top) return;
  const planner::RankedPlan* p = rec.rows[i].plan;
  for (const TuneCandidate& c : out)
    if (c.config == p->plan.config && c.plan.value("cp_variant", "") == std::string(to_string(p->plan.variant))) return;
  out.push_back(candidate_of(rec.query(), *p, static_cast<int>(i) + 1, std::move(why)));
}

std::optional<std::size_t> row_of(const Recommendation& rec, const planner::RankedPlan* plan) {
  for (std::size_t i = 0; i < rec.rows.size(); ++i)
    if (rec.rows[i].plan == plan) return i;
  return std::nullopt;
}

std::optional<std::size_t> best_of(const Recommendation& rec, PlanFamily f) {
  for (std::size_t i = 0; i < rec.rows.size(); ++i)
    if (rec.rows[i].plan->predicted->fits_memory && family_of(rec.rows[i].plan->plan.config) == f) return i;
  return std::nullopt;
}

}  // namespace

double mean_step_ms_at(const TuneCandidate& c, const CacheSpec& s, int steps) {
  if (!s.active() || steps < 1) return c.computed_step_ms;
  const int cached = cached_steps(s, steps);
  return ((steps - cached) * c.computed_step_ms + cached * c.cached_step_ms) / steps;
}

std::string candidate_key(const planner::RankedPlan& p) {
  return fmt::format("{}/{}", plan_label(p.plan.config), to_string(p.plan.variant));
}

std::vector<TuneCandidate> choose_candidates(const Recommendation& rec, int top, double margin,
                                             const std::set<PlanFamily>& measured) {
  std::vector<TuneCandidate> out;
  const planner::RankedPlan* best = rec.top();
  const auto best_row = best ? row_of(rec, best) : std::nullopt;
  if (!best_row) return out;
  add(out, rec, *best_row, top, "predicted best");
  for (const FrameworkChoice& f : rec.frameworks)
    if (f.shown && f.plan)
      if (auto i = row_of(rec, f.plan)) add(out, rec, *i, top, fmt::format("{}'s best", f.title));
  const double limit_ms = best->predicted->step_ms * (1 + margin);
  for (PlanFamily f : kPlanFamilies)
    if (auto i = best_of(rec, f); i && rec.rows[*i].plan->predicted->step_ms <= limit_ms)
      add(out, rec, *i, top, fmt::format("best {} within {:.0f}%", to_string(f), margin * 100));
  for (PlanFamily f : kPlanFamilies)
    if (auto i = best_of(rec, f); i && !measured.count(f))
      add(out, rec, *i, top, fmt::format("no {} measured here", to_string(f)));
  return out;
}

}  // namespace cpplan::session
