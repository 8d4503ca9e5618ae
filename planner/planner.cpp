#include "planner/planner.h"

#include <algorithm>
#include <memory>

#include "planner/cp_rules.h"
#include "planner/validate.h"

namespace cpplan::planner {

namespace {
std::vector<int> divisors(int n) {
  std::vector<int> small, large;
  for (int i = 1; 1LL * i * i <= n; ++i) {
    if (n % i != 0) continue;
    small.push_back(i);
    if (i != n / i) large.push_back(n / i);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}
}  // namespace

std::vector<ParallelConfig> enumerate(int gpus, const PlannerOptions& options) {
  std::vector<ParallelConfig> out;
  if (gpus < 1) return out;
  for (int r : divisors(gpus))
    for (int u : divisors(gpus / r))
      for (int t : divisors(gpus / r / u))
        for (int c : divisors(gpus / r / u / t)) {
          const int d = gpus / r / u / t / c;
          for (const CpRules* rules : all_cp_rules()) {
            if (!rules->candidate(r, u)) continue;
            const CpVariant v = rules->variant();
            if (!options.allow_anything && (v == CpVariant::kUlyssesAnything || v == CpVariant::kRingAnything))
              continue;
            ParallelConfig pc;
            pc.context_parallel_config.ring_degree = r;
            pc.context_parallel_config.ulysses_degree = u;
            rules->configure(pc.context_parallel_config);
            pc.tensor_parallel_config.tp_degree = t;
            pc.cfg_degree = c;
            pc.dp_degree = d;
            out.push_back(pc);
          }
        }
  return out;
}

RankedPlan Planner::evaluate(const Query& q, const ParallelConfig& c, const topology::Placer* placer) const {
  RankedPlan rp;
  rp.plan = make_plan(q, c);
  if (rp.plan.valid()) {
    if (placer) {
      topology::PlacementResult placed = placer->place(rp.plan);
      rp.predicted = placed.predicted;
      rp.placement = std::move(placed.placement);
    } else {
      rp.predicted = cost_.predict(q, c, rp.plan.variant);
    }
    rp.frameworks = frameworks_for(q, rp.plan, rp.predicted->pipeline.placement());
  }
  return rp;
}

RankedPlan Planner::evaluate(const Query& q, const ParallelConfig& c) const {
  if (!q.topology) return evaluate(q, c, nullptr);
  const topology::Placer placer(q, cost_);
  return evaluate(q, c, &placer);
}

PlanReport Planner::plan(const Query& q, const PlannerOptions& options) const {
  PlanReport report;
  const auto configs = enumerate(q.gpus, options);
  report.plans.reserve(configs.size());
  // One placer for the whole query: its caches serve every plan.
  std::unique_ptr<topology::Placer> placer;
  if (q.topology) placer = std::make_unique<topology::Placer>(q, cost_);
  for (const ParallelConfig& c : configs) {
    RankedPlan rp = evaluate(q, c, placer.get());
    if (rp.plan.valid()) ++report.valid_count;
    else ++report.invalid_count;
    if (rp.plan.valid() || options.keep_invalid) report.plans.push_back(std::move(rp));
  }
  // Rank: valid and fitting, valid out of memory, invalid; then step time; ties keep the
  // enumeration order (stable), which prefers fewer ring ranks.
  auto tier = [](const RankedPlan& p) { return !p.plan.valid() ? 2 : (p.predicted->fits_memory ? 0 : 1); };
  std::stable_sort(report.plans.begin(), report.plans.end(), [&](const RankedPlan& a, const RankedPlan& b) {
    const int ta = tier(a), tb = tier(b);
    if (ta != tb) return ta < tb;
    if (ta == 2) return false;
    return a.predicted->step_ms < b.predicted->step_ms;
  });
  return report;
}

}  // namespace cpplan::planner
