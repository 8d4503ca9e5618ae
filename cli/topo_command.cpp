#include "cli/topo_command.h"

#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "cli/app.h"
#include "core/profiles.h"
#include "core/topology_import.h"

namespace cpplan::cli {

void add_topo_import_options(CLI::App& import, Args& a) {
  import.add_option("file", a.topo_input, "saved output of `nvidia-smi topo -m` (- for standard input)")->required();
  import.add_option("--name", a.topo_name, "topology name (default: the --output file's stem, else \"imported\")");
  import.add_option("-o,--output", a.topo_output, "write the TOML here (default: standard output)");
  import.add_option("--nvlink-gbps", a.nvlink_gbps, "GB/s per NVLink per direction (default 25: NV18 = 450)");
  import.add_option("--pcie-gbps", a.pcie_gbps, "GB/s per PCIe link per direction (default 32: Gen4 x16)");
  import.add_option("--nic-gbps", a.nic_gbps, "GB/s per NIC port per direction (default 50: 400 Gb/s)");
  import.add_option("--socket-gbps", a.socket_gbps, "GB/s between NUMA nodes per direction (default 64)");
  import.add_flag("--no-p2p", a.topo_no_p2p, "GPUs cannot talk peer to peer: traffic staged through host memory");
}

int topo_import_command(const Args& a, const std::string& exe, std::ostream& out) {
  std::string text;
  if (a.topo_input == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(a.topo_input, std::ios::binary);
    std::error_code ec;
    if (!in || std::filesystem::is_directory(a.topo_input, ec))
      throw InvalidInput{fmt::format("topo import {}: not a readable file", a.topo_input)};
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  TopoImportOptions o;
  if (a.hardware.empty()) throw InvalidInput{"--hardware: required (the GPUs' hardware profile, cpplan list hardware)"};
  auto catalog = ProfileCatalog::load(profile_search_path(a.profiles, exe));
  if (!catalog) throw InvalidInput{catalog.error().message};
  if (auto hw = catalog->hardware(a.hardware); !hw) throw InvalidInput{hw.error().message};
  o.hardware = a.hardware;
  const std::string stem = a.topo_output.empty() ? "" : std::filesystem::path(a.topo_output).stem().string();
  o.name = !a.topo_name.empty() ? a.topo_name : (stem.empty() ? "imported" : stem);
  if (!stem.empty() && o.name != stem)
    throw InvalidInput{fmt::format("--name = {}: must equal the --output file's name \"{}\" (a topology's name is its file stem)",
                                   o.name, stem)};
  o.nvlink_gbps = parse_number("--nvlink-gbps", a.nvlink_gbps, 0, 1e6);
  o.pcie_gbps = parse_number("--pcie-gbps", a.pcie_gbps, 0, 1e6);
  o.nic_gbps = parse_number("--nic-gbps", a.nic_gbps, 0, 1e6);
  o.socket_gbps = parse_number("--socket-gbps", a.socket_gbps, 0, 1e6);
  o.p2p = !a.topo_no_p2p;
  auto topology = import_nvidia_smi_topo(text, a.topo_input == "-" ? "(stdin)" : a.topo_input, o);
  if (!topology) throw InvalidInput{topology.error().message};
  const std::string toml = fmt::format("# cpplan topo import {}\n{}", a.topo_input, to_toml(*topology));
  if (a.topo_output.empty()) {
    out << toml;
    return kExitOk;
  }
  std::ofstream file(a.topo_output, std::ios::binary);
  if (!(file << toml) || !file.flush())
    throw InvalidInput{fmt::format("--output = {}: cannot write the file", a.topo_output)};
  file.close();
  // The file must load as the planner will load it.
  auto loaded = catalog->load_topology_file(a.topo_output);
  if (!loaded) {
    fmt::print(out, "cpplan: the imported topology does not load back: {}\n", loaded.error().message);
    return kExitRuntime;
  }
  fmt::print(out, "wrote {}: {}\nuse it with: cpplan --topology-file {} ...\n", a.topo_output, loaded->description,
             a.topo_output);
  return kExitOk;
}

}  // namespace cpplan::cli
