#pragma once
// Enumerates every ring x ulysses x tp x cfg x dp factorization of the GPU count (with and
// without each anything mode where it applies), validates each, costs the valid ones and ranks
// them: valid and fitting first, then valid but out of memory, each by predicted step time (the
// mean step, with a step cache); invalid plans last, with their reasons.

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "costmodel/cost_model.h"
#include "planner/frameworks.h"
#include "planner/topology/placement.h"

namespace cpplan::planner {

// Which fully-sharded plans (fs_degree > 1) to list. A fully-sharded plan runs the same work as its
// unsharded twin plus the weight gathers, so it is never faster: it matters when the twin does not
// fit. enumerate() lists them (after every config) only for kAll; Planner::plan evaluates a valid
// plan's fully-sharded variants after it: under kWhenOutOfMemory when the plan does not fit, under
// kAll always (the variants of an invalid plan are invalid for its reasons: not listed).
enum class FullyShardPlans { kNone, kWhenOutOfMemory, kAll };

struct PlannerOptions {
  bool allow_anything = true;  // enumerate Ulysses Anything and Ring Anything
  bool keep_invalid = true;    // keep invalid plans (with reasons) in the result
  // PipeFusion plans: the patches (0: P, 2P and 4P for P stages, those within max_patches) and
  // the warm-up steps of each.
  int pipeline_patches = 0;
  int pipefusion_warmup_steps = kXditWarmupSteps;
  long long max_patches = 0;  // 0: no bound (Planner::plan sets the query's latent rows)
  // Data-parallel plans for a batch of one image (each is invalid: dp must divide the batch);
  // Planner::plan lists dp > 1 only for a batch above 1 unless this is on (--all).
  bool single_image_dp = false;
  int max_dp = 0;  // enumerate: 0, no bound; 1, no data parallelism
  FullyShardPlans fully_shard = FullyShardPlans::kWhenOutOfMemory;
  // The framework the ranking is for (--framework): each plan's prediction takes the text-encoder
  // and VAE placement it offers. None: the best placement some framework offers (any placement
  // for a plan only cpplan's executor runs).
  std::optional<Framework> framework;
  // Rank the plans some framework runs before those only cpplan's executor runs (off for
  // --framework cpplan: every valid plan by its time).
  bool framework_plans_first = true;
};

// How one framework runs a plan: the placement of the text encoders and the VAE it offers that the
// cost model's rule picks (costmodel::choose_pipeline), and the image time and memory there.
struct FrameworkRun {
  bool runs = false;
  PipelinePlacement where;
  int cached_steps = 0;  // of the query's steps, those its step cache leaves cached (its own schedule)
  Milliseconds image_ms = 0;
  Bytes peak_bytes = 0;
  bool fits = false;
  // Whether it runs the plan otherwise than `p` (the plan's prediction) prices it: another
  // placement, or its cache's own schedule; its image time and memory are then its own.
  bool differs_from(const costmodel::Prediction& p) const {
    return runs && (where != p.pipeline.placement() || cached_steps != p.cached_steps);
  }
};

struct RankedPlan {
  Plan plan;
  std::optional<costmodel::Prediction> predicted;  // set for valid plans
  FrameworkSet frameworks;                         // external frameworks that can run it
  std::array<FrameworkRun, kFrameworkCount> runs{}; // per framework (by Framework): how it runs it
  // Valid plans of a query with a topology (the best placement), or on hardware whose profile
  // describes its node (the frameworks' default layout on that node, core/node_topology.h).
  std::optional<topology::Placement> placement;
  // The format and the step cache it was priced with: the query's, or one of the formats and caches
  // it ranks (Query::precisions, ::caches). Its verdicts and scripts are those of priced_query.
  Precision precision;
  CacheSpec cache;

  const FrameworkRun& run(Framework f) const { return runs[static_cast<int>(f)]; }
  // Whether only cpplan's executor runs it (valid, and no framework does).
  bool cpplan_only() const { return plan.valid() && frameworks.bits == 0; }
};

struct PlanReport {
  std::vector<RankedPlan> plans;  // ranked
  int valid_count = 0;
  int invalid_count = 0;
  // keep_plans_of: the framework the ranking is restricted to, and the valid plans it left out.
  std::optional<Framework> framework;
  int hidden_count = 0;
};

// Each format of q with each of its caches (Query::precisions x ::caches, formats outermost), as
// queries of one format and one cache; q itself when it ranks one of each.
std::vector<Query> priced_queries(const Query& q);
// `q` as plan `p` was priced: its format and cache (RankedPlan::precision, ::cache), none of the
// query's other formats and caches. What p's framework verdicts, scripts and cost terms read.
Query priced_query(const Query& q, const RankedPlan& p);
// "fp8, fbcache": the format and the cache of `p` on the axes `q` ranks (Query::precisions, ::caches),
// in that order; "" when it ranks one of each.
std::string format_cache_label(const Query& q, const RankedPlan& p);
// The time plans are ranked by: the mean step of the denoising, computed and cached steps together
// (costmodel::mean_step_ms over q's steps). Precondition: p is predicted.
Milliseconds ranking_ms(const Query& q, const RankedPlan& p);

// Restricts `r` to the valid plans `f` runs (invalid plans stay, with their reasons).
void keep_plans_of(PlanReport& r, Framework f);

// The one choice of a best plan from a ranked report (every front's top row, the heatmap's cells,
// a sweep's top 1, `cpplan run --plan best`, tune's predicted best): the first plan of `r` when it
// is valid and predicted (ranking puts the fitting plans first, and with --framework any those some
// framework runs), else null.
const RankedPlan* best_plan(const PlanReport& r);
// The best plan framework `f` runs (its answer when it cannot run the top plan): the first valid
// plan of `r` it runs that fits with the placement it offers, else the first valid plan it runs;
// null when it runs none.
const RankedPlan* best_plan(const PlanReport& r, Framework f);

// The rejected plans grouped by the rule they break first (Violation::id and ::rule), those whose lever a
// user moves first: the resolution, the text length, the heads, the attention backend; then the
// others, most plans first.
struct RejectionGroup {
  RuleId id;            // the rule's id; set by rejection_groups
  std::string rule;     // e.g. "must divide image tokens = 6889"
  Lever lever = Lever::kNone;  // what it depends on (each front names its own control)
  int count = 0;
  const RankedPlan* example = nullptr;  // the group's plan with the fewest broken rules
};
std::vector<RejectionGroup> rejection_groups(const PlanReport& r);

// Whether two ranked plans are one computation: both valid, the same degrees, format and cache, and
// one is the "Anything" form of the other (Ulysses and Ulysses Anything, Ring and Ring Anything) over
// a split that is even, so that both predict the same step time and memory.
bool same_computation(const RankedPlan& a, const RankedPlan& b);

// A table row: the valid plan ranked first of a group that is one computation, the others of the
// group (ranked later), and the frameworks that run it in any of its forms.
struct PlanRow {
  const RankedPlan* plan = nullptr;
  std::vector<const RankedPlan*> same;
  FrameworkSet frameworks;
};
// The valid plans of `report` as rows, in rank order.
std::vector<PlanRow> merged_rows(const PlanReport& report);

// Every candidate config for `gpus` devices, in a stable order. PipeFusion (P > 1) is enumerated
// with context parallelism, CFG and data parallelism, not with TP or the anything modes, which
// it does not combine with (check reports those rules). With options.fully_shard == kAll, each
// config without TP and PipeFusion is followed by its fully_shard_variants.
std::vector<ParallelConfig> enumerate(int gpus, const PlannerOptions& options = {});

// `c` with fs_degree F for every F > 1 dividing ring x ulysses x cfg x dp, ascending; none when
// `c` has TP or PipeFusion (exclusive with fully sharded weights) or is already fully sharded.
std::vector<ParallelConfig> fully_shard_variants(const ParallelConfig& c);

// What prices a query's groups: a Placer on its topology, else on its hardware's node ([node] of
// a PCIe GPU's profile); nullptr for neither (the hardware profile's two links).
std::unique_ptr<topology::Placer> placer_for(const Query& q, const costmodel::CostModel& cost);

class Planner {
 public:
  explicit Planner(const costmodel::CostModel& cost) : cost_(cost) {}
  // One config: verdict, prediction (when valid), frameworks; with q.topology, the best
  // placement and the prediction on it; on a PCIe GPU with a [node], the default layout priced
  // on that node. `framework`: as PlannerOptions::framework.
  RankedPlan evaluate(const Query& q, const ParallelConfig& c, std::optional<Framework> framework = std::nullopt) const;
  // Every config of q ranked (the file's heading). A query that ranks several formats or caches
  // (Query::precisions, ::caches) prices each valid plan with each format x cache, one ranked plan
  // each; a plan's verdict does not depend on its format, and on its cache only through whether it
  // has one (cache-excludes-pipefusion), so an invalid plan is listed once, under the first; a
  // quantized or cached plan no framework runs is left out (cpplan's executor runs neither).
  PlanReport plan(const Query& q, const PlannerOptions& options = {}) const;

 private:
  RankedPlan evaluate(const Query& q, const ParallelConfig& c, const topology::Placer* placer,
                      const FrameworkOffers& offers, std::optional<Framework> framework) const;
  class TiledDecode;
  // How add_plans lists the plans of one format x cache among those of a query (Planner::plan).
  struct Listing {
    bool first = true;     // the invalid plans are listed: under the first format and cache only
    bool several = false;  // formats or caches ranked: a quantized or cached plan no framework runs is left out
    // Per config, its verdict with a cache or without one (the only part of a query's format and
    // cache a rule reads): -1 not known yet, 0 invalid (not evaluated again), 1 valid.
    std::vector<signed char>* verdicts = nullptr;
  };
  // The configs of one format x cache of a query evaluated into `report` as `listing` says, each
  // followed by its fully-sharded variants where `options` asks.
  void add_plans(const Query& q, const std::vector<ParallelConfig>& configs, const PlannerOptions& options,
                 const Listing& listing, PlanReport& report) const;
  RankedPlan with_tiled_decode(const Query& q, const ParallelConfig& c, RankedPlan rp, TiledDecode& tiled,
                               std::optional<Framework> framework) const;

  const costmodel::CostModel& cost_;
};

}  // namespace cpplan::planner
