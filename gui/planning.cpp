#include "gui/planning.h"

#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <mutex>
#include <sstream>

#include "session/query/query.h"

namespace cpplan::gui {

namespace {

// This machine, asked of cpplan-exec once per process (it starts LibTorch: about half a second).
session::Machine cached_machine() {
  static std::mutex mutex;
  static std::optional<session::Machine> machine;
  const std::lock_guard<std::mutex> lock(mutex);
  if (!machine) {
    std::error_code ec;
    machine = session::this_machine(std::filesystem::read_symlink("/proc/self/exe", ec).string());
  }
  return *machine;
}

}  // namespace

// The query panel's values as the CLI's options: one parser (session/query/query.h) for both fronts.
session::Options options_of(const QueryInput& in) {
  session::Options o;
  o.model = in.model;
  o.model_config = in.model_config;
  // Without a topology, an empty hardware is h100-sxm: the GUI does not guess from nvidia-smi.
  o.hardware = !in.hardware.empty() || !in.topology.empty() ? in.hardware : session::kFallbackHardware;
  o.gpus = in.gpus == 0 ? "" : std::to_string(in.gpus);  // 0: not given (the topology's, else required)
  o.batch = std::to_string(in.batch);
  o.topology = in.topology;
  o.nodes = in.nodes == 0 ? "" : std::to_string(in.nodes);
  if (in.width > 0 || in.height > 0) o.res = fmt::format("{}x{}", in.width, in.height);
  if (in.frames > 0) o.frames = std::to_string(in.frames);
  if (in.steps != 0) o.steps = std::to_string(in.steps);
  if (in.backend) o.backend = std::string(to_string(*in.backend));
  if (in.dtype != "bf16") o.precision = in.dtype;
  if (in.cache != "none") o.cache = in.cache;
  const auto text = [](const auto& v) { return v ? fmt::format("{}", *v) : std::string(); };
  o.cache_fn = text(in.cache_fn);
  o.cache_bn = text(in.cache_bn);
  o.cache_warmup = text(in.cache_warmup);
  o.cache_every = text(in.cache_every);
  o.cache_hit_rate = text(in.cache_hit_rate);
  o.cache_max_cached = text(in.cache_max_cached);
  o.runtime = in.runtime;
  o.framework = in.framework;
  o.framework_versions = in.framework_versions;
  o.all = in.all_plans;
  if (in.text_encoder) o.text_encoder = std::string(to_string(*in.text_encoder));
  if (in.vae) o.vae = std::string(to_string(*in.vae));
  o.offload_idle_transformer = in.offload_idle_transformer;
  if (in.host_mem_gib > 0) o.host_mem = fmt::format("{}", in.host_mem_gib);
  if (in.pipeline_patches != 0) o.pipeline_patches = std::to_string(in.pipeline_patches);
  o.pipefusion_warmup = std::to_string(in.pipefusion_warmup_steps);
  o.no_anything = !in.allow_anything;
  o.db = in.db;
  o.cluster = in.cluster;
  return o;
}

Result<session::Resolved> resolve(const CatalogPtr& catalog, const QueryInput& in) {
  return session::Engine(catalog, cached_machine).resolve(options_of(in));
}

Result<CatalogInput> resolve_model_config(const CatalogPtr& catalog, QueryInput in) {
  if (in.model_config.empty()) return CatalogInput{catalog, std::move(in)};
  // The config alone at the defaults of every other field (a query that resolves), so that an
  // error can only be the config's; the resolved query's catalog holds the config's profile.
  QueryInput probe;
  probe.model_config = in.model_config;
  auto resolved = resolve(catalog, probe);
  if (!resolved) return resolved.error();
  in.model = resolved->query().model->name;
  in.model_config.clear();
  return CatalogInput{resolved->shared_catalog(), std::move(in)};
}

Result<Query> make_query(const ProfileCatalog& catalog, const QueryInput& in) {
  if (!in.model_config.empty())
    return Error{fmt::format("--model-config = {}: not resolved (gui::resolve_model_config)", in.model_config)};
  try {
    std::ostringstream notes;
    session::ResolvedQuery r = session::resolve_query(options_of(in), catalog, notes);
    return r.query;
  } catch (const session::InvalidInput& e) {
    return Error{e.message};
  }
}

void check_cost_model(const CatalogPtr& catalog, const QueryInput& in) {
  if (in.hardware != "local" && in.cluster.empty()) return;
  if (!make_query(*catalog, in)) return;  // the query's own error is reported by the caller
  auto resolved = resolve(catalog, in);
  if (!resolved) throw session::InvalidInput{resolved.error().message};
}

std::string model_facts(const ProfileCatalog& catalog, const QueryInput& in) {
  const ModelProfile* m = catalog.find_model(in.model);
  if (!m) return fmt::format("unknown model {}", in.model);
  std::string blocks;
  for (const BlockGroup& g : m->blocks)
    blocks += fmt::format("{}{} {}", blocks.empty() ? "" : " + ", g.count, to_string(g.kind));
  std::string facts = fmt::format("{} heads x {}, {} blocks ({}), {:.1f}B params, {}", m->heads, m->head_dim,
                                  m->total_blocks(), blocks, m->params / 1e9, to_string(m->guidance));
  auto q = make_query(catalog, in);
  if (!q) return facts + "\n" + q.error().message;
  const Sequence& s = q->sequence;
  if (m->text_handling == TextHandling::kJoint)
    return facts + fmt::format("\nsequence: {} image + {} text = {} tokens (joint)", s.image_tokens, s.text_tokens,
                               s.total());
  return facts + fmt::format("\nsequence: {} {} tokens, cross-attention to {} text", s.image_tokens,
                             m->video ? "video" : "image", s.text_tokens);
}

namespace {

using Clock = std::chrono::steady_clock;

// compute_plans once the model config is resolved: r.catalog holds in's profiles.
PlanResult plan_resolved(PlanResult r, const QueryInput& in, Clock::time_point start) {
  const session::Engine engine(r.catalog, cached_machine);
  auto resolved = engine.resolve(options_of(in));
  if (!resolved) {
    r.error = resolved.error().message;
    return r;
  }
  auto answer = engine.recommend(*resolved);
  if (!answer) {
    r.error = answer.error().message;
    return r;
  }
  const std::shared_ptr<const session::Recommendation> rec(std::move(answer).value());
  r.recommendation = rec;
  r.catalog = rec->shared_catalog();
  r.query = rec->query();
  r.report = rec->report;
  r.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return r;
}

}  // namespace

PlanResult compute_plans(CatalogPtr catalog, const QueryInput& in, std::uint64_t generation) {
  const auto start = Clock::now();
  PlanResult r;
  r.generation = generation;
  r.input = in;
  auto resolved = resolve_model_config(catalog, in);
  if (!resolved) {
    r.catalog = std::move(catalog);
    r.error = resolved.error().message;
    return r;
  }
  r.catalog = resolved->catalog;
  return plan_resolved(std::move(r), resolved->input, start);
}

HeatmapResult compute_heatmap(CatalogPtr catalog, const QueryInput& in, const std::vector<Resolution>& resolutions,
                              const std::vector<int>& gpu_counts, std::uint64_t generation) {
  HeatmapResult r;
  r.generation = generation;
  r.model = in.model_config.empty() ? in.model : in.model_config;
  const session::Engine engine(std::move(catalog), cached_machine);
  auto resolved = engine.resolve(options_of(in));
  if (!resolved) return r;  // no grid: the plans' status line says why
  r.model = resolved->query().model->name;
  r.hardware = resolved->query().hardware ? resolved->query().hardware->name : in.hardware;
  static_cast<session::Heatmap&>(r) = engine.heatmap(*resolved, resolutions, gpu_counts);
  return r;
}

}  // namespace cpplan::gui
