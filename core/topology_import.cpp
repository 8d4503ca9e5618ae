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

// Splits text at '\n' into views of text (a trailing newline leaves an empty last line).
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start <= text.size();) {
    const auto nl = text.find('\n', start);
    lines.emplace_back(text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return lines;
}

// The matrix's header: its line index and its column labels (one per device).
struct Header {
  std::size_t line = 0;
  std::vector<std::string> columns;
  std::map<std::string, std::size_t> column_of;
};

// Finds the header: the first line whose first label is GPU0 and whose second is not a matrix entry.
Result<Header> parse_header(const std::vector<std::string_view>& lines, const std::string& file) {
  Header h;
  h.line = lines.size();
  for (std::size_t i = 0; i < lines.size() && h.line == lines.size(); ++i) {
    const auto t = tokens(lines[i]);
    if (t.empty() || t[0] != "GPU0" || (t.size() > 1 && parse_entry(t[1]))) continue;
    h.line = i;
    for (const auto& label : t) {
      if (label == "CPU" || label == "NUMA" || label == "GPU") break;  // "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"
      h.columns.push_back(label);
    }
  }
  if (h.line == lines.size())
    return Error{fmt::format("{}: no header line starting with GPU0: not the output of nvidia-smi topo -m", file)};
  for (std::size_t c = 0; c < h.columns.size(); ++c) {
    if (h.column_of.count(h.columns[c]))
      return Error{fmt::format("{}:{}: column {} = (twice): each device must head one column", file, h.line + 1,
                               h.columns[c])};
    h.column_of[h.columns[c]] = c;
  }
  return h;
}

// The matrix's rows: matrix[row][column], and per GPU row its NUMA node and CPU affinity.
struct Rows {
  std::vector<std::vector<Entry>> matrix;
  std::vector<int> numa;
  std::vector<std::string> affinity;  // CPU affinity: groups GPUs by NUMA node when old drivers omit it
  std::vector<bool> has_row;
  std::map<std::string, std::string> nic_names;  // legend "NIC0: mlx5_0"
};

// Checks one row's entries: X exactly on the diagonal, NV# only between GPUs.
std::optional<Error> check_row(const std::vector<std::string>& t, std::size_t i, std::size_t r, const Header& h,
                               const Rows& rows, const std::string& file) {
  for (std::size_t c = 0; c < h.columns.size(); ++c) {
    const Entry& e = rows.matrix[r][c];
    if ((c == r) != (e.rel == Rel::kSelf))
      return Error{fmt::format("{}:{}: {}/{} = \"{}\": {}", file, i + 1, t[0], h.columns[c], t[c + 1],
                               c == r ? "must be X (the device itself)" : "X marks only the device itself")};
    if (e.rel == Rel::kNvLink && (!is_gpu_label(t[0]) || !is_gpu_label(h.columns[c])))
      return Error{fmt::format("{}:{}: {}/{} = \"{}\": NVLink joins only GPUs", file, i + 1, t[0], h.columns[c],
                               t[c + 1])};
  }
  return std::nullopt;
}

// Reads the row of device t[0] (line index i): n entries, then the GPU's CPU affinity and NUMA node.
std::optional<Error> parse_row(const std::vector<std::string>& t, std::size_t i, const Header& h, Rows& rows,
                               const std::string& file) {
  const std::size_t n = h.columns.size();
  const std::size_t r = h.column_of.at(t[0]);
  if (rows.has_row[r]) return Error{fmt::format("{}:{}: row {} = (twice): each device has one row", file, i + 1, t[0])};
  rows.has_row[r] = true;
  std::size_t entries = 0;
  while (entries + 1 < t.size() && entries < n && parse_entry(t[entries + 1])) ++entries;
  if (entries < n) {
    // A token that is neither an entry nor an affinity ("0-55,112-167", "N/A") is a bad entry.
    const bool affinity = entries + 1 >= t.size() || t[entries + 1] == "N/A" ||
                          t[entries + 1].find_first_not_of("0123456789,-") == std::string::npos;
    if (!affinity)
      return Error{fmt::format("{}:{}: {}/{} = \"{}\": must be X, NV#, PIX, PXB, PHB, NODE or SYS", file, i + 1, t[0],
                               h.columns[entries], t[entries + 1])};
    return Error{fmt::format("{}:{}: {} = {} entries: must have {} (one per column)", file, i + 1, t[0], entries, n)};
  }
  for (std::size_t c = 0; c < n; ++c) rows.matrix[r].push_back(*parse_entry(t[c + 1]));
  if (is_gpu_label(t[0]) && t.size() > n + 1) rows.affinity[r] = t[n + 1];
  if (is_gpu_label(t[0]) && t.size() > n + 2) {
    int v = -1;
    const std::string& s = t[n + 2];
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && p == s.data() + s.size()) rows.numa[r] = v;
  }
  return check_row(t, i, r, h, rows, file);
}

// The entry as nvidia-smi writes it ("NV12", "PIX").
std::string entry_text(const Entry& e) {
  constexpr std::string_view names[] = {"X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS"};
  return e.rel == Rel::kNvLink ? fmt::format("NV{}", e.nvlinks) : std::string(names[static_cast<int>(e.rel)]);
}

// Checks that every column has its row and that the matrix is symmetric.
std::optional<Error> check_complete(const Header& h, const Rows& rows, const std::string& file) {
  const std::size_t n = h.columns.size();
  for (std::size_t c = 0; c < n; ++c)
    if (!rows.has_row[c]) return Error{fmt::format("{}: {} = (no row): every column needs its row", file, h.columns[c])};
  const auto& m = rows.matrix;
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b)
      if (m[a][b].rel != m[b][a].rel || m[a][b].nvlinks != m[b][a].nvlinks)
        return Error{fmt::format("{}: {}/{} = {} but {}/{} = {}: must be symmetric", file, h.columns[a], h.columns[b],
                                 entry_text(m[a][b]), h.columns[b], h.columns[a], entry_text(m[b][a]))};
  return std::nullopt;
}

// Rows: a line whose first token is a column label; then n entries, then affinities. Checks the whole matrix.
Result<Rows> parse_rows(const std::vector<std::string_view>& lines, const Header& h, const std::string& file) {
  const std::size_t n = h.columns.size();
  Rows rows{std::vector<std::vector<Entry>>(n), std::vector<int>(n, -1), std::vector<std::string>(n),
            std::vector<bool>(n, false), {}};
  for (std::size_t i = h.line + 1; i < lines.size(); ++i) {
    const auto t = tokens(lines[i]);
    if (t.size() == 2 && t[0].size() > 1 && t[0].back() == ':' && h.column_of.count(t[0].substr(0, t[0].size() - 1)))
      rows.nic_names[t[0].substr(0, t[0].size() - 1)] = t[1];
    if (t.empty() || !h.column_of.count(t[0])) continue;
    if (auto error = parse_row(t, i, h, rows, file)) return *error;
  }
  if (auto error = check_complete(h, rows, file)) return *error;
  return rows;
}

// Matrix columns of the GPUs (in label order) and of the NICs (every other column, in column order).
struct DeviceColumns {
  std::vector<std::size_t> gpus, nics;
};

// Splits the columns into GPUs and NICs.
DeviceColumns device_columns(const std::vector<std::string>& columns) {
  DeviceColumns d;
  for (std::size_t c = 0; c < columns.size(); ++c) (is_gpu_label(columns[c]) ? d.gpus : d.nics).push_back(c);
  std::sort(d.gpus.begin(), d.gpus.end(), [&](std::size_t a, std::size_t b) {
    return std::stoi(columns[a].substr(3)) < std::stoi(columns[b].substr(3));
  });
  return d;
}

// Adds gpu0.. then nic0.. to t; returns matrix column -> device index.
std::vector<int> add_gpus_and_nics(Topology& t, const DeviceColumns& d, std::size_t n, const TopoImportOptions& o) {
  std::vector<int> device_of(n, -1);
  for (std::size_t i = 0; i < d.gpus.size(); ++i) {
    device_of[d.gpus[i]] = static_cast<int>(i);
    t.devices.push_back({fmt::format("gpu{}", i), DeviceKind::kGpu, 0, true});
  }
  for (std::size_t i = 0; i < d.nics.size(); ++i) {
    device_of[d.nics[i]] = static_cast<int>(t.devices.size());
    t.devices.push_back({fmt::format("nic{}", i), DeviceKind::kNic, o.nic_gbps, true});
  }
  return device_of;
}

// Adds the NVLink fabric: one switch when every pair shows the same NV# that no GPU could have to
// each peer, else one link per NV# pair. Returns its description ("NV18 through NVSwitch").
std::string add_nvlinks(Topology& t, const Rows& rows, const std::vector<std::size_t>& gpus,
                        const TopoImportOptions& o) {
  constexpr int kMaxNvLinksPerGpu = 18;
  std::optional<int> common;
  bool uniform = gpus.size() > 1;
  for (std::size_t a = 0; a < gpus.size() && uniform; ++a)
    for (std::size_t b = a + 1; b < gpus.size() && uniform; ++b) {
      const Entry& e = rows.matrix[gpus[a]][gpus[b]];
      if (e.rel != Rel::kNvLink || (common && *common != e.nvlinks)) uniform = false;
      else common = e.nvlinks;
    }
  const bool nvswitch = uniform && *common * static_cast<int>(gpus.size() - 1) > kMaxNvLinksPerGpu;
  if (nvswitch) {
    const int sw = static_cast<int>(t.devices.size());
    t.devices.push_back({"nvswitch", DeviceKind::kNvSwitch, 0, true});
    for (int g = 0; g < t.gpus; ++g) t.links.push_back({g, sw, LinkType::kNvLink, *common * o.nvlink_gbps, 4});
    return fmt::format("NV{} through NVSwitch", *common);
  }
  int pairs = 0;
  for (std::size_t a = 0; a < gpus.size(); ++a)
    for (std::size_t b = a + 1; b < gpus.size(); ++b)
      if (const Entry& e = rows.matrix[gpus[a]][gpus[b]]; e.rel == Rel::kNvLink) {
        t.links.push_back({static_cast<int>(a), static_cast<int>(b), LinkType::kNvLink, e.nvlinks * o.nvlink_gbps, 8});
        ++pairs;
      }
  return pairs > 0 ? fmt::format("{} NVLink pairs", pairs) : std::string("no NVLink");
}

// Union-find parents over matrix columns: devices under one PCIe switch, and under one NUMA node.
struct Groups {
  std::vector<int> pcie, socket;
};

// PCIe: switches join devices at PIX/PXB; NUMA nodes join devices at NODE or closer (and GPUs
// that report the same NUMA affinity). Pairs shown as NV# say nothing about PCIe.
Groups group_columns(const Rows& rows) {
  const std::size_t n = rows.matrix.size();
  Groups g{std::vector<int>(n), std::vector<int>(n)};
  std::iota(g.pcie.begin(), g.pcie.end(), 0);
  std::iota(g.socket.begin(), g.socket.end(), 0);
  const auto& numa = rows.numa;
  const auto& affinity = rows.affinity;
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b) {
      const Rel r = rows.matrix[a][b].rel;
      if (r == Rel::kPix || r == Rel::kPxb) g.pcie[find_root(g.pcie, b)] = find_root(g.pcie, a);
      if (r == Rel::kPix || r == Rel::kPxb || r == Rel::kPhb || r == Rel::kNode)
        g.socket[find_root(g.socket, b)] = find_root(g.socket, a);
      const bool same_numa = numa[a] >= 0 ? numa[a] == numa[b]
                                          : numa[b] < 0 && !affinity[a].empty() && affinity[a] == affinity[b];
      if (same_numa) g.socket[find_root(g.socket, b)] = find_root(g.socket, a);
    }
  for (std::size_t a = 0; a < n; ++a)  // a switch sits under one NUMA node
    g.socket[find_root(g.socket, a)] = find_root(g.socket, find_root(g.pcie, a));
  return g;
}

// Adds one CPU per NUMA group, PCIe switches for groups of two or more, and every device's PCIe
// link; returns the CPUs' device indices in ascending order.
std::vector<int> add_pcie_tree(Topology& t, Groups& g, const DeviceColumns& d, const std::vector<int>& device_of,
                               const TopoImportOptions& o) {
  std::map<int, int> cpu_of_root, switch_of_root;
  std::map<int, int> switch_size;
  for (std::size_t c = 0; c < g.pcie.size(); ++c) ++switch_size[find_root(g.pcie, c)];
  // Walk devices in device order so that cpu0 / pcie0 follow gpu0.
  std::vector<std::size_t> order(d.gpus);
  order.insert(order.end(), d.nics.begin(), d.nics.end());
  for (std::size_t c : order) {
    const int sroot = find_root(g.socket, c);
    if (!cpu_of_root.count(sroot)) {
      const int cpu = static_cast<int>(t.devices.size());
      cpu_of_root[sroot] = cpu;
      t.devices.push_back({fmt::format("cpu{}", cpu_of_root.size() - 1), DeviceKind::kCpu, 0, o.p2p});
    }
  }
  for (std::size_t c : order) {
    const int proot = find_root(g.pcie, c);
    const int cpu = cpu_of_root[find_root(g.socket, c)];
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
  return cpus;
}

// Adds socket links between every pair of CPUs and, without P2P, one host memory per CPU.
void add_sockets_and_memory(Topology& t, const std::vector<int>& cpus, const TopoImportOptions& o) {
  for (std::size_t a = 0; a < cpus.size(); ++a)
    for (std::size_t b = a + 1; b < cpus.size(); ++b)
      t.links.push_back({cpus[a], cpus[b], LinkType::kSocket, o.socket_gbps, 2});
  if (!o.p2p)
    for (std::size_t i = 0; i < cpus.size(); ++i) {
      const int mem = static_cast<int>(t.devices.size());
      t.devices.push_back({fmt::format("memory{}", i), DeviceKind::kMemory, 0, true});
      t.links.push_back({cpus[i], mem, LinkType::kMemory, o.memory_gbps, 2});
    }
}

// Readable files: devices by kind (switches, CPUs, memory, NICs), links from the GPUs outwards.
void sort_for_reading(Topology& t) {
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
}

// The topology's one-line description: GPUs, NVLink, NUMA nodes and NICs (by legend name).
std::string describe(const Topology& t, const std::string& nvlink_text, std::size_t cpus, const Header& h,
                     const Rows& rows, const std::vector<std::size_t>& nics) {
  std::vector<std::string> nic_text;
  for (std::size_t i = 0; i < nics.size(); ++i) {
    const auto it = rows.nic_names.find(h.columns[nics[i]]);
    nic_text.push_back(it != rows.nic_names.end() ? it->second : h.columns[nics[i]]);
  }
  return fmt::format("imported from nvidia-smi topo -m: {} GPUs, {}, {} NUMA node{}, {} NIC{}{}", t.gpus, nvlink_text,
                     cpus, cpus == 1 ? "" : "s", nics.size(), nics.size() == 1 ? "" : "s",
                     nic_text.empty() ? "" : fmt::format(" ({})", fmt::join(nic_text, ", ")));
}

// Parses and checks the matrix, then builds the node: GPUs, NICs, NVLink, PCIe tree, CPUs, memory.
Result<Topology> import_matrix(std::string_view raw, const std::string& file, const TopoImportOptions& o) {
  // Names (NICs) end up in a TOML file, which must be UTF-8; nvidia-smi writes ASCII.
  if (const auto bad = find_invalid_utf8(raw); bad != std::string_view::npos)
    return Error{fmt::format("{}:{}: byte 0x{:02x} is not UTF-8 text: not the output of nvidia-smi topo -m", file,
                             1 + std::count(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(bad), '\n'),
                             static_cast<unsigned char>(raw[bad]))};
  const std::string text = strip_ansi(raw);
  const std::vector<std::string_view> lines = split_lines(text);
  auto header = parse_header(lines, file);
  if (!header) return header.error();
  const Header& h = *header;
  auto parsed = parse_rows(lines, h, file);
  if (!parsed) return parsed.error();
  const Rows& rows = *parsed;

  const DeviceColumns d = device_columns(h.columns);
  if (d.gpus.empty()) return Error{fmt::format("{}: no GPU rows: not the output of nvidia-smi topo -m", file)};
  if (d.gpus.size() > 1024) return Error{fmt::format("{}: GPUs = {}: at most 1024 per node", file, d.gpus.size())};
  if (o.hardware.empty()) return Error{"--hardware: required (the GPUs' hardware profile, cpplan list hardware)"};

  Topology t;
  t.name = o.name;
  t.hardware = o.hardware;
  t.gpus = static_cast<int>(d.gpus.size());
  t.source = file;
  const std::vector<int> device_of = add_gpus_and_nics(t, d, h.columns.size(), o);
  const std::string nvlink_text = add_nvlinks(t, rows, d.gpus, o);
  Groups groups = group_columns(rows);
  const std::vector<int> cpus = add_pcie_tree(t, groups, d, device_of, o);
  add_sockets_and_memory(t, cpus, o);
  sort_for_reading(t);
  if (!d.nics.empty()) {
    t.has_network = true;
    t.network.kind = d.nics.size() >= d.gpus.size() ? NetworkKind::kRail : NetworkKind::kSwitch;
    t.network.latency_us = 5.5;
  }
  t.description = describe(t, nvlink_text, cpus.size(), h, rows, d.nics);
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
