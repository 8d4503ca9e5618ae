#pragma once
// The effective bandwidth of every group of one axis of a placement, running one collective at
// the same time (docs/topology.md, "Evaluating an axis"). Nodes are identical and the network
// does not block, so groups only interact inside the nodes they share: the ranks split into
// components of nodes joined by groups, components that are translates of each other are
// evaluated once (a cache keyed by their shape), and a component whose groups visit each of its
// nodes alike is evaluated on two nodes, which sees the same link loads and cuts as the whole.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/topology.h"
#include "planner/topology/bandwidth.h"
#include "planner/topology/graph.h"

namespace cpplan::planner::topology {

struct AxisBandwidth {
  GBps raw_gbps = 0;            // from the graph, per rank per direction
  GBps busbw_gbps = 0;          // raw x the hardware's efficiency (intra-node or network)
  Microseconds latency_us = 0;
  bool crosses_nodes = false;
  int span_nodes = 1;           // nodes one group touches
  std::string span;             // the widest group's reach: "1 switch", "2 sockets", "2 nodes" (Placer)
  std::string bottleneck;
  bool across_sockets = false;  // an all-to-all bound by the link between sockets (GroupBandwidth)
};

// The efficiency of the links inside one node of `node`: the hardware's interconnect efficiency,
// or its PCIe efficiency when its fabric is NVLink and the node has no NVLink (an SXM part in a
// PCIe-only box prices its groups as PCIe). Mixed nodes keep the interconnect's.
double intra_node_efficiency(const Topology& node, const HardwareProfile& hw);
// An NVLink GPU in a node without NVLink links, or an xGMI GPU in one without xGMI links (what
// intra_node_efficiency prices as PCIe).
bool nvlink_gpu_on_pcie(const Topology& node, const HardwareProfile& hw);
// A node whose switches or CPUs stage peer traffic through host memory (a device with p2p = false):
// intra_node_efficiency prices its groups at the staged efficiency, a fit's [links] pcie_host.
bool stages_peer_traffic(const Topology& node);

class GroupEvaluator {
 public:
  // `reduce` = false evaluates every group set on the whole cluster at once (tests: the reference
  // for the reductions).
  GroupEvaluator(const Topology& node, int nodes, const HardwareProfile& hw, bool reduce = true);
  ~GroupEvaluator();

  // `groups` hold ranks (each group in rank order, all of one size); rank r sits on node
  // r / per_node, GPU device_order[r % per_node].
  AxisBandwidth evaluate(Pattern p, const std::vector<std::vector<int>>& groups, const std::vector<int>& device_order,
                         int per_node) const;

  // The graph of `nodes` copies of the node (built once).
  const TopologyGraph& instance(int nodes) const;
  const HardwareProfile& hardware() const { return hw_; }
  const Topology& node() const { return node_; }
  int nodes() const { return nodes_; }

 private:
  struct Placed {  // one group's members as (node label, GPU)
    std::vector<std::pair<int, int>> members;
  };
  AxisBandwidth component(Pattern p, const std::vector<Placed>& groups, int labels, int group_size) const;

  const Topology& node_;
  int nodes_;
  const HardwareProfile& hw_;
  bool reduce_;
  double intra_efficiency_;  // intra_node_efficiency(node_, hw_)
  mutable std::map<int, std::unique_ptr<TopologyGraph>> instances_;
  mutable std::map<std::vector<int>, AxisBandwidth> cache_;
};

}  // namespace cpplan::planner::topology
