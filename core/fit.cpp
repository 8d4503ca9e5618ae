#include "core/fit.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "core/toml_reader.h"

namespace cpplan {

namespace {

using detail::Reader;

constexpr double kMaxMultiplier = kMaxFitMultiplier;
// A fitted efficiency stays a fraction of the datasheet peak; memory-bound work may beat DRAM
// bandwidth (activations resident in L2), so it is not capped.
constexpr double kPeakCap = 0.95;

void read_provenance(Reader& r, FitProvenance& p) {
  r.only({"source", "rows", "fitted_at", "cpplan_version", "mape", "cv_mape", "folds", "repeats", "shrinkage",
          "shrinkage_by", "held_out"});
  r.string("source", p.source);
  r.integer("rows", p.rows, 0, 1 << 30);
  r.string("fitted_at", p.fitted_at, false);
  r.string("cpplan_version", p.cpplan_version, false);
  r.number("mape", p.mape, 0, 1e6, false);
  r.number("cv_mape", p.cv_mape, 0, 1e6, false);
  r.integer("folds", p.folds, 0, 1 << 20, false);
  r.integer("repeats", p.repeats, 1, 1 << 20, false);
  r.number("shrinkage", p.shrinkage, 0, 1e12, false);
  int by = 0;
  r.choice("shrinkage_by", by, {"rows", "groups"}, false);
  p.shrinkage_by_groups = by == 1;
}

void read_runtime_values(Reader& r, RuntimeFitValues& v) {
  r.only({"us_per_op", "eager_us_per_op", "ring", "ring_iteration", "ulysses", "collective_us", "sync_us", "image_ms",
          "step"});
  auto opt = [&](std::string_view key, std::optional<double>& out) {
    double x = -1;
    r.number(key, x, 0, 1e9, false);
    if (x >= 0) out = x;
  };
  opt("us_per_op", v.us_per_op);
  opt("eager_us_per_op", v.eager_us_per_op);
  opt("ring", v.ring);
  opt("ring_iteration", v.ring_iteration);
  opt("ulysses", v.ulysses);
  opt("collective_us", v.collective_us);
  opt("sync_us", v.sync_us);
  opt("image_ms", v.image_ms);
  opt("step", v.step);
}

void read_architecture_values(Reader& r, ArchitectureFitValues& v) {
  r.only({"gemm", "attention", "memory", "conv"});
  for (auto [key, out] : {std::pair{"gemm", &v.gemm}, {"attention", &v.attention}, {"memory", &v.memory},
                          {"conv", &v.conv}})
    r.number(key, *out, 0, kMaxMultiplier, false, true);
}

// Each key of the sub-table `key` of `r`, read by `each(name, Reader&)`.
template <class F>
void each_entry(Reader& r, std::string_view key, F&& each) {
  const toml::table* t = r.table(key, false);
  if (!t || !r.ok()) return;
  for (const auto& [name, node] : *t) {
    const std::string n(name.str());
    if (!node.is_table()) return r.fail(fmt::format("{}.{}", key, n), "...", "must be a table");
    each(n, r.sub(*node.as_table(), fmt::format("{}.{}", key, n)));
    if (!r.ok()) return;
  }
}

Result<RuntimeFit> fit_from_toml(const toml::table& root, const std::string& path) {
  std::string error;
  Reader r(root, path, "", &error);
  RuntimeFit f;
  f.source_file = path;
  r.only({"name", "description", "provenance", "runtimes", "architectures", "links"});
  detail::read_name(r, path, f.name);
  r.string("description", f.description, false);
  if (const auto* t = r.table("provenance"); t && r.ok()) {
    Reader p = r.sub(*t, "provenance");
    read_provenance(p, f.provenance);
    if (const auto* h = p.table("held_out", false); h && p.ok()) {
      Reader hr = p.sub(*h, "held_out");
      for (const auto& [k, node] : *h) {
        double v = 0;
        hr.number(k.str(), v, 0, 1e6);
        if (!hr.ok()) break;
        f.provenance.held_out[std::string(k.str())] = v;
      }
    }
  }
  each_entry(r, "runtimes", [&](const std::string& n, Reader sub) { read_runtime_values(sub, f.runtimes[n]); });
  each_entry(r, "architectures",
             [&](const std::string& n, Reader sub) { read_architecture_values(sub, f.architectures[n]); });
  if (const auto* t = r.table("links", false); t && r.ok()) {
    Reader l = r.sub(*t, "links");
    l.only({"nvswitch", "pcie", "pcie_host", "ici", "socket_all_to_all"});
    for (const auto& [k, node] : *t) {
      double v = 1;
      l.number(k.str(), v, 0, kMaxMultiplier, true, true);
      if (!l.ok()) break;
      f.links[std::string(k.str())] = v;
    }
  }
  if (!r.ok()) return Error{error};
  return f;
}

std::string number(double v) { return fmt::format("{:.6g}", v); }

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string toml_string(std::string_view text) {
  std::string s = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') s += '\\', s += c;
    else if (u < 0x20 || u == 0x7f) s += fmt::format("\\u{:04x}", u);
    else s += c;
  }
  return s + "\"";
}

// A TOML key: bare when it can be (letters, digits, '_' and '-'), else quoted.
std::string key(std::string_view name) {
  const bool bare = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  return bare ? std::string(name) : toml_string(name);
}

}  // namespace

Result<RuntimeFit> load_runtime_fit(const std::string& path) {
  auto parsed = detail::parse_toml(path);
  if (!parsed) return parsed.error();
  return fit_from_toml(*parsed, path);
}

Result<RuntimeFit> parse_runtime_fit(std::string_view text, const std::string& path) {
  auto parsed = detail::parse_toml_text(text, path);
  if (!parsed) return parsed.error();
  return fit_from_toml(*parsed, path);
}

std::string to_toml(const RuntimeFit& f) {
  const FitProvenance& p = f.provenance;
  std::string s = fmt::format("# Written by cpplan calibrate --import; schema in docs/profiles.md (fits).\n");
  s += fmt::format("name = {}\ndescription = {}\n\n", toml_string(f.name), toml_string(f.description));
  s += fmt::format("[provenance]\nsource = {}\nrows = {}\nfitted_at = {}\ncpplan_version = {}\n", toml_string(p.source), p.rows,
                   toml_string(p.fitted_at), toml_string(p.cpplan_version));
  s += fmt::format("mape = {}\ncv_mape = {}\nfolds = {}\nrepeats = {}\nshrinkage = {}\n", number(p.mape), number(p.cv_mape),
                   p.folds, p.repeats, number(p.shrinkage));
  if (p.shrinkage_by_groups) s += "shrinkage_by = \"groups\"\n";
  if (!p.held_out.empty()) {
    s += "held_out = { ";
    bool first = true;
    for (const auto& [k, v] : p.held_out) {
      s += fmt::format("{}{} = {}", first ? "" : ", ", key(k), number(v));
      first = false;
    }
    s += " }\n";
  }
  for (const auto& [name, v] : f.runtimes) {
    s += fmt::format("\n[runtimes.{}]\n", key(name));
    for (auto [key, val] : {std::pair{"us_per_op", v.us_per_op}, {"eager_us_per_op", v.eager_us_per_op}, {"ulysses", v.ulysses}, {"ring", v.ring}, {"ring_iteration", v.ring_iteration},
                            {"collective_us", v.collective_us}, {"sync_us", v.sync_us}, {"step", v.step},
                            {"image_ms", v.image_ms}})
      if (val) s += fmt::format("{} = {}\n", key, number(*val));
  }
  for (const auto& [name, v] : f.architectures)
    s += fmt::format("\n[architectures.{}]\ngemm = {}\nattention = {}\nmemory = {}\nconv = {}\n", key(name), number(v.gemm),
                     number(v.attention), number(v.memory), number(v.conv));
  if (!f.links.empty()) {
    s += "\n[links]\n";
    for (const auto& [k, v] : f.links) s += fmt::format("{} = {}\n", key(k), number(v));
  }
  return s;
}

RuntimeFit merge_fits(const std::deque<RuntimeFit>& fits) {
  RuntimeFit all;
  std::vector<std::string> names;
  for (const RuntimeFit& f : fits) {
    names.push_back(f.name);
    for (const auto& [name, v] : f.runtimes) {
      RuntimeFitValues& into = all.runtimes[name];
      for (auto field : {&RuntimeFitValues::us_per_op, &RuntimeFitValues::eager_us_per_op, &RuntimeFitValues::ulysses,
                         &RuntimeFitValues::ring, &RuntimeFitValues::ring_iteration, &RuntimeFitValues::collective_us,
                         &RuntimeFitValues::sync_us, &RuntimeFitValues::image_ms, &RuntimeFitValues::step})
        if (v.*field) into.*field = v.*field;
    }
    for (const auto& [arch, v] : f.architectures) all.architectures[arch] = v;
    for (const auto& [link, v] : f.links) all.links[link] = v;
  }
  all.name = fmt::format("{}", fmt::join(names, "+"));
  return all;
}

void apply_fit(const RuntimeFit& fit, RuntimeProfile& rt) {
  const auto it = fit.runtimes.find(rt.name);
  if (it == fit.runtimes.end()) return;
  const RuntimeFitValues& v = it->second;
  if (v.us_per_op) rt.us_per_op = *v.us_per_op;
  if (v.eager_us_per_op) rt.eager_us_per_op = *v.eager_us_per_op;
  if (v.ring) rt.ops.ring = *v.ring;
  if (v.ring_iteration) rt.ops.ring_iteration = *v.ring_iteration;
  if (v.ulysses) rt.ops.ulysses = *v.ulysses;
  if (v.collective_us) rt.collective_us = *v.collective_us;
  if (v.sync_us) rt.sync_us = *v.sync_us;
  if (v.image_ms) rt.image_ms = *v.image_ms;
  if (v.step) rt.ops.step = *v.step;
  rt.fitted_by = fit.name;
}

void apply_fit(const RuntimeFit& fit, HardwareProfile& hw) {
  bool applied = false;
  if (const auto a = fit.architectures.find(hw.architecture); a != fit.architectures.end() && !hw.architecture.empty()) {
    const ArchitectureFitValues& v = a->second;
    hw.gemm_efficiency = std::min(kPeakCap, hw.gemm_efficiency * v.gemm);
    for (double& e : hw.attention_efficiency) e = std::min(kPeakCap, e * v.attention);
    hw.conv_efficiency = std::min(kPeakCap, hw.conv_efficiency * v.conv);
    hw.memory_efficiency *= v.memory;
    applied = true;
  }
  const bool gpu_fabric = hw.link_kind == LinkKind::kNvSwitch || hw.link_kind == LinkKind::kPcie ||
                          hw.link_kind == LinkKind::kPcieHost ||
                          hw.link_kind == LinkKind::kXgmi;  // a GPU, whose peers can meet over PCIe
  if (const auto l = fit.links.find("pcie"); l != fit.links.end() && gpu_fabric) {
    hw.pcie_efficiency = std::min(1.0, hw.pcie_efficiency * l->second);
    applied = true;
  }
  if (const auto l = fit.links.find("pcie_host"); l != fit.links.end() && gpu_fabric) {
    hw.staged_pcie_efficiency = std::min(1.0, hw.staged_pcie_efficiency * l->second);
    applied = true;
  }
  if (const auto l = fit.links.find("socket_all_to_all"); l != fit.links.end() && gpu_fabric) {
    hw.all_to_all_across_sockets = std::min(1.0, hw.all_to_all_across_sockets * l->second);
    applied = true;
  }
  if (const auto l = fit.links.find(std::string(to_string(hw.link_kind))); l != fit.links.end()) {
    hw.intra_node.efficiency = std::min(1.0, hw.intra_node.efficiency * l->second);
    applied = true;
  }
  if (applied) hw.fitted_by = fit.name;
}

}  // namespace cpplan
