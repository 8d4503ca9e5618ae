#include "core/framework.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "core/toml_reader.h"

namespace cpplan {

namespace {
constexpr std::string_view kFrameworkNames[] = {"diffusers", "xdit", "cache-dit", "sglang", "vllm-omni"};
static_assert(std::size(kFrameworkNames) == kFrameworkCount);
constexpr std::string_view kFeatureNames[] = {
    "ulysses",      "ring",         "ulysses_anything",     "ring_anything",         "ring_p2p",
    "tp",           "cfg",          "pipefusion",           "fully_shard",           "data_parallel",
    "parallel_vae", "sharded_text_encoder", "offloaded_text_encoder", "sequential_text_encoder",
    "tiled_vae",    "sliced_vae",   "fully_sharded_text_encoder", "fully_sharded_host_text_encoder"};
static_assert(std::size(kFeatureNames) == kFeatureCount);
}  // namespace

std::string_view to_string(Framework f) { return kFrameworkNames[static_cast<int>(f)]; }
std::string_view framework_title(Framework f) {
  switch (f) {
    case Framework::kXdit: return "xDiT";
    case Framework::kSglang: return "SGLang Diffusion";
    case Framework::kVllmOmni: return "vLLM-Omni";
    default: return to_string(f);
  }
}
std::optional<Framework> framework_from_string(std::string_view name) {
  for (int i = 0; i < kFrameworkCount; ++i)
    if (kFrameworkNames[i] == name) return static_cast<Framework>(i);
  return std::nullopt;
}
std::string_view to_string(Feature f) { return kFeatureNames[static_cast<int>(f)]; }
std::optional<Feature> feature_from_string(std::string_view name) {
  for (int i = 0; i < kFeatureCount; ++i)
    if (kFeatureNames[i] == name) return static_cast<Feature>(i);
  return std::nullopt;
}

const FrameworkModel* FrameworkProfile::model_for(const ModelProfile& m) const {
  const auto lists = [](const std::vector<std::string>& names, const std::string& name) {
    return !name.empty() && std::find(names.begin(), names.end(), name) != names.end();
  };
  for (const FrameworkModel& entry : models)
    if (lists(entry.profiles, m.name)) return &entry;
  // The built-in a derived profile shares its pipeline with names the entry only when that entry
  // serves the profile's transformer class too: ConsisID runs in CogVideoX's pipeline and Chroma in
  // FLUX.1-schnell's, but a framework runs a transformer, not a pipeline. An entry naming no class
  // (one class, two rows of the framework's table: vLLM-Omni's FLUX.1-dev and FLUX.1-Kontext)
  // serves a config of its profile's own checkpoint.
  for (const FrameworkModel& entry : models)
    if (lists(entry.profiles, m.base) &&
        (m.transformer_class.empty() || entry.classes.empty() || lists(entry.classes, m.transformer_class)))
      return &entry;
  for (const FrameworkModel& entry : models)
    if (lists(entry.classes, m.transformer_class)) return &entry;
  return nullptr;
}

FeatureSet FrameworkProfile::features_for(const ModelProfile& m) const {
  FeatureSet s = common;
  if (const FrameworkModel* entry = model_for(m)) s.bits |= entry->features.bits;
  return s;
}

namespace {
using detail::Reader;

// Feature names to a set; the first unknown name fails `key`.
void to_features(Reader& r, std::string_view key, const std::vector<std::string>& names, FeatureSet& out) {
  for (const std::string& n : names) {
    const auto f = feature_from_string(n);
    if (!f) return r.fail(key, fmt::format("\"{}\"", n), fmt::format("unknown feature; known: {}",
                                                                      fmt::join(kFeatureNames, ", ")));
    out.add(*f);
  }
}

// `key`: an array of feature names.
void read_features(Reader& r, std::string_view key, FeatureSet& out, bool required) {
  std::vector<std::string> names;
  r.strings(key, names, required);
  if (r.ok()) to_features(r, key, names, out);
}

void read_family(Reader& r, FrameworkProfile& p) {
  r.only({"family", "only", "reason"});
  FamilySupport s;
  r.choice("family", s.family, {"cuda", "tpu", "neuron", "rocm"});
  const std::vector<std::string> absent{"\x01"};  // `only` left out: every feature
  std::vector<std::string> only = absent;
  r.strings("only", only, false);
  if (r.ok() && only != absent) {
    s.only = FeatureSet{};
    to_features(r, "only", only, *s.only);
  }
  r.string("reason", s.reason, s.only.has_value());
  p.families.push_back(std::move(s));
}

void read_conflict(Reader& r, FrameworkProfile& p) {
  r.only({"features", "reason"});
  std::vector<std::string> names;
  r.strings("features", names);
  if (r.ok() && names.size() != 2) return r.fail("features", "[...]", "must name two features");
  FeatureConflict c;
  for (int i = 0; i < 2 && r.ok(); ++i) {
    const auto f = feature_from_string(names[i]);
    if (!f) return r.fail("features", fmt::format("\"{}\"", names[i]), "unknown feature");
    (i == 0 ? c.a : c.b) = *f;
  }
  r.string("reason", c.reason);
  p.conflicts.push_back(std::move(c));
}

// [models] max_degree = { tp = 2, ... }: a degree of 2 or more per feature that has one.
void read_max_degrees(Reader r, const toml::table& t, const std::string& title, FrameworkModel& m) {
  constexpr Feature kWithDegree[] = {Feature::kUlysses, Feature::kRing, Feature::kTp, Feature::kCfg,
                                     Feature::kPipeFusion, Feature::kFullyShard, Feature::kDataParallel};
  for (const auto& [key, value] : t) {
    const auto f = feature_from_string(key.str());
    if (!f || std::find(std::begin(kWithDegree), std::end(kWithDegree), *f) == std::end(kWithDegree))
      return r.fail(key.str(), "...", "not a feature with a degree (ulysses, ring, tp, cfg, pipefusion, fully_shard, data_parallel)");
    int max = 0;
    r.integer(key.str(), max, 2, 1 << 20);
    m.max_degrees.push_back({*f, max, fmt::format("{} runs {} only up to degree {} for this model", title, key.str(), max)});
  }
}

// [[backend_rules]] feature = "ring", backends = ["flash", "sage"], reason = "...".
void read_backend_rule(Reader& r, FrameworkProfile& p) {
  r.only({"feature", "backends", "reason"});
  BackendRule rule;
  std::string feature;
  r.string("feature", feature);
  const auto f = feature_from_string(feature);
  if (r.ok() && !f) return r.fail("feature", fmt::format("\"{}\"", feature), "unknown feature");
  if (f) rule.feature = *f;
  std::vector<std::string> names;
  r.strings("backends", names);
  for (const std::string& n : names) {
    const auto b = attention_backend_from_string(n);
    if (r.ok() && !b)
      return r.fail("backends", fmt::format("\"{}\"", n), fmt::format("must be one of {}", attention_backend_choices()));
    if (b) rule.backends.push_back(*b);
  }
  r.string("reason", rule.reason);
  p.backend_rules.push_back(std::move(rule));
}

// [[kernels]] on = [{ family = "cuda", min_cc = 90, max_cc = 90 }], attention = "fa3", offers = [...],
// fused = [...], compile = false, and the source line of each.
void read_kernels(Reader& r, FrameworkProfile& p) {
  r.only({"on", "attention", "offers", "attention_source", "fused", "fused_source", "compile", "compile_source"});
  FrameworkKernels k;
  r.tables("on", true, [&](Reader& o) {
    DeviceRange range{DeviceFamily::kCuda};
    read_device_range(o, range);
    k.on.push_back(range);
  });
  auto backend = [&](std::string_view key, const std::string& n) -> std::optional<AttentionBackend> {
    const auto b = attention_backend_from_string(n);
    if (!b) r.fail(key, fmt::format("\"{}\"", n), fmt::format("unknown attention kernel; one of {}", attention_backend_choices()));
    return b;
  };
  std::string attention;
  r.string("attention", attention);
  if (r.ok())
    if (const auto b = backend("attention", attention)) k.attention = *b;
  std::vector<std::string> offers;
  r.strings("offers", offers);
  for (const std::string& n : offers)
    if (const auto b = r.ok() ? backend("offers", n) : std::nullopt) k.offers.push_back(*b);
  if (r.ok() && !k.offers_kernel(k.attention))
    r.fail("offers", "[...]", fmt::format("must include the default attention = \"{}\"", attention));
  r.string("attention_source", k.attention_source);
  std::vector<std::string> fused;
  r.strings("fused", fused, false);
  for (const std::string& n : fused) {
    const auto e = elementwise_from_string(n);
    if (!e && r.ok()) r.fail("fused", fmt::format("\"{}\"", n), "unknown kind; one of norm_modulation, qk_norm_rope, residual_activation");
    if (e) k.fused.add(*e);
  }
  r.string("fused_source", k.fused_source, !fused.empty());
  r.boolean("compile", k.compile, false);
  r.string("compile_source", k.compile_source, k.compile);
  p.kernels.push_back(std::move(k));
}

// [[quantization]] dtype = ["fp8"], flag = "--use_fp8_gemms", source = "...", on = [{ family, min_cc }]
// (optional).
void read_quantization(Reader& r, FrameworkProfile& p) {
  r.only({"dtype", "flag", "import", "source", "on"});
  FrameworkQuantization q;
  std::vector<std::string> names;
  r.strings("dtype", names);
  for (const std::string& n : names) {
    const Result<Precision> precision = parse_precision(n);
    if (r.ok() && (!precision || !precision->quantized()))
      r.fail("dtype", fmt::format("\"{}\"", n), "a quantized --dtype (fp8, fp8-row, fp8-static, fp8-weight-only, "
                                                "int8, int8-weight-only, nvfp4, mxfp4)");
    if (precision) q.dtypes.push_back(*precision);
  }
  r.string("flag", q.flag);
  r.string("import", q.import, false);
  r.string("source", q.source);
  r.tables("on", false, [&](Reader& o) {
    DeviceRange range{DeviceFamily::kCuda};
    read_device_range(o, range);
    q.on.push_back(range);
  });
  p.quantization.push_back(std::move(q));
}

// The schedule a [[cache]] entry fixes: warmup (steps) or warmup_share (of the steps), max_cached
// (-1: no cap). A fixed parameter the flag also sets ({W}, {MC}) is refused.
void read_cache_schedule(Reader& r, FrameworkCache& c) {
  r.integer("warmup", c.warmup, 0, 1000, false);
  if (r.has("warmup_share")) {
    double share = 0;
    r.number("warmup_share", share, 0, 1);
    if (r.ok() && share >= 1) r.fail("warmup_share", fmt::format("{}", share), "must be below 1 (a share of the steps)");
    c.warmup_share = share;
  }
  r.integer("max_cached", c.max_cached, -1, 1000, false);
  if (!r.ok()) return;
  if (c.max_cached == 0) r.fail("max_cached", "0", "must be -1 (no cap) or at least 1");
  if (c.warmup && c.warmup_share)
    r.fail("warmup_share", fmt::format("{}", *c.warmup_share), "set warmup or warmup_share, not both");
  const bool sets_warmup = c.flag.find("{W}") != std::string::npos;
  if ((c.warmup || c.warmup_share) && sets_warmup)
    r.fail(c.warmup ? "warmup" : "warmup_share", c.warmup ? std::to_string(*c.warmup) : fmt::format("{}", *c.warmup_share),
           "the flag sets the warm-up ({W}): a fixed one contradicts it");
  if (c.max_cached && c.flag.find("{MC}") != std::string::npos)
    r.fail("max_cached", std::to_string(*c.max_cached), "the flag sets the cap ({MC}): a fixed one contradicts it");
}

// [[cache]] policies = ["fbcache"], flag = "--use_fbcache", parallel, with_cfg, classes, schedule, source.
void read_cache(Reader& r, FrameworkProfile& p) {
  r.only({"policies", "flag", "import", "with_sp", "with_tp", "with_cfg", "classes", "hooked_classes", "warmup",
          "warmup_share", "max_cached", "source"});
  FrameworkCache c;
  std::vector<std::string> names;
  r.strings("policies", names);
  for (const std::string& n : names) {
    const auto policy = cache_policy_from_string(n);
    if (r.ok() && (!policy || *policy == CachePolicy::kNone || *policy == CachePolicy::kFixed))
      r.fail("policies", fmt::format("\"{}\"", n), "a cache policy (fbcache, dbcache, teacache, taylorseer, magcache)");
    if (policy) c.policies.push_back(*policy);
  }
  r.string("flag", c.flag);
  r.string("import", c.import, false);
  r.boolean("with_sp", c.with_sp, false);
  r.boolean("with_tp", c.with_tp, false);
  r.boolean("with_cfg", c.with_cfg, false);
  r.strings("classes", c.classes, false);
  r.strings("hooked_classes", c.hooked_classes, false);
  read_cache_schedule(r, c);
  r.string("source", c.source);
  p.caches.push_back(std::move(c));
}

std::string policy_names(const std::vector<CachePolicy>& policies) {
  std::vector<std::string_view> names;
  for (const CachePolicy policy : policies) names.push_back(to_string(policy));
  return fmt::format("{}", fmt::join(names, ", "));
}

// "diffusers runs --cache fbcache with no warm-up and no cap on cached steps in a row": the schedule
// a [[cache]] entry fixes; "" when it fixes none.
std::string schedule_phrase(const std::string& title, const FrameworkCache& c) {
  std::vector<std::string> parts;
  if (c.warmup) parts.push_back(*c.warmup == 0 ? "no warm-up" : fmt::format("{} warm-up steps", *c.warmup));
  if (c.warmup_share) parts.push_back(fmt::format("the first {:g}% of the steps computed", *c.warmup_share * 100));
  if (c.max_cached)
    parts.push_back(*c.max_cached < 0 ? "no cap on cached steps in a row"
                                      : fmt::format("at most {} cached steps in a row", *c.max_cached));
  if (parts.empty()) return {};
  return fmt::format("{} runs --cache {} with {}", title, policy_names(c.policies), fmt::join(parts, " and "));
}

// The one-line reasons a plan's verdict returns (string views into the profile, which outlives
// every verdict): a --dtype or --cache the framework does not offer, and each cache's limits.
void set_refusal_reasons(FrameworkProfile& p) {
  const std::string title = p.title.empty() ? p.name : p.title;
  std::vector<CachePolicy> every;
  for (FrameworkCache& c : p.caches) {
    every.insert(every.end(), c.policies.begin(), c.policies.end());
    const std::string which = fmt::format("{} runs --cache {}", title, policy_names(c.policies));
    c.sp_reason = which + " only without Ulysses or Ring";
    c.tp_reason = which + " only without tensor parallelism";
    c.cfg_reason = which + " only without CFG parallelism";
    c.class_reason = fmt::format("{} only for {}", which, fmt::join(c.classes, ", "));
    c.schedule_reason = schedule_phrase(title, c);
    if (!c.hooked_classes.empty())
      c.hooked_reason = fmt::format("{} hooks --cache {} only into {}: on another class every step is computed", title,
                                    policy_names(c.policies), fmt::join(c.hooked_classes, ", "));
  }
  p.cache_reason = every.empty() ? title + " ships no step cache"
                                 : fmt::format("{} offers --cache {} only", title, policy_names(every));
  p.quantization_reason = fmt::format("{} runs the DiT's linears in bf16{} only", title,
                                      p.quantization.empty() ? "" : ", " + p.quantization_names());
  for (FrameworkModel& m : p.models) {
    if (!m.dtypes) continue;
    std::vector<std::string> names{"bf16"};
    for (const Precision& d : *m.dtypes) names.push_back(to_string(d));
    const std::string& who = !m.runner_name.empty() ? m.runner_name
                             : !m.script.empty()    ? m.script
                             : !m.classes.empty()   ? m.classes.front()
                                                    : m.profiles.front();
    m.dtypes_reason = fmt::format("{} runs {} in {} only ({})", title, who, fmt::join(names, ", "), m.dtypes_source);
  }
  for (FrameworkQuantization& q : p.quantization) {
    std::vector<std::string> names, where;
    for (const Precision& d : q.dtypes) names.push_back(to_string(d));
    for (const DeviceRange& r : q.on) where.push_back(describe(r));
    q.on_reason = fmt::format("{} runs --dtype {} on {} only ({})", title, fmt::join(names, ", "),
                              fmt::join(where, " or "), q.source);
  }
}

// [models] with_fully_shard = "fully_sharded_text_encoder": a fully-sharded text encoder feature the
// entry offers, used exactly when fully_shard is; the framework says why (with_fully_shard_reason).
void read_with_fully_shard(Reader& r, const FrameworkProfile& p, FrameworkModel& m) {
  std::string name;
  r.string("with_fully_shard", name, false);
  if (!r.ok() || name.empty()) return;
  const auto f = feature_from_string(name);
  if (f != Feature::kFullyShardedTextEncoder && f != Feature::kFullyShardedHostTextEncoder)
    return r.fail("with_fully_shard", fmt::format("\"{}\"", name),
                  "must be fully_sharded_text_encoder or fully_sharded_host_text_encoder");
  if (!m.features.has(*f) || !m.features.has(Feature::kFullyShard))
    return r.fail("with_fully_shard", fmt::format("\"{}\"", name), "features must list it and fully_shard");
  if (p.with_fully_shard_reason.empty())
    return r.fail("with_fully_shard", fmt::format("\"{}\"", name), "needs the framework's with_fully_shard_reason");
  m.with_fully_shard = f;
}

// [models] dtypes = ["fp8", "nvfp4"], dtypes_source = "...": the quantized formats the framework runs
// for this model, each one the file's [[quantization]] entries offer.
void read_model_dtypes(Reader& r, const FrameworkProfile& p, FrameworkModel& m) {
  if (!r.ok()) return;
  if (!r.has("dtypes")) {
    if (r.has("dtypes_source")) r.fail("dtypes_source", "(set)", "names the source of a model's dtypes: set dtypes too");
    return;
  }
  std::vector<std::string> names;
  r.strings("dtypes", names);
  std::vector<Precision> dtypes;
  for (const std::string& n : names) {
    const Result<Precision> d = parse_precision(n);
    if (r.ok() && (!d || !d->quantized() || !p.quantization_for(*d)))
      return r.fail("dtypes", fmt::format("\"{}\"", n),
                    fmt::format("a --dtype this file's [[quantization]] offers ({})", p.quantization_names()));
    dtypes.push_back(*d);
  }
  m.dtypes = std::move(dtypes);
  r.string("dtypes_source", m.dtypes_source);
}

void read_model(Reader& r, FrameworkProfile& p) {
  r.only({"profiles", "classes", "runner", "script", "features", "unconfirmed", "max_degree", "with_fully_shard",
          "dtypes", "dtypes_source"});
  FrameworkModel m;
  r.strings("profiles", m.profiles, false);
  r.strings("classes", m.classes, false);
  if (r.ok() && m.profiles.empty() && m.classes.empty())
    r.fail("profiles", "(missing)", "a model entry names profiles or transformer classes");
  r.string("unconfirmed", m.unconfirmed, false);
  if (const auto* t = r.table("max_degree", false); t && r.ok()) read_max_degrees(r.sub(*t, "max_degree"), *t, p.title, m);
  r.string("runner", m.runner_name, false);
  r.string("script", m.script, false);
  read_features(r, "features", m.features, true);
  read_with_fully_shard(r, p, m);
  read_model_dtypes(r, p, m);
  if (r.ok() && p.launcher == "runner" && m.runner_name.empty() && m.script.empty())
    r.fail("runner", "(missing)", "a model of a runner needs its runner name or a script");
  for (const std::string& s : {m.script, m.runner_name.empty() ? std::string() : p.entry_points.front()})
    if (r.ok() && !s.empty() && std::find(p.entry_points.begin(), p.entry_points.end(), s) == p.entry_points.end())
      r.fail("script", fmt::format("\"{}\"", s), "must be one of entry_points");
  p.models.push_back(std::move(m));
}

Result<FrameworkProfile> framework_from_toml(const toml::table& root, const std::string& path) {
  std::string error;
  Reader r(root, path, "", &error);
  FrameworkProfile p;
  p.source = path;
  r.only({"name", "framework", "title", "version", "description", "launcher", "entry_points", "families",
          "family_reason", "conflicts", "backend_rules", "missing", "unlisted", "common", "models",
          "unconfirmed", "with_fully_shard_reason", "runtime", "kernels", "quantization", "cache"});
  detail::read_name(r, path, p.name);
  r.choice("framework", p.framework, {"diffusers", "xdit", "cache-dit", "sglang", "vllm-omni"});
  r.string("title", p.title);
  r.string("version", p.version);
  r.string("description", p.description, false);
  r.string("launcher", p.launcher);
  r.string("runtime", p.runtime, false);
  if (r.ok() && p.launcher != "script" && p.launcher != "runner" && p.launcher != "command" && p.launcher != "note")
    r.fail("launcher", fmt::format("\"{}\"", p.launcher), "must be \"script\", \"runner\", \"command\" or \"note\"");
  r.string("unconfirmed", p.unconfirmed, false);
  r.strings("entry_points", p.entry_points);
  if (r.ok() && p.entry_points.empty()) r.fail("entry_points", "[]", "needs at least one");
  r.tables("families", true, [&](Reader& f) { read_family(f, p); });
  r.string("family_reason", p.family_reason);
  r.tables("conflicts", false, [&](Reader& c) { read_conflict(c, p); });
  r.tables("backend_rules", false, [&](Reader& b) { read_backend_rule(b, p); });
  r.tables("kernels", false, [&](Reader& k) { read_kernels(k, p); });
  r.tables("quantization", false, [&](Reader& q) { read_quantization(q, p); });
  r.tables("cache", false, [&](Reader& c) { read_cache(c, p); });
  if (const auto* t = r.table("missing"); t && r.ok()) {
    Reader m = r.sub(*t, "missing");
    for (int i = 0; i < kFeatureCount; ++i) m.string(kFeatureNames[i], p.missing[i]);
  }
  r.string("unlisted", p.unlisted, false);
  r.string("with_fully_shard_reason", p.with_fully_shard_reason, false);
  read_features(r, "common", p.common, false);
  r.tables("models", false, [&](Reader& m) { read_model(m, p); });
  if (!r.ok()) return Error{error};
  set_refusal_reasons(p);
  return p;
}
}  // namespace

bool FrameworkKernels::offers_kernel(AttentionBackend b) const {
  return std::find(offers.begin(), offers.end(), b) != offers.end();
}

const FrameworkKernels* FrameworkProfile::kernels_for(const HardwareProfile& hw) const {
  for (const FrameworkKernels& k : kernels)
    for (const DeviceRange& r : k.on)
      if (r.matches(hw.family, hw.peaks.compute_capability)) return &k;
  return nullptr;
}

const FrameworkCache* FrameworkProfile::cache_for(CachePolicy p) const {
  for (const FrameworkCache& c : caches)
    if (std::find(c.policies.begin(), c.policies.end(), p) != c.policies.end()) return &c;
  return nullptr;
}

const FrameworkQuantization* FrameworkProfile::quantization_for(const Precision& p) const {
  for (const FrameworkQuantization& q : quantization)
    if (std::find(q.dtypes.begin(), q.dtypes.end(), p) != q.dtypes.end()) return &q;
  return nullptr;
}

std::string_view FrameworkProfile::quantization_refusal(const Precision& p, const HardwareProfile& hw) const {
  if (!p.quantized()) return {};
  const FrameworkQuantization* q = quantization_for(p);
  if (!q) return quantization_reason;
  const bool on = q->on.empty() || std::any_of(q->on.begin(), q->on.end(), [&](const DeviceRange& r) {
                    return r.matches(hw.family, hw.peaks.compute_capability);
                  });
  return on ? std::string_view() : std::string_view(q->on_reason);
}

std::string_view FrameworkModel::dtype_refusal(const Precision& p) const {
  if (!p.quantized() || !dtypes || std::find(dtypes->begin(), dtypes->end(), p) != dtypes->end()) return {};
  return dtypes_reason;
}

std::string_view FrameworkProfile::model_dtype_refusal(const Precision& p, const ModelProfile& m) const {
  const FrameworkModel* entry = p.quantized() ? model_for(m) : nullptr;
  return entry ? entry->dtype_refusal(p) : std::string_view();
}

std::string FrameworkProfile::quantization_names() const {
  std::vector<std::string> names;
  for (const FrameworkQuantization& q : quantization)
    for (const Precision& p : q.dtypes) names.push_back(to_string(p));
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

Result<FrameworkProfile> load_framework_profile(const std::string& path) {
  auto parsed = detail::parse_toml(path);
  if (!parsed) return parsed.error();
  return framework_from_toml(*parsed, path);
}

Result<FrameworkProfile> parse_framework_profile(std::string_view text, const std::string& path) {
  auto parsed = detail::parse_toml_text(text, path);
  if (!parsed) return parsed.error();
  return framework_from_toml(*parsed, path);
}

CacheSpec FrameworkCache::schedule(const CacheSpec& s, int steps) const {
  CacheSpec out = s;
  if (warmup) out.warmup_steps = *warmup;
  if (warmup_share) out.warmup_steps = static_cast<int>(*warmup_share * steps + 0.5);  // diffusers' retention_step
  if (max_cached) out.max_continuous_cached = *max_cached;
  return out;
}

namespace {
// Whether `classes` holds model `m`'s transformer class; an empty list holds every class.
bool lists_class(const std::vector<std::string>& classes, const ModelProfile& m) {
  return classes.empty() || std::find(classes.begin(), classes.end(), m.transformer_class) != classes.end();
}
}  // namespace

bool FrameworkCache::adapts_to(const ModelProfile& m) const { return lists_class(classes, m); }
bool FrameworkCache::hooks(const ModelProfile& m) const { return lists_class(hooked_classes, m); }

CacheSpec FrameworkCache::runs_on(const CacheSpec& s, int steps, const ModelProfile* m) const {
  CacheSpec out = schedule(s, steps);
  if (m) out.hooked = hooks(*m);
  return out;
}

std::string FrameworkCache::flag_for(const CacheSpec& s, int steps) const {
  return fmt::format(fmt::runtime(flag), fmt::arg("F", s.first_blocks), fmt::arg("B", s.last_blocks),
                     fmt::arg("W", s.warmup_steps), fmt::arg("MC", s.max_continuous_cached), fmt::arg("N", s.every),
                     fmt::arg("S", steps));
}

}  // namespace cpplan
