#pragma once
// Topology-aware placement: which devices form each tp, ulysses, ring, pp, cfg and dp group of a
// plan. Ranks are a mixed-radix number over the axes in an order (the first axis contiguous);
// rank r runs on node r / g, GPU device_order[r % g] (the same order on every node). The Placer
// searches the axis orders (branch and bound, exact: docs/topology.md) and, on asymmetric
// topologies, a few device orders derived from the topology's clusters, costing each with the
// groups' effective bandwidths through the cost model.

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan.h"
#include "costmodel/cost_model.h"
#include "planner/topology/evaluator.h"

namespace cpplan::planner::topology {

// kPp: PipeFusion's stages (a group is the P ranks of consecutive stages).
enum class MeshAxis { kTp, kUlysses, kRing, kCfg, kDp, kPp };
inline constexpr int kMeshAxisCount = 6;
std::string_view to_string(MeshAxis a);  // "tp", "ulysses", "ring", "cfg", "dp", "pp"
// xDiT's order (tp-sp-pp-cfg-dp), innermost first: tp, ulysses, ring, pp, cfg, dp.
inline constexpr std::array<MeshAxis, kMeshAxisCount> kDefaultAxisOrder = {
    MeshAxis::kTp, MeshAxis::kUlysses, MeshAxis::kRing, MeshAxis::kPp, MeshAxis::kCfg, MeshAxis::kDp};

struct Placement {
  std::array<MeshAxis, kMeshAxisCount> axis_order = kDefaultAxisOrder;  // innermost first
  std::array<int, kMeshAxisCount> degree{1, 1, 1, 1, 1, 1};             // by MeshAxis
  // Fully sharded weights are not a mesh axis: a group is fs_degree consecutive ranks, laid over
  // the innermost axes (ParallelConfig::fs_degree), so any axis order keeps it on the same devices.
  int fs_degree = 1;
  int gpus_per_node = 1;          // ranks on each node
  std::vector<int> device_order;  // local rank -> GPU index in the node (the same on every node)
  costmodel::CommLayout layout;   // what the cost model was given
  std::array<AxisBandwidth, costmodel::kCommAxisCount> links{};  // by CommAxis, for --explain

  int ranks() const;
  int node_of(int rank) const { return rank / gpus_per_node; }
  int gpu_of(int rank) const { return device_order[rank % gpus_per_node]; }
  // Every group of the axes in `axes` (ranks sharing all other coordinates), in rank order.
  std::vector<std::vector<int>> groups(const std::vector<MeshAxis>& axes) const;
  std::vector<std::vector<int>> groups(MeshAxis axis) const { return groups(std::vector<MeshAxis>{axis}); }
  // The fully-shard groups: ranks [k F, (k + 1) F) for F = fs_degree.
  std::vector<std::vector<int>> fs_groups() const;
};

struct PlacementOptions {
  bool prune = true;              // branch and bound over axis orders
  bool reduce = true;             // GroupEvaluator's reductions
  bool all_axis_orders = false;   // every order of the six axes, size-1 axes included (tests)
  bool all_device_orders = false; // every arrangement of a node's GPUs (tests; small nodes only)
};

struct PlacementResult {
  Placement placement;
  costmodel::Prediction predicted;
  int leaves = 0;                 // complete placements costed
  int pruned = 0;                 // partial orders cut by the bound
};

class Placer {
 public:
  // Precondition: q.topology set; q.gpus is q.nodes x the node's GPUs, or at most the node's GPUs
  // with q.nodes == 1 (cli::build_query checks both).
  Placer(const Query& q, const costmodel::CostModel& cost, PlacementOptions options = {});
  // On `node` instead (the hardware's usual node, core/node_topology.h), replicated over q.nodes,
  // or over as many nodes as q.gpus fills (the last one partly).
  Placer(const Query& q, Topology node, const costmodel::CostModel& cost, PlacementOptions options = {});
  ~Placer();
  // The best placement of a valid plan: least step time; ties keep the earlier candidate (the
  // default axis order and the identity device order come first).
  PlacementResult place(const Plan& plan) const;
  // One given placement of a valid plan: `axis_order` innermost first, a device order by index.
  PlacementResult evaluate(const Plan& plan, const std::array<MeshAxis, kMeshAxisCount>& axis_order,
                           int device_index = 0) const;
  // The device orders tried (each lists the GPUs used on a node).
  const std::vector<std::vector<int>>& device_orders() const { return device_orders_; }

 private:
  struct Search;
  // The groups of `p`; an axis not `known` yet gets the bound: `placed_ranks` is the product of
  // the degrees of the axes placed inside it.
  costmodel::CommLayout layout_for(const Placement& p, const std::array<bool, costmodel::kCommAxisCount>& known,
                                   int placed_ranks, int device_index, CpVariant v, const ParallelConfig& c,
                                   std::array<AxisBandwidth, costmodel::kCommAxisCount>* links) const;

  // The fully-shard group's bandwidth (consecutive ranks on the device order), into `g` and `link`.
  void fs_layout(const Placement& p, int device_index, costmodel::CommGroup& g, AxisBandwidth* link) const;
  void init(const Topology& t);
  // The evaluator's bandwidth of `groups` with their span.
  AxisBandwidth measure(Pattern pattern, const std::vector<std::vector<int>>& groups, const Placement& p) const;
  std::string span_of(const std::vector<std::vector<int>>& groups, const Placement& p) const;

  const Query& query_;
  std::optional<Topology> own_node_;  // the hardware's node, when the query names no topology
  int nodes_ = 1;
  const costmodel::CostModel& cost_;
  PlacementOptions options_;
  int per_node_;
  std::unique_ptr<GroupEvaluator> evaluator_;
  std::vector<std::vector<int>> device_orders_;
  costmodel::CommGroup optimistic_;         // no group can do better: the bound for unplaced axes
  costmodel::CommGroup optimistic_remote_;  // ... once the axes inside fill whole nodes (groups span nodes)
  // Per GPU of a node: its PCIe switch and socket (device indices, -1: none), for the spans; empty
  // on NVLink and torus nodes, whose groups' traffic does not follow the PCIe tree.
  std::vector<int> switch_of_, socket_of_;
  mutable std::map<std::vector<long long>, AxisBandwidth> axis_cache_;
};

// How both fronts describe a placement's groups.
// Ranks as runs of consecutive ones: "0-7", "0 8", "0-3 8-11".
std::string ranks_text(const std::vector<int>& ranks);
// The nodes the widest of `groups` (of ranks) touches.
int nodes_spanned(const Placement& p, const std::vector<std::vector<int>>& groups);
// The degree of a communication axis in `c` (kCp: ring x ulysses; kPp: PipeFusion's stages; kFs:
// the fully-shard group).
int axis_degree(const ParallelConfig& c, costmodel::CommAxis a);
// The collective each group runs (the cost model's choice; Ring with P2P rotation sends and
// receives, except Ring Anything, which all-gathers; PipeFusion's stages send and receive).
std::string_view collective_name(const Plan& p, costmodel::CommAxis a);

}  // namespace cpplan::planner::topology
