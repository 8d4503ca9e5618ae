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

namespace {

// Ranks `plans`: valid and fitting, valid out of memory, invalid; then step time; ties keep the
// enumeration order, which prefers fewer ring ranks. Sorts keys, then moves each plan once: a
// RankedPlan is large, and thousands of them (4096 GPUs) would otherwise be copied through a
// temporary buffer as big as the vector.
void rank(std::vector<RankedPlan>& plans) {
  struct Key {
    int tier;
    double step_ms;
    std::size_t index;
  };
  std::vector<Key> keys;
  keys.reserve(plans.size());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const RankedPlan& p = plans[i];
    const int tier = !p.plan.valid() ? 2 : (p.predicted->fits_memory ? 0 : 1);
    keys.push_back({tier, tier == 2 ? 0.0 : p.predicted->step_ms, i});
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.tier != b.tier) return a.tier < b.tier;
    if (a.step_ms != b.step_ms) return a.step_ms < b.step_ms;
    return a.index < b.index;
  });
  // Apply the permutation in place, cycle by cycle: position i takes plans[keys[i].index].
  std::vector<bool> placed(plans.size(), false);
  for (std::size_t start = 0; start < plans.size(); ++start) {
    if (placed[start]) continue;
    RankedPlan held = std::move(plans[start]);
    std::size_t to = start;
    while (keys[to].index != start) {
      plans[to] = std::move(plans[keys[to].index]);
      placed[to] = true;
      to = keys[to].index;
    }
    plans[to] = std::move(held);
    placed[to] = true;
  }
}

}  // namespace

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
  rank(report.plans);
  return report;
}

bool same_computation(const RankedPlan& a, const RankedPlan& b) {
  if (!a.plan.valid() || !b.plan.valid() || !a.predicted || !b.predicted) return false;
  auto plain = [](ParallelConfig c) {
    c.context_parallel_config.ulysses_anything = c.context_parallel_config.ring_anything = false;
    return c;
  };
  const bool anything_pair = a.plan.config.context_parallel_config.ulysses_anything !=
                                 b.plan.config.context_parallel_config.ulysses_anything ||
                             a.plan.config.context_parallel_config.ring_anything !=
                                 b.plan.config.context_parallel_config.ring_anything;
  return anything_pair && plain(a.plan.config) == plain(b.plan.config) &&
         a.predicted->step_ms == b.predicted->step_ms && a.predicted->peak_mem_bytes == b.predicted->peak_mem_bytes;
}

std::vector<PlanRow> merged_rows(const PlanReport& report) {
  std::vector<PlanRow> rows;
  for (const RankedPlan& p : report.plans) {
    if (!p.plan.valid()) continue;
    auto row = std::find_if(rows.begin(), rows.end(), [&](const PlanRow& r) { return same_computation(*r.plan, p); });
    if (row == rows.end()) {
      rows.push_back({&p, {}, p.frameworks});
      continue;
    }
    row->same.push_back(&p);
    row->frameworks.bits |= p.frameworks.bits;
  }
  return rows;
}

}  // namespace cpplan::planner
