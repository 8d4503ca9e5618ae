// Topology files (profiles/topologies/, docs/topology.md): the built-ins, every validation rule
// with its message, the TOML writer, and `nvidia-smi topo -m` imports of realistic outputs.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/topology.h"
#include "core/topology_import.h"
#include "tests/support/fixtures.h"

using namespace cpplan;

namespace {
std::string data(const std::string& path) { return std::string(CPPLAN_TEST_PROFILES) + "/../tests/data/" + path; }

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int count_kind(const Topology& t, DeviceKind k) {
  return static_cast<int>(std::count_if(t.devices.begin(), t.devices.end(), [&](const TopoDevice& d) { return d.kind == k; }));
}

int links_of(const Topology& t, const std::string& device, LinkType type) {
  const int d = t.find(device);
  return static_cast<int>(std::count_if(t.links.begin(), t.links.end(), [&](const TopoLink& l) {
    return l.type == type && (l.from == d || l.to == d);
  }));
}

bool linked(const Topology& t, const std::string& a, const std::string& b) {
  const int x = t.find(a), y = t.find(b);
  return std::any_of(t.links.begin(), t.links.end(),
                     [&](const TopoLink& l) { return (l.from == x && l.to == y) || (l.from == y && l.to == x); });
}

Topology import(const std::string& fixture, const std::string& hardware = "h100-sxm") {
  TopoImportOptions o;
  o.hardware = hardware;
  auto t = import_nvidia_smi_topo(read(data("topo/" + fixture)), fixture, o);
  INFO(fixture << ": " << (t ? "" : t.error().message));
  REQUIRE(t.ok());
  return std::move(t).value();
}
}  // namespace

TEST_CASE("every built-in topology loads and names a hardware profile of the catalog", "[core][topology]") {
  const auto names = test::catalog().topology_names();
  CHECK(names.size() == 12);
  for (const char* n : {"dgx-h100", "hgx-h200", "dgx-a100", "8x-l40s-pcie", "8x-l20-pcie", "4x-rtx4090-pcie",
                        "4x-a100-pcie", "tpu-v5e-4x4", "tpu-v6e-4x4", "mi300x-8", "mi325x-8", "mi355x-8"}) {
    INFO(n);
    const Topology* t = test::catalog().find_topology(n);
    REQUIRE(t != nullptr);
    CHECK(test::catalog().find_hardware(t->hardware) != nullptr);
  }
  CHECK(test::catalog().find_topology("dgx-h100")->hardware == "h100-sxm");
  CHECK(test::catalog().find_topology("hgx-h200")->hardware == "h200-sxm");
  CHECK(test::catalog().find_topology("dgx-a100")->hardware == "a100-sxm-80g");
}

TEST_CASE("xDiT's PCIe boxes: 4 A100s under one switch without peer-to-peer, 8 L20s on two sockets of one switch each",
          "[core][topology]") {
  const Topology& a100 = *test::catalog().find_topology("4x-a100-pcie");
  CHECK(a100.gpus == 4);
  CHECK(a100.hardware == "a100-sxm-80g");
  CHECK(count_kind(a100, DeviceKind::kNvSwitch) == 0);  // no NVLink
  CHECK(count_kind(a100, DeviceKind::kPcieSwitch) == 1);
  for (int g = 0; g < 4; ++g) CHECK(a100.switch_of(g) == a100.find("pcie0"));
  // Its switch stages peer traffic through host memory (the box's timings; the file says why).
  CHECK_FALSE(a100.devices[a100.find("pcie0")].p2p);
  CHECK(linked(a100, "pcie0", "memory0"));
  const Topology& l20 = *test::catalog().find_topology("8x-l20-pcie");
  CHECK(l20.gpus == 8);
  CHECK(count_kind(l20, DeviceKind::kCpu) == 2);
  CHECK(count_kind(l20, DeviceKind::kPcieSwitch) == 2);
  for (int g = 0; g < 8; ++g) {
    CHECK(l20.switch_of(g) == l20.find(g < 4 ? "pcie0" : "pcie1"));
    CHECK(l20.socket_of(g) == l20.find(g < 4 ? "cpu0" : "cpu1"));
  }
  CHECK(linked(l20, "cpu0", "cpu1"));
  CHECK(l20.nic_count() == 2);
}

TEST_CASE("dgx-h100 is 8 GPUs on one NVSwitch with a PCIe switch and a 400 Gb/s NIC per GPU", "[core][topology]") {
  const Topology& t = *test::catalog().find_topology("dgx-h100");
  CHECK(t.gpus == 8);
  CHECK(count_kind(t, DeviceKind::kNvSwitch) == 1);
  CHECK(count_kind(t, DeviceKind::kPcieSwitch) == 8);
  CHECK(count_kind(t, DeviceKind::kCpu) == 2);
  CHECK(t.nic_count() == 8);
  CHECK(links_of(t, "nvswitch", LinkType::kNvLink) == 8);
  CHECK(linked(t, "gpu3", "pcie3"));
  CHECK(linked(t, "nic3", "pcie3"));
  CHECK(linked(t, "pcie5", "cpu1"));
  CHECK(t.devices[t.find("nic0")].bandwidth_gbps == 50);
  CHECK(t.has_network);
  CHECK(t.network.kind == NetworkKind::kRail);
  CHECK_FALSE(t.planning_only);
}

TEST_CASE("the PCIe servers put four GPUs under each switch and the RTX workstation refuses P2P", "[core][topology]") {
  const Topology& l40s = *test::catalog().find_topology("8x-l40s-pcie");
  for (int g = 0; g < 8; ++g) CHECK(linked(l40s, "gpu" + std::to_string(g), g < 4 ? "pcie0" : "pcie1"));
  CHECK(linked(l40s, "cpu0", "cpu1"));
  const Topology& rtx = *test::catalog().find_topology("4x-rtx4090-pcie");
  CHECK_FALSE(rtx.devices[rtx.find("cpu0")].p2p);
  CHECK(linked(rtx, "cpu0", "memory0"));
}

TEST_CASE("the TPU slices are 4 x 4 tori of ICI links, for planning only", "[core][topology]") {
  for (const char* n : {"tpu-v5e-4x4", "tpu-v6e-4x4"}) {
    const Topology& t = *test::catalog().find_topology(n);
    CHECK(t.planning_only);
    CHECK(t.gpus == 16);
    int ici = 0;
    for (const auto& l : t.links) ici += l.type == LinkType::kIci;
    CHECK(ici == 32);  // 16 chips x 4 neighbours / 2
    for (int g = 0; g < 16; ++g) CHECK(links_of(t, "gpu" + std::to_string(g), LinkType::kIci) == 4);
    CHECK(linked(t, "gpu0", "gpu3"));   // wraparound in x
    CHECK(linked(t, "gpu0", "gpu12"));  // wraparound in y
  }
  auto ici = [](const char* n) {
    for (const auto& l : test::catalog().find_topology(n)->links)
      if (l.type == LinkType::kIci) return l.bandwidth_gbps;
    return 0.0;
  };
  CHECK(ici("tpu-v5e-4x4") == 50);   // 400 GB/s bidirectional per chip over 4 links
  CHECK(ici("tpu-v6e-4x4") == 100);  // 800
}

TEST_CASE("device name ranges expand, and malformed ones are refused", "[core][topology]") {
  CHECK(expand_names("gpu{0..3}") == std::vector<std::string>{"gpu0", "gpu1", "gpu2", "gpu3"});
  CHECK(expand_names("n{2..3}.x") == std::vector<std::string>{"n2.x", "n3.x"});
  CHECK(expand_names("nvswitch") == std::vector<std::string>{"nvswitch"});
  CHECK(expand_names("gpu{3..1}").empty());
  CHECK(expand_names("gpu{a..b}").empty());
  CHECK(expand_names("gpu{0..1}{0..1}").empty());
  CHECK(expand_names("gpu}").empty());
  CHECK(expand_names("").empty());
}

TEST_CASE("a broken topology file is refused with the file, the field, the value and the rule", "[core][topology]") {
  const std::map<std::string, std::string> expected = {
      {"bad-range", "devices[0].name = \"pcie{1..0}\": must be a name or one range name{first..last}"},
      {"count-mismatch", "links[2].to = \"gpu{0..2}\": expands to 3 devices: must be 1 or as many as from (2)"},
      {"disconnected", "links = gpu3: every GPU must be connected to gpu0 through the links"},
      {"link-kind", "links[0].kind = \"pci\": must be one of nvlink, pcie, socket, memory, ici or xgmi"},
      {"name-mismatch", "name = \"other\": must equal the file name \"name-mismatch\""},
      {"network-kind", "network.kind = \"fat_tree\": must be one of rail or switch"},
      {"nic-bandwidth", "devices[2].bandwidth_gbps = (missing): is required"},
      {"no-memory", "devices = cpu0 (p2p = false): needs a link to a memory device: its traffic is staged through host memory"},
      {"reserved-name", "devices[1].name = \"gpu7\": gpu0 .. gpu3 are declared by gpus"},
      {"self-link", "links[3].to = \"cpu0\": links cpu0 to itself"},
      {"switch-bandwidth", "devices[0].bandwidth_gbps = 64: only a nic has a bandwidth (set it on the links)"},
      {"torus-dims", "torus.dims = [3, 3]: each at least 1 and their product must equal gpus = 4"},
      {"unknown-device", "links[1].to = \"pcie3\": pcie3 is not a device (did you mean pcie0?)"},
      {"unknown-field", "gpu_count = ...: unknown field"},
      {"xgmi-to-host", "links[3].kind = \"xgmi\": must join two GPUs (gpu0 to cpu0)"},
  };
  for (const auto& [name, message] : expected) {
    const std::string path = data("topologies-broken/" + name + ".toml");
    auto t = load_topology(path);
    INFO(name);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message == path + ": " + message);
  }
  const std::string bad_toml = data("topologies-broken/bad-toml.toml");
  auto t = load_topology(bad_toml);
  REQUIRE_FALSE(t.ok());
  CHECK_THAT(t.error().message, Catch::StartsWith(bad_toml + ":3:8: invalid TOML"));
}

TEST_CASE("a user's topology must name a hardware profile of the catalog", "[core][topology]") {
  const std::string path = data("topologies-broken/unknown-hardware.toml");
  auto t = test::catalog().load_topology_file(path);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().message == path + ": hardware = \"h100-sxn\": unknown hardware profile; did you mean h100-sxm or h200-sxm?");
  auto ok = test::catalog().load_topology_file(data("topologies/small-pcie.toml"));
  REQUIRE(ok.ok());
  CHECK(ok->gpus == 4);
}

TEST_CASE("to_toml writes a topology that loads back identical, with ranges folded", "[core][topology]") {
  for (const Topology& t : test::catalog().topologies()) {
    INFO(t.name);
    const auto dir = std::filesystem::temp_directory_path() / "cpplan-test-topology";
    std::filesystem::create_directories(dir);
    const auto path = (dir / (t.name + ".toml")).string();
    const std::string text = to_toml(t);
    std::ofstream(path) << text;
    auto back = load_topology(path);
    INFO(text);
    REQUIRE(back.ok());
    CHECK(back->gpus == t.gpus);
    CHECK(back->hardware == t.hardware);
    CHECK(back->planning_only == t.planning_only);
    REQUIRE(back->devices.size() == t.devices.size());
    for (std::size_t i = 0; i < t.devices.size(); ++i) {
      CHECK(back->devices[i].name == t.devices[i].name);
      CHECK(back->devices[i].kind == t.devices[i].kind);
      CHECK(back->devices[i].p2p == t.devices[i].p2p);
    }
    REQUIRE(back->links.size() == t.links.size());
    for (const TopoLink& l : t.links)
      CHECK(std::any_of(back->links.begin(), back->links.end(), [&](const TopoLink& m) {
        return m.from == l.from && m.to == l.to && m.type == l.type && m.bandwidth_gbps == l.bandwidth_gbps &&
               m.latency_us == l.latency_us;
      }));
  }
  CHECK_THAT(to_toml(*test::catalog().find_topology("dgx-h100")), Catch::Contains("from = \"gpu{0..7}\"\nto = \"pcie{0..7}\""));
}

TEST_CASE("importing a DGX H100 finds its NVSwitch, one PCIe switch per GPU and NIC, and two sockets", "[core][topology][import]") {
  const Topology t = import("dgx-h100.txt");  // header underlined with ANSI escapes, NIC legend
  CHECK(t.gpus == 8);
  CHECK(count_kind(t, DeviceKind::kNvSwitch) == 1);
  CHECK(links_of(t, "nvswitch", LinkType::kNvLink) == 8);
  CHECK(t.links[0].bandwidth_gbps == 18 * 25);  // NV18 x 25 GB/s
  CHECK(count_kind(t, DeviceKind::kPcieSwitch) == 8);
  for (int g = 0; g < 8; ++g) {
    const std::string sw = "pcie" + std::to_string(g);
    CHECK(linked(t, "gpu" + std::to_string(g), sw));
    CHECK(linked(t, "nic" + std::to_string(g), sw));
    CHECK(linked(t, sw, g < 4 ? "cpu0" : "cpu1"));
  }
  CHECK(count_kind(t, DeviceKind::kCpu) == 2);
  CHECK(linked(t, "nic8", "cpu0"));  // storage NICs sit on the root complexes
  CHECK(linked(t, "nic9", "cpu1"));
  CHECK(t.nic_count() == 10);
  CHECK(t.network.kind == NetworkKind::kRail);
  CHECK_THAT(t.description, Catch::Contains("mlx5_0"));
}

TEST_CASE("importing a DGX A100 reads mlx5 columns and PXB switch trees on NUMA nodes", "[core][topology][import]") {
  const Topology t = import("dgx-a100.txt", "a100-sxm-80g");
  CHECK(count_kind(t, DeviceKind::kNvSwitch) == 1);
  CHECK(t.links[0].bandwidth_gbps == 12 * 25);
  CHECK(count_kind(t, DeviceKind::kPcieSwitch) == 4);
  CHECK(t.nic_count() == 10);
  // GPU0, GPU1 and their two NICs under one switch; GPU2 under another.
  const int sw0 = [&] {
    for (const auto& l : t.links)
      if (l.from == t.find("gpu0") && t.devices[l.to].kind == DeviceKind::kPcieSwitch) return l.to;
    return -1;
  }();
  REQUIRE(sw0 >= 0);
  CHECK(linked(t, "gpu1", t.devices[sw0].name));
  CHECK(linked(t, "nic0", t.devices[sw0].name));
  CHECK(linked(t, "nic1", t.devices[sw0].name));
  CHECK_FALSE(linked(t, "gpu2", t.devices[sw0].name));
  CHECK(count_kind(t, DeviceKind::kCpu) == 6);  // NPS4: NUMA nodes 3, 1, 7, 5 with GPUs, 2 and 6 with storage NICs
}

TEST_CASE("importing an 8-GPU L40S server finds two switch trees on two sockets and no NVLink", "[core][topology][import]") {
  const Topology t = import("8x-l40s.txt", "l40s");
  CHECK(count_kind(t, DeviceKind::kNvSwitch) == 0);
  CHECK(std::none_of(t.links.begin(), t.links.end(), [](const TopoLink& l) { return l.type == LinkType::kNvLink; }));
  CHECK(count_kind(t, DeviceKind::kPcieSwitch) == 2);
  CHECK(count_kind(t, DeviceKind::kCpu) == 2);
  CHECK(linked(t, "gpu0", "pcie0"));
  CHECK(linked(t, "gpu3", "pcie0"));  // PIX pairs under one PXB tree
  CHECK(linked(t, "gpu4", "pcie1"));
  CHECK(linked(t, "nic0", "pcie0"));
  CHECK(linked(t, "cpu0", "cpu1"));
  CHECK(t.network.kind == NetworkKind::kSwitch);  // fewer NICs than GPUs
}

TEST_CASE("importing NVLink bridges and a hybrid cube mesh makes direct GPU links", "[core][topology][import]") {
  const Topology pairs = import("4x-a100-pcie-nvlink-pairs.txt", "a100-sxm-80g");
  CHECK(count_kind(pairs, DeviceKind::kNvSwitch) == 0);
  CHECK(linked(pairs, "gpu0", "gpu2"));
  CHECK(linked(pairs, "gpu1", "gpu3"));
  CHECK_FALSE(linked(pairs, "gpu0", "gpu1"));
  CHECK(count_kind(pairs, DeviceKind::kPcieSwitch) == 2);

  const Topology cube = import("dgx1-v100.txt");  // no NUMA column: sockets from the CPU affinity
  int nvlinks = 0;
  for (const auto& l : cube.links) nvlinks += l.type == LinkType::kNvLink;
  CHECK(nvlinks == 16);
  CHECK(count_kind(cube, DeviceKind::kCpu) == 2);
  for (int g = 0; g < 8; ++g) {  // 6 NVLinks per V100: NV1 = 25, NV2 = 50 GB/s
    double total = 0;
    for (const auto& l : cube.links)
      if (l.type == LinkType::kNvLink && (l.from == g || l.to == g)) total += l.bandwidth_gbps;
    CHECK(total == 6 * 25);
  }
}

TEST_CASE("importing without P2P stages traffic through host memory", "[core][topology][import]") {
  TopoImportOptions o;
  o.hardware = "rtx4090";
  o.p2p = false;
  auto t = import_nvidia_smi_topo(read(data("topo/4x-rtx4090.txt")), "4x-rtx4090.txt", o);
  REQUIRE(t.ok());
  CHECK(count_kind(*t, DeviceKind::kCpu) == 1);
  CHECK_FALSE(t->devices[t->find("cpu0")].p2p);
  CHECK(linked(*t, "cpu0", "memory0"));
  CHECK_FALSE(t->has_network);
}

TEST_CASE("every import writes a file that loads back", "[core][topology][import]") {
  const auto dir = std::filesystem::temp_directory_path() / "cpplan-test-import";
  std::filesystem::create_directories(dir);
  for (const char* f : {"dgx-h100.txt", "dgx-a100.txt", "8x-l40s.txt", "4x-rtx4090.txt", "4x-a100-pcie-nvlink-pairs.txt",
                        "dgx1-v100.txt"}) {
    INFO(f);
    Topology t = import(f);
    t.name = "imported";
    const auto path = (dir / "imported.toml").string();
    std::ofstream(path) << to_toml(t);
    auto back = load_topology(path);
    INFO((back ? "" : back.error().message));
    REQUIRE(back.ok());
    CHECK(back->links.size() == t.links.size());
    CHECK(back->devices.size() == t.devices.size());
  }
}

TEST_CASE("a broken nvidia-smi output is refused with the file, the line and the entry", "[core][topology][import]") {
  TopoImportOptions o;
  o.hardware = "h100-sxm";
  auto check = [&](const std::string& fixture, const std::string& message) {
    auto t = import_nvidia_smi_topo(read(data("topo/" + fixture)), fixture, o);
    INFO(fixture);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message == message);
  };
  check("broken-asymmetric.txt", "broken-asymmetric.txt: GPU0/GPU1 = NV18 but GPU1/GPU0 = PIX: must be symmetric");
  check("broken-entry.txt", "broken-entry.txt:3: GPU1/GPU0 = \"NVX\": must be X, NV#, PIX, PXB, PHB, NODE or SYS");
  check("broken-short-row.txt", "broken-short-row.txt:4: GPU2 = 4 entries: must have 10 (one per column)");
  check("broken-not-topo.txt",
        "broken-not-topo.txt: no header line starting with GPU0: not the output of nvidia-smi topo -m");
  auto diagonal = import_nvidia_smi_topo("\tGPU0\tGPU1\nGPU0\tNV4\tNV4\nGPU1\tNV4\t X \n", "diag.txt", o);
  REQUIRE_FALSE(diagonal.ok());
  CHECK(diagonal.error().message == "diag.txt:2: GPU0/GPU0 = \"NV4\": must be X (the device itself)");
  auto missing = import_nvidia_smi_topo("\tGPU0\tGPU1\nGPU0\t X \tNV4\n", "missing.txt", o);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message == "missing.txt: GPU1 = (no row): every column needs its row");
}
