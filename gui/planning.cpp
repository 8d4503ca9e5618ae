#include "gui/planning.h"

#include <chrono>
#include <fmt/format.h>

#include "costmodel/cost_model.h"
#include "costmodel/hardware_model.h"

namespace cpplan::gui {

Result<Query> make_query(const ProfileCatalog& catalog, const QueryInput& in) {
  // --topology and --nodes first, as cli/args.cpp's resolve_topology: they set the defaults of
  // --hardware and --gpus.
  const Topology* topology = nullptr;
  if (!in.topology.empty()) {
    auto t = catalog.topology(in.topology);
    if (!t) return t.error();
    topology = *t;
  }
  int nodes = 1;
  if (in.nodes != 0) {
    if (!topology) return Error{fmt::format("--nodes = {}: needs --topology or --topology-file", in.nodes)};
    const int max_nodes = kMaxGpus / topology->gpus;
    if (in.nodes < 1 || in.nodes > max_nodes)
      return Error{fmt::format("--nodes = {}: must be between 1 and {}", in.nodes, max_nodes)};
    nodes = in.nodes;
    if (nodes > 1 && !topology->has_network)
      return Error{
          fmt::format("--nodes = {}: topology {} has no [network] table to join nodes", nodes, topology->name)};
  }
  if (in.gpus == 0 && !topology) return Error{"--gpus: required (the number of GPUs, e.g. --gpus 4)"};
  const int gpus = in.gpus == 0 ? nodes * topology->gpus : in.gpus;
  if (gpus < 1 || gpus > kMaxGpus)
    return Error{fmt::format("--gpus = {}: must be between 1 and {}", in.gpus, kMaxGpus)};
  if (topology && nodes > 1 && gpus != nodes * topology->gpus)
    return Error{fmt::format("--gpus = {}: must equal --nodes x {}'s {} GPUs = {} (or leave --gpus out)", in.gpus,
                             topology->name, topology->gpus, nodes * topology->gpus)};
  if (topology && nodes == 1 && gpus > topology->gpus)
    return Error{fmt::format("--gpus = {}: must be at most {}'s {} GPUs (add --nodes N for more)", in.gpus,
                             topology->name, topology->gpus)};
  auto model = catalog.model(in.model);
  if (!model) return model.error();
  const std::string hardware_name = !in.hardware.empty() ? in.hardware : topology ? topology->hardware : "h100-sxm";
  auto hardware = catalog.hardware(hardware_name);
  if (!hardware) return hardware.error();
  const ModelProfile& m = **model;
  if (in.steps < 0) return Error{fmt::format("--steps = {}: must be at least 1", in.steps)};
  if (in.batch < 1 || in.batch > 65536) return Error{fmt::format("--batch = {}: must be between 1 and 65536", in.batch)};
  Query q;
  q.model = &m;
  q.hardware = *hardware;
  q.gpus = gpus;
  q.topology = topology;
  q.nodes = nodes;
  q.batch = in.batch;
  q.resolution = {in.width > 0 ? in.width : m.default_width, in.height > 0 ? in.height : m.default_height};
  q.frames = in.frames > 0 ? in.frames : m.default_frames;
  q.steps = in.steps > 0 ? in.steps : m.default_steps;
  q.backend = in.backend;
  auto runtime = catalog.runtime(in.runtime);  // "--runtime = x: unknown profile; ...", as the CLI
  if (!runtime) return runtime.error();
  q.runtime = *runtime;
  q.text_encoder = in.text_encoder;
  q.vae = in.vae;
  auto seq = compute_sequence(m, q.resolution, q.frames, m.text_tokens);
  if (!seq) return seq.error();
  q.sequence = *seq;
  return q;
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

PlanResult compute_plans(CatalogPtr catalog, const QueryInput& in, std::uint64_t generation) {
  const auto start = std::chrono::steady_clock::now();
  PlanResult r;
  r.generation = generation;
  r.catalog = std::move(catalog);
  r.input = in;
  auto q = make_query(*r.catalog, in);
  if (!q) {
    r.error = q.error().message;
    return r;
  }
  r.query = *q;
  const costmodel::DatasheetModel hardware(*r.query->hardware);
  const costmodel::CostModel cost(hardware);
  r.report = planner::Planner(cost).plan(*r.query, {.allow_anything = in.allow_anything, .keep_invalid = true});
  r.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::vector<Resolution> heatmap_resolutions(const ModelProfile& m) {
  const int step = m.pixel_granularity();
  std::vector<Resolution> out;
  for (double scale : {0.5, 0.75, 1.0, 1.5, 2.0}) {
    auto round = [&](int v) { return std::max(step, static_cast<int>(v * scale / step + 0.5) * step); };
    const Resolution r{round(m.default_width), round(m.default_height)};
    if (out.empty() || out.back().width != r.width || out.back().height != r.height) out.push_back(r);
  }
  return out;
}

std::vector<int> heatmap_gpu_counts() { return {1, 2, 4, 8, 16, 32, 64}; }

HeatmapResult compute_heatmap(CatalogPtr catalog, const QueryInput& in, const std::vector<Resolution>& resolutions,
                              const std::vector<int>& gpu_counts, std::uint64_t generation) {
  HeatmapResult r;
  r.generation = generation;
  // The grid spans GPU counts a topology's nodes do not hold: it plans on the topology's hardware
  // (or the query's) without placement.
  const Topology* topology = in.topology.empty() ? nullptr : catalog->find_topology(in.topology);
  r.model = in.model;
  r.hardware = !in.hardware.empty() ? in.hardware : topology ? topology->hardware : "h100-sxm";
  r.resolutions = resolutions;
  r.gpu_counts = gpu_counts;
  const HardwareProfile* hw = catalog->find_hardware(r.hardware);
  std::optional<costmodel::DatasheetModel> hardware;
  if (hw) hardware.emplace(*hw);
  for (const Resolution& res : resolutions) {
    for (int gpus : gpu_counts) {
      HeatCell cell;
      cell.resolution = res;
      cell.gpus = gpus;
      QueryInput cell_in = in;
      cell_in.width = res.width;
      cell_in.height = res.height;
      cell_in.gpus = gpus;
      cell_in.hardware = r.hardware;
      cell_in.topology.clear();
      cell_in.nodes = 0;
      auto q = make_query(*catalog, cell_in);
      if (!q || !hardware) {
        cell.error = q ? "unknown hardware" : q.error().message;
      } else {
        const costmodel::CostModel cost(*hardware);
        const auto report =
            planner::Planner(cost).plan(*q, {.allow_anything = in.allow_anything, .keep_invalid = false});
        if (!report.plans.empty()) {  // ranked: fitting plans come first
          const planner::RankedPlan& best = report.plans.front();
          cell.label = plan_label(best.plan.config);
          cell.variant = best.plan.variant;
          cell.step_ms = best.predicted->step_ms;
          cell.fits = best.predicted->fits_memory;
        }
      }
      r.cells.push_back(std::move(cell));
    }
  }
  return r;
}

}  // namespace cpplan::gui
