#include "planner/topology/bandwidth.h"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <numeric>
#include <set>

namespace cpplan::planner::topology {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

int find_root(std::vector<int>& parent, int v) {
  while (parent[v] != v) v = parent[v] = parent[parent[v]];
  return v;
}

std::string describe_set(const TopologyGraph& g, const std::vector<int>& vertices) {
  if (vertices.size() == 1) return g.vertex_name(vertices[0]);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < vertices.size() && i < 4; ++i) names.push_back(g.vertex_name(vertices[i]));
  if (vertices.size() > 4) names.push_back("...");
  return fmt::format("{{{}}} ({} GPUs)", fmt::join(names, ", "), vertices.size());
}

// The links of a minimum cut: " over cpu0 -> cpu1", " over n0.nic0 -> switch, n0.nic1 -> switch".
std::string describe_links(const TopologyGraph& g, const std::vector<int>& edges) {
  if (edges.empty()) return "";
  std::vector<std::string> names;
  for (std::size_t i = 0; i < edges.size() && i < 3; ++i)
    names.push_back(fmt::format("{} -> {}", g.vertex_name(g.edges()[edges[i]].from), g.vertex_name(g.edges()[edges[i]].to)));
  if (edges.size() > 3) names.push_back(fmt::format("... ({} links)", edges.size()));
  return fmt::format(" over {}", fmt::join(names, ", "));
}

// The capacity of a minimum cut's links between sockets: a saturated cut carries that much of its
// flow over them.
GBps socket_capacity(const TopologyGraph& g, const std::vector<int>& edges) {
  GBps out = 0;
  for (int e : edges)
    if (g.edges()[e].type == LinkType::kSocket) out += g.edges()[e].capacity_gbps;
  return out;
}

struct RingResult {
  GroupBandwidth bw;
  bool valid = false;
};

RingResult ring_in_order(const TopologyGraph& g, const std::vector<std::vector<int>>& groups) {
  std::vector<int> load(g.edges().size(), 0);
  std::vector<std::vector<int>> paths;
  Microseconds latency = 0;
  for (const auto& members : groups) {
    const std::size_t n = members.size();
    if (n < 2) continue;
    for (std::size_t i = 0; i < n; ++i) {
      const int a = members[i], b = members[(i + 1) % n];
      paths.push_back(g.route_edges(a, b));
      latency = std::max(latency, g.route(a, b).latency_us);
      for (int e : paths.back()) ++load[e];
    }
  }
  RingResult r;
  if (paths.empty()) return r;
  r.valid = true;
  r.bw.busbw_gbps = kInfinity;
  r.bw.latency_us = latency;
  int binding = -1;
  for (const auto& path : paths)
    for (int e : path) {
      const double share = g.edges()[e].capacity_gbps / load[e];
      if (share < r.bw.busbw_gbps) r.bw.busbw_gbps = share, binding = e;
    }
  if (binding >= 0) {
    const DirectedEdge& e = g.edges()[binding];
    r.bw.bottleneck = fmt::format("{} -> {}: {:g} GB/s shared by {} hop{}", g.vertex_name(e.from), g.vertex_name(e.to),
                                  e.capacity_gbps, load[binding], load[binding] == 1 ? "" : "s");
  }
  return r;
}

// The bound of the links every pair's route loads: each rank sends 1/n of its message to each of
// the n - 1 others along its one route, so a link that `pairs` ordered pairs' routes cross holds
// pairs / n messages while each rank moves (n - 1) / n of one: busbw <= (n - 1) x capacity / pairs.
// A cut misses a link shared inside it (a switch whose peer traffic is staged through host memory
// carries every pair's bytes, its own side's too). Only for groups held whole in the instance.
void bound_by_route_loads(const TopologyGraph& g, const std::vector<std::vector<int>>& groups, int group_size,
                          double socket_efficiency, GroupBandwidth& out) {
  if (!g.has_staging()) return;  // no link carries the pairs of both sides of a cut: the cuts bound it
  std::vector<int> pairs(g.edges().size(), 0);
  for (const auto& group : groups) {
    if (static_cast<int>(group.size()) != group_size) return;
    for (int a : group)
      for (int b : group)
        if (a != b)
          for (int e : g.route_edges(a, b)) ++pairs[e];
  }
  for (std::size_t e = 0; e < pairs.size(); ++e) {
    const DirectedEdge& edge = g.edges()[e];
    if (pairs[e] == 0 || !edge.staging) continue;
    const bool socket = edge.type == LinkType::kSocket;
    const GBps bound = (group_size - 1) * edge.capacity_gbps * (socket ? socket_efficiency : 1.0) / pairs[e];
    if (bound < out.busbw_gbps) {
      out.busbw_gbps = bound;
      out.across_sockets = socket;
      out.bottleneck = fmt::format("{} -> {}: {:g} GB/s on the routes of {} pair{} of ranks{}", g.vertex_name(edge.from),
                                   g.vertex_name(edge.to), edge.capacity_gbps, pairs[e], pairs[e] == 1 ? "" : "s",
                                   socket ? fmt::format(", all-to-all across sockets at {:g} of it", socket_efficiency)
                                          : "");
    }
  }
}

}  // namespace

GroupBandwidth ring_bandwidth(const TopologyGraph& g, const std::vector<std::vector<int>>& groups, bool rank_order_only) {
  RingResult best = ring_in_order(g, groups);
  if (!best.valid) return {kInfinity, 0, "no group of two or more"};
  if (!rank_order_only) {
    auto sorted = groups;
    for (auto& m : sorted) std::sort(m.begin(), m.end());  // vertex order: node, then GPU index
    if (sorted != groups) {
      RingResult other = ring_in_order(g, sorted);
      if (other.bw.busbw_gbps > best.bw.busbw_gbps ||
          (other.bw.busbw_gbps == best.bw.busbw_gbps && other.bw.latency_us < best.bw.latency_us))
        best = other;
    }
  }
  return best.bw;
}

std::vector<std::vector<std::vector<int>>> cluster_levels(const TopologyGraph& g, const std::vector<int>& gpus) {
  const int m = static_cast<int>(gpus.size());
  struct Pair {
    Route route;
    int a, b;
  };
  std::vector<Pair> pairs;
  for (int i = 0; i < m; ++i)
    for (int j = i + 1; j < m; ++j) {
      // The worse direction decides (a split device can make the two directions differ).
      Route r = g.route(gpus[i], gpus[j]);
      const Route back = g.route(gpus[j], gpus[i]);
      if (r.better_than(back)) r = back;
      pairs.push_back({r, i, j});
    }
  std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& x, const Pair& y) { return x.route.better_than(y.route); });
  std::vector<int> parent(m);
  std::iota(parent.begin(), parent.end(), 0);
  auto snapshot = [&] {
    std::vector<std::vector<int>> clusters;
    std::vector<int> slot(m, -1);
    for (int i = 0; i < m; ++i) {
      const int root = find_root(parent, i);
      if (slot[root] < 0) slot[root] = static_cast<int>(clusters.size()), clusters.emplace_back();
      clusters[slot[root]].push_back(gpus[i]);
    }
    return clusters;
  };
  std::vector<std::vector<std::vector<int>>> levels{snapshot()};
  for (std::size_t i = 0; i < pairs.size();) {
    std::size_t j = i;
    bool merged = false;
    for (; j < pairs.size() && pairs[j].route.same_as(pairs[i].route); ++j) {
      const int ra = find_root(parent, pairs[j].a), rb = find_root(parent, pairs[j].b);
      if (ra != rb) parent[std::max(ra, rb)] = std::min(ra, rb), merged = true;
    }
    if (merged) levels.push_back(snapshot());
    i = j;
  }
  return levels;
}

GroupBandwidth all_to_all_bandwidth(const TopologyGraph& g, const std::vector<std::vector<int>>& groups, int group_size,
                                    bool single_node_cuts, double socket_efficiency) {
  GroupBandwidth out{kInfinity, 0, "no group of two or more"};
  if (group_size < 2) return out;
  std::vector<int> members;
  GBps threshold = kInfinity;  // the narrowest route any pair of a group needs
  bool fabric_only = true;     // every pair's route on GPU-to-GPU links: PCIe through a host adds nothing
  for (const auto& group : groups) {
    members.insert(members.end(), group.begin(), group.end());
    for (int a : group)
      for (int b : group) {
        if (a == b) continue;
        const Route r = g.route(a, b);
        threshold = std::min(threshold, r.width_gbps);
        out.latency_us = std::max(out.latency_us, r.latency_us);
        if (fabric_only)
          for (int e : g.route_edges(a, b)) fabric_only = fabric_only && is_fabric(g.edges()[e].type);
      }
  }
  std::vector<char> is_member(g.vertex_count(), 0);
  for (int v : members) is_member[v] = 1;

  // Cuts: the clusters of every level, each node, and (3 or more nodes) the first half of them.
  std::set<std::vector<int>> cuts;
  for (const auto& level : cluster_levels(g, members))
    for (auto cluster : level) {
      if (cluster.size() >= members.size()) continue;
      const int node = g.node_of_vertex(cluster[0]);
      if (single_node_cuts &&
          std::any_of(cluster.begin(), cluster.end(), [&](int v) { return g.node_of_vertex(v) != node; }))
        continue;
      std::sort(cluster.begin(), cluster.end());
      cuts.insert(cluster);
    }
  {  // a bisection in device order: tori and meshes have no clusters between single chips and all
    std::vector<int> sorted(members);
    std::sort(sorted.begin(), sorted.end());
    sorted.resize(sorted.size() / 2);
    const int node = g.node_of_vertex(sorted.empty() ? 0 : sorted[0]);
    if (!sorted.empty() && (!single_node_cuts || std::all_of(sorted.begin(), sorted.end(), [&](int v) {
                              return g.node_of_vertex(v) == node;
                            })))
      cuts.insert(sorted);
  }
  if (!single_node_cuts && g.nodes() > 1) {
    std::vector<std::vector<int>> by_node(g.nodes());
    for (int v : members) by_node[g.node_of_vertex(v)].push_back(v);
    std::vector<int> half;
    for (int k = 0; k < g.nodes(); ++k) {
      std::sort(by_node[k].begin(), by_node[k].end());
      if (!by_node[k].empty() && by_node[k].size() < members.size()) cuts.insert(by_node[k]);
      if (k < g.nodes() / 2) half.insert(half.end(), by_node[k].begin(), by_node[k].end());
    }
    if (g.nodes() >= 3 && !half.empty()) cuts.insert(half);
  }

  std::vector<char> in_cut(g.vertex_count(), 0);
  const double n = group_size;
  for (const auto& cut : cuts) {
    for (int v : cut) in_cut[v] = 1;
    double pairs = 0;  // sum over groups of |A n g| (n - |A n g|)
    std::vector<int> rest;  // the partners of A's members: the members of the groups A splits, outside A
    for (const auto& group : groups) {
      const double inside = static_cast<double>(std::count_if(group.begin(), group.end(), [&](int v) { return in_cut[v]; }));
      pairs += inside * (n - inside);
      if (inside > 0)
        for (int v : group)
          if (!in_cut[v]) rest.push_back(v);
    }
    if (pairs > 0) {
      std::vector<int> links;
      const GBps flow = g.max_flow(cut, rest, threshold, &links, fabric_only);
      // The part of the flow that crosses sockets moves at socket_efficiency of it.
      const GBps across = std::min(flow, socket_capacity(g, links));
      const bool sockets = across > 0;
      const GBps bound = (n - 1) * (flow - (1 - socket_efficiency) * across) / pairs;
      if (bound < out.busbw_gbps) {
        out.busbw_gbps = bound;
        out.across_sockets = sockets;
        out.bottleneck = fmt::format("cut {}: max-flow {:g} GB/s out{} for {:g} pair{} of ranks{}", describe_set(g, cut),
                                     flow, describe_links(g, links), pairs, pairs == 1 ? "" : "s",
                                     sockets ? fmt::format(", all-to-all across sockets at {:g} of it", socket_efficiency)
                                             : "");
      }
    }
    for (int v : cut) in_cut[v] = 0;
  }
  bound_by_route_loads(g, groups, group_size, socket_efficiency, out);
  return out;
}

}  // namespace cpplan::planner::topology
