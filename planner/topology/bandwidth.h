#pragma once
// The bandwidth a set of concurrent device groups gets for one collective (docs/topology.md):
// - rings (all-gather, reduce-scatter, all-reduce; send/recv around a ring): every hop takes its
//   widest route; hops of all groups that share a directed link split its bandwidth; the ring
//   runs at its slowest hop. NCCL orders its rings itself: the better of the rank order and the
//   devices' physical order; Ring attention's p2p rotation follows the rank order.
// - all-to-all: each rank sends 1/n of its data to every other member. For a cut A of the
//   devices, the pairs of a group split by A, summed over the groups, share the max-flow from A
//   to the other members: busbw <= (n - 1) x maxflow(A) / sum_g |A n g| (n - |A n g|). The cuts
//   are the topology's natural clusters (GPUs grouped by how close their widest routes are:
//   single GPUs, PCIe switches, sockets, nodes); the tightest bound is the answer.
// Bandwidths are per rank per direction (nccl-tests' busbw), before any efficiency.

#include <string>
#include <vector>

#include "planner/topology/graph.h"

namespace cpplan::planner::topology {

enum class Pattern { kRing, kRingRankOrder, kAllToAll };

struct GroupBandwidth {
  GBps busbw_gbps = 0;            // per rank; infinity when no group has two members
  Microseconds latency_us = 0;    // alpha: the slowest hop / pair route
  std::string bottleneck;         // the binding link or cut, for --explain
  bool across_sockets = false;    // an all-to-all whose binding cut holds a link between sockets
};

// Every group holds GPU vertices of `g`, in rank order, all of the same size. `group_size` is the
// real size of the groups (an instance may hold only two nodes of larger symmetric groups);
// `single_node_cuts`: consider only cuts inside one node (such a reduced instance).
// `socket_efficiency`: the share an all-to-all reaches of the flow a cut carries over links
// between sockets (HardwareProfile::all_to_all_across_sockets).
GroupBandwidth ring_bandwidth(const TopologyGraph& g, const std::vector<std::vector<int>>& groups, bool rank_order_only);
GroupBandwidth all_to_all_bandwidth(const TopologyGraph& g, const std::vector<std::vector<int>>& groups, int group_size,
                                    bool single_node_cuts, double socket_efficiency = 1.0);

// The devices grouped level by level: at each level the GPUs (vertices of `gpus`) whose pairwise
// widest routes are at least as good as that level's route are one cluster. The first level is
// the singletons, the last one cluster per connected set. Clusters hold vertices in `gpus` order.
std::vector<std::vector<std::vector<int>>> cluster_levels(const TopologyGraph& g, const std::vector<int>& gpus);

}  // namespace cpplan::planner::topology
