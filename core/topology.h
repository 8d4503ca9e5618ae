#pragma once
// The devices of one node and the links between them: GPUs, NVSwitch, PCIe switches, CPU
// sockets, host memory, NICs; each link with its bandwidth per direction and latency; and the
// network that joins identical nodes. Plain data, loaded from profiles/topologies/*.toml
// (schema: docs/topology.md) or imported from `nvidia-smi topo -m` (core/topology_import.h).
// The graph algorithms over it live in planner/topology/.

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/units.h"

namespace cpplan {

enum class DeviceKind { kGpu, kNvSwitch, kPcieSwitch, kCpu, kMemory, kNic, kNetworkSwitch };
inline constexpr int kDeviceKindCount = 7;
std::string_view to_string(DeviceKind k);  // "gpu", "nvswitch", "pcie_switch", "cpu", "memory", "nic", "network_switch"

// nvlink: NVLink (to an NVSwitch or GPU to GPU); pcie: a PCIe link; socket: the link between CPU
// sockets (UPI / xGMI); memory: a CPU to its host memory; ici: a TPU inter-chip link; xgmi: an AMD
// Infinity Fabric link between two GPUs (a full mesh on MI300-class boards; it carries only the
// traffic of the pair it joins: RCCL does not forward through a third GPU); network: NIC to network
// switch and between network switches (added when nodes are replicated).
enum class LinkType { kNvLink, kPcie, kSocket, kMemory, kIci, kXgmi, kNetwork };
inline constexpr int kLinkTypeCount = 7;
std::string_view to_string(LinkType t);

// How replicated nodes are joined (docs/topology.md): rail-optimized (NIC i of every node on
// leaf switch i, leaves joined by a non-blocking spine) or one non-blocking switch for all NICs.
enum class NetworkKind { kRail, kSwitch };
std::string_view to_string(NetworkKind k);

struct TopoDevice {
  std::string name;                 // unique in the node: "gpu0", "nvswitch", "pcie3", "cpu0", "nic5"
  DeviceKind kind = DeviceKind::kGpu;
  GBps bandwidth_gbps = 0;          // NICs only: port speed per direction
  // cpu / pcie_switch only. false: the device does not forward peer-to-peer traffic; every byte
  // that crosses it is written to and read back from host memory (e.g. GeForce boards, no P2P).
  bool p2p = true;
};

struct TopoLink {
  int from = 0;                     // index into Topology::devices
  int to = 0;
  LinkType type = LinkType::kPcie;
  GBps bandwidth_gbps = 0;          // per direction
  Microseconds latency_us = 0;      // this link's share of the alpha of one collective step
};

struct NetworkSpec {
  NetworkKind kind = NetworkKind::kRail;
  Microseconds latency_us = 0;      // each NIC-to-switch link, and each leaf-to-spine link
};

// A 2D torus of links between the GPUs (TPU ICI), expanded into `links` when loaded.
struct TorusSpec {
  std::vector<int> dims;            // empty: no torus; x fastest: gpu index = y * dims[0] + x
  bool wraparound = true;
  GBps bandwidth_gbps = 0;          // per link, per direction
  Microseconds latency_us = 0;
};

struct Topology {
  std::string name;
  std::string description;
  std::string source;               // the file it came from
  std::string hardware;             // hardware profile of the GPUs (profiles/hardware/)
  bool planning_only = false;       // the executor cannot run it (TPU slices)
  int gpus = 0;                     // devices[0 .. gpus-1] are gpu0 .. gpu{gpus-1}, in this order
  std::vector<TopoDevice> devices;
  std::vector<TopoLink> links;      // including the torus links
  bool has_network = false;         // a [network] table: nodes can be replicated (--nodes)
  NetworkSpec network;
  TorusSpec torus;

  int find(std::string_view device) const;  // index in devices, -1 when absent
  int nic_count() const;
  // Where GPU `gpu` hangs (device indices, -1 when none): the PCIe switch it links to, and the CPU
  // socket reached from it over PCIe and memory links (through its switches). For --explain's spans.
  int switch_of(int gpu) const;
  int socket_of(int gpu) const;
};

// Parses and validates one file (docs/topology.md). Errors name the file, the dotted field, its
// value and the rule. The hardware name is checked by ProfileCatalog (core/profiles.h).
Result<Topology> load_topology(const std::string& path);
// The same on a file's text already read; `path` names it in messages and gives the stem.
Result<Topology> parse_topology(std::string_view text, const std::string& path);

// "gpu{0..7}" -> gpu0 .. gpu7; a name without braces is itself. Empty on a malformed range.
std::vector<std::string> expand_names(std::string_view pattern);

// The TOML text of a topology (the schema load_topology reads), with runs of similar devices and
// links folded into ranges. Used by `cpplan topo import`.
std::string to_toml(const Topology& t);

}  // namespace cpplan
