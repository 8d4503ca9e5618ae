// Topology-aware placement through the cpplan command: the JSON placement, the human layout with
// CUDA_VISIBLE_DEVICES, launch lines and DeviceMesh, --explain, `list topologies`, `topo import`,
// and one line naming field, value and rule (exit 3) for every bad input.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include <fmt/format.h>

#include "core/fit.h"
#include "tests/cli/run_cli.h"
#include "tests/support/fixtures.h"

using cpplan::test::run_cli;
using nlohmann::json;

namespace {
std::string data(const std::string& path) { return std::string(CPPLAN_TEST_PROFILES) + "/../tests/data/" + path; }
int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

// The first line of `text` that starts with `prefix` (empty when none).
std::string line_starting(const std::string& text, const std::string& prefix) {
  for (std::size_t start = 0; start < text.size();) {
    const auto nl = text.find('\n', start);
    const std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (line.rfind(prefix, 0) == 0) return line;
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return {};
}

const std::vector<std::string> kWan2Nodes = {"--topology", "dgx-h100", "--nodes", "2", "--model", "wan2.1-t2v-14b",
                                             "--res", "1280x720", "--frames", "81"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

void expect_invalid(const std::vector<std::string>& args, const std::string& message) {
  const auto r = run_cli(args);
  INFO(r.err);
  CHECK(r.code == 3);
  CHECK(r.out.empty());
  CHECK(r.err == "cpplan: " + message + "\n");
  CHECK(lines(r.err) == 1);
}
}  // namespace

TEST_CASE("the JSON of a topology query gives every plan its placement", "[cli][topology]") {
  const auto r = run_cli(with(kWan2Nodes, {"--json"}));
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  CHECK(j["gpus"] == 16);
  CHECK(j["hardware"] == "h100-sxm");  // from the topology
  CHECK(j["topology"]["name"] == "dgx-h100");
  CHECK(j["topology"]["nodes"] == 2);
  REQUIRE(!j["plans"].empty());
  for (const auto& p : j["plans"]) {
    const json& pl = p["placement"];
    REQUIRE(pl.is_object());
    CHECK(pl["axis_order"].size() == 6);
    std::set<std::string> names(pl["axis_order"].begin(), pl["axis_order"].end());
    CHECK(names == std::set<std::string>{"tp", "ulysses", "ring", "pp", "cfg", "dp"});
    REQUIRE(pl["devices"].size() == 16);
    for (int r = 0; r < 16; ++r) {
      CHECK(pl["devices"][r]["rank"] == r);
      CHECK(pl["devices"][r]["node"] == r / 8);
    }
    for (const char* axis : {"ulysses", "ring", "tp", "pp", "cfg", "dp"}) {  // each axis partitions the ranks
      std::set<int> seen;
      for (const auto& g : pl["groups"][axis])
        for (int rank : g) CHECK(seen.insert(rank).second);
      CHECK(seen.size() == 16);
    }
    const int u = p["ulysses_degree"];
    CHECK(pl["groups"]["ulysses"][0].size() == static_cast<std::size_t>(u));
  }
  const json& top = j["plans"][0]["placement"];
  CHECK(top["bandwidth"]["ulysses"]["crosses_nodes"] == false);
  for (const auto& g : top["groups"]["ulysses"]) {
    std::set<int> nodes;
    for (int rank : g) nodes.insert(top["devices"][rank]["node"].get<int>());
    CHECK(nodes.size() == 1);
  }
}

TEST_CASE("the human output prints the layout, CUDA_VISIBLE_DEVICES, torchrun and srun, and the DeviceMesh",
          "[cli][topology]") {
  const auto r = run_cli(kWan2Nodes);
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("busbw GB/s @nodes"));
  CHECK_THAT(r.out, Catch::Contains("placement on dgx-h100 x 2 nodes (16 GPUs)"));
  CHECK_THAT(r.out, Catch::Contains("CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7"));
  CHECK_THAT(r.out, Catch::Contains("torchrun --nnodes 2 --nproc-per-node 8 --node-rank <0..1>"));
  CHECK_THAT(r.out, Catch::Contains("srun -N 2 --ntasks-per-node 8"));
  CHECK_THAT(r.out, Catch::Contains("init_device_mesh(\"cuda\", ("));
  CHECK_THAT(r.out, Catch::Contains("mesh_dim_names=("));
  CHECK_THAT(line_starting(r.out, "  ulysses "), Catch::Matches("  ulysses +8  within a node +\\[0-7\\] \\[8-15\\] .*"));
}

TEST_CASE("the --explain flag prints each group's bandwidth and the cost terms", "[cli][topology][explain]") {
  const auto r = run_cli({"--topology", "8x-l40s-pcie", "--model", "wan2.1-t2v-14b", "--res", "1280x720", "--frames",
                          "81", "--explain"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("explain: ulysses 4 x cfg 2 (Ulysses), groups placed on 8x-l40s-pcie"));
  CHECK_THAT(r.out, Catch::Contains("busbw GB/s"));
  // PCIe's efficiency in the l40s profile, 0.75, times the shipped fit's multiplier for PCIe links.
  const auto fit = cpplan::load_runtime_fit(cpplan::test::profiles_dir() + "/fits/published-flux.toml");
  REQUIRE(fit);
  const double eff = 0.75 * fit->links.at("pcie");
  CHECK_THAT(line_starting(r.out.substr(r.out.find("explain:")), "  ulysses "),
             Catch::Matches(fmt::format("  ulysses +4 +2  all_to_all  1 switch +32\\.0 +{:.2f} +{:.1f} .*", eff, 32 * eff)));
  CHECK_THAT(r.out, Catch::Contains("bottleneck: cut gpu0"));
  CHECK_THAT(r.out, Catch::Contains("cost terms per step (runtime diffusers): GPU"));
  // Without a topology --explain uses the hardware profile's links.
  const auto plain = run_cli({"--gpus", "4", "--res", "1024x1024", "--hardware", "h100-sxm", "--explain"});
  REQUIRE(plain.code == 0);
  CHECK_THAT(plain.out, Catch::Contains("groups on h100-sxm's links (no --topology)"));
  const auto check = run_cli({"check", "--topology", "dgx-h100", "--nodes", "2", "--model", "wan2.1-t2v-14b", "--res",
                              "1280x720", "--frames", "81", "--ring", "2", "--ulysses", "8", "--explain"});
  REQUIRE(check.code == 0);
  CHECK_THAT(check.out, Catch::Contains("placement on dgx-h100 x 2 nodes"));
  CHECK_THAT(check.out, Catch::Contains("explain: ring 2 x ulysses 8"));
}

TEST_CASE("a subset of one node, a planning-only TPU slice and a user's topology file", "[cli][topology]") {
  const auto four = run_cli({"--topology", "8x-l40s-pcie", "--gpus", "4", "--res", "1024x1024", "--json"});
  REQUIRE(four.code == 0);
  CHECK(json::parse(four.out)["plans"][0]["placement"]["devices"].size() == 4);

  const auto tpu = run_cli({"--topology", "tpu-v5e-4x4", "--res", "1024x1024"});
  REQUIRE(tpu.code == 0);
  CHECK_THAT(tpu.out, Catch::Contains("planning only: tpu-v5e-4x4 is not a CUDA machine"));
  CHECK_THAT(tpu.out, !Catch::Contains("torchrun --nnodes"));

  const auto file = run_cli({"--topology-file", data("topologies/small-pcie.toml"), "--nodes", "2", "--res", "1024x1024"});
  REQUIRE(file.code == 0);
  CHECK_THAT(file.out, Catch::Contains("placement on small-pcie x 2 nodes (8 GPUs)"));
}

TEST_CASE("list topologies shows the built-ins", "[cli][topology]") {
  const auto r = run_cli({"list", "topologies"});
  REQUIRE(r.code == 0);
  for (const char* n : {"dgx-h100", "hgx-h200", "dgx-a100", "8x-l40s-pcie", "8x-l20-pcie", "4x-rtx4090-pcie",
                        "4x-a100-pcie", "tpu-v5e-4x4", "tpu-v6e-4x4", "mi300x-8", "mi325x-8", "mi355x-8"})
    CHECK_THAT(r.out, Catch::Contains(n));
  const auto j = run_cli({"list", "topologies", "--json"});
  REQUIRE(j.code == 0);
  CHECK(json::parse(j.out).size() == 12);
}

TEST_CASE("topo import prints a topology that the planner loads", "[cli][topology][import]") {
  const auto r = run_cli({"topo", "import", data("topo/8x-l40s.txt"), "--hardware", "l40s"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("hardware = \"l40s\""));
  CHECK_THAT(r.out, Catch::Contains("kind = \"pcie_switch\""));
  const auto dir = std::filesystem::temp_directory_path() / "cpplan-test-cli-import";
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "my-l40s.toml").string();
  const auto w = run_cli({"topo", "import", data("topo/8x-l40s.txt"), "--hardware", "l40s", "-o", out});
  REQUIRE(w.code == 0);
  CHECK_THAT(w.out, Catch::Contains("wrote " + out));
  const auto planned = run_cli({"--topology-file", out, "--model", "wan2.1-t2v-14b", "--res", "1280x720", "--frames",
                                "81", "--json"});
  REQUIRE(planned.code == 0);
  CHECK(json::parse(planned.out)["topology"]["name"] == "my-l40s");
}

TEST_CASE("bad topology input is one line naming the field, the value and the rule", "[cli][topology][errors]") {
  expect_invalid({"--gpus", "8", "--nodes", "2", "--hardware", "h100-sxm"}, "--nodes = 2: h100-sxm's profile describes no node ([node]): name the box with --topology or --topology-file, or give --gpus alone (8 GPUs per node)");
  expect_invalid({"--topology", "dgx-h10"}, "--topology = dgx-h10: unknown profile; did you mean dgx-h100 or dgx-a100?");
  expect_invalid({"--topology", "dgx-h100", "--topology-file", "x.toml"},
                 "--topology-file = x.toml: cannot be combined with --topology = dgx-h100");
  expect_invalid({"--topology", "dgx-h100", "--gpus", "12"},
                 "--gpus = 12: must be at most dgx-h100's 8 GPUs (add --nodes N for more)");
  expect_invalid({"--topology", "dgx-h100", "--nodes", "2", "--gpus", "12"},
                 "--gpus = 12: must equal --nodes x dgx-h100's 8 GPUs = 16 (or leave --gpus out)");
  expect_invalid({"--topology", "dgx-h100", "--nodes", "0"}, "--nodes = 0: must be between 1 and 16384");
  expect_invalid({"--topology", "dgx-h100", "--nodes", "two"}, "--nodes = two: must be an integer");
  const auto dir = std::filesystem::temp_directory_path() / "cpplan-test-cli-import";
  std::filesystem::create_directories(dir);
  const std::string workstation = (dir / "workstation.toml").string();  // no NIC, no [network]
  REQUIRE(run_cli({"topo", "import", data("topo/4x-rtx4090.txt"), "--hardware", "rtx4090", "-o", workstation}).code == 0);
  expect_invalid({"--topology-file", workstation, "--nodes", "2"},
                 "--nodes = 2: topology workstation has no [network] table to join nodes");
  const std::string broken = data("topologies-broken/unknown-device.toml");
  expect_invalid({"--topology-file", broken},
                 broken + ": links[1].to = \"pcie3\": pcie3 is not a device (did you mean pcie0?)");
  expect_invalid({"--topology-file", "/nonexistent/t.toml"}, "/nonexistent/t.toml: not a readable file");
  const std::string short_row = data("topo/broken-short-row.txt");
  expect_invalid({"topo", "import", short_row, "--hardware", "l40s"},
                 short_row + ":4: GPU2 = 4 entries: must have 10 (one per column)");
  expect_invalid({"topo", "import", data("topo/8x-l40s.txt")},
                 "--hardware: required (the GPUs' hardware profile, cpplan list hardware)");
  expect_invalid({"topo", "import", data("topo/8x-l40s.txt"), "--hardware", "l40s", "--pcie-gbps", "0"},
                 "--pcie-gbps = 0: must be above 0 and at most 1000000");
  expect_invalid({"topo", "import", "/nonexistent.txt", "--hardware", "l40s"}, "topo import /nonexistent.txt: not a readable file");
  expect_invalid({"list", "topology"}, "list topology: must be models, hardware, topologies, frameworks or classes");
}

TEST_CASE("two PCIe nodes of L40S rank PipeFusion hybrids with their xDiT flags, and --explain has the fill and drain and sends",
          "[cli][topology][pipefusion]") {
  const auto r = run_cli({"--topology", "8x-l40s-pcie", "--nodes", "2", "--gpus", "16", "--model", "flux.1-dev", "--res",
                          "2048x2048", "--explain", "--json"});
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  int hybrids_in_top5 = 0;
  for (int i = 0; i < 5; ++i) {
    const json& p = j["plans"][i];
    if (p["pipefusion_degree"].get<int>() > 1 && p["ulysses_degree"].get<int>() * p["ring_degree"].get<int>() > 1)
      ++hybrids_in_top5;
  }
  CHECK(hybrids_in_top5 >= 1);
  const json& top = j["plans"][0];
  if (top["pipefusion_degree"].get<int>() > 1) {
    // The stages' sends cross the slow links: the pp groups span both nodes.
    CHECK(top["predicted"]["pipefusion"]["p2p_bytes"].get<double>() > 0);
    CHECK(top["predicted"]["pipefusion"]["fill_drain_ms"].get<double>() > 0);
  }
  const auto text = run_cli({"--topology", "8x-l40s-pcie", "--nodes", "2", "--gpus", "16", "--model", "flux.1-dev",
                             "--res", "2048x2048", "--explain"});
  REQUIRE(text.code == 0);
  if (top["pipefusion_degree"].get<int>() > 1) {
    CHECK_THAT(text.out, Catch::Contains("--pipefusion_parallel_degree " + std::to_string(top["pipefusion_degree"].get<int>())));
    CHECK_THAT(text.out, Catch::Contains("pipefusion: "));
    CHECK_THAT(text.out, Catch::Contains("fill/drain "));
    CHECK_THAT(text.out, Catch::Contains("point-to-point: "));
  }
}

TEST_CASE("a fully-sharded plan's placement lists its groups of consecutive ranks", "[cli][topology][fully_shard]") {
  // ulysses 8 x fs 4 on one 8-GPU node: the weight groups are ranks 0-3 and 4-7 (docs/usage.md,
  // "Fully sharded weights": F consecutive ranks).
  const std::vector<std::string> args = {"check", "--topology", "8x-l20-pcie", "--model", "flux.2-dev", "--res",
                                         "1024x1024", "--ulysses", "8", "--fully-shard", "4"};
  const auto r = run_cli(with(args, {"--json"}));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  const json& groups = j["placement"]["groups"];  // check prints the plan itself
  CHECK(groups["fs"] == json::parse("[[0, 1, 2, 3], [4, 5, 6, 7]]"));
  CHECK(groups["ulysses"] == json::parse("[[0, 1, 2, 3, 4, 5, 6, 7]]"));
  const auto text = run_cli(args);
  REQUIRE(text.code == 0);
  CHECK_THAT(line_starting(text.out, "  fs "), Catch::Contains("[0-3] [4-7]") && Catch::Contains("all_gather"));
}

TEST_CASE("without --topology, --explain on a PCIe GPU names each group's span and the link that bounds it",
          "[cli][topology][explain][node]") {
  // xDiT's setting: 16 x L40 in two nodes of 8 (the l40 profile's [node]), joined by 2 x 100 GbE.
  const auto r = run_cli({"check", "--gpus", "16", "--hardware", "l40", "--model", "flux.1-dev", "--ulysses", "8",
                          "--ring", "2", "--explain"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("groups in the default layout on l40's usual node x 2 (8 GPUs, 2 sockets, 4 per "
                                    "PCIe switch; the profile's [node], no --topology)"));
  const std::string table = r.out.substr(r.out.find("explain:"));
  // Ulysses inside a node over both sockets (7 x 40 / 16 = 17.5 GB/s, a quarter of it across the
  // sockets: 4.4); Ring across the nodes at a quarter of a NIC each (12.5 / 4 = 3.1 GB/s raw, x 0.7
  // = 2.2), 20 us apart (tests/planner/test_node_pricing.cpp).
  CHECK_THAT(line_starting(table, "  ulysses "), Catch::Matches("  ulysses +8 +2  all_to_all  2 sockets +4\\.4 .* 20\\.0 .*"));
  CHECK_THAT(line_starting(table, "  ring "), Catch::Matches("  ring +2 +8  all_gather  2 nodes +3\\.1 +0\\.70 +2\\.2 +20\\.0 .*"));
  CHECK_THAT(table, Catch::Contains("bottleneck: cut {gpu0, gpu1, gpu2, gpu3} (4 GPUs): max-flow 40 GB/s out over cpu0 -> cpu1 for 16 pairs of ranks, all-to-all across sockets at 0.25 of it"));
  CHECK_THAT(table, Catch::Contains("bottleneck: n0.nic0 -> switch: 12.5 GB/s shared by 4 hops"));
  // No placement block: the plan runs in the frameworks' own rank order.
  CHECK_THAT(r.out, !Catch::Contains("placement on"));
}

TEST_CASE("without --topology, --nodes counts the nodes of a PCIe GPU's profile", "[cli][topology][node]") {
  const auto r = run_cli({"--nodes", "2", "--hardware", "l40", "--model", "flux.1-dev", "--json"});
  REQUIRE(r.code == 0);
  CHECK(json::parse(r.out)["gpus"] == 16);
  expect_invalid({"--nodes", "2", "--gpus", "12", "--hardware", "l40"},
                 "--gpus = 12: must equal --nodes x l40's 8 GPUs per node = 16 (or leave --gpus out)");
}
