// Placement: mixed-radix groups, the acceptance cases (dgx-h100 x 2 for Wan 14B, 8x-l40s-pcie),
// agreement with the hardware profile on one NVSwitch node, and the search's exactness against
// exhaustive search (every axis order of the six axes, every arrangement of a node's GPUs, no
// reductions) on small cases.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <set>

#include "planner/planner.h"
#include "planner/topology/placement.h"
#include "planner/validate.h"
#include "tests/support/fixtures.h"

using namespace cpplan;
using namespace cpplan::planner;
using namespace cpplan::planner::topology;

namespace {

Query topo_query(const std::string& model, const std::string& topology, int nodes, int gpus = 0, int width = 0,
                 int height = 0, int frames = 0) {
  const Topology* t = test::catalog().find_topology(topology);
  REQUIRE(t);
  Query q = test::make_query(model, gpus > 0 ? gpus : nodes * t->gpus, width, height, frames, t->hardware);
  q.topology = t;
  q.nodes = nodes;
  return q;
}

PlanReport plan(const Query& q) {
  const costmodel::DatasheetModel hw(*q.hardware);
  const costmodel::CostModel cost(hw);
  return Planner(cost).plan(q, {.allow_anything = true, .keep_invalid = false});
}

int span(const Placement& p, const std::vector<int>& group) {
  std::set<int> nodes;
  for (int r : group) nodes.insert(p.node_of(r));
  return static_cast<int>(nodes.size());
}

bool all_within_node(const Placement& p, MeshAxis axis) {
  for (const auto& g : p.groups(axis))
    if (span(p, g) > 1) return false;
  return true;
}

// Every valid plan: the default search equals exhaustive search in predicted step time.
void check_exact(const Query& q, const PlacementOptions& exhaustive, int max_plans = 1000) {
  const costmodel::DatasheetModel hw(*q.hardware);
  const costmodel::CostModel cost(hw);
  const Placer fast(q, cost), slow(q, cost, exhaustive);
  int checked = 0;
  long long leaves_fast = 0, leaves_slow = 0;
  for (const ParallelConfig& c : enumerate(q.gpus)) {
    const Plan p = make_plan(q, c);
    if (!p.valid() || checked >= max_plans) continue;
    ++checked;
    const PlacementResult a = fast.place(p), b = slow.place(p);
    leaves_fast += a.leaves, leaves_slow += b.leaves;
    INFO(plan_label(c) << " " << to_string(p.variant));
    CHECK(a.predicted.step_ms == Approx(b.predicted.step_ms).epsilon(1e-12));
  }
  CHECK(checked > 0);
  CHECK(leaves_fast < leaves_slow);  // the search is smaller than exhaustive, and as good
}

}  // namespace

TEST_CASE("mixed-radix groups: the first axis is contiguous, later ones strided", "[planner][placement]") {
  Placement p;
  p.degree = {2, 2, 2, 1, 1, 1};  // tp, ulysses, ring
  p.axis_order = kDefaultAxisOrder;
  p.gpus_per_node = 4;
  p.device_order = {0, 1, 2, 3};
  CHECK(p.ranks() == 8);
  CHECK(p.groups(MeshAxis::kTp) == std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(p.groups(MeshAxis::kUlysses) == std::vector<std::vector<int>>{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(p.groups(MeshAxis::kRing) == std::vector<std::vector<int>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(p.groups({MeshAxis::kRing, MeshAxis::kUlysses}) == std::vector<std::vector<int>>{{0, 2, 4, 6}, {1, 3, 5, 7}});
  CHECK(p.groups(MeshAxis::kDp).size() == 8);
  p.axis_order = {MeshAxis::kRing, MeshAxis::kTp, MeshAxis::kUlysses, MeshAxis::kPp, MeshAxis::kCfg, MeshAxis::kDp};
  CHECK(p.groups(MeshAxis::kRing) == std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(p.groups(MeshAxis::kUlysses) == std::vector<std::vector<int>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(p.node_of(5) == 1);
  p.device_order = {3, 2, 1, 0};
  CHECK(p.gpu_of(5) == 2);
}

TEST_CASE("mixed-radix groups: PipeFusion's stages sit between ring and cfg (xDiT's tp-sp-pp-cfg-dp)",
          "[planner][placement][pipefusion]") {
  Placement p;
  p.degree = {1, 2, 1, 2, 1, 2};  // ulysses 2, cfg 2, pp 2
  p.axis_order = kDefaultAxisOrder;
  p.gpus_per_node = 8;
  p.device_order = {0, 1, 2, 3, 4, 5, 6, 7};
  // Strides: ulysses 1, pp 2, cfg 4.
  CHECK(p.groups(MeshAxis::kUlysses) == std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(p.groups(MeshAxis::kPp) == std::vector<std::vector<int>>{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(p.groups(MeshAxis::kCfg) == std::vector<std::vector<int>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
}

TEST_CASE("PipeFusion on 2 nodes of 8x-l40s-pcie: Ulysses inside a PCIe switch, the stages across switches and nodes",
          "[planner][placement][pipefusion]") {
  const Query q = topo_query("flux.1-dev", "8x-l40s-pcie", 2, 0, 2048, 2048);
  ParallelConfig c;
  c.context_parallel_config.ulysses_degree = 4;
  c.pipefusion = {4, 8, 1};
  const Plan plan = make_plan(q, c);
  INFO(fmt::format("{}", fmt::join(plan.reasons(), "; ")));
  REQUIRE(plan.valid());
  const costmodel::DatasheetModel hw(*q.hardware);
  const costmodel::CostModel cost(hw);
  const Placer placer(q, cost);
  const PlacementResult best = placer.place(plan);
  const Placement& p = best.placement;
  // The all-to-all needs the widest links: each Ulysses group on the four GPUs of one switch.
  for (const auto& g : p.groups(MeshAxis::kUlysses)) {
    std::set<int> switches;
    for (int r : g) switches.insert(p.node_of(r) * 2 + p.gpu_of(r) / 4);
    CHECK(switches.size() == 1);
  }
  // The stages then take one switch each: their sends cross the sockets and the network.
  CHECK(nodes_spanned(p, p.groups(MeshAxis::kPp)) == 2);
  CHECK(best.predicted.pipefusion.active());
  CHECK(best.predicted.axis_comm_ms[static_cast<int>(costmodel::CommAxis::kPp)] > 0);
  // The pp link is the placed one: slower than a PCIe switch's 32 GB/s.
  CHECK(p.layout[costmodel::CommAxis::kPp].busbw_gbps < 32.0);
  // Stages innermost instead (Ulysses across switches and nodes) is slower.
  const PlacementResult inverted = placer.evaluate(
      plan, {MeshAxis::kPp, MeshAxis::kUlysses, MeshAxis::kTp, MeshAxis::kRing, MeshAxis::kCfg, MeshAxis::kDp});
  CHECK(best.predicted.step_ms < inverted.predicted.step_ms);
}

TEST_CASE("acceptance: on 2 x dgx-h100, Wan 14B's top plan keeps every all-to-all group in one node",
          "[planner][placement][acceptance]") {
  const Query q = topo_query("wan2.1-t2v-14b", "dgx-h100", 2, 0, 1280, 720, 81);
  const PlanReport r = plan(q);
  REQUIRE(!r.plans.empty());
  const RankedPlan& top = r.plans.front();
  REQUIRE(top.placement);
  INFO("top: " << plan_label(top.plan.config));
  CHECK(top.plan.config.ulysses() > 1);
  CHECK(all_within_node(*top.placement, MeshAxis::kUlysses));
  CHECK_FALSE(top.placement->layout[costmodel::CommAxis::kUlysses].crosses_nodes());
  // Every plan whose Ulysses groups cross nodes is predicted slower than the top plan.
  int crossing = 0;
  for (const RankedPlan& p : r.plans) {
    if (p.plan.config.ulysses() < 2 || all_within_node(*p.placement, MeshAxis::kUlysses)) continue;
    ++crossing;
    CHECK(p.predicted->step_ms > top.predicted->step_ms);
  }
  CHECK(crossing > 0);
  // The top plan itself, forced to put its Ulysses groups across the nodes, is slower.
  const costmodel::DatasheetModel hw(*q.hardware);
  const costmodel::CostModel cost(hw);
  const Placer placer(q, cost);
  auto order = top.placement->axis_order;
  std::reverse(order.begin(), order.end());  // cfg (or ring) innermost, ulysses strided across nodes
  const PlacementResult forced = placer.evaluate(top.plan, order);
  CHECK_FALSE(all_within_node(forced.placement, MeshAxis::kUlysses));
  CHECK(forced.predicted.step_ms > top.predicted->step_ms);
  CHECK(forced.placement.layout[costmodel::CommAxis::kUlysses].busbw_gbps <
        top.placement->layout[costmodel::CommAxis::kUlysses].busbw_gbps);
}

TEST_CASE("acceptance: on 8x-l40s-pcie the top plan's Ulysses groups stay within a PCIe switch",
          "[planner][placement][acceptance]") {
  const Query q = topo_query("wan2.1-t2v-14b", "8x-l40s-pcie", 1, 0, 1280, 720, 81);
  const PlanReport r = plan(q);
  const RankedPlan& top = r.plans.front();
  REQUIRE(top.placement);
  REQUIRE(top.plan.config.ulysses() > 1);
  for (const auto& g : top.placement->groups(MeshAxis::kUlysses)) {
    std::set<int> switches;
    for (int rank : g) switches.insert(top.placement->gpu_of(rank) / 4);
    CHECK(switches.size() == 1);
  }
  // Within a switch Ulysses gets the GPU's PCIe link; across the sockets the shared uplinks and the
  // inter-socket link cut it down: the model prefers the switch.
  const double inside = top.placement->layout[costmodel::CommAxis::kUlysses].busbw_gbps;
  CHECK(inside == Approx(32 * 0.75));
  for (const RankedPlan& p : r.plans)
    if (p.plan.config.ulysses() == 8) {
      CHECK(p.placement->layout[costmodel::CommAxis::kUlysses].busbw_gbps < inside);
      CHECK(p.predicted->step_ms > top.predicted->step_ms);
    }
}

TEST_CASE("one NVSwitch node reproduces the hardware profile's predictions", "[planner][placement]") {
  const Query placed = topo_query("flux.1-dev", "dgx-h100", 1, 8, 1024, 1024);
  Query plain = placed;
  plain.topology = nullptr;
  const PlanReport a = plan(placed), b = plan(plain);
  REQUIRE(a.plans.size() == b.plans.size());
  for (std::size_t i = 0; i < a.plans.size(); ++i) {
    INFO(plan_label(a.plans[i].plan.config));
    CHECK(a.plans[i].predicted->step_ms == Approx(b.plans[i].predicted->step_ms).epsilon(1e-12));
    CHECK(a.plans[i].placement.has_value());
    CHECK_FALSE(b.plans[i].placement.has_value());
  }
}

TEST_CASE("a subset of a node's GPUs: four on one PCIe switch", "[planner][placement]") {
  const Query q = topo_query("flux.1-dev", "8x-l40s-pcie", 1, 4, 1024, 1024);
  const PlanReport r = plan(q);
  const RankedPlan& top = r.plans.front();
  REQUIRE(top.placement);
  std::set<int> switches;
  for (int rank = 0; rank < 4; ++rank) switches.insert(top.placement->gpu_of(rank) / 4);
  CHECK(switches.size() == 1);
}

TEST_CASE("an imported topology with bridged pairs 0-2 and 1-3 places pairs on the bridges", "[planner][placement]") {
  // Two NVLink-bridged pairs (GPU0-GPU2, GPU1-GPU3) on PCIe: the hierarchical device order 0,2,1,3
  // puts a 2-GPU group on a bridge.
  Topology t;
  t.name = "bridged";
  t.hardware = "a100-sxm-80g";
  t.gpus = 4;
  for (int g = 0; g < 4; ++g) t.devices.push_back({"gpu" + std::to_string(g), DeviceKind::kGpu, 0, true});
  t.devices.push_back({"cpu0", DeviceKind::kCpu, 0, true});
  for (int g = 0; g < 4; ++g) t.links.push_back({g, 4, LinkType::kPcie, 32, 4});
  t.links.push_back({0, 2, LinkType::kNvLink, 300, 4});
  t.links.push_back({1, 3, LinkType::kNvLink, 300, 4});
  Query q = test::make_query("flux.1-dev", 4, 1024, 1024, 0, "a100-sxm-80g");
  q.topology = &t;
  const costmodel::DatasheetModel hw(*q.hardware);
  const costmodel::CostModel cost(hw);
  const Placer placer(q, cost);
  REQUIRE(placer.device_orders().size() >= 2);
  CHECK(placer.device_orders()[1] == std::vector<int>{0, 2, 1, 3});
  const Plan p = make_plan(q, test::config(2, 2));  // ring 2 x ulysses 2
  REQUIRE(p.valid());
  const PlacementResult best = placer.place(p);
  for (const auto& g : best.placement.groups(MeshAxis::kUlysses)) {  // the all-to-all pairs ride the bridges
    const int a = best.placement.gpu_of(g[0]), b = best.placement.gpu_of(g[1]);
    CHECK(std::abs(a - b) == 2);
  }
  PlacementOptions exhaustive{.prune = false, .reduce = false, .all_axis_orders = true, .all_device_orders = true};
  check_exact(q, exhaustive);
}

TEST_CASE("exact: the search equals exhaustive search on 4 x RTX 4090 (host-memory staging)", "[planner][placement][exact]") {
  PlacementOptions exhaustive{.prune = false, .reduce = false, .all_axis_orders = true, .all_device_orders = true};
  check_exact(topo_query("sd3.5-large", "4x-rtx4090-pcie", 1, 4, 1024, 1024), exhaustive);
}

TEST_CASE("exact: the search equals exhaustive search on 8x-l40s-pcie, 4 of 8 GPUs", "[planner][placement][exact]") {
  PlacementOptions exhaustive{.prune = false, .reduce = false, .all_axis_orders = true, .all_device_orders = true};
  // The first 6 valid plans (each exhaustive placement walks every arrangement of 4 of the 8 GPUs).
  check_exact(topo_query("wan2.1-t2v-1.3b", "8x-l40s-pcie", 1, 4, 832, 480, 33), exhaustive, 6);
}

TEST_CASE("exact: two and three dgx nodes, reductions off, every axis order", "[planner][placement][exact]") {
  PlacementOptions exhaustive{.prune = false, .reduce = false, .all_axis_orders = true, .all_device_orders = false};
  check_exact(topo_query("wan2.1-t2v-14b", "dgx-h100", 2, 0, 1280, 720, 81), exhaustive);
  // 24 GPUs: groups of 3 and 6 straddle nodes unevenly (no two-node reduction applies).
  check_exact(topo_query("wan2.1-t2v-14b", "dgx-a100", 3, 0, 1280, 720, 81), exhaustive);
}

TEST_CASE("exact: a small node of two switches on four nodes, every device arrangement", "[planner][placement][exact]") {
  // 4 GPUs per node on two PCIe switches, one NIC per switch, rail network; 16 GPUs.
  static Topology t = [] {
    Topology t;
    t.name = "quad";
    t.hardware = "l40s";
    t.gpus = 4;
    for (int g = 0; g < 4; ++g) t.devices.push_back({"gpu" + std::to_string(g), DeviceKind::kGpu, 0, true});
    for (const char* n : {"sw0", "sw1"}) t.devices.push_back({n, DeviceKind::kPcieSwitch, 0, true});
    t.devices.push_back({"cpu0", DeviceKind::kCpu, 0, true});
    t.devices.push_back({"nic0", DeviceKind::kNic, 12.5, true});
    t.devices.push_back({"nic1", DeviceKind::kNic, 12.5, true});
    for (int g = 0; g < 4; ++g) t.links.push_back({g, 4 + g / 2, LinkType::kPcie, 32, 7.5});
    t.links.push_back({4, 6, LinkType::kPcie, 32, 1});
    t.links.push_back({5, 6, LinkType::kPcie, 32, 1});
    t.links.push_back({7, 4, LinkType::kPcie, 16, 1});
    t.links.push_back({8, 5, LinkType::kPcie, 16, 1});
    t.has_network = true;
    t.network = {NetworkKind::kRail, 5};
    return t;
  }();
  Query q = test::make_query("wan2.1-t2v-1.3b", 16, 832, 480, 33, "l40s");
  q.topology = &t;
  q.nodes = 4;
  PlacementOptions exhaustive{.prune = false, .reduce = false, .all_axis_orders = true, .all_device_orders = true};
  check_exact(q, exhaustive, 8);
}

TEST_CASE("the search prunes: fewer placements are costed than orders exist", "[planner][placement]") {
  const Query q = topo_query("wan2.1-t2v-14b", "dgx-h100", 2, 0, 1280, 720, 81);
  const costmodel::DatasheetModel hw(*q.hardware);
  const costmodel::CostModel cost(hw);
  const Placer placer(q, cost);
  const Plan p = make_plan(q, test::config(2, 4, 1, 2));  // ring 2 x ulysses 4 x cfg 2: 3! orders
  REQUIRE(p.valid());
  const PlacementResult r = placer.place(p);
  CHECK(r.leaves + r.pruned > 0);
  CHECK(r.leaves < 6);
  CHECK(r.pruned > 0);
}

TEST_CASE("a 1,024-GPU query (128 x dgx-h100) is placed in well under a second", "[planner][placement][scale]") {
  const Query q = topo_query("wan2.1-t2v-14b", "dgx-h100", 128, 0, 1280, 720, 81);
  const auto start = std::chrono::steady_clock::now();
  const PlanReport r = plan(q);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 1.0);
  REQUIRE(!r.plans.empty());
  REQUIRE(r.plans.front().placement);
  CHECK(r.plans.front().placement->ranks() == 1024);
  CHECK(all_within_node(*r.plans.front().placement, MeshAxis::kUlysses));
}
