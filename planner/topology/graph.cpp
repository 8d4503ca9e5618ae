#include "planner/topology/graph.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace cpplan::planner::topology {

namespace {

constexpr double kLatencyEpsilon = 1e-9;  // latencies are sums of file values: ignore rounding noise

struct EdgeProp {
  double capacity = 0;
  double latency = 0;
  int id = 0;
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, EdgeProp>;

// Dijkstra over the bottleneck metric: a route is extended by taking the narrower of its width and
// the edge's capacity; routes compare by Route::better_than.
struct Better {
  bool operator()(const Route& a, const Route& b) const { return a.better_than(b); }
};
struct Extend {
  Route operator()(const Route& d, const EdgeProp& e) const {
    return {std::min(d.width_gbps, e.capacity), d.hops + 1, d.latency_us + e.latency};
  }
};
struct PredecessorRecorder : boost::default_dijkstra_visitor {
  std::vector<int>* predecessor = nullptr;
  template <class E, class G>
  void edge_relaxed(E e, const G& g) {
    (*predecessor)[boost::target(e, g)] = g[e].id;
  }
};

using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<boost::edge_capacity_t, long long,
                    boost::property<boost::edge_residual_capacity_t, long long,
                                    boost::property<boost::edge_reverse_t, FlowTraits::edge_descriptor>>>>;

}  // namespace

bool Route::better_than(const Route& o) const {
  if (width_gbps != o.width_gbps) return width_gbps > o.width_gbps;
  if (hops != o.hops) return hops < o.hops;
  return latency_us < o.latency_us - kLatencyEpsilon;
}

bool Route::same_as(const Route& o) const { return !better_than(o) && !o.better_than(*this); }

struct TopologyGraph::RouteTree {
  std::vector<Route> best;
  std::vector<int> predecessor_edge;  // -1 at the source and for unreachable vertices
};

struct TopologyGraph::Impl {
  explicit Impl(std::size_t vertices) : graph(vertices), trees(vertices) {}
  Graph graph;
  std::vector<std::unique_ptr<RouteTree>> trees;
};

TopologyGraph::~TopologyGraph() = default;

void TopologyGraph::add_link(int a, int b, GBps gbps, Microseconds latency_us, LinkType type) {
  edges_.push_back({a, b, gbps, latency_us, type});
  edges_.push_back({b, a, gbps, latency_us, type});
}

TopologyGraph::TopologyGraph(const Topology& t, int nodes) : nodes_(nodes), gpus_per_node_(t.gpus) {
  const std::size_t n = t.devices.size();
  auto splits = [&](int d) {  // a device that refuses P2P: every byte through it passes host memory
    const TopoDevice& dev = t.devices[d];
    return !dev.p2p && (dev.kind == DeviceKind::kCpu || dev.kind == DeviceKind::kPcieSwitch);
  };
  auto is_memory = [&](int d) { return t.devices[d].kind == DeviceKind::kMemory; };
  std::vector<int> nic_devices;
  for (std::size_t d = 0; d < n; ++d)
    if (t.devices[d].kind == DeviceKind::kNic) nic_devices.push_back(static_cast<int>(d));
  std::vector<std::vector<int>> nic_vertex(nodes);
  gpu_vertex_.resize(static_cast<std::size_t>(nodes) * t.gpus);

  for (int k = 0; k < nodes; ++k) {
    const std::string prefix = nodes > 1 ? fmt::format("n{}.", k) : "";
    // A split device has an "in" vertex (traffic arriving, on its way to memory) and an "out"
    // vertex (traffic read back from memory); other devices have one vertex for both.
    std::vector<int> in(n), out(n);
    for (std::size_t d = 0; d < n; ++d) {
      in[d] = static_cast<int>(names_.size());
      if (splits(static_cast<int>(d))) {
        names_.push_back(prefix + t.devices[d].name + "(to memory)");
        names_.push_back(prefix + t.devices[d].name + "(from memory)");
        node_of_.push_back(k);
        node_of_.push_back(k);
        out[d] = in[d] + 1;
      } else {
        names_.push_back(prefix + t.devices[d].name);
        node_of_.push_back(k);
        out[d] = in[d];
      }
    }
    for (int g = 0; g < t.gpus; ++g) gpu_vertex_[static_cast<std::size_t>(k) * t.gpus + g] = in[g];
    for (int d : nic_devices) nic_vertex[k].push_back(in[d]);
    for (const TopoLink& l : t.links) {
      // u -> v leaves u's out vertex and enters v's in vertex; toward memory a split device
      // sends from its in vertex, and memory answers into its out vertex.
      auto source = [&](int u, int v) { return splits(u) && is_memory(v) ? in[u] : out[u]; };
      auto target = [&](int u, int v) { return splits(v) && is_memory(u) ? out[v] : in[v]; };
      const bool staging = (splits(l.from) && is_memory(l.to)) || (splits(l.to) && is_memory(l.from));
      has_staging_ = has_staging_ || staging;
      edges_.push_back({source(l.from, l.to), target(l.from, l.to), l.bandwidth_gbps, l.latency_us, l.type, staging});
      edges_.push_back({source(l.to, l.from), target(l.to, l.from), l.bandwidth_gbps, l.latency_us, l.type, staging});
    }
  }

  if (nodes > 1) {
    const Microseconds lat = t.network.latency_us;
    auto add_vertex = [&](std::string name) {
      names_.push_back(std::move(name));
      node_of_.push_back(-1);
      return static_cast<int>(names_.size()) - 1;
    };
    if (t.network.kind == NetworkKind::kSwitch) {
      const int sw = add_vertex("switch");
      for (int k = 0; k < nodes; ++k)
        for (std::size_t i = 0; i < nic_devices.size(); ++i)
          add_link(nic_vertex[k][i], sw, t.devices[nic_devices[i]].bandwidth_gbps, lat, LinkType::kNetwork);
    } else {
      // Rail i joins NIC i of every node; the spine joins the rails without blocking (its link
      // to a rail carries everything that rail's NICs can send).
      const int spine = nic_devices.size() > 1 ? add_vertex("spine") : -1;
      for (std::size_t i = 0; i < nic_devices.size(); ++i) {
        const int rail = add_vertex(fmt::format("rail{}", i));
        const GBps bw = t.devices[nic_devices[i]].bandwidth_gbps;
        for (int k = 0; k < nodes; ++k) add_link(nic_vertex[k][i], rail, bw, lat, LinkType::kNetwork);
        if (spine >= 0) add_link(rail, spine, bw * nodes, lat, LinkType::kNetwork);
      }
    }
  }

  impl_ = std::make_unique<Impl>(names_.size());
  for (std::size_t i = 0; i < edges_.size(); ++i)
    boost::add_edge(edges_[i].from, edges_[i].to,
                    EdgeProp{edges_[i].capacity_gbps, edges_[i].latency_us, static_cast<int>(i)}, impl_->graph);
}

const TopologyGraph::RouteTree& TopologyGraph::tree(int source) const {
  auto& slot = impl_->trees[source];
  if (slot) return *slot;
  slot = std::make_unique<RouteTree>();
  RouteTree& t = *slot;
  const Graph& g = impl_->graph;
  t.best.assign(names_.size(), Route{});
  t.predecessor_edge.assign(names_.size(), -1);
  constexpr double kHuge = std::numeric_limits<double>::max();
  const Route unreachable{0, std::numeric_limits<int>::max() / 4, kHuge};
  const Route start{kHuge, 0, 0};
  PredecessorRecorder recorder;
  recorder.predecessor = &t.predecessor_edge;
  const auto index = boost::get(boost::vertex_index, g);
  boost::dijkstra_shortest_paths(g, static_cast<Graph::vertex_descriptor>(source), boost::dummy_property_map(),
                                 boost::make_iterator_property_map(t.best.begin(), index),
                                 boost::get(boost::edge_bundle, g), index, Better{}, Extend{}, unreachable, start,
                                 recorder);
  for (Route& r : t.best)
    if (r.width_gbps == 0) r = Route{};
  return t;
}

Route TopologyGraph::route(int source, int target) const {
  if (source == target) return Route{std::numeric_limits<double>::infinity(), 0, 0};
  return tree(source).best[target];
}

std::vector<int> TopologyGraph::route_edges(int source, int target) const {
  const RouteTree& t = tree(source);
  std::vector<int> path;
  if (source == target || t.best[target].width_gbps == 0) return path;
  for (int v = target; v != source;) {
    const int e = t.predecessor_edge[v];
    path.push_back(e);
    v = edges_[e].from;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

bool is_fabric(LinkType t) { return t == LinkType::kNvLink || t == LinkType::kXgmi || t == LinkType::kIci; }

GBps TopologyGraph::max_flow(const std::vector<int>& sources, const std::vector<int>& sinks, GBps min_capacity_gbps,
                             std::vector<int>* cut_edges, bool fabric_only) const {
  if (cut_edges) cut_edges->clear();
  if (sources.empty() || sinks.empty()) return 0;
  const long long kInfinite = 1LL << 50;
  const int s = vertex_count(), sink = vertex_count() + 1;
  FlowGraph fg(vertex_count() + 2);
  auto capacity = boost::get(boost::edge_capacity, fg);
  auto reverse = boost::get(boost::edge_reverse, fg);
  auto add = [&](int u, int v, long long c) {
    const auto e = boost::add_edge(u, v, fg).first;
    const auto r = boost::add_edge(v, u, fg).first;
    capacity[e] = c;
    capacity[r] = 0;
    reverse[e] = r;
    reverse[r] = e;
  };
  const double threshold = min_capacity_gbps * (1 - 1e-9);
  std::vector<char> source_or_sink(vertex_count(), 0);  // 1: a source, 2: a sink
  for (int v : sources) source_or_sink[v] = 1;
  for (int v : sinks) source_or_sink[v] = 2;
  std::vector<int> used;  // the edges_ in the flow graph
  for (std::size_t i = 0; i < edges_.size(); ++i) {
    const DirectedEdge& e = edges_[i];
    if (fabric_only && !is_fabric(e.type)) continue;
    if (e.type == LinkType::kXgmi && (source_or_sink[e.from] != 1 || source_or_sink[e.to] != 2)) continue;
    if (e.capacity_gbps >= threshold) {
      add(edges_[i].from, edges_[i].to, std::llround(edges_[i].capacity_gbps * 1e3));  // MB/s
      used.push_back(static_cast<int>(i));
    }
  }
  for (int v : sources) add(s, v, kInfinite);
  for (int v : sinks) add(v, sink, kInfinite);
  const long long flow = boost::push_relabel_max_flow(fg, s, sink);
  if (cut_edges) {
    // The minimum cut: the vertices the residual graph still reaches from the source, and the
    // edges leaving them (each full).
    const auto residual = boost::get(boost::edge_residual_capacity, fg);
    std::vector<char> reached(vertex_count() + 2, 0);
    std::vector<int> stack{s};
    reached[s] = 1;
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      for (auto [e, end] = boost::out_edges(v, fg); e != end; ++e) {
        const int w = static_cast<int>(boost::target(*e, fg));
        if (residual[*e] > 0 && !reached[w]) reached[w] = 1, stack.push_back(w);
      }
    }
    for (int i : used)
      if (reached[edges_[i].from] && !reached[edges_[i].to]) cut_edges->push_back(i);
  }
  return static_cast<double>(flow) / 1e3;
}

}  // namespace cpplan::planner::topology
