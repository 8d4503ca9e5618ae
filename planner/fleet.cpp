#include "planner/fleet.h"

#include <algorithm>
#include <fmt/format.h>

namespace cpplan::planner {

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

// Fitting first, then the least image_ms; the first of equals in rank order.
const RankedPlan* best_of(const PlanReport& report) {
  const RankedPlan* best = nullptr;
  for (const RankedPlan& p : report.plans) {
    if (!replica_candidate(p)) continue;
    if (!best) {
      best = &p;
      continue;
    }
    const bool fits = p.predicted->fits_memory, best_fits = best->predicted->fits_memory;
    if ((fits && !best_fits) || (fits == best_fits && p.predicted->image_ms < best->predicted->image_ms)) best = &p;
  }
  return best;
}

FleetRow uniform_row(const Replica& r, int gpus, std::optional<double> slo_ms) {
  FleetRow row;
  row.replicas = gpus / r.gpus;
  row.gpus_per_replica = r.gpus;
  row.idle_gpus = gpus - row.replicas * r.gpus;
  row.replica = r.plan;
  row.image_ms = r.image_ms();
  row.images_per_hour = images_per_hour(row.replicas, row.image_ms);
  row.fits = r.fits();
  row.meets_slo = !slo_ms || row.image_ms <= *slo_ms;
  return row;
}

std::string mix_label(const std::vector<FleetPart>& parts) {
  std::string label;
  for (const FleetPart& part : parts)
    label += fmt::format("{}{} x {}", label.empty() ? "" : " + ", part.replicas, plan_label(part.replica.plan.plan.config));
  return label;
}

// The best composition of the usable replicas; nullopt unless it beats `best_uniform` images/h.
std::optional<FleetMix> mixed_split(const std::vector<Replica>& replicas, int gpus, std::optional<double> slo_ms,
                                    double best_uniform) {
  std::vector<double> value(gpus + 1, 0.0);
  for (const Replica& r : replicas)
    if (r.fits() && (!slo_ms || r.image_ms() <= *slo_ms)) value[r.gpus] = images_per_hour(1, r.image_ms());
  const Composition c = best_composition(value, gpus);
  // A composition of one size is a uniform row; rounding must not pass it off as better.
  if (c.counts.size() < 2 || c.value <= best_uniform * (1 + 1e-9)) return std::nullopt;
  FleetMix mix;
  for (const auto& [size, count] : c.counts) {
    const auto it = std::find_if(replicas.begin(), replicas.end(), [size = size](const Replica& r) { return r.gpus == size; });
    mix.parts.push_back({count, *it});
    mix.worst_image_ms = std::max(mix.worst_image_ms, it->image_ms());
  }
  mix.images_per_hour = c.value;
  mix.gpus_used = c.used;
  mix.label = mix_label(mix.parts);
  return mix;
}

}  // namespace

std::optional<RankedPlan> best_replica(const Planner& planner, const Query& q, int k, const PlannerOptions& options) {
  const PlanReport report = replica_report(planner, q, k, options);
  const RankedPlan* best = best_of(report);
  return best ? std::optional<RankedPlan>(*best) : std::nullopt;
}

std::vector<FleetRow> uniform_rows(const std::vector<Replica>& replicas, int gpus, std::optional<double> slo_ms) {
  std::vector<FleetRow> rows;
  for (const Replica& r : replicas)
    if (r.gpus <= gpus) rows.push_back(uniform_row(r, gpus, slo_ms));
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
                       const PlannerOptions& options) {
  FleetReport out;
  out.gpus = q.gpus;
  out.slo_ms = slo_ms;
  out.all_sizes = q.gpus <= kAllReplicaSizesUpTo;
  for (int k : replica_sizes(q.gpus)) {
    const PlanReport report = replica_report(planner, q, k, options);
    for (const PlanRow& row : merged_rows(report)) {
      const RankedPlan& p = *row.plan;
      if (!replica_candidate(p)) continue;
      const int replicas = q.gpus / k;
      out.points.push_back({replicas, k, plan_label(p.plan.config), p.predicted->image_ms,
                            images_per_hour(replicas, p.predicted->image_ms), p.predicted->fits_memory});
    }
    if (const RankedPlan* best = best_of(report)) out.replicas.push_back({k, *best});
  }
  out.rows = uniform_rows(out.replicas, q.gpus, slo_ms);
  const double best_uniform = !out.rows.empty() && out.rows.front().usable() ? out.rows.front().images_per_hour : 0;
  out.mixed = mixed_split(out.replicas, q.gpus, slo_ms, best_uniform);
  return out;
}

}  // namespace cpplan::planner
