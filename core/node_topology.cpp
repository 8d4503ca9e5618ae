#include "core/node_topology.h"

#include <algorithm>
#include <fmt/format.h>

namespace cpplan {

namespace {

int add_devices(Topology& t, const char* prefix, DeviceKind kind, int count, bool p2p, GBps gbps = 0) {
  const int first = static_cast<int>(t.devices.size());
  for (int i = 0; i < count; ++i) t.devices.push_back({fmt::format("{}{}", prefix, i), kind, gbps, p2p});
  return first;
}

void link(Topology& t, int a, int b, LinkType type, GBps gbps, Microseconds latency_us) {
  t.links.push_back({a, b, type, gbps, latency_us});
}

// An xGMI board: every GPU pair joined by its own link (interconnect bandwidth and step latency,
// one hop), each GPU on PCIe (the host link) to its socket or its switch, the NICs beside them.
// PCIe carries only host and NIC traffic: RCCL sends peer bytes over the pair's xGMI link.
Topology mesh_topology(const HardwareProfile& hw) {
  const NodeLayout& n = *hw.node;
  const int gpus = hw.gpus_per_node, per_socket = gpus / n.sockets;
  const int switches = n.gpus_per_switch > 1 ? gpus / n.gpus_per_switch : 0;
  Topology t;
  t.name = hw.name + "-node";
  t.description = fmt::format("{} x {} as the hardware profile's [node] describes it: a full mesh of {} xGMI links per GPU, "
                              "{} socket{}",
                              gpus, hw.name, gpus - 1, n.sockets, n.sockets == 1 ? "" : "s");
  t.source = hw.source;
  t.hardware = hw.name;
  t.gpus = gpus;
  add_devices(t, "gpu", DeviceKind::kGpu, gpus, true);
  const int sw0 = add_devices(t, "pcie", DeviceKind::kPcieSwitch, switches, true);
  const int cpu0 = add_devices(t, "cpu", DeviceKind::kCpu, n.sockets, true);
  const int nic0 = add_devices(t, "nic", DeviceKind::kNic, n.nics, true, n.nic_gbps);
  for (int a = 0; a < gpus; ++a)
    for (int b = a + 1; b < gpus; ++b)
      link(t, a, b, LinkType::kXgmi, hw.intra_node.bandwidth_gbps, hw.intra_node.latency_us);
  const GBps pcie = hw.host_link.bandwidth_gbps;
  for (int g = 0; g < gpus; ++g)
    link(t, g, switches > 0 ? sw0 + g / n.gpus_per_switch : cpu0 + g / per_socket, LinkType::kPcie, pcie, kNicLatencyUs);
  for (int s = 0; s < switches; ++s)
    link(t, sw0 + s, cpu0 + s * n.gpus_per_switch / per_socket, LinkType::kPcie, n.switch_uplink_gbps, kUplinkLatencyUs);
  for (int a = 0; a < n.sockets; ++a)
    for (int b = a + 1; b < n.sockets; ++b) link(t, cpu0 + a, cpu0 + b, LinkType::kSocket, n.socket_gbps, kSocketLatencyUs);
  for (int i = 0; i < n.nics; ++i)
    link(t, nic0 + i, switches > 0 ? sw0 + i * switches / n.nics : cpu0 + i * n.sockets / n.nics, LinkType::kPcie,
         pcie, kNicLatencyUs);
  // Across nodes: a GPU to a NIC on its switch (or socket) is kNicLatencyUs + kNicLatencyUs.
  t.has_network = true;
  t.network.kind = NetworkKind::kSwitch;
  t.network.latency_us = std::max(0.0, (hw.network.latency_us - 4 * kNicLatencyUs) / 2);
  return t;
}

}  // namespace

Topology node_topology(const HardwareProfile& hw) {
  if (hw.link_kind == LinkKind::kXgmi) return mesh_topology(hw);
  const NodeLayout& n = *hw.node;
  const bool staged = hw.link_kind == LinkKind::kPcieHost;  // no P2P: through host memory
  const int gpus = hw.gpus_per_node, per_socket = gpus / n.sockets;
  const int switches = n.gpus_per_switch > 1 ? gpus / n.gpus_per_switch : 0;
  Topology t;
  t.name = hw.name + "-node";
  t.description = fmt::format("{} x {} as the hardware profile's [node] describes it: {} socket{}, {}, {}", gpus,
                              hw.name, n.sockets, n.sockets == 1 ? "" : "s",
                              switches > 0 ? fmt::format("{} GPUs per PCIe switch", n.gpus_per_switch)
                                           : std::string("GPUs on root ports"),
                              staged ? "no P2P (staged through host memory)" : "PCIe P2P");
  t.source = hw.source;
  t.hardware = hw.name;
  t.gpus = gpus;
  add_devices(t, "gpu", DeviceKind::kGpu, gpus, true);
  const int sw0 = add_devices(t, "pcie", DeviceKind::kPcieSwitch, switches, !staged);
  const int cpu0 = add_devices(t, "cpu", DeviceKind::kCpu, n.sockets, !staged);
  const int mem0 = staged ? add_devices(t, "memory", DeviceKind::kMemory, n.sockets, true) : -1;
  const int nic0 = add_devices(t, "nic", DeviceKind::kNic, n.nics, true, n.nic_gbps);

  // Where a transfer between two GPUs of one switch (or one CPU) turns: the switch or CPU itself
  // with P2P; host memory without, one more link up and one down.
  const Microseconds turn = !staged ? 0 : switches > 0 ? kUplinkLatencyUs : kMemoryLatencyUs;
  const Microseconds gpu_us = std::max(0.0, hw.intra_node.latency_us / 2 - turn);
  const GBps pcie = hw.intra_node.bandwidth_gbps;
  for (int g = 0; g < gpus; ++g)
    link(t, g, switches > 0 ? sw0 + g / n.gpus_per_switch : cpu0 + g / per_socket, LinkType::kPcie, pcie, gpu_us);
  for (int s = 0; s < switches; ++s)  // a switch's uplink leads to its CPU, or straight to memory
    link(t, sw0 + s, (staged ? mem0 : cpu0) + s * n.gpus_per_switch / per_socket,
         staged ? LinkType::kMemory : LinkType::kPcie, n.switch_uplink_gbps, kUplinkLatencyUs);
  for (int k = 0; staged && k < n.sockets; ++k)
    link(t, cpu0 + k, mem0 + k, LinkType::kMemory, n.host_memory_gbps, kMemoryLatencyUs);
  for (int a = 0; a < n.sockets; ++a)
    for (int b = a + 1; b < n.sockets; ++b) link(t, cpu0 + a, cpu0 + b, LinkType::kSocket, n.socket_gbps, kSocketLatencyUs);
  for (int i = 0; i < n.nics; ++i)
    link(t, nic0 + i, switches > 0 ? sw0 + i * switches / n.nics : cpu0 + i * n.sockets / n.nics, LinkType::kPcie,
         pcie, kNicLatencyUs);

  // Across nodes: GPU 0 to its NIC is gpu_us + 2 x turn + kNicLatencyUs = latency - gpu_us + kNic.
  const Microseconds to_nic = hw.intra_node.latency_us - gpu_us + kNicLatencyUs;
  t.has_network = true;
  t.network.kind = NetworkKind::kSwitch;
  t.network.latency_us = std::max(0.0, (hw.network.latency_us - 2 * to_nic) / 2);
  return t;
}

}  // namespace cpplan
