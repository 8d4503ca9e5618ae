#include "planner/topology/evaluator.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace cpplan::planner::topology {

namespace {

int find_root(std::vector<int>& parent, int v) {
  while (parent[v] != v) v = parent[v] = parent[parent[v]];
  return v;
}

// A group that visits nodes 0, 1, ..., labels-1 in that order, the same number of members and the
// same GPUs (in the same order) on each: its two first nodes show everything the others do.
bool visits_nodes_alike(const std::vector<std::pair<int, int>>& members, int labels) {
  const std::size_t n = members.size();
  if (n % labels != 0) return false;
  const std::size_t per = n / labels;
  for (std::size_t i = 0; i < n; ++i) {
    if (members[i].first != static_cast<int>(i / per)) return false;
    if (members[i].second != members[i % per].second) return false;
  }
  return true;
}

}  // namespace

GroupEvaluator::GroupEvaluator(const Topology& node, int nodes, const HardwareProfile& hw, bool reduce)
    : node_(node), nodes_(nodes), hw_(hw), reduce_(reduce), intra_efficiency_(intra_node_efficiency(node, hw)) {}

bool nvlink_gpu_on_pcie(const Topology& node, const HardwareProfile& hw) {
  // The GPU's own fabric: NVLink for an NVSwitch GPU, xGMI for an xgmi one; other kinds are PCIe-native.
  const bool nvlink = hw.link_kind == LinkKind::kNvSwitch, xgmi = hw.link_kind == LinkKind::kXgmi;
  if (!nvlink && !xgmi) return false;
  const LinkType fabric = nvlink ? LinkType::kNvLink : LinkType::kXgmi;
  return std::none_of(node.links.begin(), node.links.end(), [&](const TopoLink& l) { return l.type == fabric; });
}

bool stages_peer_traffic(const Topology& node) {
  return std::any_of(node.devices.begin(), node.devices.end(), [](const TopoDevice& d) { return !d.p2p; });
}

double intra_node_efficiency(const Topology& node, const HardwareProfile& hw) {
  if (stages_peer_traffic(node)) return hw.staged_pcie_efficiency;
  return nvlink_gpu_on_pcie(node, hw) ? hw.pcie_efficiency : hw.intra_node.efficiency;
}

GroupEvaluator::~GroupEvaluator() = default;

const TopologyGraph& GroupEvaluator::instance(int nodes) const {
  auto& slot = instances_[nodes];
  if (!slot) slot = std::make_unique<TopologyGraph>(node_, nodes);
  return *slot;
}

AxisBandwidth GroupEvaluator::component(Pattern p, const std::vector<Placed>& groups, int labels, int group_size) const {
  const bool alike = reduce_ && labels > 2 &&
                     std::all_of(groups.begin(), groups.end(),
                                 [&](const Placed& g) { return visits_nodes_alike(g.members, labels); });
  const int instance_nodes = alike ? 2 : labels;
  const TopologyGraph& graph = instance(instance_nodes);
  std::vector<std::vector<int>> vertices;
  for (const Placed& g : groups) {
    vertices.emplace_back();
    for (const auto& [node, gpu] : g.members)
      if (node < instance_nodes) vertices.back().push_back(graph.gpu_vertex(node, gpu));
  }
  GroupBandwidth bw;
  switch (p) {
    case Pattern::kAllToAll:
      bw = all_to_all_bandwidth(graph, vertices, group_size, alike, hw_.all_to_all_across_sockets);
      break;
    case Pattern::kRing: bw = ring_bandwidth(graph, vertices, false); break;
    case Pattern::kRingRankOrder: bw = ring_bandwidth(graph, vertices, true); break;
  }
  int span = 1;
  for (const Placed& g : groups) {
    std::vector<int> seen;
    for (const auto& m : g.members)
      if (std::find(seen.begin(), seen.end(), m.first) == seen.end()) seen.push_back(m.first);
    span = std::max(span, static_cast<int>(seen.size()));
  }
  AxisBandwidth out;
  out.raw_gbps = bw.busbw_gbps;
  out.span_nodes = span;
  out.crosses_nodes = span > 1;  // the network's efficiency once a group leaves its node
  out.busbw_gbps = bw.busbw_gbps * (out.crosses_nodes ? hw_.network.efficiency : intra_efficiency_);
  out.latency_us = bw.latency_us;
  out.bottleneck = bw.bottleneck;
  out.across_sockets = bw.across_sockets;
  return out;
}

AxisBandwidth GroupEvaluator::evaluate(Pattern p, const std::vector<std::vector<int>>& groups,
                                       const std::vector<int>& device_order, int per_node) const {
  AxisBandwidth none;
  none.raw_gbps = none.busbw_gbps = std::numeric_limits<double>::infinity();
  if (groups.empty() || groups[0].size() < 2) return none;
  const int group_size = static_cast<int>(groups[0].size());
  int ranks = 0;
  for (const auto& g : groups) ranks += static_cast<int>(g.size());
  const int used_nodes = std::max(1, (ranks + per_node - 1) / per_node);

  // Components: nodes joined by some group (each group is one component's, whole).
  std::vector<int> parent(used_nodes);
  std::iota(parent.begin(), parent.end(), 0);
  if (reduce_) {
    for (const auto& g : groups)
      for (int r : g) {
        const int a = find_root(parent, g[0] / per_node), b = find_root(parent, r / per_node);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
      }
  } else {
    std::fill(parent.begin(), parent.end(), 0);  // the whole cluster at once
  }
  std::map<int, std::vector<const std::vector<int>*>> by_component;
  for (const auto& g : groups) by_component[find_root(parent, g[0] / per_node)].push_back(&g);

  AxisBandwidth worst;
  worst.busbw_gbps = std::numeric_limits<double>::infinity();
  for (const auto& [root, members] : by_component) {
    // Shape of the component: nodes relabelled by first appearance, GPUs as placed.
    std::map<int, int> label;
    std::vector<Placed> placed;
    std::vector<int> key{static_cast<int>(p), group_size, reduce_ ? 1 : 0};
    for (const auto* g : members) {
      placed.emplace_back();
      for (int r : *g) {
        const int node = r / per_node;
        const auto it = label.try_emplace(node, static_cast<int>(label.size())).first;
        const int gpu = device_order[r % per_node];
        placed.back().members.emplace_back(it->second, gpu);
        key.push_back(it->second * 65536 + gpu);
      }
    }
    auto cached = cache_.find(key);
    if (cached == cache_.end())
      cached = cache_.emplace(key, component(p, placed, static_cast<int>(label.size()), group_size)).first;
    const AxisBandwidth& b = cached->second;
    if (b.busbw_gbps < worst.busbw_gbps) {
      const Microseconds latency = std::max(worst.latency_us, b.latency_us);
      const int span = std::max(worst.span_nodes, b.span_nodes);
      const bool crosses = worst.crosses_nodes || b.crosses_nodes;
      worst = b;
      worst.latency_us = latency, worst.span_nodes = span, worst.crosses_nodes = crosses;
    } else {
      worst.latency_us = std::max(worst.latency_us, b.latency_us);
      worst.span_nodes = std::max(worst.span_nodes, b.span_nodes);
      worst.crosses_nodes = worst.crosses_nodes || b.crosses_nodes;
    }
  }
  return worst;
}

}  // namespace cpplan::planner::topology
