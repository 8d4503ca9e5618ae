#include "session/jobs/sweep_file.h"

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "core/cache.h"
#include "core/diffusers_config.h"
#include "session/query/query_fields.h"
#include "core/text.h"
#include "session/engine/engine.h"

namespace cpplan::session {

namespace fs = std::filesystem;

namespace {

std::string toml_text(const toml::node& n) {
  std::ostringstream s;
  if (n.is_string()) s << '"' << n.as_string()->get() << '"';
  else if (n.is_integer()) s << n.as_integer()->get();
  else if (n.is_floating_point()) s << n.as_floating_point()->get();
  else if (n.is_boolean()) s << (n.as_boolean()->get() ? "true" : "false");
  else s << "...";
  return s.str();
}

std::string where(const std::string& path, const toml::node& n) {
  return fmt::format("{}:{}", path, n.source().begin.line);
}

// Reads `plans` entries given as tables: { ring = 2, ulysses = 1, tp = 1, cfg = 1, dp = 1, fs = 1,
// ulysses_anything = false, ring_anything = false, rotate_method = "allgather", pipefusion = 1,
// num_pipeline_patch = P, pipefusion_warmup_steps = 1 }.
Result<ParallelConfig> plan_from_table(const toml::table& t, const std::string& path) {
  ParallelConfig c;
  auto& cp = c.context_parallel_config;
  int patches = 0, warmup = -1;  // unset: xDiT's defaults for the plan's P
  for (const auto& [key, value] : t) {
    const std::string k(key.str());
    const toml::node& node = value;  // a structured binding cannot be captured before clang 16
    auto integer = [&](int& out) -> std::optional<Error> {
      if (!node.is_integer() || node.as_integer()->get() < 1 || node.as_integer()->get() > 1 << 17)
        return Error{fmt::format("{}: plans.{} = {}: must be a positive integer", where(path, node), k, toml_text(node))};
      out = static_cast<int>(node.as_integer()->get());
      return std::nullopt;
    };
    std::optional<Error> e;
    if (k == "ring") e = integer(cp.ring_degree);
    else if (k == "ulysses") e = integer(cp.ulysses_degree);
    else if (k == "tp") e = integer(c.tensor_parallel_config.tp_degree);
    else if (k == "cfg") e = integer(c.cfg_degree);
    else if (k == "dp") e = integer(c.dp_degree);
    else if (k == "fs" || k == "fully_shard") e = integer(c.fs_degree);
    else if (k == "pipefusion") e = integer(c.pipefusion.degree);
    else if (k == "num_pipeline_patch") e = integer(patches);
    else if (k == "pipefusion_warmup_steps" && node.is_integer() && node.as_integer()->get() >= 0 &&
             node.as_integer()->get() <= 100000)
      warmup = static_cast<int>(node.as_integer()->get());
    else if (k == "ulysses_anything" && node.is_boolean()) cp.ulysses_anything = node.as_boolean()->get();
    else if (k == "ring_anything" && node.is_boolean()) cp.ring_anything = node.as_boolean()->get();
    else if (k == "rotate_method" && node.is_string() && rotate_method_from_string(node.as_string()->get()))
      cp.rotate_method = *rotate_method_from_string(node.as_string()->get());
    else
      e = Error{fmt::format("{}: plans.{} = {}: unknown field or wrong type (ring, ulysses, tp, cfg, dp, fs, pipefusion, "
                            "num_pipeline_patch: positive integers; pipefusion_warmup_steps: an integer >= 0; "
                            "ulysses_anything, ring_anything: booleans; rotate_method: allgather or p2p)",
                            where(path, node), k, toml_text(node))};
    if (e) return *e;
  }
  c.pipefusion.patches = patches > 0 ? patches : c.pp();
  c.pipefusion.warmup_steps = warmup >= 0 ? warmup : (c.pp() > 1 ? kXditWarmupSteps : 0);
  if (c.world_size() > 1 << 17)  // SweepRun::gpus is an int, and no plan spans more GPUs
    return Error{fmt::format("{}: plans: {}: the product of the degrees must be at most {} GPUs", where(path, t),
                             plan_label(c), 1 << 17)};
  return c;
}

}  // namespace

Result<std::vector<SweepRun>> load_sweep(const std::string& path, const ProfileCatalog& catalog) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Error{fmt::format("{}: not a readable file", path)};
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) return Error{fmt::format("{}: not a readable file", path)};
  return parse_sweep(text.str(), path, catalog);
}

namespace {

// The fields of a sweep file, read and checked.
struct SweepSpec {
  std::vector<std::string> models, resolutions;  // resolutions empty: each model's default
  std::vector<std::string> model_configs;        // diffusers configs, relative to the sweep file's folder
  std::vector<int> frames, gpus;                  // frames empty: each model's default
  int steps = 10, warmup = 2, seed = 0;
  std::string device = "cpu";  // every run's: cpu (fp32, Gloo) or cuda (one GPU per rank, bf16, NCCL)
  enum class Mode { kAll, kTop, kList } mode = Mode::kAll;  // plans: "all", "top K", or listed
  int top = 0;
  std::vector<ParallelConfig> listed;
  // caches: each plan run with each (none: {}); the fixed schedules the executor runs
  std::vector<std::pair<CacheSpec, int>> caches{{CacheSpec{}, 0}};  // with the line that gave it
  std::vector<std::string> weights{"same"};  // each plan with each: same (the dtype's) | int8 (cpplan run --weights)
};

Result<std::vector<std::string>> strings(const toml::table& root, const std::string& path, const char* key, bool required) {
  std::vector<std::string> out;
  const toml::node* n = root.get(key);
  if (!n) {
    if (required) return Error{fmt::format("{}: {}: required", path, key)};
    return out;
  }
  if (!n->is_array()) return Error{fmt::format("{}: {} = {}: must be an array of strings", where(path, *n), key, toml_text(*n))};
  for (const auto& e : *n->as_array()) {
    if (!e.is_string()) return Error{fmt::format("{}: {}: every entry must be a string", where(path, e), key)};
    out.push_back(e.as_string()->get());
  }
  if (out.empty()) return Error{fmt::format("{}: {}: must not be empty", where(path, *n), key)};
  return out;
}

Result<std::vector<int>> integers(const toml::table& root, const std::string& path, const char* key, long long lo,
                                  long long hi) {
  std::vector<int> out;
  const toml::node* n = root.get(key);
  if (!n) return out;
  if (!n->is_array()) return Error{fmt::format("{}: {}: must be an array of integers", where(path, *n), key)};
  for (const auto& e : *n->as_array()) {
    if (!e.is_integer() || e.as_integer()->get() < lo || e.as_integer()->get() > hi)
      return Error{fmt::format("{}: {} = {}: every entry must be an integer between {} and {}", where(path, e), key,
                               toml_text(e), lo, hi)};
    out.push_back(static_cast<int>(e.as_integer()->get()));
  }
  return out;
}

Result<int> integer(const toml::table& root, const std::string& path, const char* key, int fallback, long long lo,
                    long long hi) {
  const toml::node* n = root.get(key);
  if (!n) return fallback;
  if (!n->is_integer() || n->as_integer()->get() < lo || n->as_integer()->get() > hi)
    return Error{fmt::format("{}: {} = {}: must be an integer between {} and {}", where(path, *n), key, toml_text(*n), lo, hi)};
  return static_cast<int>(n->as_integer()->get());
}

std::optional<Error> read_device(const toml::table& root, const std::string& path, SweepSpec& s) {
  const toml::node* n = root.get("device");
  if (!n) return std::nullopt;
  if (!n->is_string() || (n->as_string()->get() != "cpu" && n->as_string()->get() != "cuda"))
    return Error{fmt::format("{}: device = {}: must be \"cpu\" or \"cuda\"", where(path, *n), toml_text(*n))};
  s.device = n->as_string()->get();
  return std::nullopt;
}

// plans: "all", "top K", or an array of plan tables.
std::optional<Error> read_plans(const toml::table& root, const std::string& path, SweepSpec& s) {
  const toml::node* n = root.get("plans");
  if (!n) return std::nullopt;
  if (n->is_string()) {
    const std::string text = n->as_string()->get();
    if (text == "all") s.mode = SweepSpec::Mode::kAll;
    else if (text.rfind("top ", 0) == 0 && std::sscanf(text.c_str() + 4, "%d", &s.top) == 1 && s.top > 0)
      s.mode = SweepSpec::Mode::kTop;
    else
      return Error{fmt::format("{}: plans = \"{}\": must be \"all\", \"top K\" or an array of plan tables", where(path, *n), text)};
    return std::nullopt;
  }
  if (!n->is_array()) return Error{fmt::format("{}: plans: must be \"all\", \"top K\" or an array of plan tables", where(path, *n))};
  s.mode = SweepSpec::Mode::kList;
  for (const auto& e : *n->as_array()) {
    if (!e.is_table()) return Error{fmt::format("{}: plans: every entry must be a table like {{ ring = 2 }}", where(path, e))};
    auto c = plan_from_table(*e.as_table(), path);
    if (!c) return c.error();
    s.listed.push_back(*c);
  }
  return std::nullopt;
}

// One entry of `caches`: {} (none) or a fixed schedule { fn = F, bn = B, warmup = W, every = N }
// (cpplan run --cache fixed --cache-fn F ...; a field left out is the fixed policy's default).
Result<CacheSpec> cache_from_table(const toml::table& t, const std::string& path) {
  if (t.empty()) return CacheSpec{};
  CacheSpec c = cache_defaults(CachePolicy::kFixed);
  for (const auto& [key, value] : t) {
    const std::string k(key.str());
    const toml::node& node = value;
    int* field = k == "fn" ? &c.first_blocks : k == "bn" ? &c.last_blocks : k == "warmup" ? &c.warmup_steps
               : k == "every" ? &c.every : nullptr;
    if (k == "policy" && node.is_string() && node.as_string()->get() == "fixed") continue;
    if (!field || !node.is_integer() || node.as_integer()->get() < 0 || node.as_integer()->get() > 100000)
      return Error{fmt::format("{}: caches.{} = {}: unknown field or wrong type (a fixed schedule, as cpplan run "
                               "--cache fixed runs it: policy = \"fixed\"; fn, bn, warmup, every: integers >= 0)",
                               where(path, node), k, toml_text(node))};
    *field = static_cast<int>(node.as_integer()->get());
  }
  return c;
}

// caches: an array of cache tables; absent: every run without a cache.
std::optional<Error> read_caches(const toml::table& root, const std::string& path, SweepSpec& s) {
  const toml::node* n = root.get("caches");
  if (!n) return std::nullopt;
  if (!n->is_array() || n->as_array()->empty())
    return Error{fmt::format("{}: caches: must be a non-empty array of tables like {{}} or {{ fn = 1, every = 2 }}",
                             where(path, *n))};
  s.caches.clear();
  for (const auto& e : *n->as_array()) {
    if (!e.is_table())
      return Error{fmt::format("{}: caches: every entry must be a table like {{}} or {{ fn = 1, every = 2 }}", where(path, e))};
    auto c = cache_from_table(*e.as_table(), path);
    if (!c) return c.error();
    s.caches.emplace_back(*c, static_cast<int>(e.source().begin.line));
  }
  return std::nullopt;
}

// weights: ["same", "int8"]; absent: every run's weights in the compute dtype.
std::optional<Error> read_weights(const toml::table& root, const std::string& path, SweepSpec& s) {
  auto names = strings(root, path, "weights", false);
  if (!names) return names.error();
  if (names->empty()) return std::nullopt;
  for (const std::string& w : *names)
    if (w != "same" && w != "int8")
      return Error{fmt::format("{}: weights = \"{}\": every entry must be \"same\" (the dtype's) or \"int8\" "
                               "(cpplan run --weights int8)",
                               where(path, *root.get("weights")), w)};
  s.weights = *names;
  return std::nullopt;
}

Result<SweepSpec> read_spec(const toml::table& root, const std::string& path) {
  const std::set<std::string> known = {"models", "model_configs", "resolutions", "frames",   "gpus",
                                       "steps",  "warmup",        "seed",        "plans",    "caches",
                                       "weights", "hardware",     "device"};
  for (const auto& [key, node] : root)
    if (!known.count(std::string(key.str())))
      return Error{fmt::format("{}: {}: unknown field (models, model_configs, resolutions, frames, gpus, steps, warmup, "
                               "seed, plans, caches, weights, hardware, device)",
                               where(path, node), key.str())};
  SweepSpec s;
  auto models = strings(root, path, "models", false);
  if (!models) return models.error();
  auto configs = strings(root, path, "model_configs", false);
  if (!configs) return configs.error();
  if (models->empty() && configs->empty())
    return Error{fmt::format("{}: models: required (or model_configs: diffusers config paths)", path)};
  auto resolutions = strings(root, path, "resolutions", false);
  if (!resolutions) return resolutions.error();
  auto frames = integers(root, path, "frames", 1, 2049);
  if (!frames) return frames.error();
  auto gpus = integers(root, path, "gpus", 1, 1 << 17);
  if (!gpus) return gpus.error();
  auto steps = integer(root, path, "steps", 10, 1, 100000);
  if (!steps) return steps.error();
  auto warmup = integer(root, path, "warmup", 2, 0, 1000);
  if (!warmup) return warmup.error();
  auto seed = integer(root, path, "seed", 0, 0, 1 << 30);
  if (!seed) return seed.error();
  s.models = *models;
  s.model_configs = *configs;
  s.resolutions = *resolutions;
  s.frames = *frames;
  s.gpus = *gpus;
  s.steps = *steps;
  s.warmup = *warmup;
  s.seed = *seed;
  if (auto e = read_device(root, path, s)) return *e;
  if (auto e = read_plans(root, path, s)) return *e;
  if (auto e = read_caches(root, path, s)) return *e;
  if (auto e = read_weights(root, path, s)) return *e;
  if (s.mode != SweepSpec::Mode::kList && s.gpus.empty())
    return Error{fmt::format("{}: gpus: required with plans = \"all\" or \"top K\"", path)};
  return s;
}

// `cpplan run`'s arguments naming a sweep's model: a profile, or a diffusers config by its path.
struct ModelArgs {
  const ModelProfile& profile;
  Options options;  // its model or model_config: the rest of each run's options are added to it
};

// The plans of one model, size and frame count: those listed, or for each GPU count cpplan's
// first K rows (plans = "top K"; the engine's, as `cpplan run --plan best` chooses its plan) or
// every valid plan ("all"), of the query as `cpplan run` plans it: h100-sxm's datasheet, the
// cpplan runtime. A listed plan is not predicted here (its phase is left empty).
struct PlannedConfig {
  ParallelConfig config;
  std::string peak_phase;
};
Result<std::vector<PlannedConfig>> configs_for(const SweepSpec& s, const Engine& engine, const ModelArgs& m,
                                               const std::string& size, int frames) {
  std::vector<PlannedConfig> configs;
  if (s.mode == SweepSpec::Mode::kList) {
    for (const ParallelConfig& c : s.listed) configs.push_back({c, ""});
    return configs;
  }
  Options o = m.options;
  o.res = size;
  o.frames = std::to_string(frames);
  o.steps = std::to_string(s.steps);
  o.hardware = kFallbackHardware;
  o.runtime = "cpplan";
  for (int g : s.gpus) {
    o.gpus = std::to_string(g);
    auto resolved = engine.resolve(o);
    if (!resolved) return resolved.error();
    auto top = engine.top(*resolved, s.mode == SweepSpec::Mode::kTop ? s.top : 0);
    if (!top) return top.error();
    for (const planner::RankedPlan& p : *top)
      configs.push_back({p.plan.config, std::string(to_string(p.predicted->peak_phase))});
  }
  return configs;
}

SweepRun make_run(const SweepSpec& s, const ModelArgs& m, const std::string& size, Resolution res, int frames,
                  const PlannedConfig& planned, const CacheSpec& cache, const std::string& weights) {
  const ParallelConfig& c = planned.config;
  SweepRun r;
  r.peak_phase = planned.peak_phase;
  r.model = m.profile.name;
  r.resolution = size;
  r.size = res;
  r.frames = frames;
  r.gpus = static_cast<int>(c.world_size());
  r.steps = s.steps;
  r.seed = s.seed;
  r.config = c;
  r.plan_flags = plan_argv(c);
  r.label = plan_label(c);
  if (cache.active())  // "ulysses 2, fixed F1B0 W2 every 2"
    r.label += fmt::format(", {} F{}B{} W{} every {}", to_string(cache.policy), cache.first_blocks, cache.last_blocks,
                           cache.warmup_steps, cache.every);
  Options o = m.options;  // the query's flags from the field table (session/query/query_fields.h)
  o.res = size;
  o.frames = std::to_string(frames);
  o.steps = std::to_string(s.steps);
  set_cache_fields(o, cache);
  r.cache = cache;
  r.run_args = to_argv(o);
  r.run_args.insert(r.run_args.end(), {"--warmup", std::to_string(s.warmup), "--seed", std::to_string(s.seed)});
  r.run_args.insert(r.run_args.end(), r.plan_flags.begin(), r.plan_flags.end());
  if (weights == "int8") {
    r.weights = weights;
    r.label += ", int8 weights";
    r.run_args.insert(r.run_args.end(), {"--weights", "int8"});
  }
  r.device = s.device;
  r.dtype = s.device == "cuda" ? "bf16" : "fp32";
  if (s.device == "cuda") r.run_args.insert(r.run_args.end(), {"--device", "cuda"});
  return r;
}

// The runs of one model: every size x frame count x plan.
std::optional<Error> expand_model(const SweepSpec& s, const ModelArgs& args, const Engine& engine,
                                  const std::string& path, std::vector<SweepRun>& runs) {
  const ModelProfile& m = args.profile;
  for (const auto& [cache, line] : s.caches)  // F + B must leave a block of this model to cache
    if (auto ok = validate_cache(cache, m.total_blocks(), s.steps); !ok)
      return Error{fmt::format("{}:{}: caches: {} ({}: {} blocks)", path, line, ok.error().message, m.name,
                               m.total_blocks())};
  std::vector<std::string> sizes = s.resolutions;
  if (sizes.empty()) sizes.push_back(fmt::format("{}x{}", m.default_width, m.default_height));
  std::vector<int> frame_counts = s.frames;
  if (frame_counts.empty()) frame_counts.push_back(m.default_frames);
  for (const std::string& size : sizes)
    for (int f : frame_counts) {
      auto res = parse_resolution(size);
      if (!res) return Error{fmt::format("{}: resolutions: {}", path, res.error().message)};
      auto seq = compute_sequence(m, *res, f, m.text_tokens);
      if (!seq) return Error{fmt::format("{}: {}", path, seq.error().message)};
      auto configs = configs_for(s, engine, args, size, f);
      if (!configs) return Error{fmt::format("{}: {}", path, configs.error().message)};
      for (const PlannedConfig& c : *configs)
        for (const std::string& w : s.weights)
          for (const auto& [cache, line] : s.caches) runs.push_back(make_run(s, args, size, *res, f, c, cache, w));
    }
  return std::nullopt;
}

Result<std::vector<SweepRun>> expand(std::string_view text, const std::string& path, const ProfileCatalog& catalog) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return Error{fmt::format("{}:{}: invalid TOML: {}", path, e.source().begin.line, e.description())};
  }
  auto spec = read_spec(root, path);
  if (!spec) return spec.error();
  std::vector<SweepRun> runs;
  const Engine engine(catalog);
  for (const std::string& name : spec->models) {
    auto model = catalog.model(name);
    if (!model) return Error{fmt::format("{}: models: {}", path, model.error().message)};
    Options o;
    o.model = name;
    if (auto e = expand_model(*spec, {**model, o}, engine, path, runs)) return *e;
  }
  for (const std::string& config : spec->model_configs) {
    // Relative to the sweep file, as the runs start wherever the sweep (or its job script) does.
    const std::string at = fs::absolute(fs::path(path).parent_path() / config).lexically_normal().string();
    auto model = diffusers::import_profile(at, catalog);
    if (!model) return Error{fmt::format("{}: model_configs: {}", path, model.error().message)};
    Options o;
    o.model_config = at;
    if (auto e = expand_model(*spec, {*model, o}, engine, path, runs)) return *e;
  }
  return runs;
}

}  // namespace

Result<std::vector<SweepRun>> parse_sweep(std::string_view text, const std::string& path, const ProfileCatalog& catalog) {
  auto runs = expand(text, path, catalog);
  // Messages quote the file's keys and values, which may hold control characters: one line.
  if (!runs) return Error{printable(runs.error().message)};
  return runs;
}

}  // namespace cpplan::session
