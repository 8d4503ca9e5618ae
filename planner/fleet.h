#pragma once
// Fleet planning: N GPUs serving one model, split into replicas that each generate one image at
// a time. Which replica size and plan give the most images per hour within a per-image latency
// target (SLO)? A replica of k GPUs runs the best plan the planner finds for k GPUs (batch 1; no
// data parallelism inside it: the replicas are the data parallelism). Uniform splits use one
// replica size (floor(N / k) replicas, the rest idle); a mixed split combines sizes (an unbounded
// knapsack over k with capacity N). docs/fleet.md states the formulas and limits.

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

// The best replica of `k` GPUs: q planned with gpus = k and batch 1; among the valid plans
// without data parallelism, the fitting ones first, then the least image_ms (ties: the planner's
// rank). nullopt when k GPUs have no valid plan. q must have no topology.
std::optional<RankedPlan> best_replica(const Planner& planner, const Query& q, int k, const PlannerOptions& options);

// One replica size with its plan, as best_replica chose it.
struct Replica {
  int gpus = 0;
  RankedPlan plan;  // valid, with a prediction
  double image_ms() const { return plan.predicted->image_ms; }
  bool fits() const { return plan.predicted->fits_memory; }
};

// A uniform split of N GPUs: `replicas` copies of one replica plan.
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
};

// Uniform rows of `gpus` GPUs, one per replica: the usable ones first (fitting and meeting the
// SLO), each group by images per hour, most first (ties: lower latency).
std::vector<FleetRow> uniform_rows(const std::vector<Replica>& replicas, int gpus, std::optional<double> slo_ms);

// The unbounded knapsack: the multiset of sizes k (weight k, value value_of_size[k]; a value
// <= 0 is not allowed) with the most total value whose weights add up to at most `capacity`.
struct Composition {
  std::vector<std::pair<int, int>> counts;  // (size, count), ascending size, count >= 1
  double value = 0;
  int used = 0;  // sum of size x count
};
// value_of_size[k] for k = 0..; sizes beyond the vector are not allowed. O(capacity x sizes).
Composition best_composition(const std::vector<double>& value_of_size, int capacity);

// A mixed split: replicas of several sizes.
struct FleetPart {
  int replicas = 0;
  Replica replica;
};
struct FleetMix {
  std::vector<FleetPart> parts;  // ascending replica size
  double images_per_hour = 0;
  int gpus_used = 0;
  double worst_image_ms = 0;  // the slowest part's latency
  std::string label;          // "2 x ulysses 4 + 1 x ulysses 8"
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
  std::optional<double> slo_ms;
  std::vector<Replica> replicas;     // the best replica per size with a valid plan, ascending size
  std::vector<FleetRow> rows;        // uniform splits, ranked (uniform_rows)
  std::optional<FleetMix> mixed;     // the best composition, when it beats the best usable row
  std::vector<FleetPoint> points;    // every valid plan of every size as a uniform split
  bool all_sizes = true;             // false: sizes restricted (replica_sizes)
};

// Plans the fleet of q.gpus GPUs (q without a topology). `slo_ms`: latency target per image.
FleetReport plan_fleet(const Planner& planner, const Query& q, std::optional<double> slo_ms,
                       const PlannerOptions& options = {});

}  // namespace cpplan::planner
