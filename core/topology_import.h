#pragma once
// Turns the text of `nvidia-smi topo -m` into a Topology (`cpplan topo import`).
//
// The matrix says how each pair of devices is connected: X (itself), NV# (# bonded NVLinks),
// PIX (at most one PCIe bridge), PXB (several bridges, no host bridge), PHB (through a host
// bridge), NODE (between host bridges of one NUMA node), SYS (between NUMA nodes; SOC in old
// drivers). From it: GPUs and NICs; an NVSwitch when every GPU pair shows the same NV# and that
// many links to each peer would exceed what one GPU has (18); otherwise direct NVLinks; one PCIe
// switch per group of devices joined by PIX/PXB; one CPU per NUMA node (devices joined by NODE
// or closer), CPUs joined pairwise by socket links. Bandwidths the matrix does not show come from
// the options; every figure is a plain TOML value the user can edit afterwards.

#include <string>
#include <string_view>

#include "core/result.h"
#include "core/topology.h"

namespace cpplan {

struct TopoImportOptions {
  std::string name = "imported";  // topology name (and file stem when saved)
  std::string hardware;           // hardware profile of the GPUs (required)
  GBps nvlink_gbps = 25;          // per NVLink per direction: NV18 -> 450 (H100), NV12 -> 300 (A100)
  GBps pcie_gbps = 32;            // each PCIe link, per direction (Gen4 x16; Gen5 x16: 64)
  GBps nic_gbps = 50;             // each NIC port, per direction (400 Gb/s)
  GBps socket_gbps = 64;          // between two NUMA nodes (UPI / xGMI), per direction
  bool p2p = true;                // false: GPUs cannot talk peer to peer (staged through host memory)
  GBps memory_gbps = 150;         // with p2p = false: host memory per direction, per NUMA node
};

// `file` names the input in messages: "<file>:<line>: <row>/<column> = <value>: <rule>".
Result<Topology> import_nvidia_smi_topo(std::string_view text, const std::string& file, const TopoImportOptions& o);

}  // namespace cpplan
