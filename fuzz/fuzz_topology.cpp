// Topologies: a topology file's text (docs/topology.md) as if read from topologies/fuzz.toml,
// and the same bytes as the output of `nvidia-smi topo -m` for `cpplan topo import`.
// Checks: every error is one line; a topology that loads, written back with to_toml (what
// `cpplan topo import -o` saves), loads again to the same devices, links, torus and network; an
// imported topology does too.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/topology.h"
#include "core/topology_import.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace cpplan;
using cpplan::fuzz::check;
using cpplan::fuzz::fail;

bool same(const Topology& a, const Topology& b) {
  if (a.name != b.name || a.description != b.description || a.hardware != b.hardware ||
      a.planning_only != b.planning_only || a.gpus != b.gpus || a.devices.size() != b.devices.size() ||
      a.links.size() != b.links.size() || a.has_network != b.has_network || a.torus.dims != b.torus.dims)
    return false;
  for (std::size_t i = 0; i < a.devices.size(); ++i) {
    const TopoDevice &x = a.devices[i], &y = b.devices[i];
    if (x.name != y.name || x.kind != y.kind || x.bandwidth_gbps != y.bandwidth_gbps || x.p2p != y.p2p) return false;
  }
  for (std::size_t i = 0; i < a.links.size(); ++i) {
    const TopoLink &x = a.links[i], &y = b.links[i];
    if (x.from != y.from || x.to != y.to || x.type != y.type || x.bandwidth_gbps != y.bandwidth_gbps ||
        x.latency_us != y.latency_us)
      return false;
  }
  if (a.has_network && (a.network.kind != b.network.kind || a.network.latency_us != b.network.latency_us)) return false;
  if (!a.torus.dims.empty() && (a.torus.wraparound != b.torus.wraparound ||
                                a.torus.bandwidth_gbps != b.torus.bandwidth_gbps ||
                                a.torus.latency_us != b.torus.latency_us))
    return false;
  return true;
}

// What to_toml writes must load back to the same topology.
void check_round_trip(const Topology& t, std::string_view what) {
  const std::string written = to_toml(t);
  const auto again = parse_topology(written, "topologies/fuzz.toml");
  if (!again) fail(std::string(what) + ": to_toml wrote a file that does not load: " + again.error().message, written);
  if (!same(t, *again)) fail(std::string(what) + ": to_toml wrote a different topology", written);
}

void check_file(std::string_view text) {
  const auto t = parse_topology(text, "topologies/fuzz.toml");
  check("parse_topology", t);
  if (!t) return;
  if (t->gpus < 1 || static_cast<int>(t->devices.size()) < t->gpus) fail("a loaded topology without its GPUs", t->name);
  for (const TopoLink& l : t->links)
    if (l.from < 0 || l.to < 0 || l.from >= static_cast<int>(t->devices.size()) ||
        l.to >= static_cast<int>(t->devices.size()) || l.from == l.to)
      fail("a loaded topology with a dangling link", t->name);
  check_round_trip(*t, "topology file");
}

void check_import(std::string_view text) {
  TopoImportOptions o;
  o.name = "fuzz";
  o.hardware = "h100-sxm";
  const auto t = import_nvidia_smi_topo(text, "topo.txt", o);
  check("import_nvidia_smi_topo", t);
  if (t) check_round_trip(*t, "imported topology");
  o.p2p = false;  // the staged-through-host-memory variant adds memory devices
  const auto staged = import_nvidia_smi_topo(text, "topo.txt", o);
  check("import_nvidia_smi_topo (no p2p)", staged);
  if (staged) check_round_trip(*staged, "imported topology (no p2p)");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  cpplan::fuzz::no_throw("topology file", [&] { check_file(text); });
  cpplan::fuzz::no_throw("nvidia-smi topo import", [&] { check_import(text); });
  return 0;
}
