// Without --topology, plans on a PCIe GPU are priced on the node its hardware profile describes
// (core/node_topology.h), in the frameworks' default rank layout: a group under one switch by PCIe
// peer-to-peer, across sockets by the socket link, across nodes by the NICs. Expected figures are
// derived by hand from the profiles (no fit applied: test::catalog()).
#include <catch2/catch.hpp>

#include "core/fit.h"
#include "core/node_topology.h"
#include "planner/planner.h"
#include "planner/topology/evaluator.h"
#include "planner/topology/placement.h"
#include "planner/validate.h"
#include "tests/planner/priced_plan.h"
#include "tests/support/fixtures.h"

using namespace cpplan;
using namespace cpplan::planner;
using namespace cpplan::planner::topology;
using costmodel::CommAxis;

namespace {

using test::price;
using Priced = test::PricedPlan;
constexpr double kTokens = test::kFluxTokens, kHidden = test::kFluxHidden, kBytes = test::kFluxBytes,
                 kLayers = test::kFluxLayers;

}  // namespace

TEST_CASE("8 L20s in one Ulysses group cross the sockets: the socket link bounds the all-to-all",
          "[planner][topology][node]") {
  const Query q = test::make_query("flux.1-dev", 8, 1024, 1024, 0, "l20");
  const Priced p = price(q, test::config(1, 8));
  // Ranks 0-3 under pcie0 on cpu0, 4-7 under pcie1 on cpu1. The cut of one socket: 4 x 4 = 16 split
  // pairs share the 40 GB/s socket link, busbw <= (8 - 1) x 40 / 16 = 17.5 GB/s (the GPU cut gives
  // 7 x 32 / 7 = 32); an all-to-all reaches 0.25 of it across sockets (the hardware's
  // all_to_all_across_sockets): 4.375 GB/s, times PCIe's 0.75: 3.28125 GB/s. Alpha: GPU, uplink,
  // socket, uplink, GPU = 7.5 + 1 + 3 + 1 + 7.5 = 20 us.
  CHECK(p.link(CommAxis::kUlysses).raw_gbps == Approx(4.375));
  CHECK(p.group(CommAxis::kUlysses).busbw_gbps == Approx(3.28125));
  CHECK(p.group(CommAxis::kUlysses).latency_us == Approx(20));
  CHECK(p.link(CommAxis::kUlysses).span == "2 sockets");
  CHECK(p.link(CommAxis::kUlysses).across_sockets);
  CHECK_THAT(p.link(CommAxis::kUlysses).bottleneck,
             Catch::Contains("over cpu0 -> cpu1 for 16 pairs of ranks, all-to-all across sockets at 0.25 of it"));
  // 4 all-to-alls per layer of (S / 8) x D x b = 576 x 3072 x 2 = 3,538,944 bytes, each
  // 20 us + 3,538,944 x 7/8 / 3.28125 GB/s = 0.02 + 0.9437256 ms; 57 layers.
  const double each = 0.02 + kTokens / 8 * kHidden * kBytes * 7 / 8 / 3.28125e9 * 1e3;
  CHECK(p.comm_ms(CommAxis::kUlysses) == Approx(4 * kLayers * each));
}

TEST_CASE("a fit's socket_all_to_all scales the share an all-to-all reaches across sockets, and only that",
          "[planner][topology][node]") {
  HardwareProfile l20 = *test::catalog().find_hardware("l20");
  RuntimeFit fit;
  fit.name = "sockets";
  fit.links["socket_all_to_all"] = 2;
  apply_fit(fit, l20);
  CHECK(l20.all_to_all_across_sockets == Approx(0.5));
  Query q = test::make_query("flux.1-dev", 8, 1024, 1024, 0, "l20");
  q.hardware = &l20;
  // Twice the share: (8 - 1) x 40 / 16 x 0.5 x 0.75 = 6.5625 GB/s.
  CHECK(price(q, test::config(1, 8)).group(CommAxis::kUlysses).busbw_gbps == Approx(6.5625));
  // A ring of the 8 is not an all-to-all: each GPU's 32 GB/s binds, x 0.75 = 24 GB/s, fit or not.
  CHECK(price(q, test::config(8, 1)).group(CommAxis::kRing).busbw_gbps == Approx(24));
  // Capped at the whole link.
  fit.links["socket_all_to_all"] = 100;
  apply_fit(fit, l20);
  CHECK(l20.all_to_all_across_sockets == Approx(1));
}

TEST_CASE("4 L20s of one switch are priced as the profile's PCIe link, as before", "[planner][topology][node]") {
  const Query q = test::make_query("flux.1-dev", 4, 1024, 1024, 0, "l20");
  const Priced p = price(q, test::config(1, 4));
  // GPUs 0-3 under pcie0: each GPU's own 32 GB/s link binds (3 x 32 / 3), x 0.75 = 24 GB/s; two
  // 7.5 us GPU links = 15 us: the [interconnect] link exactly.
  CHECK(p.group(CommAxis::kUlysses).busbw_gbps == Approx(24));
  CHECK(p.group(CommAxis::kUlysses).latency_us == Approx(15));
  CHECK(p.link(CommAxis::kUlysses).span == "1 switch");
  const costmodel::DatasheetModel hw(*q.hardware);
  CHECK(p.plan.predicted->step_ms == Approx(costmodel::CostModel(hw).predict(q, test::config(1, 4), p.plan.plan.variant).step_ms));
}

TEST_CASE("xDiT's 16 x L40 in two nodes of 8: the groups across the nodes are priced by the Ethernet NICs",
          "[planner][topology][node][network]") {
  const Query q = test::make_query("flux.1-dev", 16, 1024, 1024, 0, "l40");
  const Priced p = price(q, test::config(2, 8));  // ring 2 x ulysses 8: Ulysses in a node, Ring across
  // Ring groups {i, i + 8}: eight 2-rank rings, GPUs 0-3 of each node reach the other node through
  // nic0 (on their switch), 4-7 through nic1: 4 hops per NIC direction share its 100 GbE, 12.5 / 4
  // = 3.125 GB/s, x the network's 0.7 = 2.1875 GB/s. Alpha 7.5 + 1 + 1.5 + 1.5 + 1 + 7.5 = 20 us.
  CHECK(p.link(CommAxis::kRing).raw_gbps == Approx(3.125));
  CHECK(p.group(CommAxis::kRing).busbw_gbps == Approx(2.1875));
  CHECK(p.group(CommAxis::kRing).latency_us == Approx(20));
  CHECK(p.link(CommAxis::kRing).span == "2 nodes");
  CHECK_THAT(p.link(CommAxis::kRing).bottleneck, Catch::Contains("nic0 -> switch: 12.5 GB/s shared by 4 hops"));
  // Unified: one all-gather of K and V per layer, 2 x S x (D / u) x b = 2 x 4608 x 384 x 2 =
  // 7,077,888 bytes, factor 1/2: 20 us + 3,538,944 / 2.1875 GB/s = 0.02 + 1.6178 ms; 57 layers.
  const double gather = 0.02 + 2 * kTokens * (kHidden / 8) * kBytes / 2 / 2.1875e9 * 1e3;
  CHECK(p.comm_ms(CommAxis::kRing) == Approx(kLayers * gather));
  // Ulysses stays inside each node and crosses its sockets, as on 8 L20s: a quarter of 17.5 GB/s,
  // x 0.75.
  CHECK(p.link(CommAxis::kUlysses).span == "2 sockets");
  CHECK(p.group(CommAxis::kUlysses).busbw_gbps == Approx(3.28125));
}

TEST_CASE("an all-to-all over both L40 nodes is bound by the node's two NICs", "[planner][topology][node][network]") {
  const HardwareProfile& l40 = *test::catalog().find_hardware("l40");
  const Topology node = node_topology(l40);
  const GroupEvaluator eval(node, 2, l40);
  std::vector<int> all(16), order{0, 1, 2, 3, 4, 5, 6, 7};
  for (int r = 0; r < 16; ++r) all[r] = r;
  // 16 ranks, 8 per node: the node cut splits 8 x 8 = 64 pairs over 2 x 12.5 = 25 GB/s of NICs:
  // busbw <= 15 x 25 / 64 = 5.859375 GB/s (a socket cut gives 15 x (40 x 0.25 + 12.5) / (4 x 12) =
  // 7.03: its socket link at the all-to-all's quarter across sockets, its NIC whole),
  // x 0.7 = 4.1015625 GB/s; the farthest pair 20 us apart.
  const AxisBandwidth a2a = eval.evaluate(Pattern::kAllToAll, {all}, order, 8);
  CHECK(a2a.raw_gbps == Approx(5.859375));
  CHECK(a2a.busbw_gbps == Approx(4.1015625));
  CHECK(a2a.latency_us == Approx(20));
  CHECK(a2a.span_nodes == 2);
  CHECK_THAT(a2a.bottleneck, Catch::Contains("over n0.nic0 -> switch, n0.nic1 -> switch for 64 pairs"));
  // PipeFusion's stages on the two nodes: sends in rank order, i -> i + 8 -> i: as the Ring pairs.
  std::vector<std::vector<int>> pairs;
  for (int r = 0; r < 8; ++r) pairs.push_back({r, r + 8});
  const AxisBandwidth sends = eval.evaluate(Pattern::kRingRankOrder, pairs, order, 8);
  CHECK(sends.raw_gbps == Approx(3.125));
  CHECK(sends.busbw_gbps == Approx(2.1875));
}

TEST_CASE("the l20 profile's node prices every one-node plan as --topology 8x-l20-pcie's default layout",
          "[planner][topology][node]") {
  Query plain = test::make_query("flux.1-dev", 8, 1024, 1024, 0, "l20");
  Query placed = plain;
  placed.topology = test::catalog().find_topology("8x-l20-pcie");
  REQUIRE(placed.topology);
  const costmodel::DatasheetModel hw(*plain.hardware);
  const costmodel::CostModel cost(hw);
  const Placer on_topology(placed, cost);
  int checked = 0;
  for (const ParallelConfig& c : enumerate(8)) {
    const RankedPlan rp = Planner(cost).evaluate(plain, c);
    if (!rp.plan.valid()) continue;
    INFO(plan_label(c));
    CHECK(rp.predicted->step_ms == Approx(on_topology.evaluate(rp.plan, kDefaultAxisOrder).predicted.step_ms).epsilon(1e-12));
    ++checked;
  }
  CHECK(checked > 10);
}

TEST_CASE("4 RTX 4090s stage through host memory as the pcie_host link did", "[planner][topology][node]") {
  const Query q = test::make_query("flux.1-dev", 4, 1024, 1024, 0, "rtx4090-48g");
  const Priced p = price(q, test::config(1, 4));
  // GPU -> cpu0 -> memory0 -> cpu0 -> GPU: 32 GB/s wide (memory 150), x 0.4 = 12.8 GB/s; 12 + 0.5 +
  // 0.5 + 12 = 25 us: the [interconnect] pcie_host link.
  CHECK(p.group(CommAxis::kUlysses).busbw_gbps == Approx(12.8));
  CHECK(p.group(CommAxis::kUlysses).latency_us == Approx(25));
  CHECK(p.link(CommAxis::kUlysses).span == "1 socket");
}

TEST_CASE("hardware without a [node] keeps the profile's two links", "[planner][topology][node]") {
  const Query q = test::make_query("flux.1-dev", 16, 1024, 1024, 0, "h100-sxm");
  const costmodel::DatasheetModel hw(*q.hardware);
  const RankedPlan rp = Planner(costmodel::CostModel(hw)).evaluate(q, test::config(2, 8));
  CHECK_FALSE(rp.placement);
}

TEST_CASE("an NVLink GPU in a PCIe-only box is priced at its PCIe efficiency, which a fit's pcie link scales",
          "[planner][topology]") {
  // a100-sxm-80g: NVLink interconnect at 0.65 ([interconnect] efficiency), host link at 0.8
  // ([host] efficiency). dgx-a100 has NVLink links: 0.65; 4x-a100-pcie has none, and stages its
  // peer traffic through host memory: the staged efficiency, the host link's, 0.8.
  const HardwareProfile& a100 = *test::catalog().find_hardware("a100-sxm-80g");
  const Topology& dgx = *test::catalog().find_topology("dgx-a100");
  const Topology& pcie = *test::catalog().find_topology("4x-a100-pcie");
  CHECK(a100.pcie_efficiency == Approx(0.8));
  CHECK_FALSE(nvlink_gpu_on_pcie(dgx, a100));
  CHECK(nvlink_gpu_on_pcie(pcie, a100));
  CHECK(intra_node_efficiency(dgx, a100) == Approx(0.65));
  CHECK(intra_node_efficiency(pcie, a100) == Approx(0.8));
  // A PCIe GPU's own interconnect is PCIe: l20's [interconnect] efficiency is its PCIe one.
  const HardwareProfile& l20 = *test::catalog().find_hardware("l20");
  CHECK(l20.pcie_efficiency == l20.intra_node.efficiency);
  // A fit's [links] pcie = 0.5 halves the PCIe efficiency of both, and l20's interconnect too;
  // the A100's NVLink efficiency stays.
  RuntimeFit fit;
  fit.name = "half-pcie";
  fit.links["pcie"] = 0.5;
  HardwareProfile a = a100, l = l20;
  apply_fit(fit, a);
  apply_fit(fit, l);
  CHECK(a.pcie_efficiency == Approx(0.4));
  CHECK(a.intra_node.efficiency == Approx(0.65));
  CHECK(l.pcie_efficiency == Approx(l20.intra_node.efficiency * 0.5));
  CHECK(l.intra_node.efficiency == Approx(l20.intra_node.efficiency * 0.5));
}

TEST_CASE("a box that stages peer traffic through host memory is priced at the staged efficiency, which a fit's "
          "pcie_host link scales", "[planner][topology]") {
  const HardwareProfile& a100 = *test::catalog().find_hardware("a100-sxm-80g");
  const HardwareProfile& l20 = *test::catalog().find_hardware("l20");
  const HardwareProfile& rtx = *test::catalog().find_hardware("rtx4090-48g");
  const Topology& staged = *test::catalog().find_topology("4x-a100-pcie");  // its switch: p2p = false
  const Topology& l20_box = *test::catalog().find_topology("8x-l20-pcie");  // peer to peer
  CHECK(stages_peer_traffic(staged));
  CHECK_FALSE(stages_peer_traffic(l20_box));
  CHECK_FALSE(stages_peer_traffic(*test::catalog().find_topology("dgx-a100")));
  // Every staged byte is a copy to host memory and one back: the host link's efficiency (a100:
  // [host] 0.8); a GPU whose own interconnect is staged (rtx4090-48g, pcie_host) keeps its
  // interconnect's, 0.4.
  CHECK(a100.staged_pcie_efficiency == Approx(0.8));
  CHECK(rtx.staged_pcie_efficiency == Approx(rtx.intra_node.efficiency));
  CHECK(rtx.intra_node.efficiency == Approx(0.4));
  // A fit of pcie = 0.5 and pcie_host = 1.1: the staged box moves with pcie_host only,
  // 0.8 x 1.1 = 0.88; the L20 box (peer to peer) with pcie only, 0.75 x 0.5 = 0.375; the rtx4090's
  // interconnect and its staged efficiency both 0.4 x 1.1 = 0.44.
  RuntimeFit fit;
  fit.name = "staged";
  fit.links["pcie"] = 0.5;
  fit.links["pcie_host"] = 1.1;
  HardwareProfile a = a100, l = l20, r = rtx;
  apply_fit(fit, a);
  apply_fit(fit, l);
  apply_fit(fit, r);
  CHECK(intra_node_efficiency(staged, a) == Approx(0.88));
  CHECK(a.pcie_efficiency == Approx(0.4));
  CHECK(l20.intra_node.efficiency == Approx(0.75));
  CHECK(intra_node_efficiency(l20_box, l) == Approx(0.375));
  CHECK(r.staged_pcie_efficiency == Approx(0.44));
  CHECK(r.intra_node.efficiency == Approx(0.44));
  // An efficiency never passes 1: pcie_host = 1.5 gives min(1, 0.8 x 1.5) = 1.
  fit.links["pcie_host"] = 1.5;
  HardwareProfile capped = a100;
  apply_fit(fit, capped);
  CHECK(intra_node_efficiency(staged, capped) == Approx(1.0));
}
