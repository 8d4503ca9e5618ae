#include "session/render/plan_json.h"

#include <fmt/format.h>
#include <ostream>
#include <stdexcept>

#include "costmodel/cost_model.h"
#include "session/engine/internal/planning.h"
#include "session/engine/recommend.h"

namespace cpplan::session {

using nlohmann::json;
using planner::RankedPlan;
using planner::topology::MeshAxis;
using costmodel::CommAxis;

namespace {
json source_json(const std::optional<costmodel::Source>& s) {
  return s ? json(costmodel::to_string(*s)) : json(nullptr);
}

// Every phase's bytes per GPU and the peak's phase.
json memory_phases_json(const costmodel::Prediction& pr) {
  json j = json::object();
  for (int i = 0; i < costmodel::kMemoryPhaseCount; ++i) {
    const auto phase = static_cast<costmodel::MemoryPhase>(i);
    j[std::string(to_string(phase))] = pr.memory.phase(phase);
  }
  j["peak"] = to_string(pr.peak_phase);
  j["load_moved_first"] = pr.memory.runtime_reserved + pr.memory.load_weights_moved_first;
  return j;
}

// PipeFusion's terms of a prediction (only for plans with P > 1).
// Every broken rule as data, in validate()'s order: its id (core/violation.h) and its parts.
json violations_json(const std::vector<Violation>& violations) {
  json out = json::array();
  for (const Violation& v : violations)
    out.push_back({{"rule_id", to_string(v.id)},
                   {"field", v.field},
                   {"value", v.value},
                   {"rule", v.rule},
                   {"lever", to_string(v.lever)}});
  return out;
}

json pipefusion_json(const costmodel::PipeFusionCost& c) {
  return {{"stage_blocks", c.stage_blocks},           {"warmup_step_ms", c.warmup_step_ms},
          {"pipelined_step_ms", c.pipelined_step_ms}, {"stage_patch_ms", c.stage_patch_ms},
          {"p2p_patch_ms", c.p2p_patch_ms},           {"fill_drain_ms", c.fill_drain_ms},
          {"slot_ms", c.slot_ms},                     {"pipelined_slots", c.pipelined_slots},
          {"stage_patch_host_ms", c.stage_patch_host_ms}, {"p2p_bytes", c.p2p_bytes}};
}
}  // namespace

// The per-image terms behind text_encode_ms and vae_decode_ms (docs/cost-model.md, "Per image").
json text_encoders_json(const costmodel::PipelineCost& pc, const ModelProfile& m) {
  json out = json::array();
  for (int i = 0; i < pc.encoder_count; ++i) {
    const costmodel::TextEncodeTerms& t = pc.encoders[i];
    const bool known = t.encoder >= 0 && t.encoder < static_cast<int>(m.text_encoders.size());
    out.push_back({{"name", known ? json(m.text_encoders[t.encoder].name) : json(nullptr)},
                   {"tokens", t.tokens},
                   {"prompts", t.prompts},
                   {"gemm_ms", t.gemm_ms},
                   {"attention_ms", t.attention_ms},
                   {"memory_bound_ms", t.memory_ms},
                   {"comm_ms", t.comm_ms},
                   {"transfer_ms", t.transfer_ms},
                   {"host_ms", t.host_ms},
                   {"ms", t.ms}});
  }
  return out;
}

json vae_decode_json(const costmodel::VaeDecodeTerms& d, const VaeProfile& v) {
  return {{"class", v.class_name.empty() ? json(nullptr) : json(v.class_name)},
          {"gflop_per_pixel", d.gflop_per_pixel},
          {"traffic_bytes_per_pixel", d.traffic_bytes_per_pixel},
          {"frame_pixels", d.frame_pixels},
          {"frames", d.frames},
          {"images", d.images},
          {"tiles", d.tiles},
          {"chunks", d.chunks},
          {"gpus", d.gpus},
          {"conv_ms", d.conv_ms},
          {"memory_bound_ms", d.memory_ms},
          {"host_ms", d.host_ms},
          {"comm_ms", d.comm_ms},
          {"conv_source", costmodel::to_string(d.conv_source)}};
}

json placement_json(const planner::topology::Placement& p) {
  json order = json::array();
  for (MeshAxis a : p.axis_order) order.push_back(to_string(a));
  json devices = json::array();
  for (int r = 0; r < p.ranks(); ++r) devices.push_back({{"rank", r}, {"node", p.node_of(r)}, {"gpu", p.gpu_of(r)}});
  json groups = json::object();
  for (MeshAxis a : planner::topology::kDefaultAxisOrder) groups[std::string(to_string(a))] = p.groups(a);
  if (p.fs_degree > 1) groups["fs"] = p.fs_groups();  // consecutive ranks over the axes above
  json links = json::object();
  for (int i = 0; i < costmodel::kCommAxisCount; ++i) {
    const auto& g = p.layout.groups[i];
    if (g.ranks <= 1) continue;
    const auto& l = p.links[i];
    links[std::string(to_string(static_cast<CommAxis>(i)))] = {{"busbw_gbps", g.busbw_gbps},
                                                                {"raw_gbps", l.raw_gbps},
                                                                {"latency_us", g.latency_us},
                                                                {"crosses_nodes", g.crosses_nodes()},
                                                                {"span_nodes", l.span_nodes},
                                                                {"bottleneck", l.bottleneck}};
  }
  return {{"axis_order", order}, {"devices", devices}, {"groups", groups}, {"bandwidth", links}};
}

json topology_query_json(const Query& q) {
  const Topology& t = *q.topology;
  return {{"name", t.name}, {"nodes", q.nodes}, {"gpus_per_node", t.gpus}, {"hardware", t.hardware},
          {"planning_only", t.planning_only}};
}


namespace {
// A step cache as JSON: its policy, parameters and the computed steps of the query's; null for none.
json cache_json(const CacheSpec& c, int steps) {
  if (!c.active()) return nullptr;
  return {{"policy", to_string(c.policy)},
          {"first_blocks", c.first_blocks},
          {"last_blocks", c.last_blocks},
          {"warmup_steps", c.warmup_steps},
          {"every", c.every},
          {"max_continuous_cached", c.max_continuous_cached},
          {"hit_rate", c.hit_rate},
          {"computed_steps", computed_steps(c, steps)}};
}
}  // namespace

json query_json(const Query& q) {
  // "dtype" and "cache": the query's one format and cache, null when it ranks several (each plan
  // then has its own); "dtypes" and "caches": those it ranks (one each without any or a list).
  json dtypes = json::array(), caches = json::array();
  for (const Precision& p : q.ranks_precisions() ? q.precisions : std::vector<Precision>{q.precision})
    dtypes.push_back(to_string(p));
  for (const CacheSpec& c : q.ranks_caches() ? q.caches : std::vector<CacheSpec>{q.cache})
    caches.push_back(cache_json(c, q.steps));
  json j{{"model", q.model->name},
         {"hardware", q.hardware->name},
         {"gpus", q.gpus},
         {"resolution", {{"width", q.resolution.width}, {"height", q.resolution.height}}},
         {"frames", q.frames},
         {"steps", q.steps},
         {"batch", q.batch},
         {"attention_backend", to_string(q.backend)},
         {"dtype", q.ranks_precisions() ? json(nullptr) : json(to_string(q.precision))},
         {"cache", q.ranks_caches() ? json(nullptr) : cache_json(q.cache, q.steps)},
         {"dtypes", dtypes},
         {"caches", caches},
         {"runtime", q.runtime ? json(q.runtime->name) : json(nullptr)},
         {"text_encoder", q.text_encoder ? json(to_string(*q.text_encoder)) : json("auto")},
         {"vae", q.vae ? json(to_string(*q.vae)) : json("auto")},
         {"offload_idle_transformer", q.offload_idle_transformer},
         {"sequence",
          {{"image_tokens", q.sequence.image_tokens},
           {"text_tokens", q.sequence.text_tokens},
           {"total", q.sequence.total()}}}};
  if (q.topology) j["topology"] = topology_query_json(q);
  return j;
}

// "transformer": the transformer as cpplan derives it from its profile or config, for comparison
// with diffusers' own count (tests/reference/): parameters of one transformer and their bytes at
// the weight dtype, the pipeline's transformers (Wan2.2 A14B: 2), and the FLOPs (GEMMs and
// attention; 2 per multiply-add) of one forward pass of one sample at the query's sequence, which
// true CFG runs twice per step.
json transformer_json(const PlannedQuery& pq) {
  const ModelProfile& m = *pq.query().model;
  return {{"class", m.transformer_class.empty() ? json(nullptr) : json(m.transformer_class)},
          {"params", m.params},
          {"param_bytes", m.params * m.bytes_per_param},
          {"transformers", m.transformers},
          {"forward_flops", pq.forward_flops},
          {"passes_per_step", m.passes_per_step()}};
}

json check_json(const CheckResult& c) {
  json j = plan_json(c.query(), c.plan, c.scripts);
  j["transformer"] = transformer_json(c);
  return j;
}

namespace {
// "diffusers_config": the class of diffusers' parallel config (null without parallelism), its
// keyword arguments as [name, value] pairs in the order the CLI's script writes them (dict(pairs)
// in Python) and the expression itself; null when diffusers cannot run the plan. "xdit_args",
// "sglang_args", "vllm_omni_args": the parallel flags of xDiT, SGLang Diffusion and vLLM-Omni, each
// null when that framework cannot run it. "run_args": what follows `cpplan run` to execute it
// (null for an invalid plan).
void add_framework_configs(json& j, const PlanScripts& s) {
  j["run_args"] = s.valid ? json(s.run_args) : json(nullptr);
  j["diffusers_config"] = nullptr;
  j["xdit_args"] = nullptr;
  j["sglang_args"] = nullptr;
  j["vllm_omni_args"] = nullptr;
  if (!s.valid) return;
  if (s.diffusers) {
    const DiffusersConfig& d = *s.diffusers;
    json kwargs = json::array();
    for (const auto& a : d.kwargs) kwargs.push_back({a.name, a.boolean ? json(a.value != 0) : json(a.value)});
    j["diffusers_config"] = {{"class", d.cls.empty() ? json(nullptr) : json(d.cls)},
                             {"kwargs", kwargs},
                             {"expression", d.expression.empty() ? json(nullptr) : json(d.expression)}};
  }
  if (s.xdit_args) j["xdit_args"] = *s.xdit_args;
  if (s.sglang_args) j["sglang_args"] = *s.sglang_args;
  if (s.vllm_omni_args) j["vllm_omni_args"] = *s.vllm_omni_args;
}

// "framework_runs": per framework that runs the plan, the text-encoder and VAE placement it offers,
// the steps its cache leaves cached (its own schedule), and the image time, peak and fit there (the plan's own "predicted" holds the placement ranked).
json framework_runs_json(const RankedPlan& rp) {
  json out = json::object();
  for (int i = 0; i < planner::kFrameworkCount; ++i) {
    const planner::FrameworkRun& r = rp.runs[i];
    if (!r.runs) continue;
    out[std::string(planner::to_string(static_cast<planner::Framework>(i)))] = {
        {"text_encoder", to_string(r.where.text_encoder)},
        {"vae", to_string(r.where.vae)},
        {"cached_steps", r.cached_steps},
        {"image_ms", r.image_ms},
        {"peak_mem_bytes", r.peak_bytes},
        {"fits_memory", r.fits}};
  }
  return out;
}

// "snippets": each framework's script or command (null when it cannot run the plan), the text the
// CLI and the GUI show; "frameworks_unavailable": why, for those that cannot; "python_hooks": per
// Python framework that runs the plan (diffusers, cache-dit), the script's lines for the format and
// the cache, which plan.apply(pipe) runs ([] when it adds none). All null for an invalid plan.
void add_snippets_json(json& j, const PlanScripts& s) {
  if (!s.valid) {
    j["snippets"] = nullptr;
    j["frameworks_unavailable"] = nullptr;
    j["python_hooks"] = nullptr;
    return;
  }
  const auto& all = s.snippets;
  json snippets = json::object(), unavailable = json::object(), hooks = json::object();
  for (int i = 0; i < planner::kFrameworkCount; ++i) {
    const auto f = static_cast<planner::Framework>(i);
    const std::string name(planner::to_string(f));
    snippets[name] = all[i].text.empty() ? json(nullptr) : json(all[i].text);
    if (!all[i].unavailable.empty()) unavailable[name] = all[i].unavailable;
    const bool python = f == planner::Framework::kDiffusers || f == planner::Framework::kCacheDit;
    if (!python || all[i].text.empty()) continue;
    json lines = json::array();
    for (const planner::PythonHook& h : all[i].hooks)
      lines.push_back({{"what", h.what}, {"import", h.import}, {"keyword", h.keyword}, {"code", h.code}});
    hooks[name] = std::move(lines);
  }
  j["snippets"] = std::move(snippets);
  j["frameworks_unavailable"] = std::move(unavailable);
  j["python_hooks"] = std::move(hooks);
}

}  // namespace

json plan_json(const Query& q, const RankedPlan& rp, const PlanScripts& scripts) {
  const Plan& p = rp.plan;
  const ParallelConfig& c = p.config;
  json j{{"label", plan_label(c)},
         {"ring_degree", c.ring()},
         {"ulysses_degree", c.ulysses()},
         {"tp_degree", c.tp()},
         {"cfg_degree", c.cfg_degree},
         {"dp_degree", c.dp_degree},
         {"fs_degree", c.fs()},
         {"pipefusion_degree", c.pp()},
         {"num_pipeline_patch", c.pipefusion.patches},
         {"pipefusion_warmup_steps", c.pipefusion.warmup_steps},
         {"ulysses_anything", c.context_parallel_config.ulysses_anything},
         {"ring_anything", c.context_parallel_config.ring_anything},
         {"rotate_method", to_string(c.context_parallel_config.rotate_method)},
         {"cp_variant", to_string(p.variant)},
         {"dtype", to_string(rp.precision)},  // the format and cache it was priced with
         {"cache", cache_json(rp.cache, q.steps)},
         {"valid", p.valid()},
         {"reasons", p.reasons()},
         {"violations", violations_json(p.violations)}};
  if (rp.predicted) {
    const costmodel::Prediction& pr = *rp.predicted;
    json blocks = json::array();
    for (int i = 0; i < pr.block_count; ++i) {
      const auto& b = pr.blocks[i];
      blocks.push_back({{"kind", to_string(b.kind)},
                        {"count", b.count},
                        {"gemm_ms", b.gemm_ms},
                        {"attention_ms", b.attention_ms},
                        {"memory_bound_ms", b.memory_ms},
                        {"host_ms", b.host_ms},
                        {"comm_ms", b.comm_ms},
                        {"sync_ms", b.sync_ms},
                        {"bound", b.host_bound() ? "host" : "device"},
                        {"source", costmodel::to_string(b.source)},
                        {"sources",
                         {{"gemm", source_json(b.sources.gemm)},
                          {"attention", source_json(b.sources.attention)},
                          {"memory_bound", source_json(b.sources.memory)},
                          {"comm", source_json(b.sources.comm)}}}});
    }
    const auto& m = pr.memory;
    const costmodel::PipelineCost& pc = pr.pipeline;
    j["text_encoder"] = to_string(pc.text_encoder);
    j["vae"] = to_string(pc.vae);
    j["fits_memory"] = pr.fits_memory;
    j["predicted"] = {{"step_ms", pr.step_ms},
                      {"steps_per_sec", pr.steps_per_sec},
                      {"image_ms", pr.image_ms},
                      {"compute_ms", pr.compute_ms},
                      {"comm_ms", pr.comm_ms},
                      {"host_ms", pr.host_ms},
                      {"sync_ms", pr.sync_ms},
                      {"runtime", pr.runtime.empty() ? json(nullptr) : json(pr.runtime)},
                      {"peak_mem_bytes", pr.peak_mem_bytes},
                      {"transformer_peak_bytes", pr.transformer_peak_bytes},
                      {"text_encode_ms", pr.text_encode_ms},
                      {"vae_decode_ms", pr.vae_decode_ms},
                      {"pipeline_ms", pc.host_ms},
                      {"cached_steps", pr.cached_steps},
                      {"cached_step_ms", pr.cached_step_ms},
                      {"pipeline",
                       {{"text_encoder", to_string(pc.text_encoder)},
                        {"vae", to_string(pc.vae)},
                        {"text_encode_ms", pc.text_encode_ms},
                        {"text_transfer_ms", pc.text_transfer_ms},
                        {"text_comm_ms", pc.text_comm_ms},
                        {"vae_decode_ms", pc.vae_decode_ms},
                        {"vae_comm_ms", pc.vae_comm_ms},
                        {"host_ms", pc.host_ms},
                        {"transformer_load_ms", pc.transformer_load_ms},
                        {"text_encoders", text_encoders_json(pc, *q.model)},
                        {"vae_decode", vae_decode_json(pc.decode, q.model->vae)}}},
                      {"step_tflop", pr.step_flops / 1e12},
                      {"comm_bytes", pr.comm_bytes},
                      {"source", costmodel::to_string(pr.source)},
                      {"step_comm_extra_source", source_json(pr.step_comm_extra_source)},
                      {"calibrated", pr.calibrated},
                      {"compile_ms", pr.compile_ms},
                      {"warmup_ms", pr.warmup_ms},
                      {"uncalibrated_step_ms", pr.calibrated ? json(pr.uncalibrated_step_ms) : json(nullptr)},
                      {"blocks", blocks},
                      {"memory",
                       {{"transformer_weights", m.transformer_weights},
                        {"text_encoder_weights", m.text_encoder_weights},
                        {"vae_weights", m.vae_weights},
                        {"activations", m.activations},
                        {"attention_extra", m.attention_extra},
                        {"vae_decode", m.vae_decode},
                        {"text_encode", m.text_encode},
                        {"transformer_while_encoding", m.transformer_while_encoding},
                        {"runtime_reserved", m.runtime_reserved}}},
                      {"memory_phases", memory_phases_json(pr)},
                      {"host_load",
                       {{"ranks_per_node", pr.ranks_per_node},
                        {"per_rank_bytes", m.host_load_per_rank},
                        {"per_node_bytes", pr.host_load_bytes},
                        {"verdict", costmodel::to_string(pr.host_load)}}}};
    if (pr.pipefusion.active()) j["predicted"]["pipefusion"] = pipefusion_json(pr.pipefusion);
  } else {
    j["text_encoder"] = nullptr;
    j["vae"] = nullptr;
    j["fits_memory"] = nullptr;
    j["predicted"] = nullptr;
  }
  j["frameworks"] = rp.frameworks.names();
  j["cpplan_only"] = rp.cpplan_only();
  j["framework_runs"] = framework_runs_json(rp);
  add_snippets_json(j, scripts);
  add_framework_configs(j, scripts);
  if (rp.placement && q.topology) j["placement"] = placement_json(*rp.placement);  // not the hardware's node
  return j;
}

namespace {
// `scripts[i]`, one listed plan's; a recommendation asked without Request::with_scripts has none, a
// caller's error that no user input causes.
const PlanScripts& listed_scripts(const std::vector<PlanScripts>& scripts, std::size_t i) {
  if (i >= scripts.size())
    throw std::logic_error("the JSON of a recommendation needs its plans' scripts: set Request::with_scripts");
  return scripts[i];
}
}  // namespace

json report_json(const Recommendation& rec) {
  const Query& q = rec.query();
  const planner::PlanReport& r = rec.report;
  json j = query_json(q);
  j["transformer"] = transformer_json(rec);
  json plans = json::array();
  for (std::size_t i = 0; i < r.plans.size(); ++i)
    if (r.plans[i].plan.valid() || rec.request.all) plans.push_back(plan_json(q, r.plans[i], listed_scripts(rec.scripts, i)));
  j["valid_plans"] = r.valid_count;
  j["invalid_plans"] = r.invalid_count;
  j["framework"] = r.framework ? json(planner::to_string(*r.framework)) : json("any");
  j["hidden_plans"] = r.hidden_count;
  json best = json::object();
  for (const FrameworkChoice& c : rec.frameworks)
    best[std::string(planner::to_string(c.framework))] = c.plan ? json(plan_label(c.plan->plan.config)) : json(nullptr);
  j["best_by_framework"] = std::move(best);
  j["prediction_source"] = rec.prediction_source;
  j["plans"] = std::move(plans);
  return j;
}

namespace {
json script_json(const Script& s) {
  constexpr const char* kKinds[] = {"script", "command", "note"};
  return {{"framework", planner::to_string(s.framework)},
          {"kind", kKinds[static_cast<int>(s.kind)]},
          {"text_encoder", to_string(s.placement.text_encoder)},
          {"vae", to_string(s.placement.vae)},
          {"lines", s.lines}};
}
}  // namespace

json recommendation_json(const Recommendation& rec) {
  json j = report_json(rec);
  json rows = json::array();
  for (const Row& row : rec.rows) {
    json same = json::array();
    for (const RankedPlan* p : row.same) same.push_back(plan_label(p->plan.config));
    rows.push_back({{"label", plan_label(row.plan->plan.config)},
                    {"variant", row.variant},
                    {"dtype", to_string(row.plan->precision)},
                    {"cache", to_string(row.plan->cache.policy)},
                    {"same", same},
                    {"frameworks", row.frameworks.names()},
                    {"frameworks_text", frameworks_text(row)},
                    {"cpplan_only", row.cpplan_only()}});
  }
  json rejected = json::array();
  for (const Rejection& g : rec.rejections)
    rejected.push_back({{"rule_id", to_string(g.id)},
                        {"rule", g.rule},
                        {"lever", to_string(g.lever)},
                        {"count", g.count},
                        {"example", plan_label(g.example->plan.config)},
                        {"more_rules", g.more_rules}});
  json choices = json::array();
  for (const FrameworkChoice& c : rec.frameworks)
    choices.push_back({{"framework", planner::to_string(c.framework)},
                       {"title", c.title},
                       {"plan", c.plan ? json(plan_label(c.plan->plan.config)) : json(nullptr)},
                       {"dtype", c.plan ? json(to_string(c.plan->precision)) : json(nullptr)},
                       {"cache", c.plan ? json(to_string(c.plan->cache.policy)) : json(nullptr)},
                       {"gap", c.gap},
                       {"top_unavailable", c.top_unavailable},
                       {"script", c.script ? script_json(*c.script) : json(nullptr)},
                       {"shown", c.shown}});
  j["rows"] = std::move(rows);
  j["rejected"] = std::move(rejected);
  j["framework_choices"] = std::move(choices);
  j["notes"] = rec.notes;
  return j;
}

json fleet_json(const Recommendation& rec) {
  const Query& q = rec.query();
  const planner::FleetReport& f = *rec.fleet;
  json j = query_json(q);
  j["transformer"] = transformer_json(rec);
  j["objective"] = "throughput";
  j["slo_ms"] = f.slo_ms ? json(*f.slo_ms) : json(nullptr);
  j["replica_sizes"] = f.all_sizes ? "all" : "divisors and powers of two";
  json plans = json::array();
  for (std::size_t i = 0; i < f.rows.size(); ++i) {
    const planner::FleetRow& row = f.rows[i];
    json p = plan_json(q, row.replica, listed_scripts(rec.fleet_scripts, i));
    p["replicas"] = row.replicas;
    p["gpus_per_replica"] = row.gpus_per_replica;
    p["idle_gpus"] = row.idle_gpus;
    p["images_per_hour"] = row.images_per_hour;
    p["images_per_hour_per_gpu"] = row.images_per_hour_per_gpu();
    p["meets_slo"] = row.meets_slo;
    plans.push_back(std::move(p));
  }
  j["plans"] = std::move(plans);
  j["mixed"] = nullptr;
  j["mixed_images_per_hour"] = nullptr;
  j["mixed_images_per_hour_per_gpu"] = nullptr;
  if (f.mixed) {
    json parts = json::array();
    for (const planner::FleetPart& part : f.mixed->parts)
      parts.push_back({{"replicas", part.replicas},
                       {"gpus_per_replica", part.replica.gpus},
                       {"label", plan_label(part.replica.plan.plan.config)},
                       {"dtype", to_string(part.replica.plan.precision)},
                       {"cache", to_string(part.replica.plan.cache.policy)},
                       {"image_ms", part.replica.image_ms()},
                       {"images_per_hour", part.images_per_hour}});
    j["mixed"] = std::move(parts);
    j["mixed_images_per_hour"] = f.mixed->images_per_hour;
    j["mixed_images_per_hour_per_gpu"] = f.mixed->images_per_hour / f.gpus;
  }
  return j;
}

}  // namespace cpplan::session
