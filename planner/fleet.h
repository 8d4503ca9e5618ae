#pragma once
// Fleet planning: N GPUs serving one model, split into replicas that each generate one image at
// a time. Which replica size and plan give the most images per hour within a per-image latency
// target (SLO)? A replica of k GPUs runs the best plan the planner finds for k GPUs (batch 1; no
// data parallelism inside it: the replicas are the data parallelism). Uniform splits use one
// replica size (as many as the nodes hold, the rest idle); a mixed split combines sizes (a knapsack
// over k per node, then over the nodes). Replicas come only from plans a framework runs (or the one
// asked for). docs/fleet.md states the formulas and limits.

#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "planner/planner.h"

namespace cpplan::planner {

inline constexpr double kMsPerHour = 3.6e6;
// Above this many GPUs the replica sizes are the divisors of N and the powers of two only: one
// ranking per size, and the knapsack's work is sizes x N.
inline constexpr int kAllReplicaSizesUpTo = 256;

// Images per hour of `replicas` replicas that each take `image_ms` per image (> 0).
double images_per_hour(int replicas, double image_ms);

// The replica sizes considered for `gpus` GPUs: 1..gpus, or, above kAllReplicaSizesUpTo, the
// divisors of gpus and the powers of two up to it; ascending.
std::vector<int> replica_sizes(int gpus);

// Which valid plans a replica may run: by default those some framework runs (FrameworkSet not
// empty); with `framework`, those it runs (--framework F); with `any_valid` (and no framework),
// every valid plan, those only cpplan's own executor runs included.
struct ReplicaPlans {
  std::optional<Framework> framework;
  bool any_valid = false;
  bool admits(const FrameworkSet& runs) const;  // whether a plan run by `runs` may be a replica
};

// The best replica of `k` GPUs: q planned with gpus = k and batch 1; among the valid plans
// without data parallelism that `plans` admits, the fitting ones first, then the least image_ms
// (ties: the planner's rank). nullopt when k GPUs have no such plan. q must have no topology.
std::optional<RankedPlan> best_replica(const Planner& planner, const Query& q, int k, const PlannerOptions& options,
                                       const ReplicaPlans& plans = {});

// One replica size with its plan, as best_replica chose it.
struct Replica {
  int gpus = 0;
  RankedPlan plan;  // valid, with a prediction
  double image_ms() const { return plan.predicted->image_ms; }
  bool fits() const { return plan.predicted->fits_memory; }
};

// A uniform split of N GPUs: `replicas` copies of one replica plan, as many as the nodes hold
// (best_packing with one size).
struct FleetRow {
  int replicas = 0;
  int gpus_per_replica = 0;
  int idle_gpus = 0;             // N - replicas x gpus_per_replica
  RankedPlan replica;            // the replica's plan on gpus_per_replica GPUs
  double image_ms = 0;           // latency of one image on one replica
  double images_per_hour = 0;    // replicas x 3.6e6 / image_ms
  bool fits = false;             // the replica's plan fits in memory
  bool meets_slo = false;        // image_ms <= the SLO (true without one)
  bool usable() const { return fits && meets_slo; }
  // Images per hour over the fleet's N GPUs, the idle ones counted: what a replica's format and
  // cache buy per GPU (--dtype any, --cache any rank them by it, as by images per hour: N is fixed).
  double images_per_hour_per_gpu() const { return images_per_hour / (replicas * gpus_per_replica + idle_gpus); }
};

// Uniform rows of `gpus` GPUs on nodes of `gpus_per_node` (node_capacities), one per replica size
// that places at least one replica: the usable ones first (fitting and meeting the SLO), each
// group by images per hour, most first (ties: lower latency).
std::vector<FleetRow> uniform_rows(const std::vector<Replica>& replicas, int gpus, std::optional<double> slo_ms,
                                   int gpus_per_node = 0);

// The unbounded knapsack: the multiset of sizes k (weight k, value value_of_size[k]; a value
// <= 0 is not allowed) with the most total value whose weights add up to at most `capacity`.
struct Composition {
  std::vector<std::pair<int, int>> counts;  // (size, count), ascending size, count >= 1
  double value = 0;
  int used = 0;  // sum of size x count
};
// value_of_size[k] for k = 0..; sizes beyond the vector are not allowed. O(capacity x sizes).
Composition best_composition(const std::vector<double>& value_of_size, int capacity);

// The GPUs of each node `gpus` GPUs sit on, in rank order: floor(gpus / G) nodes of G =
// gpus_per_node and one of the remainder, as the cost model lays ranks out without a topology
// (costmodel default_layout). G <= 0 or G >= gpus: one node of `gpus`.
std::vector<int> node_capacities(int gpus, int gpus_per_node);

// best_composition over replicas placed the way the cost model priced them (ranks in node order
// from a node's first GPU, costmodel default_layout): a replica of k <= G = gpus_per_node GPUs
// inside one node, never across a node boundary; a replica of k > G GPUs on ceil(k / G) - 1 whole
// nodes and k - (ceil(k / G) - 1) x G GPUs of one more node, which other replicas may share.
// The nodes are node_capacities(gpus, G). Work: O(G x full nodes x sizes + full nodes^2).
Composition best_packing(const std::vector<double>& value_of_size, int gpus, int gpus_per_node);

// How many replicas of k GPUs the nodes hold (best_packing with k alone).
int replicas_of_size(int k, int gpus, int gpus_per_node);

// A mixed split: replicas of several sizes.
struct FleetPart {
  int replicas = 0;
  Replica replica;
  double images_per_hour = 0;  // of these replicas together
};
struct FleetMix {
  std::vector<FleetPart> parts;  // ascending replica size
  double images_per_hour = 0;
  int gpus_used = 0;
  double worst_image_ms = 0;  // the slowest part's latency
  std::string label;          // "2 x ulysses 4 + 1 x ulysses 8" (each with its format and cache when ranked)
};

// A point of the throughput-latency plane: `replicas` uniform replicas of one plan of k GPUs.
struct FleetPoint {
  int replicas = 0;
  int gpus_per_replica = 0;
  std::string label;  // plan_label of the replica's plan
  double image_ms = 0;
  double images_per_hour = 0;
  bool fits = false;
};
// Indices of the points no other point beats on both axes (lower or equal latency and more or
// equal images per hour, one of them strictly), ascending latency; only fitting points count.
std::vector<int> pareto_frontier(const std::vector<FleetPoint>& points);

struct FleetReport {
  int gpus = 0;
  int gpus_per_node = 0;             // the node size replicas are packed into (q.hardware's; 0: one node)
  ReplicaPlans plans;                // which plans the replicas were drawn from
  std::optional<double> slo_ms;
  std::vector<Replica> replicas;     // the best admitted replica per size, ascending size
  std::vector<FleetRow> rows;        // uniform splits, ranked (uniform_rows)
  std::optional<FleetMix> mixed;     // the best composition, when it beats the best usable row
  std::vector<FleetPoint> points;    // every admitted plan of every size as a uniform split
  std::vector<int> frontier;         // pareto_frontier(points): what a chart draws as the frontier
  bool all_sizes = true;             // false: sizes restricted (replica_sizes)
};

// Plans the fleet of q.gpus GPUs (q without a topology) on nodes of q.hardware's gpus_per_node,
// replicas drawn from the plans `plans` admits. `slo_ms`: latency target per image.
FleetReport plan_fleet(const Planner& planner, const Query& q, std::optional<double> slo_ms,
                       const PlannerOptions& options = {}, const ReplicaPlans& plans = {});

}  // namespace cpplan::planner
