// An AMD MI300X board: 8 GPUs joined pairwise by their own xGMI links (a full mesh, no switch;
// shared/reference/hardware-resources.md §8). Each pair gets one link, 64 GB/s per direction (128
// GB/s per link, direction unstated, read as bidirectional), so an all-to-all of the 8 reaches a
// GPU's seven links at once while a group of 4 reaches only its three: RCCL neither forwards a
// pair's bytes through a third GPU nor through the host. Expected figures are derived by hand from
// profiles/hardware/mi300x.toml and profiles/topologies/mi300x-8.toml (no fit applied).
#include <catch2/catch.hpp>

#include "core/node_topology.h"
#include "planner/planner.h"
#include "planner/topology/bandwidth.h"
#include "planner/topology/graph.h"
#include "planner/validate.h"
#include "tests/planner/priced_plan.h"
#include "tests/support/fixtures.h"

using namespace cpplan;
using namespace cpplan::planner;
using namespace cpplan::planner::topology;
using costmodel::CommAxis;

namespace {

constexpr GBps kLinkGbps = 64;  // one xGMI link, per direction
constexpr double kEfficiency = 0.8, kLatencyUs = 8;

const Topology& mesh_board() {
  const Topology* t = test::catalog().find_topology("mi300x-8");
  REQUIRE(t);
  return *t;
}

std::vector<std::vector<int>> vertices(const TopologyGraph& g, std::vector<std::vector<int>> gpus) {
  for (auto& group : gpus)
    for (int& v : group) v = g.gpu_vertex(0, v);
  return gpus;
}

using test::price;
using Priced = test::PricedPlan;
constexpr double kTokens = test::kFluxTokens, kHidden = test::kFluxHidden, kBytes = test::kFluxBytes,
                 kLayers = test::kFluxLayers;

}  // namespace

TEST_CASE("the mi300x-8 board is a full mesh: every GPU pair joined by one xGMI link", "[planner][topology][xgmi]") {
  const Topology& t = mesh_board();
  CHECK(t.gpus == 8);
  int xgmi = 0;
  for (const TopoLink& l : t.links)
    if (l.type == LinkType::kXgmi) {
      ++xgmi;
      CHECK(l.bandwidth_gbps == kLinkGbps);
      CHECK((l.from < 8 && l.to < 8));
    }
  CHECK(xgmi == 8 * 7 / 2);  // 28 pairs
  const TopologyGraph g(t, 1);
  const Route r = g.route(g.gpu_vertex(0, 0), g.gpu_vertex(0, 5));
  CHECK(r.width_gbps == kLinkGbps);
  CHECK(r.hops == 1);  // straight over the pair's own link, no switch
  CHECK(r.latency_us == kLatencyUs);
}

TEST_CASE("an 8-GPU all-to-all on the xGMI mesh runs over each GPU's seven links, one per peer",
          "[planner][topology][xgmi]") {
  const TopologyGraph g(mesh_board(), 1);
  // Cut {gpu0}: its 7 pairs leave over its 7 links, one each: max-flow 7 x 64 = 448 GB/s (its PCIe
  // link to the host does not add: every pair's route is one xGMI link), busbw <= 7 x 448 / 7 = 448.
  // The bisection {gpu0..3}: 16 split pairs over 4 x 4 = 16 links, 7 x 16 x 64 / 16 = 448 too.
  // One switch port of 64 GB/s would give 64: the mesh gives seven times that.
  const GroupBandwidth all = all_to_all_bandwidth(g, vertices(g, {{0, 1, 2, 3, 4, 5, 6, 7}}), 8, false, 0.25);
  CHECK(all.busbw_gbps == Approx(7 * kLinkGbps));
  CHECK(all.latency_us == kLatencyUs);
  CHECK_THAT(all.bottleneck, Catch::Contains("(7 links) for 7 pairs of ranks"));
  // Per rank: each of the 7 peers gets 1/8 of the rank's M bytes over its own link, all at once:
  // M x 7/8 / busbw = M / (8 x 64 GB/s), one peer's share over one link.
  const double m = 1e9;
  CHECK(m * 7 / 8 / all.busbw_gbps == Approx(m / 8 / kLinkGbps));
}

TEST_CASE("a 4-GPU group on the xGMI mesh uses only its own three links per GPU", "[planner][topology][xgmi]") {
  const TopologyGraph g(mesh_board(), 1);
  // Two groups {0..3} and {4..7} at once. Cut {gpu0}: its 3 pairs reach its partners over its 3
  // links to them; its other 4 links lead to GPUs of the other group, which forward nothing:
  // max-flow 3 x 64 = 192, busbw <= 3 x 192 / 3 = 192 GB/s (not 7 x 64 = 448).
  const GroupBandwidth two = all_to_all_bandwidth(g, vertices(g, {{0, 1, 2, 3}, {4, 5, 6, 7}}), 4, false, 0.25);
  CHECK(two.busbw_gbps == Approx(3 * kLinkGbps));
  // The same group alone (4 of the 8 GPUs in use): the idle GPUs forward nothing either.
  const GroupBandwidth one = all_to_all_bandwidth(g, vertices(g, {{0, 1, 2, 3}}), 4, false, 0.25);
  CHECK(one.busbw_gbps == Approx(3 * kLinkGbps));
  // A pair: one link.
  CHECK(all_to_all_bandwidth(g, vertices(g, {{0, 5}}), 2, false, 0.25).busbw_gbps == Approx(kLinkGbps));
  // A ring hop is one pair's link: a ring of the 8 runs at one link, 64 GB/s (RCCL's several rings
  // over disjoint links are not modelled, docs/topology.md).
  CHECK(ring_bandwidth(g, vertices(g, {{0, 1, 2, 3, 4, 5, 6, 7}}), false).busbw_gbps == Approx(kLinkGbps));
}

TEST_CASE("without --topology an mi300x plan is priced on its profile's xGMI mesh", "[planner][topology][xgmi]") {
  const HardwareProfile& mi300x = *test::catalog().find_hardware("mi300x");
  CHECK(mi300x.link_kind == LinkKind::kXgmi);
  CHECK(mi300x.family == DeviceFamily::kRocm);
  REQUIRE(mi300x.node);
  const Topology node = node_topology(mi300x);
  int xgmi = 0;
  for (const TopoLink& l : node.links) xgmi += l.type == LinkType::kXgmi;
  CHECK(xgmi == 28);

  const Query q = test::make_query("flux.1-dev", 8, 1024, 1024, 0, "mi300x");
  const Priced u8 = price(q, test::config(1, 8));
  // All 8 in one group: 7 x 64 = 448 GB/s raw, x 0.8 (the profile's interconnect efficiency) = 358.4.
  CHECK(u8.link(CommAxis::kUlysses).raw_gbps == Approx(448));
  CHECK(u8.group(CommAxis::kUlysses).busbw_gbps == Approx(448 * kEfficiency));
  CHECK(u8.group(CommAxis::kUlysses).latency_us == Approx(kLatencyUs));
  CHECK(u8.link(CommAxis::kUlysses).span == "1 node");
  // 4 all-to-alls per layer of (S / 8) x D x b = 576 x 3072 x 2 = 3,538,944 bytes, each
  // 8 us + 3,538,944 x 7/8 / 358.4 GB/s = 0.008 + 0.00864 ms: the rank's 7 peer shares of
  // 442,368 bytes, each over its own link at 64 x 0.8 = 51.2 GB/s. 57 layers.
  const double each = kLatencyUs * 1e-3 + kTokens / 8 * kHidden * kBytes / 8 / (kLinkGbps * kEfficiency * 1e9) * 1e3;
  CHECK(u8.comm_ms(CommAxis::kUlysses) == Approx(4 * kLayers * each));

  // Ring 2 x Ulysses 4 (FLUX.1-dev has no CFG): Ulysses groups {0..3} and {4..7} in the default
  // layout, 3 links each: 192 raw, 153.6 busbw.
  const Priced u4 = price(q, test::config(2, 4));
  CHECK(u4.link(CommAxis::kUlysses).raw_gbps == Approx(3 * kLinkGbps));
  CHECK(u4.group(CommAxis::kUlysses).busbw_gbps == Approx(3 * kLinkGbps * kEfficiency));
}

TEST_CASE("the new hardware profiles load and plan", "[planner][hardware][xgmi]") {
  for (const char* name : {"b300", "mi300x", "mi325x", "mi355x", "tpu-v5p", "tpu-v7x"}) {
    INFO(name);
    const HardwareProfile* h = test::catalog().find_hardware(name);
    REQUIRE(h);
    const int gpus = h->family == DeviceFamily::kTpu ? 1 : 8;  // a TPU pipeline runs on one chip (as tpu-v5e)
    const Query q = test::make_query("flux.1-dev", gpus, 1024, 1024, 0, name);
    const costmodel::DatasheetModel hw(*q.hardware);
    const costmodel::CostModel cost(hw);
    const RankedPlan p = Planner(cost).evaluate(q, test::config(1, gpus));
    CHECK(p.plan.valid());
    REQUIRE(p.predicted);
    CHECK(p.predicted->step_ms > 0);
  }
  for (const char* name : {"mi325x", "mi355x"}) CHECK(test::catalog().find_topology(std::string(name) + "-8"));
}
