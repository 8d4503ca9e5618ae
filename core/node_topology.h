#pragma once
// The usual PCIe server of a GPU as a topology (docs/topology.md), built from the hardware
// profile's [node] (core/hardware.h, NodeLayout). Without --topology the planner places every
// plan's groups on it in the frameworks' default rank layout, so each group is priced by the links
// it crosses: PCIe peer-to-peer under one switch, the switch uplinks and the socket link across
// switches and sockets (host memory without P2P), the node's Ethernet NICs across nodes.

#include "core/hardware.h"
#include "core/topology.h"

namespace cpplan {

// Each link's share of the alpha of one collective step (general knowledge, as in
// profiles/topologies/8x-l20-pcie.toml); the GPU's own PCIe link takes the rest of the profile's
// step latency, so that two GPUs under one switch (or one root complex) are interconnect.latency_us
// apart, and two GPUs on two nodes, each next to its NIC, network.latency_us apart.
inline constexpr Microseconds kUplinkLatencyUs = 1;    // a PCIe switch to its CPU (or host memory)
inline constexpr Microseconds kSocketLatencyUs = 3;    // between two sockets
inline constexpr Microseconds kMemoryLatencyUs = 0.5;  // a CPU to its host memory
inline constexpr Microseconds kNicLatencyUs = 1;       // a NIC's PCIe link

// The node of `hw` (precondition: hw.node is set): gpu0 .. gpu{N-1}, GPU g on socket
// g / (N / sockets) and, when gpus_per_switch > 1, under switch g / gpus_per_switch; NIC i on switch
// i x switches / nics (else on socket i x sockets / nics); nodes joined by one Ethernet switch.
// Without P2P (pcie_host) the switches and CPUs stage every byte through their socket's memory.
// An xgmi GPU's node is a full mesh instead: every GPU pair joined by an xgmi link of the
// interconnect's bandwidth and latency; PCIe (the host link's bandwidth) to the sockets and NICs.
Topology node_topology(const HardwareProfile& hw);

}  // namespace cpplan
