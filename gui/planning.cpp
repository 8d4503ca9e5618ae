#include "gui/planning.h"

#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <mutex>
#include <sstream>

#include "session/query.h"

namespace cpplan::gui {

namespace {

// The query panel's values as the CLI's options: one parser (session/query.h) for both fronts.
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
  o.backend = std::string(to_string(in.backend));
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
  return o;
}

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

Result<CatalogInput> resolve_model_config(const CatalogPtr& catalog, QueryInput in) {
  if (in.model_config.empty()) return CatalogInput{catalog, std::move(in)};
  // The config alone at the defaults of every other field (a query that resolves), so that an
  // error can only be the config's.
  QueryInput probe;
  probe.model_config = in.model_config;
  try {
    std::ostringstream notes;
    // build_query copies the catalog and adds the profile; the query points into that copy, so
    // the context is built in place (not moved) and the catalog shared from inside it.
    const std::shared_ptr<const session::Context> context(
        new session::Context(session::build_query(options_of(probe), *catalog, notes)));
    in.model = context->query.model->name;
    in.model_config.clear();
    return CatalogInput{CatalogPtr(context, &context->catalog), std::move(in)};
  } catch (const session::InvalidInput& e) {
    return Error{e.message};
  }
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

void check_cost_model(const ProfileCatalog& catalog, const QueryInput& in) {
  if (in.hardware != "local" && in.cluster.empty()) return;
  auto q = make_query(catalog, in);
  if (!q) return;  // the query's own error is reported by the caller
  Query query = *q;
  session::make_cost_model(query, {in.hardware == "local", in.cluster, in.db}, cached_machine, catalog);
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
  session::Options options = options_of(in);
  options.db = in.db;
  options.cluster = in.cluster;
  auto request = session::parse_request(options);
  if (!request) {
    r.error = request.error().message;
    return r;
  }
  session::Request req = std::move(request).value();
  req.planner.allow_anything = in.allow_anything;
  auto answer = session::Engine(r.catalog, cached_machine).recommend(req);
  if (!answer) {
    r.error = answer.error().message;
    return r;
  }
  const std::shared_ptr<const session::Recommendation> rec(std::move(answer).value());
  r.recommendation = rec;
  r.catalog = CatalogPtr(rec, &rec->catalog());
  r.model = std::shared_ptr<const session::QueryCostModel>(rec, rec->model.get());
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
  auto resolved = resolve_model_config(catalog, in);
  if (!resolved) return r;  // no grid: the plans' status line says why
  const ProfileCatalog& profiles = *resolved->catalog;
  QueryInput cell_in = resolved->input;
  // The grid spans GPU counts a topology's nodes do not hold: it plans on the topology's hardware
  // (or the query's) without placement.
  const Topology* topology = in.topology.empty() ? nullptr : profiles.find_topology(in.topology);
  r.model = cell_in.model;
  r.hardware = !in.hardware.empty() ? in.hardware : topology ? topology->hardware : session::kFallbackHardware;
  cell_in.hardware = r.hardware;
  cell_in.topology.clear();
  cell_in.nodes = 0;
  const ModelProfile* m = profiles.find_model(cell_in.model);
  const auto rows = !resolutions.empty() || !m ? resolutions : heatmap_resolutions(*m);
  static_cast<session::Heatmap&>(r) =
      session::Engine(resolved->catalog).heatmap(options_of(cell_in), rows, gpu_counts, cell_in.allow_anything);
  return r;
}

}  // namespace cpplan::gui
