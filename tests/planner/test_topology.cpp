// The graph computations of planner/topology/ on small topologies whose answers are computed by
// hand: widest routes, max-flows, ring hops sharing links, all-to-all cuts, host-memory staging,
// replication over a network, a TPU torus, and the evaluator's reductions.
#include <catch2/catch.hpp>

#include <cmath>

#include "planner/topology/bandwidth.h"
#include "planner/topology/evaluator.h"
#include "planner/topology/graph.h"
#include "tests/support/fixtures.h"

using namespace cpplan;
using namespace cpplan::planner::topology;

namespace {

// A topology built in code: gpus, then devices added by name, links by name.
struct Builder {
  Topology t;
  explicit Builder(int gpus) {
    t.name = "hand";
    t.hardware = "h100-sxm";
    t.gpus = gpus;
    for (int g = 0; g < gpus; ++g) t.devices.push_back({"gpu" + std::to_string(g), DeviceKind::kGpu, 0, true});
  }
  Builder& device(const std::string& name, DeviceKind kind, GBps bw = 0, bool p2p = true) {
    t.devices.push_back({name, kind, bw, p2p});
    return *this;
  }
  Builder& link(const std::string& a, const std::string& b, GBps bw, Microseconds lat = 1, LinkType type = LinkType::kPcie) {
    REQUIRE(t.find(a) >= 0);
    REQUIRE(t.find(b) >= 0);
    t.links.push_back({t.find(a), t.find(b), type, bw, lat});
    return *this;
  }
  Builder& network(NetworkKind kind, Microseconds lat) {
    t.has_network = true;
    t.network = {kind, lat};
    return *this;
  }
};

// Two PCIe switches of two GPUs each (32 GB/s per GPU), each switch on a 32 GB/s uplink to one CPU.
Topology two_switches() {
  Builder b(4);
  b.device("sw0", DeviceKind::kPcieSwitch).device("sw1", DeviceKind::kPcieSwitch).device("cpu", DeviceKind::kCpu);
  b.link("gpu0", "sw0", 32).link("gpu1", "sw0", 32).link("gpu2", "sw1", 32).link("gpu3", "sw1", 32);
  b.link("sw0", "cpu", 32).link("sw1", "cpu", 32);
  return b.t;
}

std::vector<std::vector<int>> vertices(const TopologyGraph& g, std::vector<std::vector<int>> gpus, int node = 0) {
  for (auto& group : gpus)
    for (int& v : group) v = g.gpu_vertex(node, v);
  return gpus;
}

}  // namespace

TEST_CASE("the widest route takes the bottleneck, then fewer hops, then lower latency", "[planner][topology][graph]") {
  // gpu0 -> gpu1 directly at 10 GB/s, or through a switch at min(20, 30) = 20 GB/s.
  Builder b(2);
  b.device("sw", DeviceKind::kPcieSwitch);
  b.link("gpu0", "gpu1", 10, 1, LinkType::kNvLink).link("gpu0", "sw", 20, 2).link("sw", "gpu1", 30, 3);
  const TopologyGraph g(b.t, 1);
  const Route r = g.route(g.gpu_vertex(0, 0), g.gpu_vertex(0, 1));
  CHECK(r.width_gbps == 20);
  CHECK(r.hops == 2);
  CHECK(r.latency_us == 5);
  CHECK(g.route_edges(g.gpu_vertex(0, 0), g.gpu_vertex(0, 1)).size() == 2);

  // Equal widths: the shorter route wins.
  Builder c(2);
  c.device("sw", DeviceKind::kPcieSwitch);
  c.link("gpu0", "gpu1", 20, 9).link("gpu0", "sw", 20, 1).link("sw", "gpu1", 20, 1);
  const TopologyGraph h(c.t, 1);
  CHECK(h.route(0, 1).hops == 1);
  CHECK(h.route(0, 1).latency_us == 9);
}

TEST_CASE("max-flow between GPU sets is the cut through the uplinks", "[planner][topology][graph]") {
  const TopologyGraph g(two_switches(), 1);
  CHECK(g.max_flow({g.gpu_vertex(0, 0), g.gpu_vertex(0, 1)}, {g.gpu_vertex(0, 2), g.gpu_vertex(0, 3)}, 0) == 32);
  CHECK(g.max_flow({g.gpu_vertex(0, 0)}, {g.gpu_vertex(0, 1), g.gpu_vertex(0, 2), g.gpu_vertex(0, 3)}, 0) == 32);
  // Edges below the threshold do not count.
  CHECK(g.max_flow({g.gpu_vertex(0, 0)}, {g.gpu_vertex(0, 2)}, 40) == 0);
}

TEST_CASE("ring hops that share an uplink split it", "[planner][topology][ring]") {
  const TopologyGraph g(two_switches(), 1);
  // One ring inside each switch: every hop has its own links.
  CHECK(ring_bandwidth(g, vertices(g, {{0, 1}, {2, 3}}), true).busbw_gbps == 32);
  // Rings {0,2} and {1,3} both cross: sw0 -> cpu carries 0->2 and 1->3, 16 GB/s each.
  const auto crossing = ring_bandwidth(g, vertices(g, {{0, 2}, {1, 3}}), true);
  CHECK(crossing.busbw_gbps == 16);
  CHECK_THAT(crossing.bottleneck, Catch::Contains("shared by 2 hops"));
  // A ring of all four in rank order 0,1,2,3: the uplinks carry one hop each way.
  CHECK(ring_bandwidth(g, vertices(g, {{0, 1, 2, 3}}), true).busbw_gbps == 32);
  // In the order 0,2,1,3 every hop crosses: two per uplink direction; NCCL's own order (sorted) avoids it.
  CHECK(ring_bandwidth(g, vertices(g, {{0, 2, 1, 3}}), true).busbw_gbps == 16);
  CHECK(ring_bandwidth(g, vertices(g, {{0, 2, 1, 3}}), false).busbw_gbps == 32);
  CHECK(ring_bandwidth(g, vertices(g, {{0, 1}}), true).latency_us == 2);
}

TEST_CASE("all-to-all is bounded by the tightest cut: (n - 1) x flow / split pairs", "[planner][topology][alltoall]") {
  const TopologyGraph g(two_switches(), 1);
  // Four ranks: single GPU cuts give 32; the switch cut carries 2 x 2 = 4 pairs over 32 GB/s:
  // 3 x 32 / 4 = 24 GB/s per rank.
  const auto all = all_to_all_bandwidth(g, vertices(g, {{0, 1, 2, 3}}), 4, false);
  CHECK(all.busbw_gbps == Approx(24));
  // The binding link is the switch's uplink, the edge of the minimum cut.
  CHECK_THAT(all.bottleneck, Catch::Contains("max-flow 32 GB/s out over sw0 -> cpu for 4 pairs"));
  // Two crossing pairs at once: the switch cut carries 2 pairs, 1 x 32 / 2 = 16.
  CHECK(all_to_all_bandwidth(g, vertices(g, {{0, 2}, {1, 3}}), 2, false).busbw_gbps == Approx(16));
  // Two pairs inside the switches: only the GPU links bound them.
  CHECK(all_to_all_bandwidth(g, vertices(g, {{0, 1}, {2, 3}}), 2, false).busbw_gbps == Approx(32));
}

TEST_CASE("the device clusters follow the switches", "[planner][topology][graph]") {
  const TopologyGraph g(two_switches(), 1);
  const auto levels = cluster_levels(g, {0, 1, 2, 3});
  REQUIRE(levels.size() == 3);
  CHECK(levels[0].size() == 4);
  CHECK(levels[1] == std::vector<std::vector<int>>{{0, 1}, {2, 3}});
  CHECK(levels[2] == std::vector<std::vector<int>>{{0, 1, 2, 3}});
}

TEST_CASE("without peer-to-peer every transfer passes host memory", "[planner][topology][graph]") {
  Builder b(2);
  b.device("cpu", DeviceKind::kCpu, 0, false).device("mem", DeviceKind::kMemory);
  b.link("gpu0", "cpu", 32).link("gpu1", "cpu", 32).link("cpu", "mem", 20, 1, LinkType::kMemory);
  const TopologyGraph g(b.t, 1);
  const int a = g.gpu_vertex(0, 0), c = g.gpu_vertex(0, 1);
  CHECK(g.route(a, c).width_gbps == 20);  // written to and read from memory at 20 GB/s
  CHECK(g.route(a, c).hops == 4);
  bool through_memory = false;
  for (int e : g.route_edges(a, c)) through_memory = through_memory || g.edges()[e].type == LinkType::kMemory;
  CHECK(through_memory);
  // Both GPUs sending at once share the memory link: 10 GB/s each.
  CHECK(ring_bandwidth(g, vertices(g, {{0, 1}}), true).busbw_gbps == 10);

  b.t.devices[b.t.find("cpu")].p2p = true;  // with P2P the root complex forwards directly
  const TopologyGraph p2p(b.t, 1);
  CHECK(p2p.route(p2p.gpu_vertex(0, 0), p2p.gpu_vertex(0, 1)).width_gbps == 32);
}

TEST_CASE("an all-to-all through a switch that stages peer traffic in host memory shares its uplink among every pair",
          "[planner][topology][alltoall]") {
  // Four GPUs (32 GB/s each) under one switch that refuses peer-to-peer; its 32 GB/s uplink leads
  // to host memory. Every ordered pair's bytes go up the uplink and back down: 4 x 3 = 12 pairs
  // share each direction. Each rank sends 1/4 of its message to each of 3 peers, so the uplink
  // carries 12 / 4 = 3 messages while a rank moves 3/4 of one: busbw = 3 x 32 / 12 = 8 GB/s.
  // A cut between GPUs alone sees 32 GB/s for 2 x 2 pairs (3 x 32 / 4 = 24): it misses the pairs
  // on its own side, which load the same uplink.
  Builder b(4);
  b.device("sw", DeviceKind::kPcieSwitch, 0, false).device("mem", DeviceKind::kMemory);
  for (int i = 0; i < 4; ++i) b.link("gpu" + std::to_string(i), "sw", 32);
  b.link("sw", "mem", 32);
  const TopologyGraph g(b.t, 1);
  const GroupBandwidth all = all_to_all_bandwidth(g, vertices(g, {{0, 1, 2, 3}}), 4, false);
  CHECK(all.busbw_gbps == Approx(8));
  CHECK_THAT(all.bottleneck, Catch::Contains("32 GB/s on the routes of 12 pairs of ranks"));
  // Two pairs at once: 2 x 2 ordered pairs on the uplink, 1 x 32 / 4 = 8 GB/s as well.
  CHECK(all_to_all_bandwidth(g, vertices(g, {{0, 1}, {2, 3}}), 2, false).busbw_gbps == Approx(8));
  // With peer-to-peer the switch forwards directly: the GPU links bind (3 x 32 / 3 = 32).
  b.t.devices[b.t.find("sw")].p2p = true;
  const TopologyGraph direct(b.t, 1);
  CHECK(all_to_all_bandwidth(direct, vertices(direct, {{0, 1, 2, 3}}), 4, false).busbw_gbps == Approx(32));
}

TEST_CASE("replicated nodes meet on rails, crossing rails goes through the spine", "[planner][topology][network]") {
  // Per node: two GPUs on an NVSwitch (100 GB/s), each with its own 10 GB/s NIC on a 50 GB/s PCIe link.
  Builder b(2);
  b.device("nvs", DeviceKind::kNvSwitch).device("nic0", DeviceKind::kNic, 10).device("nic1", DeviceKind::kNic, 10);
  b.link("gpu0", "nvs", 100, 1, LinkType::kNvLink).link("gpu1", "nvs", 100, 1, LinkType::kNvLink);
  b.link("gpu0", "nic0", 50).link("gpu1", "nic1", 50);
  b.network(NetworkKind::kRail, 3);
  const TopologyGraph g(b.t, 2);
  CHECK(g.nodes() == 2);
  const Route same_rail = g.route(g.gpu_vertex(0, 0), g.gpu_vertex(1, 0));
  CHECK(same_rail.width_gbps == 10);
  CHECK(same_rail.hops == 4);  // gpu -> nic -> rail0 -> nic -> gpu
  CHECK(same_rail.latency_us == 1 + 3 + 3 + 1);
  // Node cut: the two NICs, 20 GB/s; a pair per GPU crossing: ring of {n0.gpu0, n1.gpu0}
  // and {n0.gpu1, n1.gpu1} run at 10 each.
  CHECK(g.max_flow({g.gpu_vertex(0, 0), g.gpu_vertex(0, 1)}, {g.gpu_vertex(1, 0), g.gpu_vertex(1, 1)}, 0) == 20);
  std::vector<std::vector<int>> rings{{g.gpu_vertex(0, 0), g.gpu_vertex(1, 0)}, {g.gpu_vertex(0, 1), g.gpu_vertex(1, 1)}};
  CHECK(ring_bandwidth(g, rings, true).busbw_gbps == 10);
  // All-to-all of the four GPUs: node cut 20 GB/s for 2 x 2 pairs: 3 x 20 / 4 = 15 per rank.
  std::vector<std::vector<int>> everyone{{g.gpu_vertex(0, 0), g.gpu_vertex(0, 1), g.gpu_vertex(1, 0), g.gpu_vertex(1, 1)}};
  CHECK(all_to_all_bandwidth(g, everyone, 4, false).busbw_gbps == Approx(15));

  b.network(NetworkKind::kSwitch, 3);
  const TopologyGraph s(b.t, 2);
  CHECK(s.route(s.gpu_vertex(0, 0), s.gpu_vertex(1, 1)).hops == 4);  // one switch joins every NIC
}

TEST_CASE("a 4 x 4 torus: rings along a row run at one link, all-to-all at the bisection", "[planner][topology][torus]") {
  const Topology& t = *test::catalog().find_topology("tpu-v5e-4x4");
  const TopologyGraph g(t, 1);
  CHECK(ring_bandwidth(g, vertices(g, {{0, 1, 2, 3}}), true).busbw_gbps == 50);
  // Four row rings at once still use distinct links.
  CHECK(ring_bandwidth(g, vertices(g, {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}), true).busbw_gbps == 50);
  // All 16: the bisection (rows 0-1 | rows 2-3) is cut by 8 links of 50 GB/s: 15 x 400 / 64.
  std::vector<int> all(16);
  for (int i = 0; i < 16; ++i) all[i] = i;
  const auto a2a = all_to_all_bandwidth(g, vertices(g, {all}), 16, false);
  CHECK(a2a.busbw_gbps == Approx(15.0 * 400 / 64));
}

TEST_CASE("an NVSwitch node gives every group the GPU's NVLink bandwidth", "[planner][topology][nvswitch]") {
  const Topology& t = *test::catalog().find_topology("dgx-h100");
  const TopologyGraph g(t, 1);
  CHECK(ring_bandwidth(g, vertices(g, {{0, 1, 2, 3, 4, 5, 6, 7}}), false).busbw_gbps == 450);
  CHECK(ring_bandwidth(g, vertices(g, {{0, 1, 2, 3, 4, 5, 6, 7}}), false).latency_us == 8);
  CHECK(all_to_all_bandwidth(g, vertices(g, {{0, 1, 2, 3, 4, 5, 6, 7}}), 8, false).busbw_gbps == Approx(450));
  CHECK(all_to_all_bandwidth(g, vertices(g, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}), 2, false).busbw_gbps == Approx(450));
}

TEST_CASE("dgx-h100 across two nodes: a 16-rank all-to-all sends half its pairs over 8 x 50 GB/s", "[planner][topology][network]") {
  const Topology& t = *test::catalog().find_topology("dgx-h100");
  const TopologyGraph g(t, 2);
  std::vector<int> all;
  for (int k = 0; k < 2; ++k)
    for (int i = 0; i < 8; ++i) all.push_back(g.gpu_vertex(k, i));
  // Node cut: 8 NICs = 400 GB/s for 8 x 8 pairs: 15 x 400 / 64 = 93.75 GB/s per rank.
  CHECK(all_to_all_bandwidth(g, {all}, 16, false).busbw_gbps == Approx(93.75));
  // One GPU per node in each of 8 pairs: each GPU's own NIC, 50 GB/s.
  std::vector<std::vector<int>> pairs;
  for (int i = 0; i < 8; ++i) pairs.push_back({g.gpu_vertex(0, i), g.gpu_vertex(1, i)});
  CHECK(ring_bandwidth(g, pairs, false).busbw_gbps == 50);
  CHECK(ring_bandwidth(g, pairs, false).latency_us == 15);
  CHECK(all_to_all_bandwidth(g, pairs, 2, false).busbw_gbps == Approx(50));
}

TEST_CASE("the evaluator's two-node reduction equals the whole cluster", "[planner][topology][evaluator]") {
  const Topology& t = *test::catalog().find_topology("dgx-a100");
  const HardwareProfile& hw = *test::catalog().find_hardware("a100-sxm-80g");
  const GroupEvaluator reduced(t, 4, hw, true), whole(t, 4, hw, false);
  std::vector<int> identity{0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<int> spread{0, 2, 4, 6, 1, 3, 5, 7};
  // Groups of size n at stride s over 32 ranks (every (n, s) of a mixed-radix layout).
  for (int n : {2, 4, 8, 16, 32})
    for (int s : {1, 2, 4, 8, 16}) {
      if (n * s > 32) continue;
      std::vector<std::vector<int>> groups;
      for (int r = 0; r < 32; ++r)
        if ((r / s) % n == 0) {
          groups.emplace_back();
          for (int k = 0; k < n; ++k) groups.back().push_back(r + k * s);
        }
      for (const auto* order : {&identity, &spread})
        for (Pattern p : {Pattern::kRing, Pattern::kRingRankOrder, Pattern::kAllToAll}) {
          INFO("n " << n << " stride " << s << " pattern " << static_cast<int>(p) << " order " << (*order)[1]);
          const AxisBandwidth a = reduced.evaluate(p, groups, *order, 8), b = whole.evaluate(p, groups, *order, 8);
          CHECK(a.busbw_gbps == Approx(b.busbw_gbps).epsilon(1e-12));
          CHECK(a.latency_us == Approx(b.latency_us).epsilon(1e-12));
          CHECK(a.crosses_nodes == b.crosses_nodes);
        }
    }
}

TEST_CASE("four Ulysses groups crossing the same NIC share it", "[planner][topology][network]") {
  // Per node: four GPUs on one switch (32 GB/s each) and one 10 GB/s NIC on that switch.
  Builder b(4);
  b.device("sw", DeviceKind::kPcieSwitch).device("nic0", DeviceKind::kNic, 10);
  for (int i = 0; i < 4; ++i) b.link("gpu" + std::to_string(i), "sw", 32);
  b.link("nic0", "sw", 32).network(NetworkKind::kSwitch, 2);
  const TopologyGraph g(b.t, 2);
  std::vector<std::vector<int>> four;
  for (int i = 0; i < 4; ++i) four.push_back({g.gpu_vertex(0, i), g.gpu_vertex(1, i)});
  // One group alone gets the whole NIC; four at once split it: 1 x 10 / 4 pairs.
  CHECK(all_to_all_bandwidth(g, {four[0]}, 2, false).busbw_gbps == Approx(10));
  CHECK(all_to_all_bandwidth(g, four, 2, false).busbw_gbps == Approx(2.5));
  CHECK(ring_bandwidth(g, four, true).busbw_gbps == Approx(2.5));  // 4 hops per direction on the NIC
}

TEST_CASE("an all-to-all bound by the link between sockets reaches its share of it", "[planner][topology]") {
  // Two sockets, four GPUs under each socket's switch (32 GB/s each, uplink 64), 40 GB/s between.
  Builder b(8);
  b.device("sw0", DeviceKind::kPcieSwitch).device("sw1", DeviceKind::kPcieSwitch);
  b.device("cpu0", DeviceKind::kCpu).device("cpu1", DeviceKind::kCpu);
  for (int i = 0; i < 8; ++i) b.link("gpu" + std::to_string(i), i < 4 ? "sw0" : "sw1", 32);
  b.link("sw0", "cpu0", 64).link("sw1", "cpu1", 64).link("cpu0", "cpu1", 40, 3, LinkType::kSocket);
  const TopologyGraph g(b.t, 1);
  const auto all = vertices(g, {{0, 1, 2, 3, 4, 5, 6, 7}});
  // The cut between the sockets: 4 x 4 = 16 pairs share 40 GB/s; busbw = (8 - 1) x 40 / 16 = 17.5,
  // and a quarter of it where NCCL stages those pairs through host memory.
  const GroupBandwidth whole = all_to_all_bandwidth(g, all, 8, false);
  CHECK(whole.busbw_gbps == Approx(17.5));
  CHECK(whole.across_sockets);
  const GroupBandwidth staged = all_to_all_bandwidth(g, all, 8, false, 0.25);
  CHECK(staged.busbw_gbps == Approx(4.375));
  CHECK(staged.bottleneck.find("across sockets at 0.25") != std::string::npos);
  // Pairs under one switch never cross: each GPU's own 32 GB/s binds, (2 - 1) x 32 / 1.
  const GroupBandwidth pairs = all_to_all_bandwidth(g, vertices(g, {{0, 1}, {4, 5}}), 2, false, 0.25);
  CHECK(pairs.busbw_gbps == Approx(32));
  CHECK_FALSE(pairs.across_sockets);
  // A ring is not an all-to-all: one pair per direction streams over the socket link.
  CHECK(ring_bandwidth(g, all, true).busbw_gbps == Approx(32));
}
