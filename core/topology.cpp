#include "core/topology.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <toml++/toml.h>

#include "core/text.h"
#include "core/toml_reader.h"

namespace cpplan {

using detail::Reader;

std::string_view to_string(DeviceKind k) {
  constexpr std::string_view n[] = {"gpu", "nvswitch", "pcie_switch", "cpu", "memory", "nic", "network_switch"};
  return n[static_cast<int>(k)];
}
std::string_view to_string(LinkType t) {
  constexpr std::string_view n[] = {"nvlink", "pcie", "socket", "memory", "ici", "xgmi", "network"};
  return n[static_cast<int>(t)];
}
std::string_view to_string(NetworkKind k) { return k == NetworkKind::kRail ? "rail" : "switch"; }

int Topology::find(std::string_view device) const {
  for (std::size_t i = 0; i < devices.size(); ++i)
    if (devices[i].name == device) return static_cast<int>(i);
  return -1;
}

int Topology::nic_count() const {
  return static_cast<int>(std::count_if(devices.begin(), devices.end(),
                                        [](const TopoDevice& d) { return d.kind == DeviceKind::kNic; }));
}

int Topology::switch_of(int gpu) const {
  for (const TopoLink& l : links) {
    if (l.type != LinkType::kPcie || (l.from != gpu && l.to != gpu)) continue;
    const int other = l.from == gpu ? l.to : l.from;
    if (devices[other].kind == DeviceKind::kPcieSwitch) return other;
  }
  return -1;
}

int Topology::socket_of(int gpu) const {
  // Breadth first from the GPU through switches and memory, never through another GPU, NIC or CPU.
  std::vector<int> frontier{gpu};
  std::vector<bool> seen(devices.size(), false);
  seen[gpu] = true;
  while (!frontier.empty()) {
    std::vector<int> next;
    for (int v : frontier)
      for (const TopoLink& l : links) {
        if ((l.type != LinkType::kPcie && l.type != LinkType::kMemory) || (l.from != v && l.to != v)) continue;
        const int w = l.from == v ? l.to : l.from;
        if (seen[w]) continue;
        seen[w] = true;
        if (devices[w].kind == DeviceKind::kCpu) return w;
        if (devices[w].kind == DeviceKind::kPcieSwitch || devices[w].kind == DeviceKind::kMemory) next.push_back(w);
      }
    frontier = std::move(next);
  }
  return -1;
}

namespace {

// "pcie12" -> {"pcie", 12}; a name without a trailing number -> {name, -1}.
std::pair<std::string, int> split_number(std::string_view name) {
  std::size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  if (i == name.size() || name.size() - i > 6) return {std::string(name), -1};
  int n = 0;
  std::from_chars(name.data() + i, name.data() + name.size(), n);
  return {std::string(name.substr(0, i)), n};
}

bool reserved_gpu_name(std::string_view name) {
  auto [prefix, n] = split_number(name);
  return prefix == "gpu" && n >= 0;
}

constexpr int kMaxDevices = 4096;

}  // namespace

std::vector<std::string> expand_names(std::string_view pattern) {
  const auto open = pattern.find('{');
  if (open == std::string_view::npos)
    return pattern.find('}') == std::string_view::npos && !pattern.empty()
               ? std::vector<std::string>{std::string(pattern)}
               : std::vector<std::string>{};
  const auto close = pattern.find('}', open);
  const auto dots = pattern.find("..", open);
  if (close == std::string_view::npos || dots == std::string_view::npos || dots > close ||
      pattern.find('{', open + 1) != std::string_view::npos || pattern.find('}', close + 1) != std::string_view::npos)
    return {};
  int first = 0, last = 0;
  const char* a = pattern.data() + open + 1;
  const char* b = pattern.data() + dots + 2;
  auto ra = std::from_chars(a, pattern.data() + dots, first);
  auto rb = std::from_chars(b, pattern.data() + close, last);
  if (ra.ec != std::errc() || ra.ptr != pattern.data() + dots || rb.ec != std::errc() ||
      rb.ptr != pattern.data() + close || first < 0 || last < first || last - first >= kMaxDevices)
    return {};
  std::vector<std::string> out;
  const std::string_view prefix = pattern.substr(0, open), suffix = pattern.substr(close + 1);
  for (int i = first; i <= last; ++i) out.push_back(fmt::format("{}{}{}", prefix, i, suffix));
  return out;
}

namespace {

void read_devices(Reader& r, Topology& t) {
  r.tables("devices", false, [&](Reader& d) {
    d.only({"name", "kind", "bandwidth_gbps", "p2p"});
    std::string pattern;
    d.string("name", pattern);
    enum class K { kNvSwitch, kPcieSwitch, kCpu, kMemory, kNic };
    K kind = K::kCpu;
    d.choice("kind", kind, {"nvswitch", "pcie_switch", "cpu", "memory", "nic"});
    if (!d.ok()) return;
    TopoDevice device;
    device.kind = static_cast<DeviceKind>(static_cast<int>(kind) + 1);
    if (device.kind == DeviceKind::kNic) {
      d.number("bandwidth_gbps", device.bandwidth_gbps, 0, 1e6, true, true);
    } else {
      double bandwidth = -1;  // stays -1 when absent
      d.number("bandwidth_gbps", bandwidth, 0, 1e6, false);
      if (d.ok() && bandwidth >= 0)
        d.fail("bandwidth_gbps", fmt::format("{}", bandwidth), "only a nic has a bandwidth (set it on the links)");
    }
    const bool forwards = device.kind == DeviceKind::kCpu || device.kind == DeviceKind::kPcieSwitch;
    d.boolean("p2p", device.p2p);
    if (d.ok() && !forwards && !device.p2p) d.fail("p2p", "false", "only a cpu or a pcie_switch can refuse peer-to-peer traffic");
    const auto names = expand_names(pattern);
    if (d.ok() && names.empty())
      d.fail("name", fmt::format("\"{}\"", pattern), "must be a name or one range name{first..last}");
    for (const auto& n : names) {
      if (!d.ok()) return;
      if (reserved_gpu_name(n))
        d.fail("name", fmt::format("\"{}\"", pattern), fmt::format("gpu0 .. gpu{} are declared by gpus", t.gpus - 1));
      else if (t.find(n) >= 0)
        d.fail("name", fmt::format("\"{}\"", pattern), fmt::format("duplicate device name {}", n));
      else if (static_cast<int>(t.devices.size()) >= kMaxDevices)
        d.fail("name", fmt::format("\"{}\"", pattern), fmt::format("at most {} devices per node", kMaxDevices));
      device.name = n;
      t.devices.push_back(device);
    }
  });
}

// One side of a link: the devices its (possibly ranged) name expands to.
std::vector<int> link_end(Reader& l, const Topology& t, std::string_view key, const std::string& pattern) {
  std::vector<int> out;
  const auto names = expand_names(pattern);
  if (names.empty()) {
    l.fail(key, fmt::format("\"{}\"", pattern), "must be a device name or one range name{first..last}");
    return out;
  }
  for (const auto& n : names) {
    const int i = t.find(n);
    if (i < 0) {
      std::vector<std::string> known;
      for (const auto& d : t.devices) known.push_back(d.name);
      const auto near = closest_names(n, known, 1);
      l.fail(key, fmt::format("\"{}\"", pattern),
             near.empty() ? fmt::format("{} is not a device", n)
                          : fmt::format("{} is not a device (did you mean {}?)", n, near[0]));
      return {};
    }
    out.push_back(i);
  }
  return out;
}

void read_links(Reader& r, Topology& t) {
  r.tables("links", false, [&](Reader& l) {
    l.only({"from", "to", "kind", "bandwidth_gbps", "latency_us"});
    std::string from_pattern, to_pattern;
    l.string("from", from_pattern);
    l.string("to", to_pattern);
    TopoLink link;
    enum class K { kNvLink, kPcie, kSocket, kMemory, kIci, kXgmi };  // LinkType's first six
    K kind = K::kPcie;
    l.choice("kind", kind, {"nvlink", "pcie", "socket", "memory", "ici", "xgmi"});
    link.type = static_cast<LinkType>(static_cast<int>(kind));
    l.number("bandwidth_gbps", link.bandwidth_gbps, 0, 1e6, true, true);
    l.number("latency_us", link.latency_us, 0, 1e6);
    if (!l.ok()) return;
    const auto from = link_end(l, t, "from", from_pattern);
    if (!l.ok()) return;
    const auto to = link_end(l, t, "to", to_pattern);
    if (!l.ok()) return;
    if (from.size() != to.size() && from.size() != 1 && to.size() != 1)
      return l.fail("to", fmt::format("\"{}\"", to_pattern),
                    fmt::format("expands to {} devices: must be 1 or as many as from ({})", to.size(), from.size()));
    const std::size_t n = std::max(from.size(), to.size());
    for (std::size_t i = 0; i < n; ++i) {
      link.from = from[from.size() == 1 ? 0 : i];
      link.to = to[to.size() == 1 ? 0 : i];
      if (link.from == link.to)
        return l.fail("to", fmt::format("\"{}\"", to_pattern),
                      fmt::format("links {} to itself", t.devices[link.from].name));
      // An xGMI link carries only its own pair's traffic (the planner does not forward over it).
      if (link.type == LinkType::kXgmi && (link.from >= t.gpus || link.to >= t.gpus))
        return l.fail("kind", "\"xgmi\"",
                      fmt::format("must join two GPUs ({} to {})", t.devices[link.from].name, t.devices[link.to].name));
      t.links.push_back(link);
    }
  });
}

void read_torus(Reader& r, const toml::table& root, Topology& t) {
  const auto* tt = r.table("torus", false);
  if (!tt || !r.ok()) return;
  Reader tr = r.sub(*tt, "torus");
  tr.only({"dims", "wraparound", "bandwidth_gbps", "latency_us"});
  TorusSpec& torus = t.torus;
  const toml::node* dims = tt->get("dims");
  if (!dims) return tr.fail("dims", "(missing)", "is required");
  const toml::array* a = dims->as_array();
  if (!a || a->size() != 2 || !(*a)[0].is_integer() || !(*a)[1].is_integer())
    return tr.fail("dims", "[...]", "must be two integers [x, y]");
  for (const auto& e : *a) torus.dims.push_back(static_cast<int>(e.as_integer()->get()));
  if (torus.dims[0] < 1 || torus.dims[1] < 1 || 1LL * torus.dims[0] * torus.dims[1] != t.gpus)
    return tr.fail("dims", fmt::format("[{}, {}]", torus.dims[0], torus.dims[1]),
                   fmt::format("each at least 1 and their product must equal gpus = {}", t.gpus));
  tr.boolean("wraparound", torus.wraparound);
  tr.number("bandwidth_gbps", torus.bandwidth_gbps, 0, 1e6, true, true);
  tr.number("latency_us", torus.latency_us, 0, 1e6);
  if (!tr.ok()) return;
  (void)root;
  const int nx = torus.dims[0], ny = torus.dims[1];
  auto add = [&](int a, int b) { t.links.push_back({a, b, LinkType::kIci, torus.bandwidth_gbps, torus.latency_us}); };
  // Neighbours along x and y; the wraparound link only where it is a new link (a dimension of 2
  // already joins both ends).
  for (int y = 0; y < ny; ++y)
    for (int x = 0; x < nx; ++x) {
      const int g = y * nx + x;
      if (x + 1 < nx) add(g, g + 1);
      else if (torus.wraparound && nx > 2) add(g, y * nx);
      if (y + 1 < ny) add(g, g + nx);
      else if (torus.wraparound && ny > 2) add(g, x);
    }
}

// Every GPU reaches gpu0; a device that refuses P2P has host memory beside it.
void check_graph(Reader& r, const Topology& t) {
  std::vector<std::vector<int>> adjacent(t.devices.size());
  for (const TopoLink& l : t.links) {
    adjacent[l.from].push_back(l.to);
    adjacent[l.to].push_back(l.from);
  }
  std::vector<bool> seen(t.devices.size(), false);
  std::vector<int> stack{0};
  seen[0] = true;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    for (int w : adjacent[v])
      if (!seen[w]) seen[w] = true, stack.push_back(w);
  }
  for (int g = 0; g < t.gpus && r.ok(); ++g)
    if (!seen[g]) r.fail("links", t.devices[g].name, "every GPU must be connected to gpu0 through the links");
  for (std::size_t i = 0; i < t.devices.size() && r.ok(); ++i) {
    if (t.devices[i].p2p) continue;
    const bool memory = std::any_of(adjacent[i].begin(), adjacent[i].end(),
                                    [&](int w) { return t.devices[w].kind == DeviceKind::kMemory; });
    if (!memory)
      r.fail("devices", fmt::format("{} (p2p = false)", t.devices[i].name),
             "needs a link to a memory device: its traffic is staged through host memory");
  }
}

}  // namespace

namespace {
Result<Topology> topology_from_toml(const toml::table& root, const std::string& path) {
  std::string error;
  Reader r(root, path, "", &error);
  Topology t;
  t.source = path;
  r.only({"name", "description", "hardware", "planning_only", "gpus", "devices", "links", "torus", "network"});
  detail::read_name(r, path, t.name);
  r.string("description", t.description, false);
  r.string("hardware", t.hardware);
  r.boolean("planning_only", t.planning_only);
  r.integer("gpus", t.gpus, 1, 1024);
  if (!r.ok()) return Error{error};
  for (int g = 0; g < t.gpus; ++g) t.devices.push_back({fmt::format("gpu{}", g), DeviceKind::kGpu, 0, true});
  read_devices(r, t);
  if (r.ok()) read_links(r, t);
  if (r.ok()) read_torus(r, root, t);
  if (const auto* n = r.table("network", false); n && r.ok()) {
    Reader nr = r.sub(*n, "network");
    nr.only({"kind", "latency_us"});
    nr.choice("kind", t.network.kind, {"rail", "switch"});
    nr.number("latency_us", t.network.latency_us, 0, 1e6);
    t.has_network = true;
    if (nr.ok() && t.nic_count() == 0) nr.fail("kind", fmt::format("\"{}\"", to_string(t.network.kind)), "needs at least one nic device");
  }
  if (r.ok()) check_graph(r, t);
  if (!r.ok()) return Error{error};
  return t;
}
}  // namespace

Result<Topology> load_topology(const std::string& path) {
  auto parsed = detail::parse_toml(path);
  if (!parsed) return parsed.error();
  return topology_from_toml(*parsed, path);
}

Result<Topology> parse_topology(std::string_view text, const std::string& path) {
  auto parsed = detail::parse_toml_text(text, path);
  if (!parsed) return parsed.error();
  return topology_from_toml(*parsed, path);
}

namespace {

// Folds runs of items whose names continue a numbered prefix into "prefix{a..b}".
std::string range_name(const std::string& prefix, int first, int last) {
  return first == last ? fmt::format("{}{}", prefix, first) : fmt::format("{}{{{}..{}}}", prefix, first, last);
}

// A TOML basic string: quotes, backslashes and control characters escaped (TOML forbids the
// latter raw; an imported NIC name or a loaded device name may hold them).
std::string toml_string(std::string_view text) {
  std::string s = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') s += '\\';
    if (u < 0x20 || u == 0x7f) s += fmt::format("\\u{:04x}", u);
    else s += c;
  }
  return s + "\"";
}

}  // namespace

std::string to_toml(const Topology& t) {
  std::string s;
  s += fmt::format("name = {}\n", toml_string(t.name));
  if (!t.description.empty()) s += fmt::format("description = {}\n", toml_string(t.description));
  s += fmt::format("hardware = {}\n", toml_string(t.hardware));
  if (t.planning_only) s += "planning_only = true\n";
  s += fmt::format("gpus = {}\n", t.gpus);

  for (std::size_t i = t.gpus; i < t.devices.size();) {
    const TopoDevice& d = t.devices[i];
    auto [prefix, first] = split_number(d.name);
    std::size_t j = i + 1;
    if (first >= 0)
      while (j < t.devices.size()) {
        const TopoDevice& e = t.devices[j];
        auto [p, n] = split_number(e.name);
        if (p != prefix || n != first + static_cast<int>(j - i) || e.kind != d.kind ||
            e.bandwidth_gbps != d.bandwidth_gbps || e.p2p != d.p2p)
          break;
        ++j;
      }
    s += fmt::format("\n[[devices]]\nname = {}\nkind = \"{}\"\n",
                     toml_string(first >= 0 ? range_name(prefix, first, first + static_cast<int>(j - i) - 1) : d.name),
                     to_string(d.kind));
    if (d.kind == DeviceKind::kNic) s += fmt::format("bandwidth_gbps = {}\n", d.bandwidth_gbps);
    if (!d.p2p) s += "p2p = false\n";
    i = j;
  }

  const bool torus = !t.torus.dims.empty();
  auto generated = [&](const TopoLink& l) { return torus && l.type == LinkType::kIci && l.from < t.gpus && l.to < t.gpus; };
  for (std::size_t i = 0; i < t.links.size();) {
    const TopoLink& l = t.links[i];
    if (generated(l)) {
      ++i;
      continue;
    }
    auto [fp, f0] = split_number(t.devices[l.from].name);
    auto [tp, t0] = split_number(t.devices[l.to].name);
    std::size_t j = i + 1;
    bool broadcast = false;  // every link of the run goes to the same device
    if (f0 >= 0)
      for (; j < t.links.size(); ++j) {
        const TopoLink& m = t.links[j];
        if (generated(m) || m.type != l.type || m.bandwidth_gbps != l.bandwidth_gbps || m.latency_us != l.latency_us) break;
        auto [p, n] = split_number(t.devices[m.from].name);
        if (p != fp || n != f0 + static_cast<int>(j - i)) break;
        const bool same_to = m.to == l.to;
        auto [q, k] = split_number(t.devices[m.to].name);
        const bool next_to = t0 >= 0 && q == tp && k == t0 + static_cast<int>(j - i);
        if (j == i + 1) broadcast = same_to && !next_to;
        if (broadcast ? !same_to : !next_to) break;
      }
    const int count = static_cast<int>(j - i);
    const std::string from = count > 1 ? range_name(fp, f0, f0 + count - 1) : t.devices[l.from].name;
    const std::string to = count > 1 && !broadcast ? range_name(tp, t0, t0 + count - 1) : t.devices[l.to].name;
    s += fmt::format("\n[[links]]\nfrom = {}\nto = {}\nkind = \"{}\"\nbandwidth_gbps = {}\nlatency_us = {}\n",
                     toml_string(from), toml_string(to), to_string(l.type), l.bandwidth_gbps, l.latency_us);
    i = j;
  }
  if (torus)
    s += fmt::format("\n[torus]\ndims = [{}, {}]\nwraparound = {}\nbandwidth_gbps = {}\nlatency_us = {}\n", t.torus.dims[0],
                     t.torus.dims[1], t.torus.wraparound, t.torus.bandwidth_gbps, t.torus.latency_us);
  if (t.has_network)
    s += fmt::format("\n[network]\nkind = \"{}\"\nlatency_us = {}\n", to_string(t.network.kind), t.network.latency_us);
  return s;
}

}  // namespace cpplan
