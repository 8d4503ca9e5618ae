#include "planner/topology/placement.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <set>

namespace cpplan::planner::topology {

using costmodel::CommAxis;
using costmodel::CommGroup;
using costmodel::CommLayout;
using costmodel::kCommAxisCount;

namespace {

constexpr double kTie = 1e-12;  // relative: a placement must beat the incumbent by more to replace it

int index(MeshAxis a) { return static_cast<int>(a); }

// The mesh axes whose groups one collective runs over.
std::vector<MeshAxis> axes_of(CommAxis a) {
  switch (a) {
    case CommAxis::kTp: return {MeshAxis::kTp};
    case CommAxis::kUlysses: return {MeshAxis::kUlysses};
    case CommAxis::kRing: return {MeshAxis::kRing};
    case CommAxis::kCp: return {MeshAxis::kRing, MeshAxis::kUlysses};
    case CommAxis::kCfg: return {MeshAxis::kCfg};
    case CommAxis::kPp: return {MeshAxis::kPp};
    case CommAxis::kFs: return {};  // consecutive ranks, not a mesh axis (Placement::fs_groups)
  }
  return {};
}

// The degrees of a plan's axes, by MeshAxis.
std::array<int, kMeshAxisCount> mesh_degrees(const ParallelConfig& c) {
  return {c.tp(), c.ulysses(), c.ring(), c.cfg_degree, c.dp_degree, c.pp()};
}

// The devices' clusters (planner/topology/bandwidth.h) turned into orders: tight clusters
// contiguous (hierarchical), and the top-level clusters interleaved (spread).
std::vector<std::vector<int>> clustered_orders(const TopologyGraph& g) {
  const int n = g.gpus_per_node();
  std::vector<int> vertices, gpu_of_vertex(g.vertex_count(), -1);
  for (int i = 0; i < n; ++i) {
    vertices.push_back(g.gpu_vertex(0, i));
    gpu_of_vertex[vertices.back()] = i;
  }
  const auto levels = cluster_levels(g, vertices);
  // block[i]: the ordered GPUs of the cluster that holds GPU i at the current level.
  std::vector<std::vector<int>> blocks;
  for (int i = 0; i < n; ++i) blocks.push_back({i});
  std::vector<int> block_of(n);
  for (int i = 0; i < n; ++i) block_of[i] = i;
  std::vector<std::vector<int>> top_level;
  for (std::size_t l = 1; l < levels.size(); ++l) {
    if (l + 1 == levels.size()) top_level = blocks;  // the clusters just before the last merge
    std::vector<std::vector<int>> next;
    std::vector<int> next_of(n);
    for (const auto& cluster : levels[l]) {
      std::vector<int> parts;  // previous blocks inside, by their smallest GPU
      for (int v : cluster) {
        const int b = block_of[gpu_of_vertex[v]];
        if (std::find(parts.begin(), parts.end(), b) == parts.end()) parts.push_back(b);
      }
      std::sort(parts.begin(), parts.end(), [&](int a, int b) {
        return *std::min_element(blocks[a].begin(), blocks[a].end()) < *std::min_element(blocks[b].begin(), blocks[b].end());
      });
      std::vector<int> merged;
      for (int b : parts) merged.insert(merged.end(), blocks[b].begin(), blocks[b].end());
      for (int gpu : merged) next_of[gpu] = static_cast<int>(next.size());
      next.push_back(std::move(merged));
    }
    blocks = std::move(next);
    block_of = next_of;
  }
  std::sort(blocks.begin(), blocks.end());
  std::vector<int> hierarchical;
  for (const auto& b : blocks) hierarchical.insert(hierarchical.end(), b.begin(), b.end());
  std::vector<std::vector<int>> out{hierarchical};
  if (top_level.size() > 1) {
    std::sort(top_level.begin(), top_level.end());
    std::vector<int> spread;
    for (std::size_t i = 0; spread.size() < static_cast<std::size_t>(n); ++i)
      for (const auto& b : top_level)
        if (i < b.size()) spread.push_back(b[i]);
    out.push_back(spread);
  }
  return out;
}

}  // namespace

std::string_view to_string(MeshAxis a) {
  constexpr std::string_view n[] = {"tp", "ulysses", "ring", "cfg", "dp", "pp"};
  return n[index(a)];
}

int Placement::ranks() const {
  int w = 1;
  for (int d : degree) w *= d;
  return w;
}

std::vector<std::vector<int>> Placement::fs_groups() const {
  std::vector<std::vector<int>> out;
  const int f = std::max(1, fs_degree);
  for (int r = 0; r + f <= ranks(); r += f) {
    out.emplace_back();
    for (int k = 0; k < f; ++k) out.back().push_back(r + k);
  }
  return out;
}

std::vector<std::vector<int>> Placement::groups(const std::vector<MeshAxis>& axes) const {
  // Stride of each axis: the product of the degrees of the axes inside it.
  std::array<int, kMeshAxisCount> stride{};
  int s = 1;
  for (MeshAxis a : axis_order) {
    stride[index(a)] = s;
    s *= degree[index(a)];
  }
  std::vector<MeshAxis> inner_first(axes);
  std::sort(inner_first.begin(), inner_first.end(), [&](MeshAxis a, MeshAxis b) { return stride[index(a)] < stride[index(b)]; });
  std::vector<std::vector<int>> out;
  const int w = ranks();
  for (int r = 0; r < w; ++r) {
    bool leader = true;
    for (MeshAxis a : inner_first) leader = leader && (r / stride[index(a)]) % degree[index(a)] == 0;
    if (!leader) continue;
    std::vector<int> members{r};
    for (MeshAxis a : inner_first) {  // innermost fastest: members come out in rank order
      const std::size_t before = members.size();
      for (int c = 1; c < degree[index(a)]; ++c)
        for (std::size_t i = 0; i < before; ++i) members.push_back(members[i] + c * stride[index(a)]);
    }
    std::sort(members.begin(), members.end());
    out.push_back(std::move(members));
  }
  return out;
}

Placer::~Placer() = default;

Placer::Placer(const Query& q, const costmodel::CostModel& cost, PlacementOptions options)
    : query_(q), nodes_(q.nodes), cost_(cost), options_(options) {
  init(*q.topology);
}

Placer::Placer(const Query& q, Topology node, const costmodel::CostModel& cost, PlacementOptions options)
    : query_(q), own_node_(std::move(node)), cost_(cost), options_(options) {
  nodes_ = std::max(q.nodes, (q.gpus + own_node_->gpus - 1) / own_node_->gpus);
  init(*own_node_);
}

void Placer::init(const Topology& t) {
  const Query& q = query_;
  per_node_ = nodes_ > 1 ? t.gpus : std::min(q.gpus, t.gpus);
  evaluator_ = std::make_unique<GroupEvaluator>(t, nodes_, *q.hardware, options_.reduce);
  const TopologyGraph& one = evaluator_->instance(1);
  // Spans name switches and sockets only where GPUs meet over PCIe: not through an NVSwitch, an
  // xGMI mesh or a torus.
  const bool pcie_tree = t.torus.dims.empty() &&
                         std::none_of(t.devices.begin(), t.devices.end(),
                                      [](const TopoDevice& d) { return d.kind == DeviceKind::kNvSwitch; }) &&
                         std::none_of(t.links.begin(), t.links.end(),
                                      [](const TopoLink& l) { return l.type == LinkType::kXgmi; });
  for (int gpu = 0; pcie_tree && gpu < t.gpus; ++gpu)
    switch_of_.push_back(t.switch_of(gpu)), socket_of_.push_back(t.socket_of(gpu));

  // Device orders: every arrangement (tests), else identity, hierarchical and spread.
  std::vector<std::vector<int>> candidates;
  if (options_.all_device_orders) {
    std::vector<int> perm(t.gpus);
    for (int i = 0; i < t.gpus; ++i) perm[i] = i;
    do candidates.emplace_back(perm.begin(), perm.begin() + per_node_);
    while (std::next_permutation(perm.begin(), perm.end()));
  } else {
    std::vector<int> identity(t.gpus);
    for (int i = 0; i < t.gpus; ++i) identity[i] = i;
    candidates.push_back(identity);
    for (auto& o : clustered_orders(one)) candidates.push_back(std::move(o));
    for (auto& c : candidates) c.resize(per_node_);
  }
  std::set<std::vector<int>> seen;
  for (auto& c : candidates)
    if (seen.insert(c).second) device_orders_.push_back(std::move(c));

  // The bound for an axis not placed yet: no group moves more per rank than a GPU's links carry
  // together, at the better efficiency, nor pays less alpha than the closest pair of GPUs.
  GBps injection = 0;
  for (int gpu = 0; gpu < t.gpus; ++gpu) {
    GBps out = 0;
    for (const DirectedEdge& e : one.edges())
      if (e.from == one.gpu_vertex(0, gpu)) out += e.capacity_gbps;
    injection = std::max(injection, out);
  }
  const TopologyGraph& near = evaluator_->instance(std::min(nodes_, 2));
  Microseconds alpha = std::numeric_limits<double>::infinity();
  for (int a = 0; a < near.nodes() * t.gpus; ++a)
    for (int b = 0; b < near.nodes() * t.gpus; ++b)
      if (a != b) alpha = std::min(alpha, near.route(near.gpu_vertex(a / t.gpus, a % t.gpus),
                                                     near.gpu_vertex(b / t.gpus, b % t.gpus)).latency_us);
  if (!(alpha < std::numeric_limits<double>::infinity())) alpha = 0;
  optimistic_.busbw_gbps =
      injection * std::max({q.hardware->intra_node.efficiency, q.hardware->network.efficiency, q.hardware->pcie_efficiency});
  optimistic_.latency_us = alpha;
  // Once the axes inside an axis hold a whole node's ranks, its groups have one member per node:
  // all of a node's GPUs send off the node at once, so none gets more than the node's network
  // egress / its GPUs (a cut), nor pays less alpha than the closest pair on two nodes.
  optimistic_remote_ = optimistic_;
  if (nodes_ > 1) {
    std::vector<int> here, there;
    for (int gpu = 0; gpu < t.gpus; ++gpu) here.push_back(near.gpu_vertex(0, gpu)), there.push_back(near.gpu_vertex(1, gpu));
    optimistic_remote_.busbw_gbps = near.max_flow(here, there, 0) / t.gpus * q.hardware->network.efficiency;
    Microseconds remote = std::numeric_limits<double>::infinity();
    for (int a : here)
      for (int b : there) remote = std::min(remote, near.route(a, b).latency_us);
    optimistic_remote_.latency_us = remote;
    optimistic_remote_.nodes = 2;  // at least
  }
}

AxisBandwidth Placer::measure(Pattern pattern, const std::vector<std::vector<int>>& groups, const Placement& p) const {
  AxisBandwidth bw = evaluator_->evaluate(pattern, groups, p.device_order, per_node_);
  bw.span = span_of(groups, p);
  return bw;
}

std::string Placer::span_of(const std::vector<std::vector<int>>& groups, const Placement& p) const {
  const int nodes = nodes_spanned(p, groups);
  if (nodes > 1) return fmt::format("{} nodes", nodes);
  // Inside a node, on a PCIe tree: the most sockets, else the most switches, one group reaches.
  std::size_t sockets = 0, switches = 0;
  for (const auto& g : groups) {
    std::set<int> socket, sw;
    for (int r : g) {
      const int gpu = p.gpu_of(r);
      if (gpu < static_cast<int>(socket_of_.size()) && socket_of_[gpu] >= 0) socket.insert(socket_of_[gpu]);
      if (gpu < static_cast<int>(switch_of_.size()) && switch_of_[gpu] >= 0) sw.insert(switch_of_[gpu]);
    }
    sockets = std::max(sockets, socket.size()), switches = std::max(switches, sw.size());
  }
  if (sockets > 1) return fmt::format("{} sockets", sockets);
  if (switches > 1) return fmt::format("{} switches", switches);
  if (switches == 1) return "1 switch";
  return sockets == 1 ? "1 socket" : "1 node";
}

// The fully-shard groups do not depend on the axis order, only on the device order: always known.
void Placer::fs_layout(const Placement& p, int device_index, CommGroup& g, AxisBandwidth* link) const {
  g.ranks = p.fs_degree;
  g.stride = 1;
  if (p.fs_degree <= 1) return;
  const std::vector<long long> key{static_cast<long long>(Pattern::kRing), device_index, p.ranks(), -p.fs_degree};
  auto it = axis_cache_.find(key);
  if (it == axis_cache_.end()) it = axis_cache_.emplace(key, measure(Pattern::kRing, p.fs_groups(), p)).first;
  const AxisBandwidth& bw = it->second;
  g.nodes = bw.span_nodes;
  g.busbw_gbps = bw.busbw_gbps;
  g.latency_us = bw.latency_us;
  if (link) *link = bw;
}

CommLayout Placer::layout_for(const Placement& p, const std::array<bool, kCommAxisCount>& known, int placed_ranks,
                              int device_index, CpVariant v, const ParallelConfig& c,
                              std::array<AxisBandwidth, kCommAxisCount>* links) const {
  CommLayout layout;
  std::array<int, kMeshAxisCount> stride{};
  int s = 1;
  for (MeshAxis a : p.axis_order) stride[index(a)] = s, s *= p.degree[index(a)];
  const bool p2p = costmodel::main_collective(CommAxis::kRing, c, v) == costmodel::Collective::kSendRecv;
  for (int i = 0; i < kCommAxisCount; ++i) {
    const CommAxis axis = static_cast<CommAxis>(i);
    if (axis == CommAxis::kFs) {
      fs_layout(p, device_index, layout[axis], links ? &(*links)[i] : nullptr);
      continue;
    }
    const auto mesh = axes_of(axis);
    int degree = 1;
    for (MeshAxis m : mesh) degree *= p.degree[index(m)];
    CommGroup& g = layout[axis];
    g.ranks = degree;
    g.stride = stride[index(mesh.front())];
    if (degree <= 1) continue;
    if (!known[i]) {
      // The remote bound holds for one axis's groups; the CP group may keep its Ulysses part inside.
      const bool remote = placed_ranks >= per_node_ && nodes_ > 1 && mesh.size() == 1;
      const CommGroup& bound = remote ? optimistic_remote_ : optimistic_;
      g.busbw_gbps = bound.busbw_gbps;
      g.latency_us = bound.latency_us;
      g.nodes = bound.nodes;
      continue;
    }
    // PipeFusion's stages send to the next stage in rank order (and the last back to the first).
    const Pattern pattern = axis == CommAxis::kUlysses                             ? Pattern::kAllToAll
                            : (axis == CommAxis::kRing && p2p) || axis == CommAxis::kPp ? Pattern::kRingRankOrder
                                                                                    : Pattern::kRing;
    std::vector<long long> key{static_cast<long long>(pattern), device_index, p.ranks()};
    for (MeshAxis m : mesh) key.push_back(1LL * p.degree[index(m)] * (1LL << 32) + stride[index(m)]);
    auto it = axis_cache_.find(key);
    if (it == axis_cache_.end()) it = axis_cache_.emplace(key, measure(pattern, p.groups(mesh), p)).first;
    const AxisBandwidth& bw = it->second;
    g.nodes = bw.span_nodes;
    g.busbw_gbps = bw.busbw_gbps;
    g.latency_us = bw.latency_us;
    if (links) (*links)[i] = bw;
  }
  return layout;
}

struct Placer::Search {
  const Placer& placer;
  const Plan& plan;
  std::vector<MeshAxis> axes;  // the axes to order (those of degree > 1, or all five)
  std::array<int, kMeshAxisCount> degree{};
  PlacementResult best;
  double best_ms = std::numeric_limits<double>::infinity();
  int device_index = 0;

  // The ordered axes fill their own slots of the default order, so that size-1 axes stay where
  // xDiT puts them; the axes not placed yet follow the prefix in the default order.
  Placement placement(const std::vector<MeshAxis>& prefix) const {
    Placement p;
    p.degree = degree;
    p.fs_degree = plan.config.fs();
    p.gpus_per_node = placer.per_node_;
    p.device_order = placer.device_orders_[device_index];
    std::vector<MeshAxis> chosen(prefix);
    for (MeshAxis a : axes)
      if (std::find(prefix.begin(), prefix.end(), a) == prefix.end()) chosen.push_back(a);
    std::size_t k = 0;
    for (int i = 0; i < kMeshAxisCount; ++i) {
      const MeshAxis slot = kDefaultAxisOrder[i];
      p.axis_order[i] = std::find(axes.begin(), axes.end(), slot) != axes.end() ? chosen[k++] : slot;
    }
    return p;
  }

  void visit(std::vector<MeshAxis>& prefix) {
    const bool complete = prefix.size() == axes.size();
    std::array<bool, kCommAxisCount> known{};
    for (int i = 0; i < kCommAxisCount; ++i) {
      known[i] = true;  // a collective is known once every axis of its groups is placed (or trivial)
      for (MeshAxis m : axes_of(static_cast<CommAxis>(i)))
        known[i] = known[i] && (complete || degree[index(m)] == 1 ||
                                std::find(prefix.begin(), prefix.end(), m) != prefix.end());
    }
    Placement p = placement(prefix);
    if (!complete) {
      if (placer.options_.prune) {
        int placed = 1;
        for (MeshAxis a : prefix) placed *= degree[index(a)];
        const CommLayout bound_layout =
            placer.layout_for(p, known, placed, device_index, plan.variant, plan.config, nullptr);
        const double bound = placer.cost_.predict(placer.query_, plan.config, plan.variant, &bound_layout).step_ms;
        if (bound >= best_ms * (1 - kTie)) {
          ++best.pruned;
          return;
        }
      }
      for (MeshAxis a : axes)
        if (std::find(prefix.begin(), prefix.end(), a) == prefix.end()) {
          prefix.push_back(a);
          visit(prefix);
          prefix.pop_back();
        }
      return;
    }
    p.layout = placer.layout_for(p, known, p.ranks(), device_index, plan.variant, plan.config, &p.links);
    costmodel::Prediction predicted = placer.cost_.predict(placer.query_, plan.config, plan.variant, &p.layout);
    ++best.leaves;
    if (predicted.step_ms < best_ms * (1 - kTie)) {
      best_ms = predicted.step_ms;
      best.placement = std::move(p);
      best.predicted = predicted;
    }
  }
};

PlacementResult Placer::place(const Plan& plan) const {
  Search s{*this, plan, {}, {}, {}, std::numeric_limits<double>::infinity(), 0};
  const ParallelConfig& c = plan.config;
  s.degree = mesh_degrees(c);
  for (MeshAxis a : kDefaultAxisOrder)
    if (options_.all_axis_orders || s.degree[index(a)] > 1) s.axes.push_back(a);
  for (s.device_index = 0; s.device_index < static_cast<int>(device_orders_.size()); ++s.device_index) {
    std::vector<MeshAxis> prefix;
    s.visit(prefix);
  }
  return s.best;
}

PlacementResult Placer::evaluate(const Plan& plan, const std::array<MeshAxis, kMeshAxisCount>& axis_order,
                                 int device_index) const {
  const ParallelConfig& c = plan.config;
  PlacementResult r;
  Placement& p = r.placement;
  p.axis_order = axis_order;
  p.degree = mesh_degrees(c);
  p.fs_degree = c.fs();
  p.gpus_per_node = per_node_;
  p.device_order = device_orders_[device_index];
  std::array<bool, kCommAxisCount> known;
  known.fill(true);
  p.layout = layout_for(p, known, p.ranks(), device_index, plan.variant, c, &p.links);
  r.predicted = cost_.predict(query_, c, plan.variant, &p.layout);
  r.leaves = 1;
  return r;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    parts.push_back(j > i + 1 ? fmt::format("{}-{}", ranks[i], ranks[j])
                              : (j == i + 1 ? fmt::format("{} {}", ranks[i], ranks[j]) : fmt::format("{}", ranks[i])));
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

int nodes_spanned(const Placement& p, const std::vector<std::vector<int>>& groups) {
  int span = 1;
  for (const auto& g : groups) {
    std::vector<int> nodes;
    for (int r : g) nodes.push_back(p.node_of(r));
    std::sort(nodes.begin(), nodes.end());
    span = std::max(span, static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin()));
  }
  return span;
}

int axis_degree(const ParallelConfig& c, costmodel::CommAxis a) {
  using costmodel::CommAxis;
  switch (a) {
    case CommAxis::kTp: return c.tp();
    case CommAxis::kUlysses: return c.ulysses();
    case CommAxis::kRing: return c.ring();
    case CommAxis::kCp: return c.ring() * c.ulysses();
    case CommAxis::kCfg: return c.cfg_degree;
    case CommAxis::kPp: return c.pp();
    case CommAxis::kFs: return c.fs();
  }
  return 1;
}

std::string_view collective_name(const Plan& p, costmodel::CommAxis a) {
  return costmodel::to_string(costmodel::main_collective(a, p.config, p.variant));
}

}  // namespace cpplan::planner::topology
