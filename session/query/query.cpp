#include "session/query/query.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include "core/diffusers_config.h"
#include "session/query/internal/detect.h"
#include "session/query/machine.h"
#include "session/query/query_fields.h"

namespace cpplan::session {

int parse_int(const std::string& flag, const std::string& text, int lo, int hi) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != text.data() + text.size())
    throw InvalidInput{fmt::format("{} = {}: must be an integer", flag, text)};
  if (ec == std::errc::result_out_of_range || v < lo || v > hi)
    throw InvalidInput{fmt::format("{} = {}: must be between {} and {}", flag, text, lo, hi)};
  return v;
}

double parse_number(const std::string& flag, const std::string& text, double lo, double hi) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
    throw InvalidInput{fmt::format("{} = {}: must be a number", flag, text)};
  if (!(v > lo) || v > hi) throw InvalidInput{fmt::format("{} = {}: must be above {} and at most {}", flag, text, lo, hi)};
  return v;
}

namespace {
// --topology / --topology-file and --nodes; returns the topology (nullptr without one).
const Topology* resolve_topology(const Options& a, const ProfileCatalog& catalog, ResolvedQuery& r, int& nodes) {
  const Topology* topo = nullptr;
  if (!a.topology.empty() && !a.topology_file.empty())
    throw InvalidInput{fmt::format("--topology-file = {}: cannot be combined with --topology = {}", a.topology_file,
                                   a.topology)};
  if (!a.topology.empty()) {
    auto t = catalog.topology(a.topology);
    if (!t) throw InvalidInput{t.error().message};
    topo = *t;
  } else if (!a.topology_file.empty()) {
    auto t = catalog.load_topology_file(a.topology_file);
    if (!t) throw InvalidInput{t.error().message};
    r.topology_file = std::make_shared<const Topology>(std::move(t).value());
    topo = r.topology_file.get();
  }
  nodes = 1;
  if (a.nodes.empty()) return topo;
  nodes = parse_int("--nodes", a.nodes, 1, kMaxGpus / (topo ? topo->gpus : 1));
  if (!topo) return topo;  // nodes of the hardware profile's: resolve_nodes
  if (nodes > 1 && !topo->has_network)
    throw InvalidInput{fmt::format("--nodes = {}: topology {} has no [network] table to join nodes", nodes, topo->name)};
  return topo;
}
// Without a topology, --nodes N is N of the nodes the hardware profile describes ([node]: its
// gpus_per_node GPUs each, joined by its Ethernet): --gpus defaults to N x gpus_per_node and must
// equal it.
void resolve_nodes(const Options& a, Query& q) {
  if (q.topology || a.nodes.empty()) return;
  if (!q.hardware || !q.hardware->node)
    throw InvalidInput{q.hardware ? fmt::format("--nodes = {}: {}'s profile describes no node ([node]): name the "
                                                "box with --topology or --topology-file, or give --gpus alone "
                                                "({} GPUs per node)", a.nodes, q.hardware->name,
                                                q.hardware->gpus_per_node)
                                  : fmt::format("--nodes = {}: needs --topology or --topology-file", a.nodes)};
  const HardwareProfile& hw = *q.hardware;
  const long long gpus = 1LL * q.nodes * hw.gpus_per_node;
  if (gpus > kMaxGpus)
    throw InvalidInput{fmt::format("--nodes = {}: {} x {}'s {} GPUs per node is more than {}", a.nodes, q.nodes, hw.name,
                                   hw.gpus_per_node, kMaxGpus)};
  if (a.gpus.empty()) q.gpus = static_cast<int>(gpus);
  else if (q.gpus != gpus)
    throw InvalidInput{fmt::format("--gpus = {}: must equal --nodes x {}'s {} GPUs per node = {} (or leave --gpus out)",
                                   a.gpus, hw.name, hw.gpus_per_node, gpus)};
}
// The runtime profile `name` (InvalidInput naming the runtimes there are).
const RuntimeProfile* runtime_named(const ProfileCatalog& catalog, const std::string& name) {
  auto runtime = catalog.runtime(name);
  if (!runtime) throw InvalidInput{runtime.error().message};
  return *runtime;
}

// --runtime, --text-encoder (or --offload-text-encoders) and --vae.
void resolve_runtime_and_placement(const Options& a, const ProfileCatalog& catalog, Query& q) {
  // An explicit --runtime is checked with the other flags; the default waits for the hardware.
  if (!a.runtime.empty()) q.runtime = runtime_named(catalog, a.runtime);
  if (a.offload && !a.text_encoder.empty() && a.text_encoder != "offloaded")
    throw InvalidInput{fmt::format("--offload-text-encoders: contradicts --text-encoder = {}", a.text_encoder)};
  if (a.offload) q.text_encoder = TextEncoderPlacement::kOffloaded;
  if (!a.text_encoder.empty()) {
    TextEncoderPlacement te{};
    if (!text_encoder_placement_from_string(a.text_encoder, te))
      throw InvalidInput{fmt::format("--text-encoder = {}: must be {}", a.text_encoder, text_encoder_placement_choices())};
    q.text_encoder = te;
  }
  if (!a.vae.empty()) {
    VaePlacement v{};
    if (!vae_placement_from_string(a.vae, v))
      throw InvalidInput{fmt::format("--vae = {}: must be single, parallel, tiled or sliced", a.vae)};
    q.vae = v;
  }
}

// The runtime without --runtime: PyTorch/XLA's on TPU and Neuron hardware (their programs compile);
// the compiled one where the framework compiles its blocks by default (vLLM-Omni); else (CUDA and
// ROCm GPUs, both PyTorch eager) the one the --framework's profile names (a plan ranked for xDiT
// priced as xDiT runs it); else diffusers' (--framework any or cpplan, and frameworks whose profile
// names none).
std::string default_runtime(const Options& a, const Query& q) {
  if (q.hardware && (q.hardware->family == DeviceFamily::kTpu || q.hardware->family == DeviceFamily::kNeuron))
    return "xla";
  if (q.kernels && q.kernels->compile) return "compiled";
  const auto f = framework_choice(a);
  const FrameworkProfile* profile = f ? q.frameworks[static_cast<int>(*f)] : nullptr;
  return profile && !profile->runtime.empty() ? profile->runtime : "diffusers";
}

std::string offered(const FrameworkKernels& k) {
  std::vector<std::string_view> names;
  for (const AttentionBackend b : k.offers) names.push_back(to_string(b));
  return fmt::format("{}", fmt::join(names, ", "));
}

// The kernels that price the query: --framework's on this GPU, else diffusers' (--framework any
// ranks plans as diffusers runs them); the executor's own for cpplan and a probed local GPU. An
// --attention-backend must run on the GPU and, for a named framework, be one it offers there; left
// out, it is the framework's pick on that GPU (flash without one).
void resolve_kernels(const Options& a, Query& q, bool local) {
  std::optional<AttentionBackend> asked;
  if (!a.backend.empty()) {
    asked = attention_backend_from_string(a.backend);
    if (!asked)
      throw InvalidInput{fmt::format("--attention-backend = {}: must be {}", a.backend, attention_backend_choices())};
  }
  const auto named = framework_choice(a);
  const FrameworkProfile* fw = nullptr;
  if (a.framework != "cpplan" && !local && q.hardware)
    fw = q.frameworks[static_cast<int>(named.value_or(planner::Framework::kDiffusers))];
  const FrameworkKernels* k = fw ? fw->kernels_for(*q.hardware) : nullptr;
  if (asked && q.hardware && !local) {
    const HardwareProfile& hw = *q.hardware;
    const KernelTable& t = hw.kernels;
    if (!runs_on(t, *asked, hw.family, hw.peaks.compute_capability)) {
      std::vector<std::string> where;
      for (const DeviceRange& r : t.kernel(*asked).runs_on) where.push_back(describe(r));
      throw InvalidInput{fmt::format("--attention-backend = {}: {} does not run on {} ({}; it runs on {})", a.backend,
                                     t.kernel(*asked).title, hw.name, hw.description, fmt::join(where, ", "))};
    }
    if (named && k && !k->offers_kernel(*asked))
      throw InvalidInput{fmt::format("--attention-backend = {}: {} does not offer {} on {} (it offers {})", a.backend,
                                     fw->title, t.kernel(*asked).title, hw.name, offered(*k))};
  }
  q.backend = asked ? *asked : k ? k->attention : AttentionBackend::kFlash;
  q.backend_asked = asked.has_value();
  q.kernels = k;
  q.kernels_framework = k ? fw : nullptr;
}

// The names a --dtype or --cache value lists: one name, `any`, or names separated by commas; `any`
// stands alone, and no name is empty or listed twice.
std::vector<std::string> listed_names(std::string_view flag, const std::string& text) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    names.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) throw InvalidInput{fmt::format("{} = {}: a name is empty (names are separated by one comma)", flag, text)};
    if (names[i] == "any" && names.size() > 1)
      throw InvalidInput{fmt::format("{} = {}: any stands alone (it lists every choice that runs here)", flag, text)};
    if (std::find(names.begin(), names.begin() + i, names[i]) != names.begin() + i)
      throw InvalidInput{fmt::format("{} = {}: {} is listed twice", flag, text, names[i])};
  }
  return names;
}

// The framework files --framework names (null for any and cpplan).
const FrameworkProfile* named_framework(const Options& a, const Query& q) {
  const auto named = framework_choice(a);
  return named && a.framework != "cpplan" ? q.frameworks[static_cast<int>(*named)] : nullptr;
}

// Why framework `fw` does not run quantized format `p` on the query's GPU (it offers no flag for it,
// or not on this GPU; without a GPU, whether it offers it at all), or not for the query's model.
std::string_view dtype_refusal(const FrameworkProfile& fw, const Query& q, const Precision& p) {
  const std::string_view why = q.hardware               ? fw.quantization_refusal(p, *q.hardware)
                               : fw.quantization_for(p) ? std::string_view()
                                                        : std::string_view(fw.quantization_reason);
  if (!why.empty() || !q.model) return why;
  return fw.model_dtype_refusal(p, *q.model);
}
bool runs_dtype(const FrameworkProfile& fw, const Query& q, const Precision& p) { return dtype_refusal(fw, q, p).empty(); }

// Why the query cannot plan quantized format `p` (the GPU has no tensor cores for it, --framework
// does not offer it, a probed machine or cpplan's executor runs BF16 only), in one line; nullopt
// when it can, and for BF16. `name` is the format as the user wrote it.
std::optional<std::string> precision_refusal(const Options& a, const Query& q, bool local, const Precision& p,
                                             const std::string& name) {
  if (!p.quantized()) return std::nullopt;
  if (local)
    return fmt::format("--dtype = {}: --hardware local is priced from this machine's measured BF16 kernels; name a "
                       "hardware profile to plan a quantized model",
                       name);
  if (q.hardware)
    if (auto why = precision_refusal(*q.hardware, p)) return why;
  const FrameworkProfile* fw = named_framework(a, q);
  if (fw && !runs_dtype(*fw, q, p)) return fmt::format("--dtype = {}: {}", name, dtype_refusal(*fw, q, p));
  if (a.framework == "cpplan" && !runs_held_weights(p))
    return fmt::format("--dtype = {}: cpplan's executor runs BF16 (FP32 on CPU) or int8-weight-only (cpplan run --weights "
                       "int8) only",
                       name);
  return std::nullopt;
}

// Whether some framework the ranking keeps (--framework's, else any) offers quantized format `p`.
bool offered(const Options& a, const Query& q, const Precision& p) {
  if (const FrameworkProfile* fw = named_framework(a, q)) return runs_dtype(*fw, q, p);
  return std::any_of(q.frameworks.begin(), q.frameworks.end(),
                     [&](const FrameworkProfile* fw) { return fw && runs_dtype(*fw, q, p); });
}

// --dtype: a format the GPU runs and, for a named framework, one it offers; a probed machine is
// priced from its measured BF16 kernels, so it plans BF16 only. `any`: BF16 and every quantized
// format the GPU runs that a framework offers; a list: each of its formats (each one some
// framework offers), in precision_choices' order.
void resolve_precision(const Options& a, Query& q, bool local) {
  if (a.precision.empty()) return;
  const std::vector<std::string> names = listed_names("--dtype", a.precision);
  const bool several = names.size() > 1 || names.front() == "any";
  for (const std::string& name : names)
    if (name != "any")
      if (const Result<Precision> p = parse_precision(name); !p)
        throw InvalidInput{p.error().message + " | any (or several, separated by commas)"};
  std::vector<Precision> formats;
  for (const Precision& p : precision_choices()) {
    const std::string name = to_string(p);
    const bool listed = std::find(names.begin(), names.end(), name) != names.end();
    if (!listed && names.front() != "any") continue;
    const auto why = precision_refusal(a, q, local, p, name);
    if (why && listed) throw InvalidInput{*why};
    if (why || (p.quantized() && several && !offered(a, q, p))) {
      if (listed)
        throw InvalidInput{fmt::format("--dtype = {}: no framework offers it (cpplan list frameworks says which do)", name)};
      continue;
    }
    formats.push_back(p);
  }
  q.precision = formats.front();  // BF16 at least, with any
  if (several) q.precisions = std::move(formats);
}

// The cache parameters (flag, its text) in the table's order.
std::vector<std::pair<std::string_view, const std::string*>> cache_parameters(const Options& a) {
  return {{"--cache-fn", &a.cache_fn},       {"--cache-bn", &a.cache_bn},
          {"--cache-warmup", &a.cache_warmup}, {"--cache-every", &a.cache_every},
          {"--cache-hit-rate", &a.cache_hit_rate}, {"--cache-max-cached", &a.cache_max_cached}};
}

// Policy `p`'s defaults (core/cache.h) with the parameters of `a` it takes.
CacheSpec cache_spec(const Options& a, CachePolicy p) {
  CacheSpec s = cache_defaults(p);
  const auto takes = [&](std::string_view flag, const std::string& text) {
    return !text.empty() && parameter_refusal(p, flag).empty();
  };
  if (takes("--cache-fn", a.cache_fn)) s.first_blocks = parse_int_field("--cache-fn", a.cache_fn);
  if (takes("--cache-bn", a.cache_bn)) s.last_blocks = parse_int_field("--cache-bn", a.cache_bn);
  if (takes("--cache-warmup", a.cache_warmup)) s.warmup_steps = parse_int_field("--cache-warmup", a.cache_warmup);
  if (takes("--cache-every", a.cache_every)) s.every = parse_int_field("--cache-every", a.cache_every);
  if (takes("--cache-hit-rate", a.cache_hit_rate)) s.hit_rate = parse_number_field("--cache-hit-rate", a.cache_hit_rate);
  if (takes("--cache-max-cached", a.cache_max_cached))
    s.max_continuous_cached = parse_int_field("--cache-max-cached", a.cache_max_cached);
  return s;
}

// Cache `s` as framework `fw` (--framework's) runs it (FrameworkCache::schedule: diffusers'
// FirstBlockCache with no warm-up and no cap); a parameter given that the framework fixes otherwise
// is refused, naming its schedule. `s` itself when `fw` ships no `s`.
CacheSpec as_named_framework_runs(const Options& a, const Query& q, const FrameworkProfile& fw, const CacheSpec& s) {
  const FrameworkCache* c = fw.cache_for(s.policy);
  if (!c) return s;
  const CacheSpec runs = c->runs_on(s, q.steps, q.model);
  if (!a.cache_warmup.empty() && runs.warmup_steps != s.warmup_steps)
    throw InvalidInput{fmt::format("--cache-warmup = {}: {} (a warm-up of {} of {} steps)", a.cache_warmup, c->schedule_reason,
                                   runs.warmup_steps, q.steps)};
  if (!a.cache_max_cached.empty() && runs.max_continuous_cached != s.max_continuous_cached)
    throw InvalidInput{fmt::format("--cache-max-cached = {}: {}", a.cache_max_cached, c->schedule_reason)};
  return runs;
}

// Cache `s` with the warm-up and the cap that every framework shipping it fixes alike (diffusers'
// MagCache, the only one, computes the first 20% of the steps), where the user gave none: what
// each of them runs. `s` itself when one of them takes the parameter from the query or they differ.
CacheSpec as_every_shipper_runs(const Options& a, const Query& q, CacheSpec s) {
  std::optional<int> warmup, cap;
  bool warmups_agree = true, caps_agree = true, any = false;
  for (const FrameworkProfile* fw : q.frameworks) {
    const FrameworkCache* c = fw ? fw->cache_for(s.policy) : nullptr;
    if (!c) continue;
    any = true;
    const CacheSpec runs = c->schedule(s, q.steps);
    const bool fixes_warmup = c->warmup || c->warmup_share;
    warmups_agree = warmups_agree && fixes_warmup && (!warmup || *warmup == runs.warmup_steps);
    caps_agree = caps_agree && c->max_cached && (!cap || *cap == runs.max_continuous_cached);
    warmup = runs.warmup_steps, cap = runs.max_continuous_cached;
  }
  if (any && warmups_agree && a.cache_warmup.empty()) s.warmup_steps = *warmup;
  if (any && caps_agree && a.cache_max_cached.empty()) s.max_continuous_cached = *cap;
  return s;
}

// Cache `s` as the frameworks the query keeps run it: --framework's own schedule, else what every
// framework shipping it fixes alike.
CacheSpec as_frameworks_run(const Options& a, const Query& q, const CacheSpec& s) {
  if (!s.active()) return s;
  const FrameworkProfile* fw = named_framework(a, q);
  return fw ? as_named_framework_runs(a, q, *fw, s) : as_every_shipper_runs(a, q, s);
}

// Why the query cannot rank cache `s` (its parameters do not fit the model's blocks and steps,
// --framework does not ship it or not for the model's class, cpplan's executor plans none);
// nullopt when it can, and for none.
std::optional<std::string> cache_refusal(const Options& a, const Query& q, const CacheSpec& s) {
  if (!s.active()) return std::nullopt;
  if (const Result<bool> ok = validate_cache(s, q.model->total_blocks(), q.steps); !ok) return ok.error().message;
  const std::string_view name = to_string(s.policy);
  if (const FrameworkProfile* fw = named_framework(a, q)) {
    const FrameworkCache* c = fw->cache_for(s.policy);
    if (!c) return fmt::format("--cache = {}: {}", name, fw->cache_reason);
    // A cache the named framework adapts to some classes only (diffusers' MagCache: FLUX's ratios).
    if (!c->adapts_to(*q.model))
      return fmt::format("--cache = {}: {}, not {} ({})", name, c->class_reason, q.model->transformer_class, q.model->name);
  }
  if (a.framework == "cpplan" && !executor_refusal(s.policy).empty())  // what cpplan run runs
    return fmt::format("--cache = {}: --framework cpplan runs the fixed schedule only (--cache fixed)", name);
  return std::nullopt;
}

// Whether some framework the ranking keeps (--framework's, else any) ships policy `p`.
bool shipped(const Options& a, const Query& q, CachePolicy p) {
  if (const FrameworkProfile* fw = named_framework(a, q)) return fw->cache_for(p) != nullptr;
  return std::any_of(q.frameworks.begin(), q.frameworks.end(),
                     [&](const FrameworkProfile* fw) { return fw && fw->cache_for(p); });
}

// --cache: the policy's defaults (core/cache.h) with the parameters given, checked against the
// model's blocks and steps; a named framework must ship it. Each parameter needs a policy that takes
// it: one no listed policy has a use for is refused rather than ignored. `any`: none and every
// policy some framework ships that fits the model at its defaults; a list: each of its policies
// (each one some framework ships), in the policies' order, a parameter applying to those that take it.
void resolve_cache(const Options& a, Query& q) {
  const std::vector<std::string> names = listed_names("--cache", a.cache.empty() ? "none" : a.cache);
  const bool any = names.front() == "any", several = names.size() > 1 || any;
  std::vector<CachePolicy> policies;
  for (const std::string& name : names) {
    if (any) break;
    const auto p = cache_policy_from_string(name);
    if (!p)
      throw InvalidInput{fmt::format("--cache = {}: must be none, fbcache, dbcache, teacache, taylorseer, magcache, "
                                     "fixed, any, or a list of them separated by commas",
                                     name)};
    policies.push_back(*p);
  }
  if (any)
    for (int i = 0; i <= static_cast<int>(CachePolicy::kFixed); ++i) policies.push_back(static_cast<CachePolicy>(i));
  std::sort(policies.begin(), policies.end());
  const bool cached = std::any_of(policies.begin(), policies.end(), [](CachePolicy p) { return p != CachePolicy::kNone; });
  const auto parameters = cache_parameters(a);
  for (const auto& [flag, text] : parameters) {
    if (text->empty()) continue;
    if (!cached)
      throw InvalidInput{fmt::format("{} = {}: needs --cache (fbcache, dbcache, teacache, taylorseer, magcache or fixed)",
                                     flag, *text)};
    const auto taker = std::find_if(policies.begin(), policies.end(), [flag = flag](CachePolicy p) {
      return p != CachePolicy::kNone && parameter_refusal(p, flag).empty();
    });
    if (taker != policies.end()) continue;
    const CachePolicy first = *std::find_if(policies.begin(), policies.end(), [](CachePolicy p) { return p != CachePolicy::kNone; });
    throw InvalidInput{fmt::format("{} = {}: --cache {} {}", flag, *text, several ? a.cache : std::string(to_string(first)),
                                   several ? fmt::format("lists no policy that takes it ({} {})", to_string(first),
                                                         parameter_refusal(first, flag))
                                           : std::string(parameter_refusal(first, flag)))};
  }
  const bool parameters_given =
      std::any_of(parameters.begin(), parameters.end(), [](const auto& p) { return !p.second->empty(); });
  std::vector<CacheSpec> caches;
  for (const CachePolicy p : policies) {
    const CacheSpec s = as_frameworks_run(a, q, cache_spec(a, p));
    const auto why = cache_refusal(a, q, s);
    // `any` leaves out a policy that cannot run here at its defaults; a named one, or parameters
    // the user gave, are refused.
    if (why && (!any || parameters_given)) throw InvalidInput{*why};
    if (why) continue;
    if (several && s.active() && !shipped(a, q, p)) {
      if (!any)
        throw InvalidInput{fmt::format("--cache = {}: no framework ships it (a framework profile lists its caches under [[cache]])",
                                       to_string(p))};
      continue;
    }
    caches.push_back(s);
  }
  q.cache = caches.front();  // none at least, with any
  if (several) q.caches = std::move(caches);
}
}  // namespace


Context build_query(const Options& a, const std::string& exe, std::ostream& err) {
  auto catalog = ProfileCatalog::load(profile_search_path(a.profiles, exe));
  if (!catalog) throw InvalidInput{catalog.error().message};
  return build_query(a, std::move(catalog).value(), err);
}

ResolvedQuery resolve_query(const Options& a, const ProfileCatalog& catalog, std::ostream& err) {
  ResolvedQuery r;
  Query& q = r.query;
  framework_choice(a);  // checked with the other flags, before any note is printed
  q.topology = resolve_topology(a, catalog, r, q.nodes);
  // nvidia-smi is asked once, and only when a flag is left to it (no shell for a planning query).
  // --nodes without a topology counts the hardware's nodes: the GPUs follow from its profile.
  const bool gpus_from_nodes = a.gpus.empty() && !q.topology && !a.nodes.empty();
  const bool ask_gpu = (a.gpus.empty() && !q.topology && !gpus_from_nodes) || (a.hardware.empty() && !q.topology);
  const auto gpu = ask_gpu ? query_nvidia_smi() : std::nullopt;
  if (a.gpus.empty() && !q.topology && !gpus_from_nodes && !gpu)
    throw InvalidInput{"--gpus: required (the number of GPUs; nvidia-smi lists none here), e.g. cpplan --gpus 4 --res 1024x1024"};
  if (a.gpus.empty() && !q.topology && !gpus_from_nodes)
    fmt::print(err, "note: planning for the {} GPU{} nvidia-smi lists ({}); set --gpus for another count\n", gpu->count,
               gpu->count == 1 ? "" : "s", gpu->name);
  q.gpus = !a.gpus.empty()   ? parse_int_field("--gpus", a.gpus)
           : q.topology      ? q.nodes * q.topology->gpus
           : gpus_from_nodes ? 0  // resolve_nodes, once the hardware is known
                             : gpu->count;
  if (q.topology && q.nodes > 1 && q.gpus != q.nodes * q.topology->gpus)
    throw InvalidInput{fmt::format("--gpus = {}: must equal --nodes x {}'s {} GPUs = {} (or leave --gpus out)", a.gpus,
                                   q.topology->name, q.topology->gpus, q.nodes * q.topology->gpus)};
  if (q.topology && q.nodes == 1 && q.gpus > q.topology->gpus)
    throw InvalidInput{fmt::format("--gpus = {}: must be at most {}'s {} GPUs (add --nodes N for more)", a.gpus,
                                   q.topology->name, q.topology->gpus)};
  auto model = catalog.model(a.model);
  if (!model) throw InvalidInput{model.error().message};
  q.model = *model;
  const ModelProfile& m = *q.model;

  if (a.res.empty()) {
    q.resolution = {m.default_width, m.default_height};
  } else {
    auto res = parse_resolution(a.res);
    if (!res) throw InvalidInput{res.error().message};
    q.resolution = *res;
  }
  q.frames = a.frames.empty() ? m.default_frames : parse_int_field("--frames", a.frames);
  q.steps = a.steps.empty() ? m.default_steps : parse_int_field("--steps", a.steps);
  q.batch = parse_int_field("--batch", a.batch);
  const int text = a.text_tokens.empty() ? m.text_tokens : parse_int_field("--text-tokens", a.text_tokens);
  resolve_runtime_and_placement(a, catalog, q);
  if (a.offload_idle_transformer && q.model->transformers < 2)
    throw InvalidInput{fmt::format("--offload-idle-transformer: {} has one transformer: nothing is idle to offload",
                                   q.model->name)};
  q.offload_idle_transformer = a.offload_idle_transformer;
  auto frameworks = catalog.frameworks_for_query(a.framework_versions);
  if (!frameworks) throw InvalidInput{frameworks.error().message};
  q.frameworks = *frameworks;
  auto seq = compute_sequence(m, q.resolution, q.frames, text);
  if (!seq) throw InvalidInput{seq.error().message};
  q.sequence = *seq;
  // Hardware last: its note about the local GPU should not precede an error in the other flags.
  if (a.hardware == "local") {
    r.local_hardware = true;
  } else if (!a.hardware.empty()) {
    auto hw = catalog.hardware(a.hardware);
    if (!hw) throw InvalidInput{hw.error().message};
    q.hardware = *hw;
  } else if (q.topology) {  // the topology names its GPUs
    auto hw = catalog.hardware(q.topology->hardware);
    if (!hw) throw InvalidInput{hw.error().message};
    q.hardware = *hw;
  } else {
    q.hardware = gpu ? match_hardware(catalog, *gpu) : nullptr;
    if (!q.hardware) {
      auto fallback = catalog.hardware(kFallbackHardware);
      if (!fallback) throw InvalidInput{fallback.error().message};
      q.hardware = *fallback;
      r.hardware_guessed = true;
      fmt::print(err, "note: {}; planning for {} (set --hardware)\n",
                 gpu ? fmt::format("local GPU \"{}\" matches no hardware profile", gpu->name)
                     : std::string("no local GPU found by nvidia-smi"),
                 kFallbackHardware);
    }
  }
  resolve_nodes(a, q);
  q.host_memory_gib = !a.host_mem.empty() ? parse_number_field("--host-mem", a.host_mem)
                      : r.local_hardware  ? physical_memory_mib() / 1024.0
                      : q.hardware        ? q.hardware->host_memory_gib
                                          : 0.0;
  resolve_kernels(a, q, r.local_hardware);
  resolve_precision(a, q, r.local_hardware);
  resolve_cache(a, q);
  if (a.runtime.empty()) q.runtime = runtime_named(catalog, default_runtime(a, q));
  return r;
}

namespace {
// --model-config (a path) or the Python module's config text: the profile derived from it, added to
// `catalog`; returns its name, or `a.model` without a config.
std::string add_model_config(const Options& a, ProfileCatalog& catalog) {
  if (a.model_config.empty() && a.model_config_json.empty()) return a.model;
  auto m = a.model_config.empty()
               ? diffusers::profile_from_config_text(a.model_config_json, catalog, {"", "model_config"})
               : diffusers::import_profile(a.model_config, catalog);
  if (!m) throw InvalidInput{m.error().message};
  std::string name = m->name;
  catalog.add_model(std::move(m).value());
  return name;
}
}  // namespace

Context build_query(const Options& a, std::shared_ptr<const ProfileCatalog> catalog, std::ostream& err) {
  Context ctx;
  Options with_model = a;
  if (a.model_config.empty() && a.model_config_json.empty()) {
    ctx.catalog = std::move(catalog);
  } else {
    auto own = std::make_shared<ProfileCatalog>(*catalog);
    with_model.model = add_model_config(a, *own);
    ctx.catalog = std::move(own);
  }
  static_cast<ResolvedQuery&>(ctx) = resolve_query(with_model, *ctx.catalog, err);
  return ctx;
}

Context build_query(const Options& a, ProfileCatalog catalog, std::ostream& err) {
  return build_query(a, std::make_shared<const ProfileCatalog>(std::move(catalog)), err);
}

Options query_options(const Query& q) {
  Options o;
  o.model = q.model->name;
  o.res = std::to_string(q.resolution.width) + "x" + std::to_string(q.resolution.height);
  o.steps = std::to_string(q.steps);
  o.gpus = std::to_string(q.gpus);
  if (q.hardware) o.hardware = q.hardware->name;
  if (q.backend_asked) o.backend = std::string(to_string(q.backend));
  if (q.model->video) o.frames = std::to_string(q.frames);
  if (q.text_encoder) o.text_encoder = std::string(to_string(*q.text_encoder));
  if (q.vae) o.vae = std::string(to_string(*q.vae));
  set_format_fields(o, q);
  if (q.ranks_caches()) {  // a list: each policy at its defaults
    std::vector<std::string> names;
    for (const CacheSpec& s : q.caches) names.emplace_back(to_string(s.policy));
    o.cache = fmt::format("{}", fmt::join(names, ","));
  } else {
    set_cache_fields(o, q.cache);
  }
  return o;
}

void set_format_fields(Options& o, const Query& q) {
  std::vector<std::string> names;
  for (const Precision& p : q.ranks_precisions() ? q.precisions : std::vector<Precision>{q.precision})
    names.push_back(to_string(p));
  o.precision = names == std::vector<std::string>{"bf16"} ? "" : fmt::format("{}", fmt::join(names, ","));
}

void set_cache_fields(Options& o, const CacheSpec& s) {
  o.cache = o.cache_fn = o.cache_bn = o.cache_warmup = o.cache_every = o.cache_hit_rate = o.cache_max_cached = "";
  if (!s.active()) return;
  o.cache = std::string(to_string(s.policy));
  const auto takes = [&](std::string_view flag) { return parameter_refusal(s.policy, flag).empty(); };
  if (takes("--cache-fn")) o.cache_fn = std::to_string(s.first_blocks);
  if (takes("--cache-bn")) o.cache_bn = std::to_string(s.last_blocks);
  o.cache_warmup = std::to_string(s.warmup_steps);
  if (takes("--cache-every")) o.cache_every = std::to_string(s.every);
  if (takes("--cache-hit-rate")) o.cache_hit_rate = fmt::format("{}", s.hit_rate);
  if (!s.fixed_schedule() && s.max_continuous_cached >= 0) o.cache_max_cached = std::to_string(s.max_continuous_cached);
}

bool runs_held_weights(const Precision& p) {
  return !p.quantized() || (p.weights == WeightFormat::kInt8 && !p.low_precision_math());
}

Options run_options(const Query& q, const Precision& p, const CacheSpec& cache) {
  Options o = query_options(q);
  o.precision.clear();  // `cpplan run --dtype` is the executor's own (fp32 or bf16)
  if (p.quantized() && runs_held_weights(p)) o.weights = "int8";
  set_cache_fields(o, cache.policy == CachePolicy::kFixed ? cache : CacheSpec{});
  return o;
}

std::vector<std::string> run_options_argv(const Options& o) {
  std::vector<std::string> argv = to_argv(o);
  if (!o.weights.empty()) argv.insert(argv.end(), {"--weights", o.weights});
  return argv;
}

std::vector<std::string> run_argv(const Query& q, const ParallelConfig& c, const Precision& p, const CacheSpec& cache) {
  std::vector<std::string> argv = run_options_argv(run_options(q, p, cache));
  const std::vector<std::string> plan = plan_argv(c);
  argv.insert(argv.end(), plan.begin(), plan.end());
  return argv;
}

ParallelConfig plan_config(const Options& a) {
  ParallelConfig c;
  auto& cp = c.context_parallel_config;
  // Degrees below 1 parse here and are reported by the planner's rules, with the others.
  cp.ring_degree = parse_int_field("--ring", a.ring);
  cp.ulysses_degree = parse_int_field("--ulysses", a.ulysses);
  c.tensor_parallel_config.tp_degree = parse_int_field("--tp", a.tp);
  c.cfg_degree = parse_int_field("--cfg", a.cfg);
  c.dp_degree = parse_int_field("--dp", a.dp);
  c.fs_degree = parse_int_field("--fully-shard", a.fully_shard);
  cp.ulysses_anything = a.ulysses_anything;
  cp.ring_anything = a.ring_anything;
  cp.convert_to_fp32 = !a.no_fp32;
  const auto rotate = rotate_method_from_string(a.rotate);
  if (!rotate) throw InvalidInput{fmt::format("--rotate-method = {}: must be allgather, p2p or alltoall", a.rotate)};
  cp.rotate_method = *rotate;
  PipeFusionConfig& pf = c.pipefusion;
  pf.degree = parse_int_field("--pipefusion", a.pipefusion);
  pf.patches = a.pipeline_patches.empty() ? std::max(pf.degree, 1)
                                          : parse_int("--num-pipeline-patch", a.pipeline_patches, -kMaxGpus, kMaxGpus);
  pf.warmup_steps = a.pipefusion_warmup.empty() ? (pf.degree > 1 ? kXditWarmupSteps : 0)
                                                : parse_int("--pipefusion-warmup-steps", a.pipefusion_warmup, -1, 100000);
  return c;
}

void set_plan_fields(Options& o, const ParallelConfig& c) {
  const ContextParallelConfig& cp = c.context_parallel_config;
  o.ring = std::to_string(cp.ring_degree);
  o.ulysses = std::to_string(cp.ulysses_degree);
  o.tp = std::to_string(c.tp());
  o.cfg = std::to_string(c.cfg_degree);
  o.dp = std::to_string(c.dp_degree);
  o.fully_shard = std::to_string(c.fs_degree);
  o.ulysses_anything = cp.ulysses_anything;
  o.ring_anything = cp.ring_anything;
  o.rotate = std::string(to_string(cp.rotate_method));
  o.no_fp32 = !cp.convert_to_fp32;
  o.pipefusion = std::to_string(c.pp());
  if (c.pp() > 1) {
    o.pipeline_patches = std::to_string(c.pipefusion.patches);
    o.pipefusion_warmup = std::to_string(c.pipefusion.warmup_steps);
  }
}

std::vector<std::string> plan_argv(const ParallelConfig& c) {
  Options o;
  set_plan_fields(o, c);
  std::vector<std::string> argv = to_argv(o, {FieldGroup::kPlan});
  for (std::string& flag : to_argv(o, {FieldGroup::kQuery})) argv.push_back(std::move(flag));  // PipeFusion's
  return argv;
}

planner::PlannerOptions planner_options(const Options& a, bool keep_invalid) {
  planner::PlannerOptions o;
  o.keep_invalid = keep_invalid;
  o.single_image_dp = a.all;
  o.allow_anything = !a.no_anything;
  // --all: every plan, so the fully-sharded variants of plans that fit too (slower twins).
  if (a.all) o.fully_shard = planner::FullyShardPlans::kAll;
  if (!a.pipeline_patches.empty()) o.pipeline_patches = parse_int_field("--num-pipeline-patch", a.pipeline_patches);
  if (!a.pipefusion_warmup.empty())
    o.pipefusion_warmup_steps = parse_int_field("--pipefusion-warmup-steps", a.pipefusion_warmup);
  return o;
}

std::optional<planner::Framework> framework_choice(const Options& a) {
  if (a.framework == "any" || a.framework == "cpplan") return std::nullopt;
  const auto f = planner::framework_from_string(a.framework);
  if (!f) {
    std::vector<std::string_view> names;
    for (int i = 0; i < planner::kFrameworkCount; ++i) names.push_back(planner::to_string(static_cast<planner::Framework>(i)));
    throw InvalidInput{fmt::format("--framework = {}: must be {}, cpplan or any", a.framework, fmt::join(names, ", "))};
  }
  return f;
}

}  // namespace cpplan::session
