#include "cli/render.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <map>
#include <ostream>

#include "core/cache.h"
#include "core/pipefusion.h"

namespace cpplan::cli {

using nlohmann::json;
using planner::RankedPlan;

namespace {
double gib(Bytes b) { return b / kGiB; }

std::string frameworks_text(const planner::FrameworkSet& frameworks) {
  const auto names = frameworks.names();
  return names.empty() ? "-" : fmt::format("{}", fmt::join(names, ", "));
}



// Static-shape runtimes (XLA on TPU and Neuron): what the warm-up costs before the first image, and
// that every other size compiles again.
void print_warmup(std::ostream& out, const Query& q, const std::optional<session::Warmup>& w) {
  if (!w) return;
  const std::string size = fmt::format("{}x{}{}, batch {}", q.resolution.width, q.resolution.height,
                                       q.model->video ? fmt::format(" x {} frames", q.frames) : "", q.batch);
  fmt::print(out,
             "warm-up: {:.0f} s XLA compile for {} + one image = {:.0f} s before the first timed image (not in "
             "steps/s or s per image); a second resolution, frame count or batch in the same process compiles "
             "again: {:.0f} s more; at this size alone the warm-up falls under 10% per image after {:.0f} images\n",
             w->compile_ms / 1e3, size, w->warmup_ms / 1e3, w->compile_ms / 1e3, w->images_to_amortize);
}

// The CLI's control for a lever of a broken rule; empty where no single flag moves it.
std::string_view lever_control(Lever l) {
  switch (l) {
    case Lever::kResolution: return "change --res";
    case Lever::kTextTokens: return "change --text-tokens";
    case Lever::kModelHeads: return "the model's heads";
    case Lever::kAttentionBackend: return "change --attention-backend";
    default: return {};
  }
}

// "xDiT: cannot run the top plan: R; the fastest plan it runs: L (V), 12% slower", or the title alone.
std::string choice_heading(const Query& q, const session::FrameworkChoice& c) {
  std::string heading = c.title;
  const bool placed = c.plan && c.run.where != c.plan->predicted->pipeline.placement();
  const bool scheduled = c.plan && c.run.cached_steps != c.plan->predicted->cached_steps;
  const char* differs = placed && scheduled ? "placement and cache schedule" : placed ? "placement" : "cache schedule";
  const std::string own =
      c.own_placement ? fmt::format(" (its {}: {})", differs,
                                    session::own_run_text(c.run, c.plan ? c.plan->predicted->cached_steps : 0))
                      : "";
  if (c.top_unavailable.empty()) return heading + own;
  heading += fmt::format(": cannot run the top plan: {}", c.top_unavailable);
  if (!c.plan) return heading + "; nor any other plan here";
  const std::string format_cache = planner::format_cache_label(q, *c.plan);
  return heading + fmt::format("; the fastest plan it runs: {} ({}{}), {}{}", plan_label(c.plan->plan.config),
                               display_name(c.plan->plan.variant), format_cache.empty() ? "" : ", " + format_cache,
                               c.gap > 0.005 ? fmt::format("{:.0f}% slower", c.gap * 100) : std::string("as fast"), own);
}

// For each framework (only --framework's when given): the top plan's script, or why it cannot run
// the top plan and the script of the fastest plan it runs, with the gap.
void print_framework_choices(std::ostream& out, const Query& q, const std::vector<session::FrameworkChoice>& choices) {
  for (const session::FrameworkChoice& c : choices) {
    if (!c.shown) continue;
    const std::string heading = choice_heading(q, c);
    if (!c.script) {
      fmt::print(out, "{}\n", heading);
    } else if (c.script->kind == session::Script::Kind::kNote) {
      fmt::print(out, "{}: {}\n", heading, fmt::join(c.script->lines, " "));
    } else {
      fmt::print(out, "{}:\n", heading);
      for (const std::string& line : c.script->lines) fmt::print(out, "  {}\n", line);
    }
  }
}

// "replicated/single": where the text encoders and the VAE decode run.
std::string placement_text(const costmodel::Prediction& pr) {
  return fmt::format("{}/{}", to_string(pr.pipeline.text_encoder), to_string(pr.pipeline.vae));
}

// "42.32 ms/step (host-bound: host 40.1 ms, GPU 30.2 + 5.4 communication, sync 1.2)"
std::string step_text(const costmodel::Prediction& pr) {
  int host_bound = 0;
  for (int i = 0; i < pr.block_count; ++i) host_bound += pr.blocks[i].host_bound() ? pr.blocks[i].count : 0;
  int blocks = 0;
  for (int i = 0; i < pr.block_count; ++i) blocks += pr.blocks[i].count;
  const std::string bound = host_bound == 0        ? "GPU-bound"
                            : host_bound == blocks ? "host-bound"
                                                   : fmt::format("{} of {} blocks host-bound", host_bound, blocks);
  std::string s = fmt::format("{:.2f} ms/step ({}: host {:.2f} ms, GPU {:.2f} compute + {:.2f} communication", pr.step_ms,
                              bound, pr.host_ms, pr.compute_ms, pr.comm_ms);
  if (pr.sync_ms > 0) s += fmt::format(", {:.2f} waiting at collectives", pr.sync_ms);
  s += ")";
  if (pr.calibrated) s += fmt::format(", calibrated from {:.2f} analytic", pr.uncalibrated_step_ms);
  return s;
}

// "fbcache F1B0 (16 of 28 steps computed)".
std::string cache_text(const CacheSpec& c, int steps) {
  return fmt::format("{} F{}B{} ({} of {} steps computed)", to_string(c.policy), c.first_blocks, c.last_blocks,
                     computed_steps(c, steps), steps);
}

// The query's formats and caches: ", dtype fp8, cache fbcache F1B0 (...)", or those it ranks
// (--dtype any, --cache a,b): ", dtype bf16|fp8|fp8-row, cache none|fbcache|dbcache".
std::string format_cache_text(const Query& q) {
  std::string s;
  if (q.ranks_precisions()) {
    std::vector<std::string> names;
    for (const Precision& p : q.precisions) names.push_back(to_string(p));
    s += fmt::format(", dtype {}", fmt::join(names, "|"));
  } else if (q.precision.quantized()) {
    s += fmt::format(", dtype {}", to_string(q.precision));
  }
  if (q.ranks_caches()) {
    std::vector<std::string_view> names;
    for (const CacheSpec& c : q.caches) names.push_back(to_string(c.policy));
    s += fmt::format(", cache {}", fmt::join(names, "|"));
  } else if (q.cache.active()) {
    s += ", cache " + cache_text(q.cache, q.steps);
  }
  return s;
}

// A plan's own format and cache, where the query ranks several: "; dtype fp8, cache fbcache F1B0
// (16 of 28 steps computed)"; "" otherwise.
std::string own_format_cache(const Query& q, const RankedPlan& p) {
  std::string s;
  if (q.ranks_precisions()) s += fmt::format("; dtype {}", to_string(p.precision));
  if (q.ranks_caches())
    s += fmt::format("{} cache {}", s.empty() ? ";" : ",", p.cache.active() ? cache_text(p.cache, q.steps) : "none");
  return s;
}

std::string query_line(const Query& q) {
  const ModelProfile& m = *q.model;
  std::string size = fmt::format("{}x{}", q.resolution.width, q.resolution.height);
  if (m.video) size += fmt::format(", {} frames", q.frames);
  return fmt::format("{} on {} x {}, {}, {} steps, attention {}{}{}, runtime {}{}{}", m.name, q.gpus, q.hardware->name,
                     size, q.steps, to_string(q.backend), format_cache_text(q),
                     q.batch > 1 ? fmt::format(", batch {}", q.batch) : "",
                     q.runtime ? q.runtime->name : "kernel launches",
                     q.text_encoder ? fmt::format(", text encoder {}", to_string(*q.text_encoder)) : "",
                     q.vae ? fmt::format(", VAE {}", to_string(*q.vae)) : "");
}

std::string sequence_line(const session::PlannedQuery& pq) {
  const Query& q = pq.query();
  const Sequence& s = q.sequence;
  const ModelProfile& m = *q.model;
  const double tflop = pq.forward_flops / 1e12;
  if (m.text_handling == TextHandling::kJoint)
    return fmt::format("sequence: {} image + {} text = {} tokens (joint attention); {:.1f} TFLOP per forward pass",
                       s.image_tokens, s.text_tokens, s.total(), tflop);
  return fmt::format("sequence: {} {} tokens, cross-attention to {} text tokens; {:.1f} TFLOP per forward pass",
                     s.image_tokens, m.video ? "video" : "image", s.text_tokens, tflop);
}
}  // namespace

namespace {

// "2 x ulysses 4", with the replica's format and cache when the query ranks them: "2 x ulysses 4 (fp8, fbcache)".
std::string fleet_row_label(const Query& q, const planner::FleetRow& row) {
  const std::string format_cache = planner::format_cache_label(q, row.replica);
  return fmt::format("{} x {}{}", row.replicas, plan_label(row.replica.plan.config),
                     format_cache.empty() ? "" : " (" + format_cache + ")");
}

// The best usable split in one line: the mixed one when it beats the uniform ones.
void print_fleet_best(std::ostream& out, const Query& q, const planner::FleetReport& f) {
  const planner::FleetRow* best = !f.rows.empty() && f.rows.front().usable() ? &f.rows.front() : nullptr;
  if (!best) {
    // The fastest fitting replica says how far the SLO is out of reach.
    const planner::FleetRow *fastest = nullptr, *most = nullptr;
    for (const planner::FleetRow& row : f.rows) {
      if (row.fits && (!fastest || row.image_ms < fastest->image_ms)) fastest = &row;
      if (row.fits && (!most || row.images_per_hour > most->images_per_hour)) most = &row;
    }
    fmt::print(out, "\nno split {}", f.slo_ms ? "meets the SLO and fits in memory" : "fits in memory");
    if (fastest)
      fmt::print(out, ": the fastest replica, {} on {} GPUs, takes {:.2f} s per image; try a looser --slo-ms",
                 plan_label(fastest->replica.plan.config), fastest->gpus_per_replica, fastest->image_ms / 1e3);
    fmt::print(out, "\n");
    if (most && f.slo_ms)
      fmt::print(out, "without the SLO, the most images per hour: {}: {:.0f} images per hour at {:.2f} s per image\n",
                 fleet_row_label(q, *most), most->images_per_hour, most->image_ms / 1e3);
    return;
  }
  fmt::print(out, "\nbest uniform split: {}: {:.0f} images per hour at {:.2f} s per image ({} GPU{} per replica, {} idle; "
                  "{:.1f} images per hour per GPU)\n",
             fleet_row_label(q, *best), best->images_per_hour, best->image_ms / 1e3, best->gpus_per_replica,
             best->gpus_per_replica == 1 ? "" : "s", best->idle_gpus, best->images_per_hour_per_gpu());
  if (f.mixed)
    fmt::print(out, "best mixed split: {}: {:.0f} images per hour ({:+.1f}%), slowest part {:.2f} s per image, {} of {} "
                    "GPUs used\n",
               f.mixed->label, f.mixed->images_per_hour, 100 * (f.mixed->images_per_hour / best->images_per_hour - 1),
               f.mixed->worst_image_ms / 1e3, f.mixed->gpus_used, f.gpus);
}

}  // namespace

void print_fleet(std::ostream& out, const session::Recommendation& rec) {
  const Query& q = rec.query();
  const planner::FleetReport& f = *rec.fleet;
  const session::Request& o = rec.request;
  fmt::print(out, "cpplan: {}\n{}\n", query_line(q), sequence_line(rec));
  int usable = 0;
  for (const planner::FleetRow& row : f.rows) usable += row.usable();
  const std::string admitted = f.plans.framework ? fmt::format("a plan {} runs", framework_title(*f.plans.framework))
                               : f.plans.any_valid ? std::string("a valid plan")
                                                   : std::string("a plan some framework runs");
  fmt::print(out, "throughput: {} GPUs as replicas of one image at a time{}; {} replica sizes with {}{}, {} "
                  "{}\n\n",
             f.gpus, f.slo_ms ? fmt::format(", SLO {:.2f} s per image", *f.slo_ms / 1e3) : "", f.rows.size(), admitted,
             f.all_sizes ? "" : " (divisors and powers of two only)", usable,
             f.slo_ms ? "meet the SLO and fit" : "fit");
  std::size_t width = 20;
  for (const planner::FleetRow& row : f.rows) width = std::max(width, fleet_row_label(q, row).size());
  fmt::print(out, "{:>4}  {:<{}} {:>12} {:>5} {:>10} {:>12} {:>9} {:>5}  {}\n", "rank", "replicas x plan", width,
             "GPUs/replica", "idle", "latency s", "images/hour", "peak GiB", "fits", "SLO");
  int shown = 0;
  for (const planner::FleetRow& row : f.rows) {
    if (!o.all && shown >= o.top) break;
    const auto& pr = *row.replica.predicted;
    fmt::print(out, "{:>4}  {:<{}} {:>12} {:>5} {:>10.2f} {:>12.0f} {:>9.1f} {:>5}  {}\n", ++shown,
               fleet_row_label(q, row), width, row.gpus_per_replica, row.idle_gpus, row.image_ms / 1e3,
               row.images_per_hour, gib(pr.peak_mem_bytes), row.fits ? "yes" : "NO",
               !f.slo_ms ? "-" : row.meets_slo ? "met" : "MISSED");
  }
  if (shown == 0) fmt::print(out, "      (no valid plan for any replica size)\n");
  if (static_cast<int>(f.rows.size()) > shown)
    fmt::print(out, "      ... {} more split{} (--top K or --all)\n", static_cast<int>(f.rows.size()) - shown,
               static_cast<int>(f.rows.size()) - shown == 1 ? "" : "s");
  print_fleet_best(out, q, f);
}

namespace {
// The invalid plans: each with its rules (--all), else one line per rule broken first; and the
// valid plans --framework left out.
void print_rejected(std::ostream& out, const session::Recommendation& rec) {
  const planner::PlanReport& r = rec.report;
  if (r.invalid_count > 0 && rec.request.all) {
    fmt::print(out, "\nrejected ({}):\n", r.invalid_count);
    for (const RankedPlan& p : r.plans)
      if (!p.plan.valid())
        fmt::print(out, "  {} ({}): {}\n", plan_label(p.plan.config), display_name(p.plan.variant),
                   fmt::join(p.plan.reasons(), "; "));
  } else if (r.invalid_count > 0) {
    // One line per rule broken, those the user can act on first: how many plans, and one of them.
    fmt::print(out, "\nrejected ({}; --all lists each):\n", r.invalid_count);
    for (const session::Rejection& g : rec.rejections) {
      const std::string_view lever = lever_control(g.lever);
      fmt::print(out, "  {:>4} {:<6} {}{}, e.g. {}{}\n", g.count, g.count == 1 ? "plan" : "plans", g.rule,
                 lever.empty() ? "" : fmt::format(" ({})", lever), plan_label(g.example->plan.config),
                 g.more_rules == 0 ? "" : fmt::format(" (and {} more rule{})", g.more_rules, g.more_rules == 1 ? "" : "s"));
    }
  }
  if (r.hidden_count > 0)
    fmt::print(out, "\n{} valid plan{} that {} cannot run {} left out (--framework any shows {})\n", r.hidden_count,
               r.hidden_count == 1 ? "" : "s", framework_title(*r.framework), r.hidden_count == 1 ? "is" : "are",
               r.hidden_count == 1 ? "it" : "them");
}

// The peak column: GiB, and the phase when it is named ("179.4 dec"; session::peak_phase_named).
std::string peak_text(const costmodel::Prediction& pr, Bytes gpu_bytes) {
  return fmt::format("{:.1f}{}", gib(pr.peak_mem_bytes), session::peak_phase_suffix(pr, gpu_bytes));
}

// What to try when a plan does not fit, by the phase that does not.
std::string_view not_fit_advice(const costmodel::Prediction& pr) {
  if (pr.host_load == costmodel::HostLoad::kTooLarge) return "the node's host memory cannot hold one copy of the pipeline";
  switch (pr.peak_phase) {
    case costmodel::MemoryPhase::kDecode: return "the VAE decode: try --vae tiled, or parallel over more GPUs";
    case costmodel::MemoryPhase::kEncode: return "the text encoding: try --text-encoder offloaded or sharded";
    case costmodel::MemoryPhase::kLoad: return "the loading: shard before moving to the GPU";
    case costmodel::MemoryPhase::kDenoise: break;
  }
  return "try more GPUs, tensor parallelism or --text-encoder sharded";
}

// The ranked rows: one per computation (--all: one per form), the first --top of them.
void print_rows(std::ostream& out, const session::Recommendation& rec) {
  const Query& q = rec.query();
  const std::vector<session::Row>& rows = rec.rows;
  const bool all = rec.request.all;
  const int top = rec.request.top;
  // The plan column fits the longest label shown (PipeFusion hybrids run past 28 characters).
  std::size_t plan_width = 28;
  for (std::size_t i = 0; i < rows.size() && (all || static_cast<int>(i) < top); ++i)
    plan_width = std::max(plan_width, plan_label(rows[i].plan->plan.config).size());
  // The format and cache columns, where the query ranks several (--dtype any, --cache a,b).
  const auto format_cache = [&](const RankedPlan& p) {
    return (q.ranks_precisions() ? fmt::format("{:<16} ", to_string(p.precision)) : std::string()) +
           (q.ranks_caches() ? fmt::format("{:<10} ", to_string(p.cache.policy)) : std::string());
  };
  const std::string format_cache_head = (q.ranks_precisions() ? fmt::format("{:<16} ", "dtype") : std::string()) +
                                        (q.ranks_caches() ? fmt::format("{:<10} ", "cache") : std::string());
  fmt::print(out, "{:>4}  {:<{}} {:<17} {}{:>9} {:>8} {:>9} {:>9} {:>5}  {:<16} {}{}\n", "rank", "plan", plan_width,
             "CP variant", format_cache_head, "step ms", "steps/s", "image s", "peak GiB", "fits", "text enc / VAE",
             q.topology ? fmt::format("{:<22}  ", "busbw GB/s @nodes") : "", "frameworks");
  int shown = 0;
  for (const session::Row& row : rows) {
    if (!all && shown >= top) break;
    const RankedPlan& p = *row.plan;
    const auto& pr = *p.predicted;
    fmt::print(out, "{:>4}  {:<{}} {:<17} {}{:>9.2f} {:>8.2f} {:>9.2f} {:>9} {:>5}  {:<16} {}{}\n", ++shown,
               plan_label(p.plan.config), plan_width, row.variant, format_cache(p), pr.step_ms, pr.steps_per_sec,
               pr.image_ms / 1e3,
               peak_text(pr, q.hardware->memory_bytes()), pr.fits_memory ? "yes" : "NO", placement_text(pr),
               q.topology && p.placement ? fmt::format("{:<22}  ", placement_summary(*p.placement)) : "",
               session::frameworks_text(row));
  }
  if (shown == 0) fmt::print(out, "      (no valid plan)\n");
  if (!all && static_cast<int>(rows.size()) > shown)
    fmt::print(out, "      ... {} more valid plans (--top K or --all)\n", static_cast<int>(rows.size()) - shown);
  const auto cpplan_only = std::count_if(rows.begin(), rows.begin() + shown, [](const session::Row& r) { return r.cpplan_only(); });
  if (cpplan_only > 0)
    fmt::print(out, "      \"cpplan run only\": no framework runs {} ({}), `cpplan run` does{}\n",
               cpplan_only == 1 ? "that plan" : "those plans", cpplan_only,
               rec.request.cpplan_plans ? "" : "; ranked after the plans a framework runs (--framework cpplan ranks all by time)");
}

}  // namespace

void print_recommendation(std::ostream& out, const session::Recommendation& rec) {
  const Query& q = rec.query();
  const planner::PlanReport& r = rec.report;
  const HardwareProfile& hw = *q.hardware;
  fmt::print(out, "cpplan: {}\n{}\n", query_line(q), sequence_line(rec));
  if (q.ranks_precisions() || q.ranks_caches())  // each valid plan once per format and cache a framework runs it with
    fmt::print(out,
               "{} valid plans with a dtype and cache ({} fit in {:.1f} GiB), {} invalid plans; predictions from {}\n\n",
               r.valid_count, rec.fitting, gib(hw.memory_bytes()), r.invalid_count, rec.prediction_source);
  else
    fmt::print(out, "{} plans: {} valid ({} fit in {:.1f} GiB), {} invalid; predictions from {}\n\n",
               r.valid_count + r.invalid_count, r.valid_count, rec.fitting, gib(hw.memory_bytes()), r.invalid_count,
               rec.prediction_source);
  print_rows(out, rec);
  print_rejected(out, rec);

  const RankedPlan* top = rec.top();
  if (!top) return;
  const auto& pr = *top->predicted;
  const std::string steps = pr.cached_steps > 0
                                ? fmt::format("{} computed steps + {} cached at {:.2f} ms", q.steps - pr.cached_steps,
                                              pr.cached_steps, pr.cached_step_ms)
                                : fmt::format("{} steps", q.steps);
  fmt::print(out, "\ntop plan: {} ({}{}): {}; {:.2f} s per image = {:.2f} text encoding + {} + {:.2f} VAE decode + "
             "{:.2f} pipeline{}; text encoder {}, VAE {}; peak {:.1f} of {:.1f} GiB{}{}\n",
             plan_label(top->plan.config), display_name(top->plan.variant), own_format_cache(q, *top), step_text(pr),
             pr.image_ms / 1e3,
             pr.text_encode_ms / 1e3, steps, pr.vae_decode_ms / 1e3, pr.pipeline.host_ms / 1e3,
             pr.pipeline.transformer_load_ms > 0
                 ? fmt::format(" + {:.2f} loading the transformers", pr.pipeline.transformer_load_ms / 1e3)
                 : "",
             to_string(pr.pipeline.text_encoder), to_string(pr.pipeline.vae), gib(pr.peak_mem_bytes), gib(hw.memory_bytes()),
             session::peak_phase_named(pr, hw.memory_bytes()) ? fmt::format(" in the {}", to_string(pr.peak_phase)) : "",
             pr.fits_memory ? "" : fmt::format(" (does NOT fit: {})", not_fit_advice(pr)));
  if (session::host_load_worth_telling(pr, q.host_memory_gib))
    fmt::print(out, "{}\n", session::host_load_text(pr, q.host_memory_gib));
  print_warmup(out, q, rec.warmup);
  print_framework_choices(out, q, rec.frameworks);
  if (rec.placement) session::print_placement(out, *rec.placement);
  if (rec.explain) session::print_explain(out, *rec.explain);
}

// "16", or "15-16" for uneven patches.
std::string span_text(const PatchSpan& s) {
  return s.largest == s.smallest ? std::to_string(s.largest) : fmt::format("{}-{}", s.smallest, s.largest);
}

// The stage split of the blocks and the patch split of the latent (the check computed them).
void print_pipefusion(std::ostream& out, const session::PipeFusionSplit& s) {
  fmt::print(out, "pipefusion: {} stages of {} blocks ({} in all); {} patches of {} latent rows ({} image tokens); "
                  "{} warm-up step{} of {} synchronous\n",
             s.stage_blocks.size(), stage_split_text(s.stage_blocks), s.blocks, s.patches, span_text(s.rows),
             span_text(s.tokens), s.warmup_steps, s.warmup_steps == 1 ? "" : "s", s.steps);
}

void print_check(std::ostream& out, const session::CheckResult& c) {
  const Query& q = c.query();
  const RankedPlan& p = c.plan;
  fmt::print(out, "cpplan check: {}\n{}\n", query_line(q), sequence_line(c));
  fmt::print(out, "plan: {} ({}){}{}\n", plan_label(p.plan.config), display_name(p.plan.variant), own_format_cache(q, p),
             c.priced_with > 1 && p.plan.valid()
                 ? fmt::format(" (the fastest of the {} dtype x cache choices)", c.priced_with)
                 : "");
  if (!p.plan.valid()) {
    fmt::print(out, "INVALID:\n");
    for (const auto& reason : p.plan.reasons()) fmt::print(out, "  - {}\n", reason);
    return;
  }
  const auto& pr = *p.predicted;
  fmt::print(out, "valid: {} ({:.2f} steps/s); {:.2f} s per image; text encoder {}, VAE {}\n", step_text(pr),
             pr.steps_per_sec, pr.image_ms / 1e3, to_string(pr.pipeline.text_encoder), to_string(pr.pipeline.vae));
  fmt::print(out, "memory: peak {:.1f} GiB of {:.1f} GiB ({}); by phase: {}\n", gib(pr.peak_mem_bytes),
             gib(q.hardware->memory_bytes()), pr.fits_memory ? "fits" : "does NOT fit", session::memory_phases_text(pr.memory));
  fmt::print(out, "{}\n", session::host_load_text(pr, q.host_memory_gib));
  fmt::print(out, "frameworks: {}\n", frameworks_text(p.frameworks));
  if (!c.framework_refusal.empty()) fmt::print(out, "{}\n", c.framework_refusal);
  print_warmup(out, q, c.warmup);
  if (c.pipefusion) print_pipefusion(out, *c.pipefusion);
  if (c.placement) session::print_placement(out, *c.placement);
  if (c.explain) session::print_explain(out, *c.explain);
}

void print_models(std::ostream& out, const ProfileCatalog& c) {
  fmt::print(out, "{:<18} {:>7} {:>12} {:>9} {:>11} {:>6}  {:<10} {}\n", "model", "blocks", "heads x dim", "params",
             "default", "steps", "guidance", "CP split");
  for (const ModelProfile& m : c.models()) {
    std::string size = fmt::format("{}x{}", m.default_width, m.default_height);
    if (m.video) size += fmt::format("x{}", m.default_frames);
    fmt::print(out, "{:<18} {:>7} {:>12} {:>8.2f}B {:>11} {:>6}  {:<10} {}\n", m.name, m.total_blocks(),
               fmt::format("{} x {}", m.heads, m.head_dim), m.params / 1e9, size, m.default_steps,
               to_string(m.guidance), to_string(m.cp_split));
  }
}

void print_hardware(std::ostream& out, const ProfileCatalog& c) {
  fmt::print(out, "{:<14} {:>11} {:>9} {:>10} {:<10} {:>11}  {}\n", "hardware", "bf16 TF/s", "mem GiB", "HBM GB/s",
             "link", "link GB/s", "description");
  for (const HardwareProfile& h : c.hardware_profiles())
    fmt::print(out, "{:<14} {:>11.1f} {:>9.1f} {:>10.0f} {:<10} {:>11.0f}  {}\n", h.name, h.bf16_tflops,
               h.memory_bytes() / kGiB, h.memory_bandwidth_gbps, to_string(h.link_kind), h.intra_node.bandwidth_gbps,
               h.description);
}

json models_json(const ProfileCatalog& c) {
  json a = json::array();
  for (const ModelProfile& m : c.models())
    a.push_back({{"name", m.name},
                 {"blocks", m.total_blocks()},
                 {"heads", m.heads},
                 {"head_dim", m.head_dim},
                 {"hidden", m.hidden()},
                 {"ffn_hidden", m.ffn_hidden},
                 {"params", m.params},
                 {"video", m.video},
                 {"default_width", m.default_width},
                 {"default_height", m.default_height},
                 {"default_frames", m.default_frames},
                 {"default_steps", m.default_steps},
                 {"guidance", to_string(m.guidance)},
                 {"cp_split", to_string(m.cp_split)},
                 {"text_tokens", m.text_tokens},
                 {"pixel_granularity", m.pixel_granularity()}});
  return a;
}

json hardware_json(const ProfileCatalog& c) {
  json a = json::array();
  for (const HardwareProfile& h : c.hardware_profiles())
    a.push_back({{"name", h.name},
                 {"description", h.description},
                 {"bf16_tflops", h.bf16_tflops},
                 {"memory_bytes", h.memory_bytes()},
                 {"memory_bandwidth_gbps", h.memory_bandwidth_gbps},
                 {"link", to_string(h.link_kind)},
                 {"link_gbps", h.intra_node.bandwidth_gbps},
                 {"gpus_per_node", h.gpus_per_node}});
  return a;
}

namespace {
// The models a framework file speaks of: each built-in profile, with the features it gets there
// ("" when the framework has no pipeline for it).
std::vector<std::pair<std::string, std::string>> framework_rows(const FrameworkProfile& fw, const ProfileCatalog& c) {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const ModelProfile& m : c.models()) {
    const FrameworkModel* entry = fw.model_for(m);
    if (!entry && !fw.unlisted.empty()) continue;
    std::vector<std::string> names;
    const FeatureSet f = fw.features_for(m);
    for (int i = 0; i < kFeatureCount; ++i)
      if (f.has(static_cast<Feature>(i))) names.emplace_back(to_string(static_cast<Feature>(i)));
    std::string launch = !entry ? "" : !entry->runner_name.empty() ? "runner " + entry->runner_name : entry->script;
    if (entry && entry->dtypes) {  // the formats it runs for this model, where its source says per model
      std::vector<std::string> dtypes{"bf16"};
      for (const Precision& d : *entry->dtypes) dtypes.push_back(to_string(d));
      launch += fmt::format("; --dtype {}", fmt::join(dtypes, ", "));
    }
    const std::string unconfirmed = entry && !entry->unconfirmed.empty() ? "  (unconfirmed: " + entry->unconfirmed + ")" : "";
    rows.emplace_back(m.name, fmt::format("{}{}{}", fmt::join(names, " "), launch.empty() ? "" : "  (" + launch + ")",
                                          unconfirmed));
  }
  return rows;
}
}  // namespace

namespace {

// "  --cache fbcache, dbcache: <its flag at the first policy's defaults> (not with TP)", and on the
// next lines the warm-up and cap its hook fixes and the classes it attaches to, if any.
void print_framework_cache(std::ostream& out, const FrameworkCache& cache) {
  std::vector<std::string_view> policies, without;
  for (const CachePolicy p : cache.policies) policies.push_back(to_string(p));
  if (!cache.with_sp) without.push_back("Ulysses or Ring");
  if (!cache.with_tp) without.push_back("TP");
  if (!cache.with_cfg) without.push_back("CFG parallel");
  const std::string flag = cache.flag_for(cache_defaults(cache.policies.front()), 28);  // FLUX.1-dev's 28 steps
  const std::string line = cache.import.empty() ? flag : cache.import + "; " + flag;
  fmt::print(out, "  --cache {}: {}{}\n", fmt::join(policies, ", "), line,
             without.empty() ? "" : fmt::format(" (not with {})", fmt::join(without, ", ")));
  if (!cache.schedule_reason.empty()) fmt::print(out, "    its own schedule: {}\n", cache.schedule_reason);
  if (!cache.hooked_reason.empty()) fmt::print(out, "    its hook: {}\n", cache.hooked_reason);
}

}  // namespace

void print_frameworks(std::ostream& out, const ProfileCatalog& c) {
  for (const FrameworkProfile& fw : c.frameworks()) {
    std::vector<std::string_view> families;
    for (const FamilySupport& s : fw.families) families.push_back(to_string(s.family));
    fmt::print(out, "{} ({}, {}): {}\n  runs on: {}; launched by: {}\n", fw.name, fw.title, fw.version, fw.description,
               fmt::join(families, ", "), fmt::join(fw.entry_points, ", "));
    if (!fw.unconfirmed.empty()) fmt::print(out, "  unconfirmed: {}\n", fw.unconfirmed);
    for (const FrameworkQuantization& q : fw.quantization) {
      std::vector<std::string> dtypes;
      for (const Precision& d : q.dtypes) dtypes.push_back(to_string(d));
      std::vector<std::string> on;  // where the framework's source narrows the format's own rule
      for (const DeviceRange& r : q.on) on.push_back(describe(r));
      fmt::print(out, "  --dtype {}: {}{}\n", fmt::join(dtypes, ", "), q.flag,
                 on.empty() ? std::string() : fmt::format(" (on {})", fmt::join(on, " or ")));
    }
    for (const FrameworkCache& cache : fw.caches) print_framework_cache(out, cache);
    for (const auto& [model, features] : framework_rows(fw, c)) fmt::print(out, "  {:<18} {}\n", model, features);
    if (!fw.unlisted.empty()) fmt::print(out, "  {:<18} {}\n", "(other models)", fw.unlisted);
    out << '\n';
  }
}

void print_classes(std::ostream& out, const ProfileCatalog& c) {
  for (const std::string& name : c.class_names()) {
    auto spec = c.class_spec(name);
    const std::string status = !spec ? "error: " + spec.error().message
                               : spec->missing().empty() ? std::string("plans")
                                                         : "refused: " + spec->missing();
    out << fmt::format("{:<42} {}\n", name, status);
  }
}

json classes_json(const ProfileCatalog& c) {
  json out = json::array();
  for (const std::string& name : c.class_names()) {
    auto spec = c.class_spec(name);
    json row = {{"class", name}, {"plans", spec && spec->missing().empty()}};
    if (!spec) row["error"] = spec.error().message;
    else if (!spec->missing().empty()) row["missing"] = spec->missing();
    out.push_back(std::move(row));
  }
  return out;
}

json frameworks_json(const ProfileCatalog& c) {
  json all = json::array();
  for (const FrameworkProfile& fw : c.frameworks()) {
    json models = json::object();
    for (const auto& [model, features] : framework_rows(fw, c)) models[model] = features;
    json families = json::array();
    for (const FamilySupport& s : fw.families) families.push_back(to_string(s.family));
    all.push_back({{"name", fw.name},
                   {"framework", to_string(fw.framework)},
                   {"version", fw.version},
                   {"families", families},
                   {"entry_points", fw.entry_points},
                   {"unconfirmed", fw.unconfirmed.empty() ? json(nullptr) : json(fw.unconfirmed)},
                   {"models", models}});
  }
  return all;
}

}  // namespace cpplan::cli
