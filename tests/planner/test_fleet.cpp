// Fleet planning (planner/fleet.h): the best split of 16 GPUs checked against a brute force over
// every multiset of replica sizes that the nodes hold, each replica's plan found by calling the
// Planner directly; the uniform rows' images per hour from their formula; the knapsack and the
// node packing on made-up values; the framework filter; the frontier.
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "planner/fleet.h"
#include "tests/support/fixtures.h"

using cpplan::Framework;
using cpplan::planner::FleetPoint;
using cpplan::planner::Planner;
using cpplan::planner::RankedPlan;
using cpplan::planner::ReplicaPlans;

namespace {

// The CLI's query for `--model MODEL --hardware h100-sxm --gpus N` (fitted profiles, the
// diffusers runtime).
cpplan::Query cli_query(const std::string& model, int gpus) {
  const cpplan::ProfileCatalog& c = cpplan::test::fitted_catalog();
  cpplan::Query q = cpplan::test::make_query(model, gpus);
  q.model = c.find_model(model);
  q.hardware = c.find_hardware("h100-sxm");
  q.runtime = c.find_runtime("diffusers");
  return q;
}

cpplan::Query flux_query(int gpus) { return cli_query("flux.1-dev", gpus); }

struct Fixture {
  cpplan::costmodel::DatasheetModel hw{*cpplan::test::fitted_catalog().find_hardware("h100-sxm")};
  cpplan::costmodel::CostModel cost{hw};
  Planner planner{cost};
};

// The least image_ms of a valid, fitting, dp 1 plan of q on k GPUs with batch 1 that some
// framework runs, from the Planner's whole ranking; 0 when there is none.
double best_image_ms(const Planner& planner, cpplan::Query q, int k) {
  q.gpus = k;
  q.batch = 1;
  double best = 0;
  for (const RankedPlan& p : planner.plan(q).plans)
    if (p.plan.valid() && p.plan.config.dp_degree == 1 && p.predicted->fits_memory && p.frameworks.bits != 0 &&
        (best == 0 || p.predicted->image_ms < best))
      best = p.predicted->image_ms;
  return best;
}

// Whether replicas of `sizes` (non-increasing) fit on nodes with `free` GPUs each (the first
// `full` of them of `g` GPUs, the last maybe fewer), tried every way: a replica of k <= g inside
// one node; one of k > g on ceil(k / g) - 1 untouched full nodes and the rest inside one more.
bool placeable(const std::vector<int>& sizes, std::size_t next, std::vector<int>& free, int g) {
  if (next == sizes.size()) return true;
  const int k = sizes[next];
  const int whole = (k - 1) / g, tail = k - whole * g;
  for (std::size_t n = 0; n < free.size(); ++n) {
    if (free[n] < tail) continue;
    free[n] -= tail;
    std::vector<std::size_t> taken;  // untouched full nodes other than n, any `whole` of them alike
    for (std::size_t m = 0; m < free.size() && static_cast<int>(taken.size()) < whole; ++m)
      if (m != n && free[m] == g) taken.push_back(m);
    bool ok = false;
    if (static_cast<int>(taken.size()) == whole) {
      for (std::size_t m : taken) free[m] = 0;
      ok = placeable(sizes, next + 1, free, g);
      for (std::size_t m : taken) free[m] = g;
    }
    free[n] += tail;
    if (ok) return true;
  }
  return false;
}

// The most images per hour of any multiset of sizes that nodes of `g` GPUs (the last one the
// remainder of `gpus`) hold, every multiset enumerated (parts in non-increasing order).
double brute_force(const std::vector<double>& per_replica, int gpus, int g) {
  std::vector<int> nodes(gpus / g, g);
  if (gpus % g) nodes.push_back(gpus % g);
  std::vector<int> parts;
  std::function<double(int, int)> most = [&](int left, int largest) {
    double best = 0;
    for (int k = std::min(left, largest); k >= 1; --k) {
      if (per_replica[k] <= 0) continue;
      parts.push_back(k);
      std::vector<int> free = nodes;
      if (placeable(parts, 0, free, g)) best = std::max(best, per_replica[k] + most(left - k, k));
      parts.pop_back();
    }
    return best;
  };
  return most(gpus, gpus);
}

}  // namespace

namespace {

// The library's best split of q.gpus GPUs under `slo_ms` against the brute force; returns the best.
double check_best_split(const Fixture& f, double slo_ms, const cpplan::Query& q) {
  const int n = q.gpus;
  std::vector<double> per_replica(n + 1, 0.0);  // images/hour of one k-GPU replica meeting the SLO
  for (int k = 1; k <= n; ++k) {
    const double ms = best_image_ms(f.planner, q, k);
    if (ms > 0 && ms <= slo_ms) per_replica[k] = 3.6e6 / ms;
  }
  const double expected = brute_force(per_replica, n, q.hardware->gpus_per_node);

  const auto fleet = cpplan::planner::plan_fleet(f.planner, q, slo_ms);
  REQUIRE(!fleet.rows.empty());
  const bool usable = fleet.rows.front().usable();
  const double best = fleet.mixed ? fleet.mixed->images_per_hour : usable ? fleet.rows.front().images_per_hour : 0;
  CHECK(best == Approx(expected).epsilon(1e-9));
  if (fleet.mixed) {
    int used = 0;
    for (const auto& part : fleet.mixed->parts) {
      used += part.replicas * part.replica.gpus;
      CHECK(part.replica.image_ms() <= slo_ms);
    }
    CHECK(used <= n);
    CHECK(fleet.mixed->images_per_hour > fleet.rows.front().images_per_hour);
    std::vector<int> sizes;  // the mix's replicas, largest first: the nodes hold them
    for (auto part = fleet.mixed->parts.rbegin(); part != fleet.mixed->parts.rend(); ++part)
      sizes.insert(sizes.end(), part->replicas, part->replica.gpus);
    std::vector<int> free(n / 8, 8);
    if (n % 8) free.push_back(n % 8);
    CHECK(placeable(sizes, 0, free, 8));
  }
  return expected;
}

}  // namespace

TEST_CASE("the best split of 16 GPUs under a 3 s SLO is the brute force over every multiset of replica sizes",
          "[planner][fleet]") {
  Fixture f;
  check_best_split(f, 3000, flux_query(16));  // the diffusers runtime may miss 3 s on every size: then both are none
  // SLOs that each replica size's best plan in turn meets, so that the brute force has parts to combine
  const cpplan::Query q = flux_query(16);
  for (int k : {1, 2, 3, 4, 6, 8, 16}) {
    const double ms = best_image_ms(f.planner, q, k);
    if (ms == 0) continue;
    INFO("SLO at the " << k << "-GPU replica's " << ms << " ms");
    CHECK(check_best_split(f, ms, q) > 0);
  }
}

TEST_CASE("a video model on 11 GPUs: the best split, mixed where sizes combine, is the brute force's",
          "[planner][fleet]") {
  // Wan 2.1 14B: slow replicas whose best size per GPU need not divide 11, so a mixed split can win.
  Fixture f;
  const cpplan::Query q = cli_query("wan2.1-t2v-14b", 11);
  for (int k : {4, 5, 6, 8, 11}) {
    const double ms = best_image_ms(f.planner, q, k);
    if (ms == 0) continue;
    INFO("SLO at the " << k << "-GPU replica's " << ms << " ms");
    CHECK(check_best_split(f, ms, q) > 0);
  }
}

TEST_CASE("each uniform row is the replicas two 8-GPU nodes hold of the k-GPU best plan at replicas x 3.6e6 / "
          "image_ms per hour",
          "[planner][fleet]") {
  Fixture f;
  const cpplan::Query q = flux_query(16);
  REQUIRE(q.hardware->gpus_per_node == 8);
  const auto fleet = cpplan::planner::plan_fleet(f.planner, q, 3000.0);
  CHECK(fleet.gpus_per_node == 8);
  CHECK(fleet.rows.size() == fleet.replicas.size());
  for (const auto& row : fleet.rows) {
    INFO("k = " << row.gpus_per_replica);
    const int k = row.gpus_per_replica;
    // k <= 8: floor(8 / k) in each node (3 GPUs: 2 + 2, not 5: a fifth would take GPUs 6-8,
    // across the nodes); k > 8: one, on a whole node and k - 8 GPUs of the other.
    const int replicas = k <= 8 ? 2 * (8 / k) : 1;
    CHECK(row.replicas == replicas);
    CHECK(row.idle_gpus == 16 - replicas * k);
    CHECK(row.replica.plan.config.dp_degree == 1);
    CHECK(row.images_per_hour == Approx(row.replicas * 3.6e6 / row.replica.predicted->image_ms));
    if (row.fits) CHECK(row.image_ms == Approx(best_image_ms(f.planner, q, k)));
    CHECK(row.meets_slo == (row.image_ms <= 3000));
  }
  // usable rows first, each group by images per hour
  for (std::size_t i = 1; i < fleet.rows.size(); ++i) {
    const auto &a = fleet.rows[i - 1], &b = fleet.rows[i];
    CHECK((a.usable() || !b.usable()));
    if (a.usable() == b.usable()) CHECK(a.images_per_hour >= b.images_per_hour);
  }
}

TEST_CASE("the knapsack composes replica sizes by hand-computed values", "[planner][fleet][knapsack]") {
  // value per replica size (index = GPUs): 1 GPU 10, 2 GPUs 25, 3 GPUs 33, 5 GPUs 50.
  const std::vector<double> value = {0, 10, 25, 33, 0, 50};
  // capacity 7: 2+2+2+1 = 85 beats 2+2+3 = 83, 3+3+1 = 76, 5+2 = 75, seven 1s = 70.
  auto c = cpplan::planner::best_composition(value, 7);
  CHECK(c.value == Approx(85));
  CHECK(c.counts == std::vector<std::pair<int, int>>{{1, 1}, {2, 3}});
  CHECK(c.used == 7);
  // capacity 4: 2+2 = 50 (3+1 = 43).
  c = cpplan::planner::best_composition(value, 4);
  CHECK(c.value == Approx(50));
  CHECK(c.counts == std::vector<std::pair<int, int>>{{2, 2}});
  // only sizes 3 and 5 allowed, capacity 7: 3+3 = 66 (one unit idle) beats 5 = 50.
  c = cpplan::planner::best_composition({0, 0, 0, 33, 0, 50}, 7);
  CHECK(c.value == Approx(66));
  CHECK(c.counts == std::vector<std::pair<int, int>>{{3, 2}});
  CHECK(c.used == 6);
  // nothing allowed: the empty composition
  c = cpplan::planner::best_composition({0, 0, 0}, 2);
  CHECK(c.value == 0);
  CHECK(c.counts.empty());
}

TEST_CASE("the frontier keeps exactly the fitting points no other fitting point beats", "[planner][fleet][pareto]") {
  const std::vector<FleetPoint> points = {
      {4, 4, "a", 2000, 7200, true},   // frontier
      {8, 2, "b", 3000, 9600, true},   // frontier
      {8, 2, "c", 3500, 8000, true},   // beaten by b
      {16, 1, "d", 5000, 11520, true}, // frontier
      {16, 1, "e", 1000, 99999, false},// does not fit: not considered
      {2, 8, "f", 2000, 3600, true},   // beaten by a (same latency)
      {1, 16, "g", 1500, 2400, true},  // frontier: fastest
  };
  const auto frontier = cpplan::planner::pareto_frontier(points);
  CHECK(frontier == std::vector<int>{6, 0, 1, 3});
  // Independently: a fitting point is on the frontier iff no fitting point dominates it.
  for (int i = 0; i < static_cast<int>(points.size()); ++i) {
    if (!points[i].fits) continue;
    bool dominated = false;
    for (const auto& o : points)
      dominated |= o.fits && o.image_ms <= points[i].image_ms && o.images_per_hour >= points[i].images_per_hour &&
                   (o.image_ms < points[i].image_ms || o.images_per_hour > points[i].images_per_hour);
    CHECK((std::find(frontier.begin(), frontier.end(), i) != frontier.end()) == !dominated);
  }
}

TEST_CASE("the fleet's own frontier is Pareto-optimal over its points", "[planner][fleet][pareto]") {
  Fixture f;
  const auto fleet = cpplan::planner::plan_fleet(f.planner, flux_query(16), std::nullopt);
  const auto frontier = cpplan::planner::pareto_frontier(fleet.points);
  REQUIRE(!frontier.empty());
  for (std::size_t i = 1; i < frontier.size(); ++i) {
    CHECK(fleet.points[frontier[i]].image_ms > fleet.points[frontier[i - 1]].image_ms);
    CHECK(fleet.points[frontier[i]].images_per_hour > fleet.points[frontier[i - 1]].images_per_hour);
  }
  for (int i : frontier)
    for (const auto& o : fleet.points)
      CHECK_FALSE((o.fits && o.image_ms < fleet.points[i].image_ms && o.images_per_hour > fleet.points[i].images_per_hour));
}

TEST_CASE("above 256 GPUs the replica sizes are the divisors and the powers of two", "[planner][fleet]") {
  CHECK(cpplan::planner::replica_sizes(4) == std::vector<int>{1, 2, 3, 4});
  CHECK(cpplan::planner::replica_sizes(384) ==
        std::vector<int>{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384});
  CHECK(cpplan::planner::replica_sizes(257) == std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256, 257});
}

TEST_CASE("nodes are G GPUs each and one of the rest, in rank order", "[planner][fleet][nodes]") {
  using cpplan::planner::node_capacities;
  CHECK(node_capacities(16, 8) == std::vector<int>{8, 8});
  CHECK(node_capacities(11, 8) == std::vector<int>{8, 3});
  CHECK(node_capacities(20, 8) == std::vector<int>{8, 8, 4});
  CHECK(node_capacities(8, 8) == std::vector<int>{8});
  CHECK(node_capacities(5, 8) == std::vector<int>{5});
  CHECK(node_capacities(5, 0) == std::vector<int>{5});  // no node size: one node
}

TEST_CASE("a replica of a node or less never spans two nodes, a larger one takes whole nodes and part of one more",
          "[planner][fleet][nodes]") {
  using cpplan::planner::replicas_of_size;
  CHECK(replicas_of_size(3, 16, 8) == 4);    // 2 per node; GPUs 6-8 would cross
  CHECK(replicas_of_size(3, 16, 0) == 5);    // one node of 16
  CHECK(replicas_of_size(3, 11, 8) == 3);    // 2 on the 8, 1 on the 3
  CHECK(replicas_of_size(5, 11, 8) == 1);    // not 2: the 3-GPU node holds none
  CHECK(replicas_of_size(10, 11, 8) == 1);   // 8 + 2 of the 3
  CHECK(replicas_of_size(11, 11, 8) == 1);   // 8 + 3
  CHECK(replicas_of_size(12, 24, 8) == 2);   // two whole nodes, both tails of 4 on the third
  CHECK(replicas_of_size(12, 20, 8) == 1);   // a second one has no whole node left
  CHECK(replicas_of_size(8, 20, 8) == 2);    // the 4-GPU node holds none
  CHECK(replicas_of_size(16, 16, 8) == 1);
}

TEST_CASE("the node packing composes replica sizes by hand-computed values", "[planner][fleet][knapsack][nodes]") {
  using cpplan::planner::best_packing;
  using Counts = std::vector<std::pair<int, int>>;
  // 11 GPUs, sizes 5 (50) and 6 (70): one node of 11 takes 5 + 6 = 120; nodes of 8 and 3 hold
  // only one of them, the 6 (70), on the 8.
  std::vector<double> value(7, 0.0);
  value[5] = 50;
  value[6] = 70;
  auto c = best_packing(value, 11, 0);
  CHECK(c.value == Approx(120));
  CHECK(c.counts == Counts{{5, 1}, {6, 1}});
  c = best_packing(value, 11, 8);
  CHECK(c.value == Approx(70));
  CHECK(c.counts == Counts{{6, 1}});
  CHECK(c.used == 6);
  // 16 GPUs on two nodes, sizes 4 (30) and 12 (100): 12 (node 1, and 4 of node 2) + 4 (the rest
  // of node 2) = 130 beats four 4s = 120.
  value.assign(13, 0.0);
  value[4] = 30;
  value[12] = 100;
  c = best_packing(value, 16, 8);
  CHECK(c.value == Approx(130));
  CHECK(c.counts == Counts{{4, 1}, {12, 1}});
  CHECK(c.used == 16);
  // 24 GPUs, size 12 (100) alone: two, their 4-GPU parts sharing the third node.
  value.assign(13, 0.0);
  value[12] = 100;
  c = best_packing(value, 24, 8);
  CHECK(c.value == Approx(200));
  CHECK(c.counts == Counts{{12, 2}});
  // 16 GPUs, size 3 (10) alone: 4 replicas (40), not the 5 (50) of one 16-GPU node.
  value.assign(4, 0.0);
  value[3] = 10;
  CHECK(best_packing(value, 16, 8).value == Approx(40));
  CHECK(best_packing(value, 16, 0).value == Approx(50));
  // 20 GPUs (8 + 8 + 4), sizes 3 (10) and 9 (40; a whole node and 1 GPU of another): two 9s on
  // the two full nodes, their single GPUs on the 4-GPU node (2 left: no 3) = 80; one 9 and three
  // 3s (2 beside its single GPU, 1 on the 4-GPU node) = 70; five 3s = 50.
  value.assign(10, 0.0);
  value[3] = 10;
  value[9] = 40;
  c = best_packing(value, 20, 8);
  CHECK(c.value == Approx(80));
  CHECK(c.counts == Counts{{9, 2}});
  CHECK(c.used == 18);
}

namespace {

// Whether any plan of q on k GPUs (batch 1) is a replica candidate that `plans` admits.
bool size_runs(const Planner& planner, cpplan::Query q, int k, const ReplicaPlans& plans) {
  q.gpus = k;
  q.batch = 1;
  for (const RankedPlan& p : planner.plan(q).plans)
    if (p.plan.valid() && p.plan.config.dp_degree == 1 && plans.admits(p.frameworks)) return true;
  return false;
}

}  // namespace

TEST_CASE("with --framework diffusers on 11 GPUs every replica is a plan diffusers runs: no CFG, no TP with CP",
          "[planner][fleet][frameworks]") {
  Fixture f;
  const cpplan::Query q = cli_query("wan2.1-t2v-14b", 11);
  ReplicaPlans diffusers;
  diffusers.framework = Framework::kDiffusers;
  const auto fleet = cpplan::planner::plan_fleet(f.planner, q, 110000.0, {}, diffusers);
  REQUIRE(!fleet.replicas.empty());
  const auto check_plan = [](const RankedPlan& p) {
    const auto& c = p.plan.config;
    INFO(cpplan::plan_label(c));
    CHECK(p.frameworks.has(Framework::kDiffusers));
    CHECK(c.cfg_degree == 1);  // diffusers has no CFG parallelism
    CHECK_FALSE((c.tp() > 1 && c.context_parallel_config.degree() > 1));
  };
  for (const auto& r : fleet.replicas) check_plan(r.plan);
  for (const auto& row : fleet.rows) check_plan(row.replica);
  if (fleet.mixed)
    for (const auto& part : fleet.mixed->parts) check_plan(part.replica.plan);
  for (const auto& p : fleet.points) CHECK(p.label.find("cfg") == std::string::npos);
}

TEST_CASE("by default replicas are plans some framework runs, any_valid admits the others too",
          "[planner][fleet][frameworks]") {
  Fixture f;
  const cpplan::Query q = cli_query("wan2.1-t2v-14b", 11);
  const auto some = cpplan::planner::plan_fleet(f.planner, q, std::nullopt);
  ReplicaPlans every;
  every.any_valid = true;
  const auto all = cpplan::planner::plan_fleet(f.planner, q, std::nullopt, {}, every);
  for (const auto& r : some.replicas) CHECK(r.plan.frameworks.bits != 0);
  REQUIRE(all.replicas.size() >= some.replicas.size());
  // Each size's best replica among every valid plan is at least as fast as among those a framework runs.
  for (const auto& r : some.replicas) {
    const auto it = std::find_if(all.replicas.begin(), all.replicas.end(), [&](const auto& a) { return a.gpus == r.gpus; });
    REQUIRE(it != all.replicas.end());
    if (r.fits() && it->fits()) CHECK(it->image_ms() <= r.image_ms());
  }
  CHECK(all.points.size() >= some.points.size());
}

TEST_CASE("a framework that runs no plan of some size leaves that size out of the fleet",
          "[planner][fleet][frameworks]") {
  Fixture f;
  const cpplan::Query q = cli_query("wan2.1-t2v-14b", 11);
  int left_out = 0;
  for (int i = 0; i < cpplan::kFrameworkCount; ++i) {
    ReplicaPlans plans;
    plans.framework = static_cast<Framework>(i);
    const auto fleet = cpplan::planner::plan_fleet(f.planner, q, std::nullopt, {}, plans);
    for (int k = 1; k <= 11; ++k) {
      INFO(cpplan::to_string(*plans.framework) << " on " << k << " GPUs");
      const bool runs = size_runs(f.planner, q, k, plans);
      const auto has_k = [k](const auto& r) { return r.gpus == k; };
      CHECK(std::any_of(fleet.replicas.begin(), fleet.replicas.end(), has_k) == runs);
      CHECK(std::any_of(fleet.points.begin(), fleet.points.end(),
                        [k](const FleetPoint& p) { return p.gpus_per_replica == k; }) == runs);
      CHECK(std::any_of(fleet.rows.begin(), fleet.rows.end(),
                        [k](const auto& r) { return r.gpus_per_replica == k; }) == runs);
      left_out += !runs;
    }
  }
  CHECK(left_out > 0);  // some framework runs no plan of some size here (e.g. a size no head count divides)
}
