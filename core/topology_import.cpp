#include "core/topology_import.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <optional>
#include <vector>

#include "core/text.h"

namespace cpplan {

namespace {

// Relation between two devices, closest first (nvidia-smi's legend).
enum class Rel { kSelf, kNvLink, kPix, kPxb, kPhb, kNode, kSys };

struct Entry {
  Rel rel = Rel::kSys;
  int nvlinks = 0;  // NV#
};

std::optional<Entry> parse_entry(std::string_view s) {
  if (s == "X") return Entry{Rel::kSelf, 0};
  if (s == "PIX") return Entry{Rel::kPix, 0};
  if (s == "PXB") return Entry{Rel::kPxb, 0};
  if (s == "PHB") return Entry{Rel::kPhb, 0};
  if (s == "NODE") return Entry{Rel::kNode, 0};
  if (s == "SYS" || s == "SOC") return Entry{Rel::kSys, 0};
  if (s.size() > 2 && s.substr(0, 2) == "NV") {
    int n = 0;
    auto [p, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), n);
    if (ec == std::errc() && p == s.data() + s.size() && n >= 1 && n <= 64) return Entry{Rel::kNvLink, n};
  }
  return std::nullopt;
}

// Removes ANSI escape sequences (nvidia-smi underlines the header on a terminal).
std::string strip_ansi(std::string_view in) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\x1b' && i + 1 < in.size() && in[i + 1] == '[') {
      i += 2;
      while (i < in.size() && !((in[i] >= 'A' && in[i] <= 'Z') || (in[i] >= 'a' && in[i] <= 'z'))) ++i;
      continue;
    }
    out += in[i];
  }
  return out;
}

std::vector<std::string> tokens(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.emplace_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool is_gpu_label(std::string_view s) { return s.size() > 3 && s.substr(0, 3) == "GPU" && std::isdigit(static_cast<unsigned char>(s[3])); }

int find_root(std::vector<int>& parent, int v) {
  while (parent[v] != v) v = parent[v] = parent[parent[v]];
  return v;
}

Result<Topology> import_matrix(std::string_view raw, const std::string& file, const TopoImportOptions& o) {
  // Names (NICs) end up in a TOML file, which must be UTF-8; nvidia-smi writes ASCII.
  if (const auto bad = find_invalid_utf8(raw); bad != std::string_view::npos)
    return Error{fmt::format("{}:{}: byte 0x{:02x} is not UTF-8 text: not the output of nvidia-smi topo -m", file,
                             1 + std::count(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(bad), '\n'),
                             static_cast<unsigned char>(raw[bad]))};
  const std::string text = strip_ansi(raw);
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start <= text.size();) {
    const auto nl = text.find('\n', start);
    lines.emplace_back(std::string_view(text).substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }

  // Header: the first line whose first label is GPU0 and whose second is not a matrix entry.
  std::vector<std::string> columns;
  std::size_t header = lines.size();
  for (std::size_t i = 0; i < lines.size() && header == lines.size(); ++i) {
    const auto t = tokens(lines[i]);
    if (t.empty() || t[0] != "GPU0" || (t.size() > 1 && parse_entry(t[1]))) continue;
    header = i;
    for (const auto& label : t) {
      if (label == "CPU" || label == "NUMA" || label == "GPU") break;  // "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"
      columns.push_back(label);
    }
  }
  if (header == lines.size())
    return Error{fmt::format("{}: no header line starting with GPU0: not the output of nvidia-smi topo -m", file)};
  const std::size_t n = columns.size();
  std::map<std::string, std::size_t> column_of;
  for (std::size_t c = 0; c < n; ++c) {
    if (column_of.count(columns[c]))
      return Error{fmt::format("{}:{}: column {} = (twice): each device must head one column", file, header + 1, columns[c])};
    column_of[columns[c]] = c;
  }

  // Rows: a line whose first token is a column label; then n entries, then affinities.
  std::vector<std::vector<Entry>> matrix(n);
  std::vector<int> numa(n, -1);
  std::vector<std::string> affinity(n);  // CPU affinity: groups GPUs by NUMA node when old drivers omit it
  std::vector<bool> has_row(n, false);
  std::map<std::string, std::string> nic_names;  // legend "NIC0: mlx5_0"
  for (std::size_t i = header + 1; i < lines.size(); ++i) {
    const auto t = tokens(lines[i]);
    if (t.size() == 2 && t[0].size() > 1 && t[0].back() == ':' && column_of.count(t[0].substr(0, t[0].size() - 1)))
      nic_names[t[0].substr(0, t[0].size() - 1)] = t[1];
    if (t.empty() || !column_of.count(t[0])) continue;
    const std::size_t r = column_of[t[0]];
    if (has_row[r]) return Error{fmt::format("{}:{}: row {} = (twice): each device has one row", file, i + 1, t[0])};
    has_row[r] = true;
    std::size_t entries = 0;
    while (entries + 1 < t.size() && entries < n && parse_entry(t[entries + 1])) ++entries;
    if (entries < n) {
      // A token that is neither an entry nor an affinity ("0-55,112-167", "N/A") is a bad entry.
      const bool affinity = entries + 1 >= t.size() || t[entries + 1] == "N/A" ||
                            t[entries + 1].find_first_not_of("0123456789,-") == std::string::npos;
      if (!affinity)
        return Error{fmt::format("{}:{}: {}/{} = \"{}\": must be X, NV#, PIX, PXB, PHB, NODE or SYS", file, i + 1, t[0],
                                 columns[entries], t[entries + 1])};
      return Error{fmt::format("{}:{}: {} = {} entries: must have {} (one per column)", file, i + 1, t[0], entries, n)};
    }
    for (std::size_t c = 0; c < n; ++c) matrix[r].push_back(*parse_entry(t[c + 1]));
    if (is_gpu_label(t[0]) && t.size() > n + 1) affinity[r] = t[n + 1];
    if (is_gpu_label(t[0]) && t.size() > n + 2) {
      int v = -1;
      const std::string& s = t[n + 2];
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc() && p == s.data() + s.size()) numa[r] = v;
    }
    for (std::size_t c = 0; c < n; ++c) {
      const Entry& e = matrix[r][c];
      if ((c == r) != (e.rel == Rel::kSelf))
        return Error{fmt::format("{}:{}: {}/{} = \"{}\": {}", file, i + 1, t[0], columns[c], t[c + 1],
                                 c == r ? "must be X (the device itself)" : "X marks only the device itself")};
      if (e.rel == Rel::kNvLink && (!is_gpu_label(t[0]) || !is_gpu_label(columns[c])))
        return Error{fmt::format("{}:{}: {}/{} = \"{}\": NVLink joins only GPUs", file, i + 1, t[0], columns[c], t[c + 1])};
    }
  }
  for (std::size_t c = 0; c < n; ++c)
    if (!has_row[c]) return Error{fmt::format("{}: {} = (no row): every column needs its row", file, columns[c])};
  auto entry_text = [](const Entry& e) {
    constexpr std::string_view names[] = {"X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS"};
    return e.rel == Rel::kNvLink ? fmt::format("NV{}", e.nvlinks) : std::string(names[static_cast<int>(e.rel)]);
  };
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b)
      if (matrix[a][b].rel != matrix[b][a].rel || matrix[a][b].nvlinks != matrix[b][a].nvlinks)
        return Error{fmt::format("{}: {}/{} = {} but {}/{} = {}: must be symmetric", file, columns[a], columns[b],
                                 entry_text(matrix[a][b]), columns[b], columns[a], entry_text(matrix[b][a]))};

  // Devices: GPUs in label order, then NICs (every other column) in column order.
  std::vector<std::size_t> gpus, nics;
  for (std::size_t c = 0; c < n; ++c) (is_gpu_label(columns[c]) ? gpus : nics).push_back(c);
  std::sort(gpus.begin(), gpus.end(), [&](std::size_t a, std::size_t b) {
    return std::stoi(columns[a].substr(3)) < std::stoi(columns[b].substr(3));
  });
  if (gpus.empty()) return Error{fmt::format("{}: no GPU rows: not the output of nvidia-smi topo -m", file)};
  if (gpus.size() > 1024) return Error{fmt::format("{}: GPUs = {}: at most 1024 per node", file, gpus.size())};
  if (o.hardware.empty()) return Error{"--hardware: required (the GPUs' hardware profile, cpplan list hardware)"};

  Topology t;
  t.name = o.name;
  t.hardware = o.hardware;
  t.gpus = static_cast<int>(gpus.size());
  t.source = file;
  std::vector<int> device_of(n, -1);  // matrix column -> device index
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    device_of[gpus[i]] = static_cast<int>(i);
    t.devices.push_back({fmt::format("gpu{}", i), DeviceKind::kGpu, 0, true});
  }
  for (std::size_t i = 0; i < nics.size(); ++i) {
    device_of[nics[i]] = static_cast<int>(t.devices.size());
    t.devices.push_back({fmt::format("nic{}", i), DeviceKind::kNic, o.nic_gbps, true});
  }

  // NVLink: one switch when every pair shows the same NV# that no GPU could have to each peer.
  constexpr int kMaxNvLinksPerGpu = 18;
  std::optional<int> common;
  bool uniform = gpus.size() > 1;
  for (std::size_t a = 0; a < gpus.size() && uniform; ++a)
    for (std::size_t b = a + 1; b < gpus.size() && uniform; ++b) {
      const Entry& e = matrix[gpus[a]][gpus[b]];
      if (e.rel != Rel::kNvLink || (common && *common != e.nvlinks)) uniform = false;
      else common = e.nvlinks;
    }
  const bool nvswitch = uniform && *common * static_cast<int>(gpus.size() - 1) > kMaxNvLinksPerGpu;
  std::string nvlink_text = "no NVLink";
  if (nvswitch) {
    const int sw = static_cast<int>(t.devices.size());
    t.devices.push_back({"nvswitch", DeviceKind::kNvSwitch, 0, true});
    for (int g = 0; g < t.gpus; ++g) t.links.push_back({g, sw, LinkType::kNvLink, *common * o.nvlink_gbps, 4});
    nvlink_text = fmt::format("NV{} through NVSwitch", *common);
  } else {
    int pairs = 0;
    for (std::size_t a = 0; a < gpus.size(); ++a)
      for (std::size_t b = a + 1; b < gpus.size(); ++b)
        if (const Entry& e = matrix[gpus[a]][gpus[b]]; e.rel == Rel::kNvLink) {
          t.links.push_back({static_cast<int>(a), static_cast<int>(b), LinkType::kNvLink, e.nvlinks * o.nvlink_gbps, 8});
          ++pairs;
        }
    if (pairs > 0) nvlink_text = fmt::format("{} NVLink pairs", pairs);
  }

  // PCIe: switches join devices at PIX/PXB; NUMA nodes join devices at NODE or closer (and GPUs
  // that report the same NUMA affinity). Pairs shown as NV# say nothing about PCIe.
  std::vector<int> pcie(n), socket(n);
  std::iota(pcie.begin(), pcie.end(), 0);
  std::iota(socket.begin(), socket.end(), 0);
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b) {
      const Rel r = matrix[a][b].rel;
      if (r == Rel::kPix || r == Rel::kPxb) pcie[find_root(pcie, b)] = find_root(pcie, a);
      if (r == Rel::kPix || r == Rel::kPxb || r == Rel::kPhb || r == Rel::kNode)
        socket[find_root(socket, b)] = find_root(socket, a);
      const bool same_numa = numa[a] >= 0 ? numa[a] == numa[b]
                                          : numa[b] < 0 && !affinity[a].empty() && affinity[a] == affinity[b];
      if (same_numa) socket[find_root(socket, b)] = find_root(socket, a);
    }
  for (std::size_t a = 0; a < n; ++a)  // a switch sits under one NUMA node
    socket[find_root(socket, a)] = find_root(socket, find_root(pcie, a));

  std::map<int, int> cpu_of_root, switch_of_root;
  std::map<int, int> switch_size;
  for (std::size_t c = 0; c < n; ++c) ++switch_size[find_root(pcie, c)];
  // Walk devices in device order so that cpu0 / pcie0 follow gpu0.
  std::vector<std::size_t> order(gpus);
  order.insert(order.end(), nics.begin(), nics.end());
  for (std::size_t c : order) {
    const int sroot = find_root(socket, c);
    if (!cpu_of_root.count(sroot)) {
      const int cpu = static_cast<int>(t.devices.size());
      cpu_of_root[sroot] = cpu;
      t.devices.push_back({fmt::format("cpu{}", cpu_of_root.size() - 1), DeviceKind::kCpu, 0, o.p2p});
    }
  }
  for (std::size_t c : order) {
    const int proot = find_root(pcie, c);
    const int cpu = cpu_of_root[find_root(socket, c)];
    int parent = cpu;
    if (switch_size[proot] > 1) {
      if (!switch_of_root.count(proot)) {
        const int sw = static_cast<int>(t.devices.size());
        switch_of_root[proot] = sw;
        t.devices.push_back({fmt::format("pcie{}", switch_of_root.size() - 1), DeviceKind::kPcieSwitch, 0, true});
        t.links.push_back({sw, cpu, LinkType::kPcie, o.pcie_gbps, 1});
      }
      parent = switch_of_root[proot];
    }
    t.links.push_back({device_of[c], parent, LinkType::kPcie, o.pcie_gbps, 1});
  }
  std::vector<int> cpus;
  for (const auto& [root, cpu] : cpu_of_root) cpus.push_back(cpu);
  std::sort(cpus.begin(), cpus.end());
  for (std::size_t a = 0; a < cpus.size(); ++a)
    for (std::size_t b = a + 1; b < cpus.size(); ++b)
      t.links.push_back({cpus[a], cpus[b], LinkType::kSocket, o.socket_gbps, 2});
  if (!o.p2p)
    for (std::size_t i = 0; i < cpus.size(); ++i) {
      const int mem = static_cast<int>(t.devices.size());
      t.devices.push_back({fmt::format("memory{}", i), DeviceKind::kMemory, 0, true});
      t.links.push_back({cpus[i], mem, LinkType::kMemory, o.memory_gbps, 2});
    }
  // Readable files: devices by kind (switches, CPUs, memory, NICs), links from the GPUs outwards.
  std::vector<int> order_of(t.devices.size());
  std::iota(order_of.begin(), order_of.end(), 0);
  std::stable_sort(order_of.begin(), order_of.end(), [&](int a, int b) {
    return t.devices[a].kind < t.devices[b].kind;  // gpu, nvswitch, pcie_switch, cpu, memory, nic
  });
  std::vector<int> new_index(t.devices.size());
  std::vector<TopoDevice> devices;
  for (int old : order_of) new_index[old] = static_cast<int>(devices.size()), devices.push_back(t.devices[old]);
  t.devices = std::move(devices);
  for (TopoLink& l : t.links) l.from = new_index[l.from], l.to = new_index[l.to];
  auto rank = [&](const TopoLink& l) {
    const DeviceKind k = t.devices[l.from].kind;
    if (l.type == LinkType::kNvLink) return -1;
    if (l.type != LinkType::kPcie) return 10 + static_cast<int>(l.type);
    return k == DeviceKind::kGpu ? 0 : (k == DeviceKind::kNic ? 1 : 2);
  };
  std::stable_sort(t.links.begin(), t.links.end(), [&](const TopoLink& a, const TopoLink& b) {
    const int ra = rank(a), rb = rank(b);
    if (ra != rb) return ra < rb;
    return a.from < b.from;
  });
  if (!nics.empty()) {
    t.has_network = true;
    t.network.kind = nics.size() >= gpus.size() ? NetworkKind::kRail : NetworkKind::kSwitch;
    t.network.latency_us = 5.5;
  }
  std::vector<std::string> nic_text;
  for (std::size_t i = 0; i < nics.size(); ++i) {
    const auto it = nic_names.find(columns[nics[i]]);
    nic_text.push_back(it != nic_names.end() ? it->second : columns[nics[i]]);
  }
  t.description = fmt::format("imported from nvidia-smi topo -m: {} GPUs, {}, {} NUMA node{}, {} NIC{}{}", t.gpus,
                              nvlink_text, cpus.size(), cpus.size() == 1 ? "" : "s", nics.size(),
                              nics.size() == 1 ? "" : "s",
                              nic_text.empty() ? "" : fmt::format(" ({})", fmt::join(nic_text, ", ")));
  return t;
}

}  // namespace

Result<Topology> import_nvidia_smi_topo(std::string_view raw, const std::string& file, const TopoImportOptions& o) {
  auto t = import_matrix(raw, file, o);
  // Messages quote the matrix's tokens, which may hold control characters: keep them one line.
  if (!t) return Error{printable(t.error().message)};
  return t;
}

}  // namespace cpplan
