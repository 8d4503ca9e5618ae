#include "imports/timing_rows.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <set>

#include "core/sequence.h"
#include "core/text.h"

namespace cpplan::imports {

namespace {

using nlohmann::json;

// The runtime of rows with compiled = true (profiles/runtimes/compiled.toml: torch.compile'd pipelines).
constexpr const char* kCompiledRuntime = "compiled";

const std::set<std::string>& known_keys() {
  static const std::set<std::string> k = {
      "source", "model", "hardware", "gpu_name", "runtime", "gpus", "resolution", "width", "height", "frames",
      "steps", "batch", "text_tokens", "ring_degree", "ulysses_degree", "tp_degree", "cfg_degree", "dp_degree",
      "fs_degree", "ulysses_anything", "ring_anything", "pipefusion_degree", "pipefusion_patches",
      "pipefusion_warmup_steps", "attention_backend", "text_encoder", "vae", "ms_per_step", "step_ms",
      "seconds_per_image", "image_ms", "peak_memory_gb", "peak_mem_bytes", "topology", "box", "config", "compiled",
      "oom",
      // what a row says about itself, for people: read, not used
      "bar", "figure", "notes", "path", "commit", "raw_model", "from_figure", "quote"};
  return k;
}

// The short names of ../shared/reference/published-xdit-families.json's schema for the fields above.
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> a = {
      {"src", "source"},          {"hw", "hardware"},     {"res", "resolution"},
      {"ulysses", "ulysses_degree"}, {"ring", "ring_degree"}, {"tp", "tp_degree"},
      {"cfg", "cfg_degree"},      {"pipefusion", "pipefusion_degree"},
      {"seconds", "seconds_per_image"}, {"mem_gb", "peak_memory_gb"}};
  return a;
}

// A row's keys under their long names; a row that gives a field under both names is an error.
Result<json> canonical(json row, const std::string& where) {
  for (const auto& [alias, key] : aliases()) {
    if (!row.contains(alias)) continue;
    if (row.contains(key))
      return Error{printable(fmt::format("{}: {} = {}: names the field {} too (given as {}); give one", where, alias,
                                         row[alias].dump(), key, row[key].dump()))};
    row[key] = std::move(row[alias]);
    row.erase(alias);
  }
  return row;
}

// One row's fields as text or JSON values, whichever the format gives; every accessor names the
// row and the field in its error.
class Fields {
 public:
  Fields(std::string where, json values) : where_(std::move(where)), v_(std::move(values)) {}

  const std::string& where() const { return where_; }
  bool has(const std::string& key) const { return v_.contains(key) && !v_[key].is_null() && !blank(v_[key]); }

  Error fail(const std::string& key, const std::string& value, const std::string& rule) const {
    return Error{printable(fmt::format("{}: {} = {}: {}", where_, key, value, rule))};
  }
  std::string shown(const std::string& key) const {
    const json& x = v_[key];
    return x.is_string() ? x.get<std::string>() : x.dump();
  }

  Result<std::string> text(const std::string& key) const {
    if (!has(key)) return fail(key, "(missing)", "is required");
    if (!v_[key].is_string()) return fail(key, shown(key), "must be a string");
    return v_[key].get<std::string>();
  }
  Result<double> number(const std::string& key, double lo, double hi) const {
    const json& x = v_[key];
    double d = 0;
    if (x.is_number()) {
      d = x.get<double>();
    } else if (x.is_string()) {
      const std::string s = x.get<std::string>();
      auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
      if (ec != std::errc() || ptr != s.data() + s.size()) return fail(key, s, "must be a number");
    } else {
      return fail(key, shown(key), "must be a number");
    }
    if (!(d > lo) || d > hi) return fail(key, shown(key), fmt::format("must be above {} and at most {}", lo, hi));
    return d;
  }
  Result<int> integer(const std::string& key, int lo, int hi, int fallback) const {
    if (!has(key)) return fallback;
    auto d = number(key, lo - 1, hi);
    if (!d) return d.error();
    if (*d != static_cast<int>(*d)) return fail(key, shown(key), "must be an integer");
    return static_cast<int>(*d);
  }
  Result<bool> flag(const std::string& key) const {
    if (!has(key)) return false;
    const json& x = v_[key];
    if (x.is_boolean()) return x.get<bool>();
    if (x.is_string()) {
      const std::string s = x.get<std::string>();
      if (s == "true" || s == "1") return true;
      if (s == "false" || s == "0") return false;
    }
    return fail(key, shown(key), "must be true or false");
  }

 private:
  static bool blank(const json& x) { return x.is_string() && x.get<std::string>().empty(); }
  std::string where_;
  json v_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Result<bool> read_size(const Fields& f, TimingRow& row) {
  if (f.has("resolution")) {
    auto text = f.text("resolution");
    if (!text) return text.error();
    auto res = parse_resolution(*text);
    if (!res) return f.fail("resolution", *text, "must be WIDTHxHEIGHT, e.g. 1024x1024");
    row.width = res->width;
    row.height = res->height;
  } else {
    auto w = f.integer("width", 1, 1 << 16, 0), h = f.integer("height", 1, 1 << 16, 0);
    if (!w) return w.error();
    if (!h) return h.error();
    if (*w == 0 || *h == 0) return f.fail("resolution", "(missing)", "is required (or width and height)");
    row.width = *w;
    row.height = *h;
  }
  return true;
}

// PipeFusion's degree P, patches M and synchronous warm-up steps W; absent or null, xDiT's
// defaults (M = P, W = 1) under PipeFusion and none without. Given without PipeFusion, they stay
// as given and the plan's check refuses them (they need pipefusion_degree > 1).
Result<bool> read_pipefusion(const Fields& f, PipeFusionConfig& pf) {
  auto degree = f.integer("pipefusion_degree", 1, 1 << 17, 1);
  if (!degree) return degree.error();
  const bool on = *degree > 1;
  auto patches = f.integer("pipefusion_patches", 1, 1 << 16, on ? *degree : 1);
  if (!patches) return patches.error();
  auto warmup = f.integer("pipefusion_warmup_steps", 0, 100000, on ? kXditWarmupSteps : 0);
  if (!warmup) return warmup.error();
  pf = {*degree, *patches, *warmup};
  return true;
}

Result<bool> read_plan(const Fields& f, TimingRow& row) {
  ParallelConfig& c = row.config;
  ContextParallelConfig& cp = c.context_parallel_config;
  for (auto [key, out] : {std::pair{"ring_degree", &cp.ring_degree}, {"ulysses_degree", &cp.ulysses_degree},
                          {"tp_degree", &c.tensor_parallel_config.tp_degree}, {"cfg_degree", &c.cfg_degree},
                          {"dp_degree", &c.dp_degree}, {"fs_degree", &c.fs_degree}}) {
    auto d = f.integer(key, 1, 1 << 17, 1);
    if (!d) return d.error();
    *out = *d;
  }
  if (auto r = read_pipefusion(f, c.pipefusion); !r) return r.error();
  auto ua = f.flag("ulysses_anything"), ra = f.flag("ring_anything");
  if (!ua) return ua.error();
  if (!ra) return ra.error();
  cp.ulysses_anything = *ua;
  cp.ring_anything = *ra;
  if (c.world_size() != row.gpus)
    return f.fail("gpus", std::to_string(row.gpus),
                  fmt::format("must equal the product of the degrees ({})", c.world_size()));
  return true;
}

Result<bool> read_placement(const Fields& f, TimingRow& row) {
  if (f.has("attention_backend")) {
    auto b = f.text("attention_backend");
    if (!b) return b.error();
    const auto backend = attention_backend_from_string(*b);
    if (!backend) return f.fail("attention_backend", *b, "must be flash, cudnn, sage or native");
    row.backend = *backend;
  }
  if (f.has("text_encoder")) {
    auto t = f.text("text_encoder");
    if (!t) return t.error();
    TextEncoderPlacement p{};
    if (!text_encoder_placement_from_string(*t, p))
      return f.fail("text_encoder", *t, "must be " + text_encoder_placement_choices());
    row.text_encoder = p;
  }
  if (f.has("vae")) {
    auto t = f.text("vae");
    if (!t) return t.error();
    VaePlacement p{};
    if (!vae_placement_from_string(*t, p)) return f.fail("vae", *t, "must be single, parallel, tiled or sliced");
    row.vae = p;
  }
  return true;
}

// The timings: ms_per_step (or step_ms), seconds_per_image (or image_ms), peak memory.
Result<bool> read_timings(const Fields& f, TimingRow& row) {
  for (auto [key, scale, out] : {std::tuple{"ms_per_step", 1.0, &row.step_ms}, {"step_ms", 1.0, &row.step_ms},
                                 {"seconds_per_image", 1e3, &row.image_ms}, {"image_ms", 1.0, &row.image_ms}}) {
    if (!f.has(key)) continue;
    auto v = f.number(key, 0, 1e9);
    if (!v) return v.error();
    *out = *v * scale;
  }
  if (!row.step_ms && !row.image_ms && !row.oom)
    return f.fail("ms_per_step", "(missing)",
                  "a row needs ms_per_step (step_ms) or seconds_per_image (seconds, image_ms), or oom = true");
  if (row.image_ms && row.steps == 0)
    return f.fail("steps", "(missing)", "a per-image figure needs the steps it ran");
  // Peak memory "as printed": PyTorch's reports (torch.cuda.max_memory_allocated / 2^30) say GB
  // for GiB.
  if (f.has("peak_memory_gb")) {
    auto v = f.number("peak_memory_gb", 0, 1e6);
    if (!v) return v.error();
    row.peak_mem_bytes = *v * kGiB;
  }
  if (f.has("peak_mem_bytes")) {
    auto v = f.number("peak_mem_bytes", 0, 1e15);
    if (!v) return v.error();
    row.peak_mem_bytes = *v;
  }
  return true;
}

// The box the row ran on: "topology" names a topology profile; "box" describes it in words and
// --topology-for BOX=TOPOLOGY names its profile (a box named by neither is an error: its links
// would silently be the hardware profile's). Neither field: the hardware profile's own node.
Result<bool> read_topology(const Fields& f, const TimingImportOptions& o, TimingRow& row) {
  if (f.has("box")) {
    auto box = f.text("box");
    if (!box) return box.error();
    row.box = *box;
    if (auto t = o.topology_for_box.find(*box); t != o.topology_for_box.end()) row.topology = t->second;
  }
  if (f.has("topology")) {
    auto t = f.text("topology");
    if (!t) return t.error();
    row.topology = *t;
  }
  if (!row.box.empty() && row.topology.empty())
    return f.fail("box", row.box, "names no topology (give --topology-for BOX=TOPOLOGY, or the row a \"topology\")");
  return true;
}

// The timings file a row is read from: its name (the rows' source when they name none) and its
// folder (where a row's "config" is looked up).
struct FileOf {
  std::string name;
  std::filesystem::path folder;
};

// "config": a diffusers transformer config (or pipeline folder), relative to the timings file's
// folder or to its configs/ folder. The row's model is the profile derived from it, named by its
// stem (the calibration adds it to the catalog: session/engine/calibration.cpp).
Result<bool> read_config(const Fields& f, const FileOf& file, TimingRow& row) {
  auto config = f.text("config");
  if (!config) return config.error();
  if (f.has("model"))
    return f.fail("model", f.shown("model"), fmt::format("a row names a model profile or a config ({}), not both", *config));
  namespace fs = std::filesystem;
  const fs::path given(*config);
  std::vector<fs::path> places = {given.is_absolute() ? given : file.folder / given};
  if (!given.is_absolute()) places.push_back(file.folder / "configs" / given);
  std::vector<std::string> tried;
  std::error_code ec;
  for (const fs::path& p : places) {
    if (fs::exists(p, ec)) {
      row.model_config = p.lexically_normal().string();
      row.model = p.lexically_normal().filename() == "" ? p.parent_path().stem().string() : p.stem().string();
      return true;
    }
    tried.push_back(p.lexically_normal().string());
  }
  return f.fail("config", *config,
                fmt::format("no such file ({}): a diffusers transformer config, relative to the timings file's folder "
                            "or its configs/", fmt::join(tried, ", ")));
}

// The row's runtime: its own "runtime"; else --runtime-for its source; else the compiled runtime
// for a row with compiled = true; else its source's runtime in the file's "sources"; else --runtime.
Result<bool> read_runtime(const Fields& f, const std::string& source_runtime, const TimingImportOptions& o,
                          TimingRow& row) {
  auto compiled = f.flag("compiled");
  if (!compiled) return compiled.error();
  row.compiled = *compiled;
  if (f.has("runtime")) {
    auto t = f.text("runtime");
    if (!t) return t.error();
    row.runtime = *t;
  } else if (auto m = o.runtime_for_source.find(row.source); m != o.runtime_for_source.end()) {
    row.runtime = m->second;
  } else if (row.compiled) {
    row.runtime = kCompiledRuntime;
  } else if (!source_runtime.empty()) {
    row.runtime = source_runtime;
  } else if (!o.default_runtime.empty()) {
    row.runtime = o.default_runtime;
  } else {
    return f.fail("runtime", "(missing)", "is required (or --runtime, or --runtime-for SOURCE=RUNTIME)");
  }
  return true;
}

Result<TimingRow> read_row(const Fields& f, const std::string& source_runtime, const TimingImportOptions& o,
                           const FileOf& file) {
  TimingRow row;
  row.where = f.where();
  row.source = file.name;
  if (f.has("source")) {
    auto t = f.text("source");
    if (!t) return t.error();
    row.source = *t;
  }
  if (auto m = o.model_for_source.find(row.source); m != o.model_for_source.end()) {
    row.model = m->second;
  } else if (f.has("config")) {
    if (auto r = read_config(f, file, row); !r) return r.error();
  } else {
    if (!f.has("model")) return f.fail("model", "(missing)", "is required (or config: a diffusers transformer config)");
    auto model = f.text("model");
    if (!model) return model.error();
    row.model = *model;
  }
  auto oom = f.flag("oom");
  if (!oom) return oom.error();
  row.oom = *oom;
  if (auto r = read_topology(f, o, row); !r) return r.error();
  if (!f.has("hardware") && !f.has("gpu_name"))
    return f.fail("hardware", "(missing)", "is required (a hardware profile, or gpu_name)");
  const bool named = f.has("hardware");
  auto hardware = f.text(named ? "hardware" : "gpu_name");
  if (!hardware) return hardware.error();
  row.hardware = named ? *hardware : "gpu:" + *hardware;  // a GPU name is matched by the caller
  if (auto r = read_runtime(f, source_runtime, o, row); !r) return r.error();
  auto gpus = f.integer("gpus", 1, 1 << 17, 0);
  if (!gpus) return gpus.error();
  if (*gpus == 0) return f.fail("gpus", "(missing)", "is required");
  row.gpus = *gpus;
  for (auto [key, lo, hi, fallback, out] :
       {std::tuple{"frames", 1, 100000, 1, &row.frames}, {"steps", 1, 100000, 0, &row.steps},
        {"batch", 1, 65536, 1, &row.batch}, {"text_tokens", 1, 1 << 20, 0, &row.text_tokens}}) {
    auto v = f.integer(key, lo, hi, fallback);
    if (!v) return v.error();
    *out = *v;
  }
  for (auto read : {read_size, read_plan, read_placement, read_timings})
    if (auto r = read(f, row); !r) return r.error();
  if (auto w = o.warmup_for_source.find(row.source);
      w != o.warmup_for_source.end() && row.config.pp() > 1 && !f.has("pipefusion_warmup_steps"))
    row.config.pipefusion.warmup_steps = w->second;
  return row;
}

Result<bool> check_keys(const json& j, const std::string& where) {
  for (const auto& [k, v] : j.items())
    if (!known_keys().count(k)) {
      const std::vector<std::string> names(known_keys().begin(), known_keys().end());
      const auto near = closest_names(k, names, 1);
      return Error{printable(fmt::format("{}: {} = ...: unknown field{}", where, k,
                                         near.empty() ? "" : fmt::format(" (did you mean {}?)", near[0])))};
    }
  return true;
}

// "diffusers eager (torch 2.x, ...)" -> "diffusers": the runtime a source's description names.
std::string first_word(const std::string& text) {
  std::string w;
  for (char ch : text) {
    if (std::isspace(static_cast<unsigned char>(ch)) || ch == ',' || ch == '(') break;
    w += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return w;
}

FileOf file_of(const std::string& path) {
  const std::filesystem::path p(path);
  return {p.filename().string(), p.parent_path()};
}

Result<std::vector<TimingRow>> parse_json(const json& doc, const std::string& path, const TimingImportOptions& o) {
  const FileOf file = file_of(path);
  std::map<std::string, std::string> source_runtime;
  const json* points = &doc;
  if (doc.is_object()) {
    if (!doc.contains("points") || !doc["points"].is_array())
      return Error{fmt::format("{}: points = (missing): a timings object needs a \"points\" array", path)};
    for (const auto& [k, v] : doc.items())
      if (k != "points" && k != "sources" && k != "about")
        return Error{printable(fmt::format("{}: {} = ...: unknown field (points, sources, about)", path, k))};
    if (doc.contains("sources") && doc["sources"].is_object())
      for (const auto& [name, s] : doc["sources"].items())
        if (s.is_object() && s.contains("runtime") && s["runtime"].is_string())
          source_runtime[name] = first_word(s["runtime"].get<std::string>());
    points = &doc["points"];
  } else if (!doc.is_array()) {
    return Error{fmt::format("{}: must be an array of rows or an object with \"points\"", path)};
  }
  std::vector<TimingRow> rows;
  for (std::size_t i = 0; i < points->size(); ++i) {
    const json& p = (*points)[i];
    const std::string where = fmt::format("{}: {}[{}]", path, doc.is_object() ? "points" : "rows", i);
    if (!p.is_object()) return Error{fmt::format("{}: must be an object", where)};
    auto named = canonical(p, where);
    if (!named) return named.error();
    if (auto r = check_keys(*named, where); !r) return r.error();
    const json& q = *named;
    const std::string source = q.contains("source") && q["source"].is_string() ? q["source"].get<std::string>() : file.name;
    auto it = source_runtime.find(source);
    auto row = read_row(Fields(where, q), it == source_runtime.end() ? "" : it->second, o, file);
    if (!row) return row.error();
    rows.push_back(std::move(row).value());
  }
  return rows;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted && ch == '"' && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
    else if (ch == '"') quoted = !quoted;
    else if (ch == ',' && !quoted) out.emplace_back();
    else out.back() += ch;
  }
  return out;
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto nl = text.find('\n', start);
    std::string line(text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return lines;
}

Result<std::vector<TimingRow>> parse_csv(std::string_view text, const std::string& path, const TimingImportOptions& o) {
  const auto lines = lines_of(text);
  if (lines.empty() || lines[0].empty()) return Error{fmt::format("{}:1: a CSV file needs a header row", path)};
  const auto header = split_csv_line(lines[0]);
  json keys = json::object();
  for (const auto& h : header) keys[h] = "";
  auto named = canonical(keys, fmt::format("{}:1", path));
  if (!named) return named.error();
  if (auto r = check_keys(*named, fmt::format("{}:1", path)); !r) return r.error();
  std::vector<TimingRow> rows;
  const FileOf file = file_of(path);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    const auto cells = split_csv_line(lines[i]);
    const std::string where = fmt::format("{}:{}", path, i + 1);
    if (cells.size() != header.size())
      return Error{fmt::format("{}: {} fields where the header has {}", where, cells.size(), header.size())};
    json values = json::object();
    for (std::size_t c = 0; c < cells.size(); ++c) values[header[c]] = cells[c];
    auto canonical_values = canonical(values, where);
    if (!canonical_values) return canonical_values.error();
    auto row = read_row(Fields(where, *canonical_values), "", o, file);
    if (!row) return row.error();
    rows.push_back(std::move(row).value());
  }
  return rows;
}

// One line of python/cpplan_record.py: its step times, encode and decode, the pipeline's image time.
Result<TimingRow> recorder_row(const json& j, const std::string& where, const TimingImportOptions& o,
                               const FileOf& file) {
  if (!j.contains("cpplan_record") || j["cpplan_record"] != 1)
    return Error{fmt::format("{}: cpplan_record = {}: must be 1", where,
                             j.contains("cpplan_record") ? j["cpplan_record"].dump() : "(missing)")};
  json row = json::object();
  for (const char* key : {"model", "hardware", "gpu_name", "runtime", "width", "height", "frames", "steps", "batch",
                          "ring_degree", "ulysses_degree", "tp_degree", "cfg_degree", "dp_degree", "ulysses_anything",
                          "ring_anything", "text_encoder", "vae", "image_ms", "peak_mem_bytes"})
    if (j.contains(key)) row[key] = j[key];
  if (!j.contains("world_size") || !j["world_size"].is_number_integer() || j["world_size"].get<long long>() < 1)
    return Error{printable(fmt::format("{}: world_size = {}: must be an integer of at least 1", where,
                                       j.contains("world_size") ? j["world_size"].dump() : "(missing)"))};
  row["gpus"] = j["world_size"];
  if (j.contains("step_ms") && j["step_ms"].is_array() && !j["step_ms"].empty()) {
    std::vector<double> steps;
    for (const auto& s : j["step_ms"])
      if (s.is_number()) steps.push_back(s.get<double>());
    if (!steps.empty()) row["step_ms"] = median(steps);
  }
  return read_row(Fields(where, row), "", o, file);
}

}  // namespace

Result<std::vector<TimingRow>> parse_timing_rows(std::string_view text, const std::string& path,
                                                 const TimingImportOptions& o) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".csv") return parse_csv(text, path, o);
  const bool lines = ext == ".jsonl" || text.find("\"cpplan_record\"") != std::string_view::npos;
  if (!lines) {
    json doc;
    try {
      doc = json::parse(text);
    } catch (const json::parse_error& e) {
      return Error{printable(fmt::format("{}: invalid JSON: {}", path, e.what()))};
    }
    return parse_json(doc, path, o);
  }
  std::vector<TimingRow> rows;
  const FileOf file = file_of(path);
  const auto all = lines_of(text);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].empty()) continue;
    const std::string where = fmt::format("{}:{}", path, i + 1);
    json j;
    try {
      j = json::parse(all[i]);
    } catch (const json::parse_error& e) {
      return Error{printable(fmt::format("{}: invalid JSON: {}", where, e.what()))};
    }
    if (!j.is_object()) return Error{fmt::format("{}: must be a JSON object", where)};
    auto row = recorder_row(j, where, o, file);
    if (!row) return row.error();
    rows.push_back(std::move(row).value());
  }
  return rows;
}

}  // namespace cpplan::imports
