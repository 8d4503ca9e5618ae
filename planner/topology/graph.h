#pragma once
// A topology as a Boost.Graph: `nodes` copies of one node's devices and links, joined by the
// network (rail-optimized leaves under a non-blocking spine, or one switch), every link as two
// directed edges with the bandwidth of one direction. Widest paths (Dijkstra with a bottleneck
// metric) and max-flows (push-relabel) over it; docs/topology.md.

#include <memory>
#include <string>
#include <vector>

#include "core/topology.h"
#include "core/units.h"

namespace cpplan::planner::topology {

// A route's quality: the bottleneck bandwidth, then the hop count, then the summed latency.
struct Route {
  GBps width_gbps = 0;          // 0: unreachable
  int hops = 0;
  Microseconds latency_us = 0;
  // Strictly better: wider, else fewer hops, else lower latency.
  bool better_than(const Route& o) const;
  bool same_as(const Route& o) const;
};

// A link between accelerators themselves, not through a host: NVLink, xGMI, ICI.
bool is_fabric(LinkType t);

struct DirectedEdge {
  int from = 0;
  int to = 0;
  GBps capacity_gbps = 0;       // one direction of the link
  Microseconds latency_us = 0;
  LinkType type = LinkType::kPcie;
  // Between a device that refuses peer-to-peer traffic and host memory: it carries the staged
  // bytes of every pair whose route crosses that device.
  bool staging = false;
};

class TopologyGraph {
 public:
  // Precondition: nodes >= 1, and nodes == 1 or node.has_network.
  TopologyGraph(const Topology& node, int nodes);
  ~TopologyGraph();
  TopologyGraph(const TopologyGraph&) = delete;
  TopologyGraph& operator=(const TopologyGraph&) = delete;

  int nodes() const { return nodes_; }
  int gpus_per_node() const { return gpus_per_node_; }
  int vertex_count() const { return static_cast<int>(names_.size()); }
  int gpu_vertex(int node, int gpu) const { return gpu_vertex_[node * gpus_per_node_ + gpu]; }
  int node_of_vertex(int v) const { return node_of_[v]; }  // -1 for network switches
  const std::string& vertex_name(int v) const { return names_[v]; }
  const std::vector<DirectedEdge>& edges() const { return edges_; }
  // Whether some edge stages peer traffic through host memory (a device with p2p = false).
  bool has_staging() const { return has_staging_; }

  // Widest route from `source` to `target` (the best route by Route::better_than).
  Route route(int source, int target) const;
  // The directed edges (indices into edges()) along that route, source first. Empty if none.
  std::vector<int> route_edges(int source, int target) const;
  // Max flow from every vertex of `sources` to every vertex of `sinks` (disjoint) using only the
  // edges of capacity >= min_capacity_gbps, and with `fabric_only` only GPU-to-GPU fabric links
  // (nvlink, xgmi, ici). An xgmi edge carries flow only from a source straight to a sink (RCCL
  // does not forward a pair's bytes through a third GPU). Capacities are rounded to MB/s (exact
  // integers). `cut_edges`, when given: the edges (indices into edges()) of a minimum cut.
  GBps max_flow(const std::vector<int>& sources, const std::vector<int>& sinks, GBps min_capacity_gbps,
                std::vector<int>* cut_edges = nullptr, bool fabric_only = false) const;

 private:
  struct RouteTree;
  const RouteTree& tree(int source) const;
  void add_link(int a, int b, GBps gbps, Microseconds latency_us, LinkType type);

  int nodes_ = 1;
  int gpus_per_node_ = 0;
  std::vector<std::string> names_;
  std::vector<int> node_of_;
  std::vector<int> gpu_vertex_;
  std::vector<DirectedEdge> edges_;
  bool has_staging_ = false;
  struct Impl;
  std::unique_ptr<Impl> impl_;  // the Boost graph and the route trees computed so far
};

}  // namespace cpplan::planner::topology
