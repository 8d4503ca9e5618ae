#include "planner/planner.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>

#include "core/node_topology.h"
#include "core/pipefusion.h"
#include "planner/cp_rules.h"
#include "planner/framework_runs.h"
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

// The PipeFusion settings to enumerate for P stages: (1, 1, 0) without PipeFusion; else the
// options' patches, or P, 2P and 4P within the bound.
std::vector<PipeFusionConfig> pipefusion_candidates(int p, const PlannerOptions& options) {
  if (p == 1) return {PipeFusionConfig{}};
  std::vector<PipeFusionConfig> out;
  const std::vector<int> patches =
      options.pipeline_patches > 0 ? std::vector<int>{options.pipeline_patches} : std::vector<int>{p, 2 * p, 4 * p};
  for (const int m : patches)
    if (m == patches.front() || options.max_patches == 0 || m <= options.max_patches)
      out.push_back({p, m, options.pipefusion_warmup_steps});
  return out;
}

// Every config with ring r, ulysses u, tp t and cfg c for `rest` = pp x dp devices.
void enumerate_rest(int r, int u, int t, int c, int rest, const PlannerOptions& options,
                    std::vector<ParallelConfig>& out) {
  for (const int p : divisors(rest))
    for (const CpRules* rules : all_cp_rules()) {
      if (!rules->candidate(r, u)) continue;
      const CpRulesTraits traits = rules->traits();
      if (traits.anything_mode && !options.allow_anything) continue;
      if (p > 1 && !traits.joins_pipefusion) continue;
      if (p > 1 && t > 1) continue;
      if (options.max_dp > 0 && rest / p > options.max_dp) continue;
      for (const PipeFusionConfig& pf : pipefusion_candidates(p, options)) {
        ParallelConfig pc;
        pc.context_parallel_config.ring_degree = r;
        pc.context_parallel_config.ulysses_degree = u;
        rules->configure(pc.context_parallel_config);
        pc.tensor_parallel_config.tp_degree = t;
        pc.cfg_degree = c;
        pc.pipefusion = pf;
        pc.dp_degree = rest / p;
        out.push_back(pc);
        if (options.fully_shard == FullyShardPlans::kAll)
          for (const ParallelConfig& f : fully_shard_variants(pc)) out.push_back(f);
      }
    }
}
}  // namespace

std::vector<ParallelConfig> fully_shard_variants(const ParallelConfig& c) {
  std::vector<ParallelConfig> out;
  if (c.tp() != 1 || c.pp() != 1 || c.fs() != 1) return out;
  const long long ranks = c.world_size();  // ring x ulysses x cfg x dp here
  if (ranks < 2 || ranks > std::numeric_limits<int>::max()) return out;
  for (const int f : divisors(static_cast<int>(ranks))) {
    if (f == 1) continue;
    ParallelConfig sharded = c;
    sharded.fs_degree = f;
    out.push_back(sharded);
  }
  return out;
}

std::vector<ParallelConfig> enumerate(int gpus, const PlannerOptions& options) {
  std::vector<ParallelConfig> out;
  if (gpus < 1) return out;
  for (int r : divisors(gpus))
    for (int u : divisors(gpus / r))
      for (int t : divisors(gpus / r / u))
        for (int c : divisors(gpus / r / u / t)) enumerate_rest(r, u, t, c, gpus / r / u / t / c, options, out);
  return out;
}

namespace {
// `pr` as a framework whose cache stores nothing runs it: every placement's memory without the
// plan's step cache.
costmodel::Prediction without_step_cache(const costmodel::Prediction& pr) {
  costmodel::Prediction out = pr;
  for (int i = 0; i < out.pipeline_option_count; ++i) out.pipeline_options[i].memory.step_cache = 0;
  out.memory.step_cache = 0;
  return out;
}
}  // namespace

void place_for_frameworks(const Query& q, const FrameworkOffers& offers, std::optional<Framework> ranked_for,
                          Bytes capacity, RankedPlan& rp) {
  costmodel::Prediction& pr = *rp.predicted;
  costmodel::PipelineOptionMask any = 0, chosen = 0;
  std::optional<costmodel::Prediction> uncached;  // made once, for the frameworks whose cache stores nothing
  for (int f = 0; f < kFrameworkCount; ++f) {
    const costmodel::PipelineOptionMask mask = offers.options_run(static_cast<Framework>(f), q, rp.plan, pr);
    if (mask == 0) continue;
    const bool stores = offers.stores_cache(static_cast<Framework>(f)) || pr.memory.step_cache == 0;
    if (!stores && !uncached) uncached = without_step_cache(pr);
    const costmodel::Prediction& runs = stores ? pr : *uncached;
    const int i = costmodel::choose_pipeline(runs, mask, q.steps, capacity);
    const costmodel::PipelineOption& o = runs.pipeline_options[i];
    const int cached = offers.cached_steps(static_cast<Framework>(f));
    rp.runs[f] = {true, o.cost.placement(), cached, costmodel::image_ms_with(pr, i, q.steps, cached),
                  o.memory.peak(), o.memory.peak() <= capacity};
    rp.frameworks.add(static_cast<Framework>(f));
    any |= mask;
    if (ranked_for && static_cast<int>(*ranked_for) == f) chosen = mask;
  }
  const costmodel::PipelineOptionMask own = ranked_for ? chosen : any;
  if (own == 0) return;
  const int i = costmodel::choose_pipeline(pr, own, q.steps, capacity);
  if (i != pr.pipeline_choice) costmodel::use_pipeline(pr, i, q.steps, capacity);
}

void place_for_frameworks(const Query& q, Bytes capacity, RankedPlan& rp) {
  place_for_frameworks(q, FrameworkOffers(q), std::nullopt, capacity, rp);
}

RankedPlan Planner::evaluate(const Query& q, const ParallelConfig& c, const topology::Placer* placer,
                             const FrameworkOffers& offers, std::optional<Framework> framework) const {
  RankedPlan rp;
  rp.plan = make_plan(q, c);
  rp.precision = q.precision;
  rp.cache = q.cache;
  if (rp.plan.valid()) {
    if (placer) {  // the best placement on the query's topology; the default layout on the hardware's node
      topology::PlacementResult placed =
          q.topology ? placer->place(rp.plan) : placer->evaluate(rp.plan, topology::kDefaultAxisOrder);
      rp.predicted = placed.predicted;
      rp.placement = std::move(placed.placement);
    } else {
      rp.predicted = cost_.predict(q, c, rp.plan.variant);
    }
    place_for_frameworks(q, offers, framework, cost_.hardware().profile().memory_bytes(), rp);
  }
  return rp;
}

std::unique_ptr<topology::Placer> placer_for(const Query& q, const costmodel::CostModel& cost) {
  if (q.topology) return std::make_unique<topology::Placer>(q, cost);
  if (q.hardware && q.hardware->node) return std::make_unique<topology::Placer>(q, node_topology(*q.hardware), cost);
  return nullptr;
}

// The query once more with the VAE decoding in tiles (diffusers' pipe.vae.enable_tiling()), for
// the plans whose decode alone does not fit: its placer and offers are built on first use.
class Planner::TiledDecode {
 public:
  TiledDecode(const Query& q, const costmodel::CostModel& cost) : q_(q), cost_(cost) { q_.vae = VaePlacement::kTiled; }
  const Query& query() const { return q_; }
  const topology::Placer* placer() {
    build();
    return placer_.get();
  }
  const FrameworkOffers& offers() {
    build();
    return *offers_;
  }

 private:
  void build() {
    if (offers_) return;
    placer_ = placer_for(q_, cost_);
    offers_.emplace(q_);
  }
  Query q_;
  const costmodel::CostModel& cost_;
  std::unique_ptr<topology::Placer> placer_;
  std::optional<FrameworkOffers> offers_;
};

// Unless the query names a VAE placement, a plan out of memory in the decode alone (single or
// parallel) decodes in tiles when that fits: slower, but the job runs, as a user would run it.
RankedPlan Planner::with_tiled_decode(const Query& q, const ParallelConfig& c, RankedPlan rp, TiledDecode& tiled,
                                      std::optional<Framework> framework) const {
  const bool decode_bound = !q.vae && rp.plan.valid() && rp.predicted && !rp.predicted->fits_memory &&
                            rp.predicted->peak_phase == costmodel::MemoryPhase::kDecode &&
                            rp.predicted->host_load != costmodel::HostLoad::kTooLarge;
  if (!decode_bound) return rp;
  RankedPlan alt = evaluate(tiled.query(), c, tiled.placer(), tiled.offers(), framework);
  return alt.predicted && alt.predicted->fits_memory ? alt : rp;
}

RankedPlan Planner::evaluate(const Query& q, const ParallelConfig& c, std::optional<Framework> framework) const {
  const auto placer = placer_for(q, cost_);
  TiledDecode tiled(q, cost_);
  return with_tiled_decode(q, c, evaluate(q, c, placer.get(), FrameworkOffers(q), framework), tiled, framework);
}

namespace {

// Ranks `plans`: valid and fitting (those some framework runs first, unless `frameworks_first` is
// off), valid out of memory, invalid; then the mean step over `steps` (the step time without a step
// cache); ties keep the enumeration order, which
// prefers fewer ring ranks. Sorts keys, then moves each plan once: a
// RankedPlan is large, and thousands of them (4096 GPUs) would otherwise be copied through a
// temporary buffer as big as the vector.
void rank(std::vector<RankedPlan>& plans, int steps, bool frameworks_first) {
  struct Key {
    int tier;
    double step_ms;
    std::size_t index;
  };
  std::vector<Key> keys;
  keys.reserve(plans.size());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const RankedPlan& p = plans[i];
    const int tier = !p.plan.valid()            ? 3
                     : !p.predicted->fits_memory ? 2
                     : frameworks_first && p.cpplan_only() ? 1
                                                           : 0;
    keys.push_back({tier, tier == 3 ? 0.0 : costmodel::mean_step_ms(*p.predicted, steps), i});
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

void Planner::add_plans(const Query& q, const std::vector<ParallelConfig>& configs, const PlannerOptions& options,
                        const Listing& listing, PlanReport& report) const {
  // One placer for the whole query: its caches serve every plan.
  const auto placer = placer_for(q, cost_);
  const FrameworkOffers offers(q);
  // cpplan's executor runs neither a quantized format nor a step cache: among several formats and
  // caches, such a plan is one a framework runs or none.
  const bool needs_framework = listing.several && (q.precision.quantized() || q.cache.active());
  auto add = [&](RankedPlan rp) {
    if (!rp.plan.valid() && !listing.first) return;  // listed once, under the first format and cache
    if (rp.plan.valid() && needs_framework && rp.frameworks.bits == 0) return;
    if (rp.plan.valid()) ++report.valid_count;
    else ++report.invalid_count;
    if (rp.plan.valid() || options.keep_invalid) report.plans.push_back(std::move(rp));
  };
  TiledDecode tiled(q, cost_);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const ParallelConfig& c = configs[i];
    // A config found invalid under another format (with a cache, or without, as this one) is not
    // validated again: at 4,096 GPUs nearly every config is.
    if (listing.verdicts && (*listing.verdicts)[i] == 0 && !listing.first) continue;
    RankedPlan rp =
        with_tiled_decode(q, c, evaluate(q, c, placer.get(), offers, options.framework), tiled, options.framework);
    if (listing.verdicts) (*listing.verdicts)[i] = rp.plan.valid() ? 1 : 0;
    // Fully sharded weights are how a plan that does not fit can fit (planner.h, FullyShardPlans).
    const bool valid = rp.plan.valid() && rp.predicted;
    const bool shard = valid && (options.fully_shard == FullyShardPlans::kAll ||
                                 (options.fully_shard == FullyShardPlans::kWhenOutOfMemory && !rp.predicted->fits_memory));
    add(std::move(rp));
    if (shard)
      for (const ParallelConfig& f : fully_shard_variants(c)) add(evaluate(q, f, placer.get(), offers, options.framework));
  }
}

PlanReport Planner::plan(const Query& q, const PlannerOptions& options) const {
  PlanReport report;
  PlannerOptions bounded = options;
  if (q.model && bounded.max_patches == 0) bounded.max_patches = latent_rows(q);
  if (bounded.max_dp == 0 && q.batch == 1 && !options.single_image_dp) bounded.max_dp = 1;
  PlannerOptions unsharded = bounded;  // the fully-sharded variants follow their valid plan (add_plans)
  unsharded.fully_shard = FullyShardPlans::kNone;
  const auto configs = enumerate(q.gpus, unsharded);
  // Most configs of a large GPU count are invalid, listed once: the valid ones grow the vector.
  report.plans.reserve(configs.size());
  if (!q.ranks_precisions() && !q.ranks_caches()) {
    add_plans(q, configs, bounded, Listing{}, report);
  } else {
    // The verdicts without a cache and with one: no rule reads more of a format and a cache.
    std::array<std::vector<signed char>, 2> verdicts;
    verdicts.fill(std::vector<signed char>(configs.size(), -1));
    const std::vector<Query> priced = priced_queries(q);
    for (std::size_t i = 0; i < priced.size(); ++i)
      add_plans(priced[i], configs, bounded, Listing{i == 0, true, &verdicts[priced[i].cache.active()]}, report);
  }
  rank(report.plans, q.steps, options.framework_plans_first);
  return report;
}

std::vector<Query> priced_queries(const Query& q) {
  const std::vector<Precision> formats = q.ranks_precisions() ? q.precisions : std::vector<Precision>{q.precision};
  const std::vector<CacheSpec> caches = q.ranks_caches() ? q.caches : std::vector<CacheSpec>{q.cache};
  Query one = q;
  one.precisions.clear();
  one.caches.clear();
  std::vector<Query> out;
  out.reserve(formats.size() * caches.size());
  for (const Precision& p : formats)
    for (const CacheSpec& c : caches) {
      one.precision = p;
      one.cache = c;
      out.push_back(one);
    }
  return out;
}

Query priced_query(const Query& q, const RankedPlan& p) {
  Query out = q;
  out.precisions.clear();
  out.caches.clear();
  out.precision = p.precision;
  out.cache = p.cache;
  return out;
}

std::string format_cache_label(const Query& q, const RankedPlan& p) {
  std::string label;
  if (q.ranks_precisions()) label = to_string(p.precision);
  if (q.ranks_caches()) label += (label.empty() ? "" : ", ") + std::string(to_string(p.cache.policy));
  return label;
}

Milliseconds ranking_ms(const Query& q, const RankedPlan& p) { return costmodel::mean_step_ms(*p.predicted, q.steps); }

bool same_computation(const RankedPlan& a, const RankedPlan& b) {
  if (!a.plan.valid() || !b.plan.valid() || !a.predicted || !b.predicted) return false;
  auto plain = [](ParallelConfig c) {
    c.context_parallel_config.ulysses_anything = c.context_parallel_config.ring_anything = false;
    return c;
  };
  // Two variants of one even form (an anything mode and the variant it equals over an even split).
  const bool even_pair = a.plan.variant != b.plan.variant &&
                         cp_rules(a.plan.variant).traits().even_form == cp_rules(b.plan.variant).traits().even_form;
  return even_pair && plain(a.plan.config) == plain(b.plan.config) && a.precision == b.precision && a.cache == b.cache &&
         a.predicted->step_ms == b.predicted->step_ms &&
         a.predicted->transformer_peak_bytes == b.predicted->transformer_peak_bytes;
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

void keep_plans_of(PlanReport& r, Framework f) {
  const auto not_run = [f](const RankedPlan& p) { return p.plan.valid() && !p.frameworks.has(f); };
  const auto hidden = std::count_if(r.plans.begin(), r.plans.end(), not_run);
  r.plans.erase(std::remove_if(r.plans.begin(), r.plans.end(), not_run), r.plans.end());
  r.framework = f;
  r.hidden_count += static_cast<int>(hidden);
  r.valid_count -= static_cast<int>(hidden);
}

const RankedPlan* best_plan(const PlanReport& r) {
  if (r.plans.empty() || !r.plans.front().plan.valid() || !r.plans.front().predicted) return nullptr;
  return &r.plans.front();
}

const RankedPlan* best_plan(const PlanReport& r, Framework f) {
  const RankedPlan* first = nullptr;  // when none fits with the framework's placement
  for (const RankedPlan& p : r.plans) {
    if (!p.plan.valid() || !p.predicted || !p.frameworks.has(f)) continue;
    if (p.run(f).fits) return &p;
    if (!first) first = &p;
  }
  return first;
}

namespace {
// The levers a user moves first, in this order; the others after them.
constexpr Lever kFirstLevers[] = {Lever::kResolution, Lever::kTextTokens, Lever::kModelHeads, Lever::kAttentionBackend};
}  // namespace

std::vector<RejectionGroup> rejection_groups(const PlanReport& r) {
  std::vector<RejectionGroup> groups;
  for (const RankedPlan& p : r.plans) {
    if (p.plan.valid()) continue;
    const Violation& first = p.plan.violations.front();
    auto g = std::find_if(groups.begin(), groups.end(), [&](const RejectionGroup& x) {
      return x.id == first.id && x.rule == first.rule;
    });
    if (g == groups.end()) {
      groups.push_back({first.id, first.rule, first.lever, 1, &p});
      continue;
    }
    ++g->count;
    // The clearest example: fewest broken rules, then the fewest GPUs groups (the shortest label).
    const auto clarity = [](const RankedPlan& x) {
      return std::make_pair(x.plan.violations.size(), plan_label(x.plan.config).size());
    };
    if (clarity(p) < clarity(*g->example)) g->example = &p;
  }
  const auto priority = [&](const RejectionGroup& g) {
    return static_cast<std::size_t>(std::find(std::begin(kFirstLevers), std::end(kFirstLevers), g.lever) -
                                    std::begin(kFirstLevers));
  };
  std::stable_sort(groups.begin(), groups.end(), [&](const RejectionGroup& a, const RejectionGroup& b) {
    if (priority(a) != priority(b)) return priority(a) < priority(b);
    return a.count > b.count;
  });
  return groups;
}

}  // namespace cpplan::planner
