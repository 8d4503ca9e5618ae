#include "session/engine/recommend.h"

#include "session/query/query_fields.h"

#include <cmath>
#include <fmt/format.h>
#include <sstream>

#include "costmodel/cost_model.h"
#include "planner/framework_scripts.h"
#include "planner/snippets.h"

namespace cpplan::session {

namespace {

// --objective and --slo-ms: whether the request asks for throughput, and its latency target.
void parse_objective(const Options& o, Request& r) {
  if (o.objective != "latency" && o.objective != "throughput")
    throw InvalidInput{fmt::format("--objective = {}: must be latency or throughput", o.objective)};
  if (o.objective == "latency" && !o.slo_ms.empty())
    throw InvalidInput{fmt::format("--slo-ms = {}: needs --objective throughput (a latency target of replicas)", o.slo_ms)};
  if (!o.slo_ms.empty()) r.slo_ms = parse_number_field("slo_ms", o.slo_ms);
  r.throughput = o.objective == "throughput";
}

// Splits a script into its lines (a final line end ends the last line; it adds none).
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl - start));
    start = nl == std::string::npos ? text.size() : nl + 1;
  }
  return lines;
}

// The CP variant of a row; "Ulysses/Anything" when the row is both forms of one computation.
std::string variant_text(const planner::RankedPlan& p, bool merged) {
  const std::string name(display_name(p.plan.variant));
  if (!merged) return name;
  return name.substr(0, name.find(' ')) + "/Anything";  // "Ulysses Anything" -> "Ulysses"
}

// Each framework's run of the row: from the first of its forms that the framework runs.
void add_runs(Row& row) {
  for (int f = 0; f < planner::kFrameworkCount; ++f) {
    row.runs[f] = row.plan->runs[f];
    for (const planner::RankedPlan* other : row.same)
      if (!row.runs[f].runs) row.runs[f] = other->runs[f];
  }
}

std::vector<Row> rows_of(const planner::PlanReport& report, bool each_form) {
  std::vector<Row> rows;
  if (each_form) {
    for (const planner::RankedPlan& p : report.plans)
      if (p.plan.valid()) rows.push_back({&p, {}, p.frameworks, variant_text(p, false)});
  } else {
    for (const planner::PlanRow& r : planner::merged_rows(report))
      rows.push_back({r.plan, r.same, r.frameworks, variant_text(*r.plan, !r.same.empty())});
  }
  for (Row& row : rows) add_runs(row);
  return rows;
}

std::vector<Rejection> rejections_of(const planner::PlanReport& report) {
  std::vector<Rejection> out;
  for (const planner::RejectionGroup& g : planner::rejection_groups(report))
    out.push_back({g.id, g.rule, g.lever, g.count, g.example, static_cast<int>(g.example->plan.violations.size()) - 1});
  return out;
}

Script script_of(Framework f, const planner::RankedPlan& p, const std::string& text) {
  Script s;
  s.framework = f;
  // Python scripts: diffusers, cache-dit; command lines: xDiT, SGLang Diffusion, vLLM-Omni.
  s.kind = f == Framework::kDiffusers || f == Framework::kCacheDit ? Script::Kind::kScript : Script::Kind::kCommand;
  s.placement = p.run(f).where;
  s.lines = lines_of(text);
  return s;
}

std::vector<FrameworkChoice> framework_choices(const Query& q, const planner::PlanReport& report) {
  std::vector<FrameworkChoice> out;
  for (const planner::FrameworkChoice& c : planner::best_by_framework(q, report)) {
    FrameworkChoice f;
    f.framework = c.framework;
    f.title = std::string(framework_title(c.framework));
    f.plan = c.plan;
    if (c.plan) {
      f.run = c.plan->run(c.framework);
      f.own_placement = f.run.differs_from(*c.plan->predicted);
    }
    f.gap = c.gap;
    f.top_unavailable = c.top_unavailable;
    if (c.plan) f.script = script_of(c.framework, *c.plan, c.snippet);
    f.shown = !report.framework || *report.framework == c.framework;
    out.push_back(std::move(f));
  }
  return out;
}

// The notes of resolving query `q`: the resolver's lines, a derived profile's guesses
// (--model-config), the frames a video pipeline floors.
std::vector<std::string> query_notes(const std::string& resolver_notes, const Query& q) {
  std::vector<std::string> notes;
  std::istringstream lines(resolver_notes);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) notes.push_back(line);
  const ModelProfile& m = *q.model;
  for (const std::string& a : m.assumptions) notes.push_back(fmt::format("note: {}: {}", m.name, a));
  if (m.video && q.sequence.decoded_frames != q.frames)
    notes.push_back(fmt::format("note: --frames = {}: {}'s pipeline floors the latent frames ((frames - 1) // {} + 1 "
                                "= {}) and decodes {} frames; priced as that",
                                q.frames, m.name, m.vae.temporal, 1 + (q.frames - 1) / m.vae.temporal,
                                q.sequence.decoded_frames));
  return notes;
}

// The catalog and query of `o` in `out`, and the cost model they are priced with (which may point
// the query at this machine: the context is shared only once that is done).
void plan_query(PlannedQuery& out, const Options& o, const CostModelChoice& cost,
                std::shared_ptr<const ProfileCatalog> catalog, const MachineSource& machine) {
  std::ostringstream notes;
  auto context = std::make_shared<Context>(build_query(o, std::move(catalog), notes));
  out.notes = query_notes(notes.str(), context->query);
  if (cost.tune_hit_rate && !cost.db.empty() && o.cache_hit_rate.empty())
    out.hit_rates = apply_measured_hit_rates(context->query, cost.db);
  out.model = make_cost_model(context->query, cost, machine, *context->catalog);
  out.forward_flops = costmodel::forward_flops(*context->query.model, context->query.sequence);
  out.context = std::move(context);
}

std::vector<PlanScripts> scripts_of(const Query& q, const std::vector<planner::RankedPlan>& plans) {
  std::vector<PlanScripts> out;
  out.reserve(plans.size());
  for (const planner::RankedPlan& p : plans) out.push_back(plan_scripts(q, p));
  return out;
}

void rank(Recommendation& rec) {
  const Request& r = rec.request;
  const Query& q = rec.query();
  rec.report = ranking(q, rec.model->cost(), r);
  rec.rows = rows_of(rec.report, r.all);
  for (const planner::RankedPlan& p : rec.report.plans) rec.fitting += p.plan.valid() && p.predicted->fits_memory;
  rec.rejections = rejections_of(rec.report);
  rec.frameworks = framework_choices(q, rec.report);
  rec.prediction_source = prediction_source(rec.report.plans, rec.model->local(), rec.model->cluster(), rec.model->tune()) +
                          hit_rate_source_text(rec.hit_rates);
  if (r.with_scripts) rec.scripts = scripts_of(q, rec.report.plans);
  const planner::RankedPlan* top = rec.top();
  if (!top) return;
  rec.warmup = warmup_of(*top->predicted);
  rec.placement = placement_view(q, *top);
  if (r.explain) rec.explain = explain(q, *top, collective_source(rec));
}

void plan_fleet(Recommendation& rec) {
  const Request& r = rec.request;
  if (rec.query().topology)
    throw InvalidInput{"--objective = throughput: with --topology or --nodes is not done (replicas are planned "
                       "without placement); leave the topology out"};
  const planner::Planner planner(rec.model->cost());
  rec.fleet = planner::plan_fleet(planner, rec.query(), r.slo_ms, r.planner, replica_plans(r));  // replicas keep no invalid plan
  if (!r.with_scripts) return;
  for (const planner::FleetRow& row : rec.fleet->rows) rec.fleet_scripts.push_back(plan_scripts(rec.query(), row.replica));
}

template <class F>
auto as_result(F&& f) -> Result<decltype(f())> {
  try {
    return f();
  } catch (const InvalidInput& e) {
    return Error{e.message};
  }
}

}  // namespace

Result<Request> parse_request(const Options& o, bool keep_invalid) {
  return as_result([&] {
    Request r;
    r.options = o;
    parse_objective(o, r);
    r.top = parse_int_field("top", o.top);
    r.all = o.all;
    r.explain = o.explain;
    r.framework = framework_choice(o);
    r.cpplan_plans = o.framework == "cpplan";
    r.planner = planner_options(o, keep_invalid);
    r.planner.framework = r.framework;
    r.planner.framework_plans_first = !r.cpplan_plans;
    r.cost = {o.hardware == "local", o.cluster, o.db};
    return r;
  });
}

std::string own_run_text(const planner::FrameworkRun& r, int plan_cached_steps) {
  const std::string cache = r.cached_steps > 0    ? fmt::format(" {} steps cached", r.cached_steps)
                            : plan_cached_steps > 0 ? std::string(" every step computed")
                                                    : std::string();
  return fmt::format("{}/{}{} {:.2f} s {:.1f} GiB{}", to_string(r.where.text_encoder), to_string(r.where.vae), cache,
                     r.image_ms / 1e3, r.peak_bytes / kGiB, r.fits ? "" : " NO fit");
}

std::string frameworks_text(const Row& row) {
  if (row.cpplan_only()) return "cpplan run only";
  std::vector<std::string> parts;
  for (int i = 0; i < planner::kFrameworkCount; ++i) {
    const auto f = static_cast<Framework>(i);
    if (!row.frameworks.has(f)) continue;
    std::string part(to_string(f));
    if (row.differs(f)) part += fmt::format(" ({})", own_run_text(row.runs[i], row.plan->predicted->cached_steps));
    parts.push_back(std::move(part));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

planner::ReplicaPlans replica_plans(const Request& r) {
  planner::ReplicaPlans plans;  // default: the plans some framework runs
  plans.framework = r.framework;
  plans.any_valid = r.cpplan_plans;  // --framework cpplan: every valid plan
  return plans;
}

bool Row::differs(Framework f) const {
  return runs[static_cast<int>(f)].differs_from(*plan->predicted);
}

planner::PlanReport ranking(const Query& q, const costmodel::CostModel& cost, const Request& r) {
  planner::PlanReport report = planner::Planner(cost).plan(q, r.planner);
  if (r.framework) planner::keep_plans_of(report, *r.framework);
  return report;
}

Milliseconds mean_step_ms(const Query& q, const planner::RankedPlan& p) { return planner::ranking_ms(q, p); }

PlanScripts plan_scripts(const Query& q, const planner::RankedPlan& rp) {
  PlanScripts s;
  if (!rp.plan.valid() || !rp.predicted) return s;
  s.valid = true;
  const ParallelConfig& c = rp.plan.config;
  if (rp.frameworks.has(Framework::kDiffusers)) {
    const bool cp = c.context_parallel_config.degree() > 1;
    DiffusersConfig d;
    d.kwargs = cp ? planner::context_parallel_arguments(c) : planner::tensor_parallel_arguments(c);
    d.cls = cp ? "ContextParallelConfig" : (c.tp() > 1 ? "TensorParallelConfig" : "");
    if (!d.cls.empty()) d.expression = fmt::format("{}({})", d.cls, planner::python_arguments(d.kwargs));
    s.diffusers = std::move(d);
  }
  if (rp.frameworks.has(Framework::kXdit)) s.xdit_args = planner::xdit_parallel_args(rp.plan, rp.run(Framework::kXdit).where);
  if (rp.frameworks.has(Framework::kSglang))
    s.sglang_args = planner::sglang_parallel_args(rp.plan, rp.run(Framework::kSglang).where);
  if (rp.frameworks.has(Framework::kVllmOmni))
    s.vllm_omni_args = planner::vllm_omni_parallel_args(rp.plan, rp.run(Framework::kVllmOmni).where);
  s.snippets = planner::snippets_for(q, rp);
  s.run_args = run_argv(q, c, rp.precision, rp.cache);
  return s;
}

std::string plan_snippets(const Query& q, const planner::RankedPlan& p, std::optional<Framework> framework,
                          const planner::PlanReport* report) {
  if (!framework) return planner::framework_snippets(q, p, report);
  if (!p.plan.valid() || !p.predicted) return {};
  const planner::FrameworkSnippet s = planner::snippets_for(q, p)[static_cast<int>(*framework)];
  return planner::framework_answer(q, p, *framework, s, report);
}

CollectiveSource collective_source(const PlannedQuery& pq) {
  const costmodel::HardwareModel& hw = pq.model->cost().hardware();
  return [&hw](costmodel::Collective c, const costmodel::CommGroup& g) { return hw.collective_source(c, g); };
}

std::optional<Warmup> warmup_of(const costmodel::Prediction& p) {
  if (p.warmup_ms <= 0) return std::nullopt;
  return Warmup{p.compile_ms, p.warmup_ms, std::ceil(p.warmup_ms / std::max(1e-9, 0.1 * p.image_ms))};
}

Result<Resolved> resolve(Request request, std::shared_ptr<const ProfileCatalog> catalog, const MachineSource& machine) {
  return as_result([&] {
    Resolved r;
    r.request = std::move(request);
    plan_query(r, r.request.options, r.request.cost, std::move(catalog), machine);
    return r;
  });
}

Result<Resolved> resolve(const Options& o, const Rendering& how, std::shared_ptr<const ProfileCatalog> catalog,
                         const MachineSource& machine) {
  auto request = parse_request(o, how.keep_invalid);
  if (!request) return request.error();
  request.value().with_scripts = how.with_scripts;
  return resolve(std::move(request).value(), std::move(catalog), machine);
}

Result<std::unique_ptr<Recommendation>> recommend(const Resolved& r) {
  return as_result([&] {
    auto rec = std::make_unique<Recommendation>();
    static_cast<Resolved&>(*rec) = r;
    if (r.request.throughput) plan_fleet(*rec);
    else rank(*rec);
    return rec;
  });
}

namespace {

// With --framework F that cannot run the valid plan `p`: "<F's title> cannot run it: <reason>".
std::string framework_refusal(const Query& q, const std::optional<Framework>& framework, const planner::RankedPlan& p) {
  if (!framework || !p.plan.valid() || p.frameworks.has(*framework)) return {};
  const std::string_view why = planner::unsupported_reason(*framework, q, p.plan);
  return fmt::format("{} cannot run it: {}", framework_title(*framework),
                     why.empty() ? "none of its placements of the text encoders and the VAE applies" : why);
}

}  // namespace

namespace {

// Plan `c` of query `q` priced with each of the formats and caches q ranks: the first valid one
// ranked first as the planner ranks (fitting, run by a framework unless --framework cpplan, then the
// mean step), else the first; `priced_with` counts them.
planner::RankedPlan checked_plan(const Query& q, const planner::Planner& planner, const ParallelConfig& c,
                                 const std::optional<Framework>& framework, int& priced_with) {
  const std::vector<Query> priced = planner::priced_queries(q);
  priced_with = static_cast<int>(priced.size());
  std::optional<planner::RankedPlan> best;
  const auto key = [&](const planner::RankedPlan& p) {
    return std::pair(!p.predicted->fits_memory || (!framework && p.cpplan_only()), planner::ranking_ms(q, p));
  };
  for (const Query& one : priced) {
    planner::RankedPlan p = planner.evaluate(one, c, framework);
    if (!best || (p.plan.valid() && (!best->plan.valid() || key(p) < key(*best)))) best = std::move(p);
  }
  return std::move(*best);
}

PipeFusionSplit pipefusion_split(const Query& q, const ParallelConfig& c) {
  const PipeFusionConfig& pf = c.pipefusion;
  const int sp = c.ring() * c.ulysses();
  PipeFusionSplit s;
  s.blocks = q.model->total_blocks();
  s.stage_blocks = pipefusion_stage_blocks(s.blocks, pf.degree);
  s.patches = pf.patches;
  s.rows = patch_row_span(xdit_patch_split(q, pf.patches, sp));
  s.tokens = patch_token_span(q, pf.patches, sp);
  s.warmup_steps = pf.warmup_steps;
  s.steps = q.steps;
  return s;
}

}  // namespace

Result<std::unique_ptr<CheckResult>> check(const Resolved& r) {
  return as_result([&] {
    const Options& o = r.request.options;
    if (r.request.throughput)
      throw InvalidInput{"--objective = throughput: not for check (one plan); rank replicas with recommend"};
    auto out = std::make_unique<CheckResult>();
    static_cast<Resolved&>(*out) = r;
    // Priced with the placements --framework runs it with (the cost model's own choice otherwise).
    const auto framework = framework_choice(o);
    out->plan = checked_plan(out->query(), planner::Planner(out->model->cost()), plan_config(o), framework,
                             out->priced_with);
    out->framework_refusal = framework_refusal(planner::priced_query(out->query(), out->plan), framework, out->plan);
    out->scripts = plan_scripts(out->query(), out->plan);
    if (out->plan.predicted) out->warmup = warmup_of(*out->plan.predicted);
    if (out->plan.plan.valid() && out->plan.plan.config.pp() > 1)
      out->pipefusion = pipefusion_split(out->query(), out->plan.plan.config);
    out->placement = placement_view(out->query(), out->plan);
    if (o.explain) out->explain = explain(out->query(), out->plan, collective_source(*out));
    return out;
  });
}

}  // namespace cpplan::session
