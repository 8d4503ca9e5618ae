#include "planner/fleet.h"

#include <algorithm>
#include <fmt/format.h>

namespace cpplan::planner {

bool ReplicaPlans::admits(const FrameworkSet& runs) const {
  if (framework) return runs.has(*framework);
  return any_valid || runs.bits != 0;
}

double images_per_hour(int replicas, double image_ms) { return replicas * kMsPerHour / image_ms; }

std::vector<int> replica_sizes(int gpus) {
  std::vector<int> sizes;
  if (gpus <= kAllReplicaSizesUpTo) {
    for (int k = 1; k <= gpus; ++k) sizes.push_back(k);
    return sizes;
  }
  // Every size would mean N rankings of up to N GPUs each; the divisors leave no GPU idle and the
  // powers of two are the sizes the CP degrees divide best.
  for (int k = 1; static_cast<long long>(k) * k <= gpus; ++k)
    if (gpus % k == 0) {
      sizes.push_back(k);
      sizes.push_back(gpus / k);
    }
  for (long long k = 1; k <= gpus; k *= 2) sizes.push_back(static_cast<int>(k));
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

namespace {

// The ranking of one replica: q on k GPUs, one image at a time, valid plans only.
PlanReport replica_report(const Planner& planner, const Query& q, int k, const PlannerOptions& options) {
  Query replica = q;
  replica.gpus = k;
  replica.batch = 1;
  PlannerOptions o = options;
  o.keep_invalid = false;
  return planner.plan(replica, o);
}

bool replica_candidate(const RankedPlan& p) { return p.plan.valid() && p.predicted && p.plan.config.dp_degree == 1; }

// Among the candidates `plans` admits: fitting first, then the least image_ms; the first of equals
// in rank order.
const RankedPlan* best_of(const PlanReport& report, const ReplicaPlans& plans) {
  const RankedPlan* best = nullptr;
  for (const RankedPlan& p : report.plans) {
    if (!replica_candidate(p) || !plans.admits(p.frameworks)) continue;
    if (!best) {
      best = &p;
      continue;
    }
    const bool fits = p.predicted->fits_memory, best_fits = best->predicted->fits_memory;
    if ((fits && !best_fits) || (fits == best_fits && p.predicted->image_ms < best->predicted->image_ms)) best = &p;
  }
  return best;
}

FleetRow uniform_row(const Replica& r, int gpus, std::optional<double> slo_ms, int gpus_per_node) {
  FleetRow row;
  row.replicas = replicas_of_size(r.gpus, gpus, gpus_per_node);
  row.gpus_per_replica = r.gpus;
  row.idle_gpus = gpus - row.replicas * r.gpus;
  row.replica = r.plan;
  row.image_ms = r.image_ms();
  row.images_per_hour = images_per_hour(row.replicas, row.image_ms);
  row.fits = r.fits();
  row.meets_slo = !slo_ms || row.image_ms <= *slo_ms;
  return row;
}

// The replica's plan label, with its format and cache when `q` ranks them: "ulysses 4 (fp8, fbcache)".
std::string replica_label(const Query& q, const RankedPlan& p) {
  const std::string format_cache = format_cache_label(q, p);
  return plan_label(p.plan.config) + (format_cache.empty() ? "" : " (" + format_cache + ")");
}

std::string mix_label(const Query& q, const std::vector<FleetPart>& parts) {
  std::string label;
  for (const FleetPart& part : parts)
    label += fmt::format("{}{} x {}", label.empty() ? "" : " + ", part.replicas, replica_label(q, part.replica.plan));
  return label;
}

// The best composition of the usable replicas; nullopt unless it beats `best_uniform` images/h.
std::optional<FleetMix> mixed_split(const Query& q, const std::vector<Replica>& replicas, int gpus, int gpus_per_node,
                                    std::optional<double> slo_ms, double best_uniform) {
  std::vector<double> value(gpus + 1, 0.0);
  for (const Replica& r : replicas)
    if (r.fits() && (!slo_ms || r.image_ms() <= *slo_ms)) value[r.gpus] = images_per_hour(1, r.image_ms());
  const Composition c = best_packing(value, gpus, gpus_per_node);
  // A composition of one size is a uniform row; rounding must not pass it off as better.
  if (c.counts.size() < 2 || c.value <= best_uniform * (1 + 1e-9)) return std::nullopt;
  FleetMix mix;
  for (const auto& [size, count] : c.counts) {
    const auto it = std::find_if(replicas.begin(), replicas.end(), [size = size](const Replica& r) { return r.gpus == size; });
    mix.parts.push_back({count, *it, images_per_hour(count, it->image_ms())});
    mix.worst_image_ms = std::max(mix.worst_image_ms, it->image_ms());
  }
  mix.images_per_hour = c.value;
  mix.gpus_used = c.used;
  mix.label = mix_label(q, mix.parts);
  return mix;
}

// One node's share of a replica: the whole replica of k <= G GPUs, or the last `gpus` GPUs of a
// larger one, which holds `whole` more nodes of its own.
struct Piece {
  int k = 0;
  int gpus = 0;
  int whole = 0;
  double value = 0;
};

// best(c, d): the most value of pieces within c GPUs of one node whose replicas need at most d
// whole nodes besides; an unbounded knapsack in two dimensions, O(G x max_whole x pieces).
class NodeFill {
 public:
  NodeFill(std::vector<Piece> pieces, int gpus_per_node, int max_whole)
      : pieces_(std::move(pieces)), width_(max_whole + 1) {
    best_.assign((gpus_per_node + 1) * width_, 0.0);
    choice_.assign(best_.size(), kEmpty);
    for (int c = 0; c <= gpus_per_node; ++c)
      for (int d = 0; d <= max_whole; ++d) {
        double& b = best_[at(c, d)];
        int& ch = choice_[at(c, d)];
        if (c > 0) b = best_[at(c - 1, d)], ch = kOneGpuLess;
        if (d > 0 && best_[at(c, d - 1)] > b) b = best_[at(c, d - 1)], ch = kOneNodeLess;
        for (int i = 0; i < static_cast<int>(pieces_.size()); ++i) {
          const Piece& p = pieces_[i];
          if (p.gpus > c || p.whole > d) continue;
          const double v = best_[at(c - p.gpus, d - p.whole)] + p.value;
          if (v > b) b = v, ch = i;
        }
      }
  }
  double best(int c, int d) const { return best_[at(c, d)]; }
  // Adds the replicas of best(c, d) to count[k].
  void add_counts(int c, int d, std::vector<int>& count) const {
    while (choice_[at(c, d)] != kEmpty) {
      const int ch = choice_[at(c, d)];
      if (ch == kOneGpuLess) --c;
      else if (ch == kOneNodeLess) --d;
      else {
        ++count[pieces_[ch].k];
        c -= pieces_[ch].gpus;
        d -= pieces_[ch].whole;
      }
    }
  }

 private:
  static constexpr int kEmpty = -3, kOneGpuLess = -1, kOneNodeLess = -2;
  int at(int c, int d) const { return c * width_ + d; }
  std::vector<Piece> pieces_;
  int width_;
  std::vector<double> best_;
  std::vector<int> choice_;
};

// The whole-node counts d at which a node's best fill grows (the others add whole nodes for nothing).
std::vector<int> growing_whole_counts(const NodeFill& fill, int c, int max_whole) {
  std::vector<int> out;
  for (int d = 0; d <= max_whole; ++d)
    if (fill.best(c, d) > (d == 0 ? 0.0 : fill.best(c, d - 1))) out.push_back(d);
  return out;
}

}  // namespace

std::vector<int> node_capacities(int gpus, int gpus_per_node) {
  if (gpus_per_node <= 0 || gpus_per_node >= gpus) return {gpus};
  std::vector<int> caps(gpus / gpus_per_node, gpus_per_node);
  if (gpus % gpus_per_node) caps.push_back(gpus % gpus_per_node);
  return caps;
}

Composition best_packing(const std::vector<double>& value_of_size, int gpus, int gpus_per_node) {
  const std::vector<int> caps = node_capacities(gpus, gpus_per_node);
  if (caps.size() == 1) return best_composition(value_of_size, gpus);
  // Full nodes F, and a last node of R < G GPUs (R = 0: none). A full node holding pieces whose
  // replicas need d whole nodes costs 1 + d full nodes: an unbounded knapsack over F in nodes,
  // most(x) = max(most(x - 1), max over d of most(x - 1 - d) + fill(G, d)); the last node adds
  // fill(R, d) for d whole nodes taken from the F.
  const int g = gpus_per_node, full = gpus / g, rest = gpus % g;
  const int sizes = std::min(gpus, static_cast<int>(value_of_size.size()) - 1);
  std::vector<Piece> pieces;
  for (int k = 1; k <= sizes; ++k) {
    if (value_of_size[k] <= 0) continue;
    const int whole = (k - 1) / g;  // ceil(k / G) - 1
    if (whole <= full) pieces.push_back({k, k - whole * g, whole, value_of_size[k]});
  }
  const NodeFill fill(pieces, g, full);
  const std::vector<int> grows = growing_whole_counts(fill, g, full);
  std::vector<double> most(full + 1, 0.0);
  std::vector<int> choice(full + 1, -1);  // -1: x - 1 nodes with one idle; d: a node of d whole nodes' pieces
  for (int x = 1; x <= full; ++x) {
    most[x] = most[x - 1];
    for (int d : grows)
      if (1 + d <= x && most[x - 1 - d] + fill.best(g, d) > most[x]) {
        most[x] = most[x - 1 - d] + fill.best(g, d);
        choice[x] = d;
      }
  }
  int last_whole = 0;  // whole nodes the last node's pieces take from the full ones
  double value = most[full];
  if (rest > 0)
    for (int d : growing_whole_counts(fill, rest, full))
      if (fill.best(rest, d) + most[full - d] > value) {
        value = fill.best(rest, d) + most[full - d];
        last_whole = d;
      }
  std::vector<int> count(sizes + 1, 0);
  if (rest > 0) fill.add_counts(rest, last_whole, count);
  for (int x = full - last_whole; x > 0;) {
    if (choice[x] < 0) {
      --x;
      continue;
    }
    fill.add_counts(g, choice[x], count);
    x -= 1 + choice[x];
  }
  Composition out;
  out.value = value;
  for (int k = 1; k <= sizes; ++k)
    if (count[k] > 0) {
      out.counts.emplace_back(k, count[k]);
      out.used += k * count[k];
    }
  return out;
}

int replicas_of_size(int k, int gpus, int gpus_per_node) {
  if (k < 1 || k > gpus) return 0;
  std::vector<double> one(k + 1, 0.0);
  one[k] = 1;
  const Composition c = best_packing(one, gpus, gpus_per_node);
  return c.counts.empty() ? 0 : c.counts.front().second;
}

std::optional<RankedPlan> best_replica(const Planner& planner, const Query& q, int k, const PlannerOptions& options,
                                       const ReplicaPlans& plans) {
  const PlanReport report = replica_report(planner, q, k, options);
  const RankedPlan* best = best_of(report, plans);
  return best ? std::optional<RankedPlan>(*best) : std::nullopt;
}

std::vector<FleetRow> uniform_rows(const std::vector<Replica>& replicas, int gpus, std::optional<double> slo_ms,
                                   int gpus_per_node) {
  std::vector<FleetRow> rows;
  for (const Replica& r : replicas)
    if (r.gpus <= gpus)
      if (FleetRow row = uniform_row(r, gpus, slo_ms, gpus_per_node); row.replicas > 0) rows.push_back(std::move(row));
  std::stable_sort(rows.begin(), rows.end(), [](const FleetRow& a, const FleetRow& b) {
    if (a.usable() != b.usable()) return a.usable();
    if (a.images_per_hour != b.images_per_hour) return a.images_per_hour > b.images_per_hour;
    return a.image_ms < b.image_ms;
  });
  return rows;
}

Composition best_composition(const std::vector<double>& value_of_size, int capacity) {
  // best[c]: the most value within weight c; choice[c]: the size added last (0: c - 1 with one
  // unit unused). Unbounded: best[c] = max(best[c - 1], best[c - k] + value[k]).
  std::vector<double> best(capacity + 1, 0.0);
  std::vector<int> choice(capacity + 1, 0);
  const int sizes = std::min(capacity, static_cast<int>(value_of_size.size()) - 1);
  std::vector<int> allowed;  // only these: the loop is capacity x allowed sizes, not capacity^2
  for (int k = 1; k <= sizes; ++k)
    if (value_of_size[k] > 0) allowed.push_back(k);
  for (int c = 1; c <= capacity; ++c) {
    best[c] = best[c - 1];
    for (int k : allowed)
      if (k <= c && best[c - k] + value_of_size[k] > best[c]) {
        best[c] = best[c - k] + value_of_size[k];
        choice[c] = k;
      }
  }
  Composition out;
  out.value = best[capacity];
  std::vector<int> count(sizes + 1, 0);
  for (int c = capacity; c > 0;) {
    if (choice[c] == 0) {
      --c;
      continue;
    }
    ++count[choice[c]];
    out.used += choice[c];
    c -= choice[c];
  }
  for (int k = 1; k <= sizes; ++k)
    if (count[k] > 0) out.counts.emplace_back(k, count[k]);
  return out;
}

std::vector<int> pareto_frontier(const std::vector<FleetPoint>& points) {
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(points.size()); ++i)
    if (points[i].fits) order.push_back(i);
  // Ascending latency, the most images per hour first among equal latencies: a point is on the
  // frontier when it has more images per hour than every point before it.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (points[a].image_ms != points[b].image_ms) return points[a].image_ms < points[b].image_ms;
    return points[a].images_per_hour > points[b].images_per_hour;
  });
  std::vector<int> frontier;
  double most = 0;
  for (int i : order)
    if (points[i].images_per_hour > most) {
      frontier.push_back(i);
      most = points[i].images_per_hour;
    }
  return frontier;
}

FleetReport plan_fleet(const Planner& planner, const Query& q, std::optional<double> slo_ms,
                       const PlannerOptions& options, const ReplicaPlans& plans) {
  FleetReport out;
  out.gpus = q.gpus;
  // The node size the cost model lays a plan's ranks out on without a topology (costmodel
  // default_layout): a replica is packed so that it sits on its nodes as it was priced.
  out.gpus_per_node = q.hardware && q.hardware->gpus_per_node < q.gpus ? q.hardware->gpus_per_node : 0;
  out.plans = plans;
  out.slo_ms = slo_ms;
  out.all_sizes = q.gpus <= kAllReplicaSizesUpTo;
  for (int k : replica_sizes(q.gpus)) {
    const PlanReport report = replica_report(planner, q, k, options);
    const int replicas = replicas_of_size(k, q.gpus, out.gpus_per_node);
    for (const PlanRow& row : merged_rows(report)) {
      const RankedPlan& p = *row.plan;
      if (!replica_candidate(p) || !plans.admits(row.frameworks) || replicas == 0) continue;
      out.points.push_back({replicas, k, replica_label(q, p), p.predicted->image_ms,
                            images_per_hour(replicas, p.predicted->image_ms), p.predicted->fits_memory});
    }
    if (const RankedPlan* best = best_of(report, plans)) out.replicas.push_back({k, *best});
  }
  out.rows = uniform_rows(out.replicas, q.gpus, slo_ms, out.gpus_per_node);
  const double best_uniform = !out.rows.empty() && out.rows.front().usable() ? out.rows.front().images_per_hour : 0;
  out.mixed = mixed_split(q, out.replicas, q.gpus, out.gpus_per_node, slo_ms, best_uniform);
  out.frontier = pareto_frontier(out.points);
  return out;
}

}  // namespace cpplan::planner
