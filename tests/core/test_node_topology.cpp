// The node a PCIe GPU's hardware profile describes ([node]) and the topology built from it
// (core/node_topology.h): the figures of the shipped profiles, the loader's rules, and the devices,
// links and latencies of the built node.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/node_topology.h"
#include "core/profiles.h"
#include "tests/support/fixtures.h"

using namespace cpplan;

namespace {

const HardwareProfile& hardware(const std::string& name) {
  const HardwareProfile* hw = test::catalog().find_hardware(name);
  REQUIRE(hw);
  return *hw;
}

// The one link between two named devices of `t`.
const TopoLink& link_between(const Topology& t, const std::string& a, const std::string& b) {
  const int x = t.find(a), y = t.find(b);
  const auto it = std::find_if(t.links.begin(), t.links.end(), [&](const TopoLink& l) {
    return (l.from == x && l.to == y) || (l.from == y && l.to == x);
  });
  REQUIRE(it != t.links.end());
  return *it;
}

Result<HardwareProfile> with_node(const std::string& node, const std::string& kind = "pcie") {
  return parse_hardware_profile(R"(name = "x"
[compute]
bf16_tflops = 100
[memory]
capacity_mib = 1000
reserved_mib = 10
bandwidth_gbps = 500
[interconnect]
kind = ")" + kind + R"("
bandwidth_gbps = 32
latency_us = 15
efficiency = 0.75
gpus_per_node = 8
[network]
bandwidth_gbps = 3.125
latency_us = 20
efficiency = 0.7
[node]
)" + node + R"(
[efficiency]
gemm = 0.6
gemm_half_rows = 64
attention = { flash = 0.5, cudnn = 0.5, sage = 0.5, native = 0.5 }
attention_half_tokens = 128
conv = 0.4
memory = 0.8
kernel_launch_us = 5
)",
                                "hardware/x.toml");
}

}  // namespace

TEST_CASE("every PCIe GPU's profile describes its usual node, NVLink GPUs' do not", "[core][hardware][node]") {
  for (const char* name : {"l20", "l40", "l40s", "rtx-a6000", "a10", "rtx4090", "rtx4090-48g"}) {
    INFO(name);
    CHECK(hardware(name).node.has_value());
  }
  for (const char* name : {"h100-sxm", "a100-sxm-80g", "h200-sxm", "b200"}) CHECK_FALSE(hardware(name).node);
  // xDiT's 8 x L20 box and its 2 x 8 L40 nodes: two sockets, four GPUs under each PCIe switch,
  // Gen5 x16 uplinks, 40 GB/s peer-to-peer between the sockets, 2 x 100 GbE.
  for (const char* name : {"l20", "l40"}) {
    const NodeLayout& n = *hardware(name).node;
    CHECK(n.sockets == 2);
    CHECK(n.gpus_per_switch == 4);
    CHECK(n.switch_uplink_gbps == 64);
    CHECK(n.socket_gbps == 40);
    CHECK(n.nics == 2);
    CHECK(n.nic_gbps == 12.5);
  }
  // GeForce boards: no P2P, so host memory carries the staged copies; one 25 GbE NIC for 8 GPUs.
  const HardwareProfile& rtx = hardware("rtx4090");
  CHECK(rtx.link_kind == LinkKind::kPcieHost);
  CHECK(rtx.node->host_memory_gbps == 150);
  CHECK(rtx.node->nic_gbps * rtx.node->nics == rtx.network.bandwidth_gbps * rtx.gpus_per_node);
  CHECK(hardware("a10").node->gpus_per_switch == 1);  // root ports
}

TEST_CASE("a [node] that does not fit its GPUs or its network is refused with one line", "[core][hardware][node]") {
  const std::string ok = "sockets = 2\ngpus_per_switch = 4\nswitch_uplink_gbps = 64\nsocket_gbps = 40\nnics = 2\nnic_gbps = 12.5";
  REQUIRE(with_node(ok));
  CHECK(with_node("sockets = 3\nnics = 2\nnic_gbps = 12.5").error().message ==
        "hardware/x.toml: node.sockets = 3: must divide interconnect.gpus_per_node = 8");
  CHECK(with_node("sockets = 2\ngpus_per_switch = 3\nswitch_uplink_gbps = 64\nsocket_gbps = 40\nnics = 2\nnic_gbps = 12.5")
            .error()
            .message == "hardware/x.toml: node.gpus_per_switch = 3: must divide the GPUs of a socket = 4");
  CHECK(with_node("sockets = 2\nnics = 2\nnic_gbps = 12.5").error().message ==
        "hardware/x.toml: node.socket_gbps = (missing): is required");
  // 2 x 100 GbE is 25 GB/s for 8 GPUs: 3.125 each, as [network] says; one NIC is not.
  CHECK(with_node("sockets = 1\nnics = 1\nnic_gbps = 12.5").error().message ==
        "hardware/x.toml: node.nic_gbps = 12.5: nics x nic_gbps = 12.5 must equal network.bandwidth_gbps x "
        "interconnect.gpus_per_node = 25");
  CHECK(with_node("sockets = 1\nnics = 2\nnic_gbps = 12.5", "pcie_host").error().message ==
        "hardware/x.toml: node.host_memory_gbps = (missing): is required");
  CHECK(with_node(ok, "nvswitch").error().message ==
        "hardware/x.toml: node.sockets = ...: a [node] describes a PCIe or xGMI-mesh server: interconnect.kind = "
        "\"nvswitch\" must be pcie, pcie_host or xgmi");
  CHECK(with_node(ok + "\nsocket = 1").error().message ==
        "hardware/x.toml: node.socket = ...: unknown field (did you mean sockets?)");
}

TEST_CASE("the l20 node is two sockets of one PCIe switch and four GPUs each, as 8x-l20-pcie", "[core][topology][node]") {
  const Topology t = node_topology(hardware("l20"));
  CHECK(t.name == "l20-node");
  CHECK(t.hardware == "l20");
  CHECK(t.gpus == 8);
  CHECK(t.has_network);
  CHECK(t.network.kind == NetworkKind::kSwitch);
  for (int g = 0; g < 8; ++g) {
    CHECK(t.devices[t.switch_of(g)].name == (g < 4 ? "pcie0" : "pcie1"));
    CHECK(t.devices[t.socket_of(g)].name == (g < 4 ? "cpu0" : "cpu1"));
  }
  // The GPU link takes half the profile's 15 us step (two of them between GPUs of a switch); the
  // uplink 1 us and the socket link 3 us, so that across sockets 7.5 + 1 + 3 + 1 + 7.5 = 20 us.
  CHECK(link_between(t, "gpu5", "pcie1").bandwidth_gbps == 32);
  CHECK(link_between(t, "gpu5", "pcie1").latency_us == 7.5);
  CHECK(link_between(t, "pcie1", "cpu1").bandwidth_gbps == 64);
  CHECK(link_between(t, "cpu0", "cpu1").bandwidth_gbps == 40);
  CHECK(link_between(t, "cpu0", "cpu1").type == LinkType::kSocket);
  CHECK(link_between(t, "nic1", "pcie1").latency_us == 1);
  CHECK(t.devices[t.find("nic0")].bandwidth_gbps == 12.5);
  // Across nodes GPU to GPU is the profile's network step, 20 us: 7.5 + 1 (NIC) + 2 x network + 1
  // + 7.5, so each NIC-to-switch link takes (20 - 17) / 2 = 1.5 us.
  CHECK(t.network.latency_us == 1.5);
}

TEST_CASE("without P2P the node stages every transfer through its socket's memory", "[core][topology][node]") {
  const Topology t = node_topology(hardware("rtx4090"));
  CHECK(t.gpus == 8);
  CHECK(t.find("pcie0") < 0);  // root ports
  CHECK_FALSE(t.devices[t.find("cpu0")].p2p);
  CHECK(link_between(t, "cpu1", "memory1").bandwidth_gbps == 150);
  CHECK(link_between(t, "cpu0", "cpu1").bandwidth_gbps == 64);
  // GPU to GPU through memory: 2 x GPU link + 2 x 0.5 = the profile's 25 us, so 12 us each.
  CHECK(link_between(t, "gpu7", "cpu1").latency_us == 12);
  CHECK(t.devices[t.socket_of(7)].name == "cpu1");
  CHECK(t.switch_of(7) == -1);
  // To the NIC on cpu0: 12 + 0.5 + 0.5 + 1 = 14 us; the profile's 30 us across nodes leaves
  // (30 - 28) / 2 = 1 us per network link.
  CHECK(t.network.latency_us == 1);
}
