#include "session/jobs/tune.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/text.h"
#include "session/engine/local_model.h"
#include "session/engine/internal/tune_calibration.h"
#include "session/jobs/tune_launch.h"

namespace cpplan::session {

namespace fs = std::filesystem;
using nlohmann::json;

std::string_view to_string(TuneStatus s) {
  switch (s) {
    case TuneStatus::kPending: return "pending";
    case TuneStatus::kOk: return "ok";
    case TuneStatus::kOom: return "oom";
    case TuneStatus::kFailed: return "failed";
    case TuneStatus::kTimeout: return "timeout";
    case TuneStatus::kNotRun: return "not run";
    case TuneStatus::kCancelled: return "cancelled";
  }
  return "?";
}

std::string launch_plan_json(const TuneRequest& r, const Query& q, const TuneCandidate& c, const std::string& out) {
  json j = c.plan;
  j["tune"] = {{"model", q.model->name},      {"runtime", q.runtime ? q.runtime->name : "diffusers"},
               {"width", q.resolution.width}, {"height", q.resolution.height},
               {"frames", q.frames},          {"steps", q.steps},
               {"device", r.device},          {"out", out}};
  return j.dump();
}

namespace {

void check_request(const TuneRequest& r) {
  std::error_code ec;
  if (!fs::is_regular_file(r.script, ec))
    throw InvalidInput{fmt::format("SCRIPT = {}: no such file (the script to launch per candidate)", r.script)};
  if (r.launcher != "torchrun" && r.launcher != "srun" && r.launcher != "mpirun")
    throw InvalidInput{fmt::format("--launcher = {}: must be torchrun, srun or mpirun", r.launcher)};
  if (r.device != "cpu" && r.device != "cuda")
    throw InvalidInput{fmt::format("--device = {}: must be cpu or cuda", r.device)};
  if (!(r.timeout_s > 0)) throw InvalidInput{fmt::format("--timeout-s = {:g}: must be above 0", r.timeout_s)};
  if (!(r.margin >= 0)) throw InvalidInput{fmt::format("--margin = {:g}: must be 0 or more", r.margin)};
  if (r.top < 1) throw InvalidInput{fmt::format("--top = {}: must be at least 1", r.top)};
}

// The run_key of a candidate's record: the script, its arguments, the launch and the query.
std::string run_key(const TuneRequest& r, const Query& q, const std::string& candidate) {
  std::error_code ec;
  std::string text = fs::absolute(r.script, ec).lexically_normal().string();
  for (const std::string& part : r.script_args) text += "\x1f" + part;
  for (const std::string& part : {r.launcher, r.device, q.model->name, q.hardware ? q.hardware->name : "",
                                  q.runtime ? q.runtime->name : "", std::to_string(q.gpus),
                                  std::to_string(q.resolution.width), std::to_string(q.resolution.height),
                                  std::to_string(q.frames), std::to_string(q.steps), candidate})
    text += "\x1e" + part;
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a 64, as HardwareFingerprint::key()
  for (unsigned char ch : text) hash = (hash ^ ch) * 0x100000001b3ULL;
  return fmt::format("tune-{:016x}", hash);
}

// The plan families of this machine's ok pipeline runs (tuned or imported), but for this tune's
// own (`own`: the run_keys it gives the query's plans), so that a rerun chooses as the first run did.
std::set<PlanFamily> measured_families(const std::vector<data::StoredRun>& runs, const TuneRequest& r,
                                       const std::set<std::string>& own) {
  const data::HardwareFingerprint here = this_host(r.device);
  std::set<PlanFamily> out;
  for (const data::StoredRun& s : runs)
    if (s.run.source == "pipeline" && s.run.status == "ok" && s.hardware.host == here.host &&
        s.hardware.device_kind == r.device && !own.count(s.run.run_key))
      out.insert(family_of(data::parallel_config(s.run)));
  return out;
}

// Whether `row`'s cache counts go into the measured hit rate: an ok launch whose recorder watched a
// block that ran (at least in the warm-up) and counted from the query's warm-up.
bool counted(const TuneRow& row, const CacheSpec& s) {
  const std::optional<CacheCounts>& c = row.outcome.cache;
  return row.outcome.status == TuneStatus::kOk && c && c->computed_steps > 0 && c->warmup_steps == s.warmup_steps &&
         c->steps_after_warmup() > 0;
}

// A threshold cache's hit rate over the counted launches: their cached steps after the warm-up
// over those steps (core/cache.h's hit rate); none before a launch is counted.
std::optional<MeasuredHitRate> pooled_hit_rate(const TuneReport& report) {
  if (!threshold_cache(report.cache)) return std::nullopt;
  MeasuredHitRate m;
  for (const TuneRow& row : report.rows)
    if (counted(row, report.cache)) {
      m.cached_steps += row.outcome.cache->cached_after_warmup();
      m.counted_steps += row.outcome.cache->steps_after_warmup();
      ++m.runs;
    }
  if (m.runs == 0) return std::nullopt;
  m.model = report.model;
  m.cache = report.cache;
  m.host = this_host_name();
  m.measured_at = now_utc();
  return m;
}

// The hit rate the predictions hold: the stated one until a launch is counted, then the measured
// one; each candidate's predicted step its mean step at that rate.
void reprice(TuneReport& report) {
  report.hit_rate = pooled_hit_rate(report);
  if (report.hit_rate) report.cache.hit_rate = report.hit_rate->hit_rate();
  for (TuneRow& row : report.rows)
    row.candidate.predicted_step_ms = mean_step_ms_at(row.candidate, report.cache, report.steps);
}

// The share of the steps after the warm-up that cache `s` reuses: a threshold policy's hit rate, a
// fixed schedule's cached steps over those steps; 0 without a cache.
double stated_hit_rate(const CacheSpec& s, int steps) {
  if (!s.active()) return 0;
  if (threshold_cache(s)) return s.hit_rate;
  const int after = steps - std::min(s.warmup_steps, steps);
  return after > 0 ? static_cast<double>(cached_steps(s, steps)) / after : 0;
}

// Why a launch's cache counts are not used, as a note; empty when they are, or there are none to use.
std::string cache_count_note(const TuneReport& report, const TuneRow& row) {
  const std::optional<CacheCounts>& c = row.outcome.cache;
  const std::string& label = row.candidate.label;
  if (row.outcome.status != TuneStatus::kOk) return "";
  if (!report.cache.active())
    return c && c->cached_steps > 0
               ? fmt::format("note: {}: the pipeline skipped its middle block on {} of {} steps, but the query has no "
                             "--cache: priced as computed steps, and no hit rate is kept (name the cache: --cache fbcache, ...)",
                             label, c->cached_steps, c->computed_steps + c->cached_steps)
               : "";
  if (!c)
    return fmt::format("note: {}: the record has no cache step counts (the recorder found no block list in the "
                       "pipeline, or is older): the hit rate stays the stated {:.2f}; pass cache_probe=BLOCK to "
                       "cpplan.record", label, report.assumed_hit_rate);
  if (c->computed_steps == 0)
    return fmt::format("note: {}: the watched block ran on no step (not a block the pipeline runs): its counts are "
                       "not used; pass cache_probe=BLOCK to cpplan.record", label);
  if (c->warmup_steps != report.cache.warmup_steps)
    return fmt::format("note: {}: the recorder counted the hit rate after {} warm-up steps, the query's {} warms up "
                       "{}: its counts are not used (cpplan.record takes the plan's; cache_warmup= sets it)",
                       label, c->warmup_steps, to_string(report.cache.policy), report.cache.warmup_steps);
  return "";
}

TuneFit fit_of(const TuneReport& report) {
  std::vector<TuneMeasurement> measured;
  for (const TuneRow& row : report.rows)
    if (row.outcome.status == TuneStatus::kOk && row.outcome.step_ms && *row.outcome.step_ms > 0)
      measured.push_back({&row.candidate, *row.outcome.step_ms});
  return fit_tune(measured);
}

std::optional<std::size_t> fastest_measured(const TuneReport& report) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    const TuneOutcome& o = report.rows[i].outcome;
    if (o.status == TuneStatus::kOk && o.step_ms && (!best || *o.step_ms < *report.rows[*best].outcome.step_ms)) best = i;
  }
  return best;
}

// Whether this machine has an ok measurement of the row's family (before or in this tune): only
// then does the refitted model's prediction of it rest on this machine's runs.
bool family_measured(const TuneReport& report, const TuneRow& row) {
  if (report.measured_before.count(row.candidate.family)) return true;
  return std::any_of(report.rows.begin(), report.rows.end(), [&](const TuneRow& other) {
    return other.outcome.status == TuneStatus::kOk && other.candidate.family == row.candidate.family;
  });
}

// The early stop: a pending row of a measured family that the measured best beats by the margin
// is not run. The rows of a family not measured yet are run all the same (the model is least
// certain there).
void stop_early(TuneReport& report, double margin) {
  const auto best = fastest_measured(report);
  if (!best) return;
  for (TuneRow& row : report.rows)
    if (row.outcome.status == TuneStatus::kPending && family_measured(report, row) &&
        *report.rows[*best].outcome.step_ms * (1 + margin) < row.calibrated_step_ms) {
      row.outcome.status = TuneStatus::kNotRun;
      report.stopped_early = true;
    }
}

// The pending row the refitted model expects fastest, after the early stop.
std::optional<std::size_t> next_launch(TuneReport& report, double margin) {
  for (TuneRow& row : report.rows) row.calibrated_step_ms = fitted_step_ms(report.fit, row.candidate);
  stop_early(report, margin);
  std::optional<std::size_t> next;
  for (std::size_t i = 0; i < report.rows.size(); ++i)
    if (report.rows[i].outcome.status == TuneStatus::kPending &&
        (!next || report.rows[i].calibrated_step_ms < report.rows[*next].calibrated_step_ms))
      next = i;
  return next;
}

// The environment of a launch: the plan, and the Python module beside this binary first on PYTHONPATH.
std::vector<std::string> launch_env(const TuneRequest& r, const std::string& plan_json) {
  std::vector<std::string> env{"CPPLAN_PLAN=" + plan_json};
  std::error_code ec;
  const fs::path module = fs::path(r.exe).parent_path().parent_path() / "python";
  if (!r.exe.empty() && fs::exists(module / "cpplan" / "__init__.py", ec)) {
    const char* old = std::getenv("PYTHONPATH");
    env.push_back("PYTHONPATH=" + module.string() + (old && *old ? std::string(":") + old : std::string()));
  }
  return env;
}

// Launches row `i`, records what it gave; false when cancelled (nothing recorded unless it had
// finished measuring).
bool launch_row(const TuneRequest& r, const Query& q, data::Store& store, const fs::path& dir, TuneRow& row,
                const std::atomic<bool>* cancel) {
  const std::string out = (dir / (row.key + ".jsonl")).string();
  row.log = (dir / (row.key + ".log")).string();
  std::error_code ec;
  fs::remove(out, ec);
  fs::remove(row.log, ec);
  const auto start = std::chrono::steady_clock::now();
  const launch::ChildOutcome child =
      launch::run_child(launch_command(r, static_cast<int>(row.candidate.config.world_size())),
                        launch_env(r, launch_plan_json(r, q, row.candidate, out)), row.log, r.timeout_s, cancel);
  if (!child.started)
    throw InvalidInput{fmt::format("--launcher = {}: cannot execute it (is it on PATH?); see {}", r.launcher, row.log)};
  LaunchResult result = read_launch(r, q, row.candidate, child, out, row.log, row.key);
  if (child.cancelled && result.outcome.status != TuneStatus::kOk) {  // interrupted: not the plan's fault
    row.outcome.status = TuneStatus::kCancelled;
    return false;
  }
  result.outcome.launch_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row.outcome = result.outcome;
  auto stored = store.record_runs(result.records);
  if (!stored) throw InvalidInput{fmt::format("{}: cannot record the launch: {}", store.path(), stored.error().message)};
  return !child.cancelled;  // a run that finished as Ctrl-C came is kept
}

// The regret of the predicted best plan `predicted` (Recommendation::top): its measured step over
// the measured best's, minus 1.
std::optional<double> regret_of(const TuneReport& report, const planner::RankedPlan* predicted) {
  if (!report.best || !predicted) return std::nullopt;
  const std::string key = candidate_key(*predicted);
  const auto row = std::find_if(report.rows.begin(), report.rows.end(),
                                [&key](const TuneRow& r) { return r.candidate.key == key; });
  if (row == report.rows.end() || !row->outcome.step_ms) return std::nullopt;
  return *row->outcome.step_ms / *report.rows[*report.best].outcome.step_ms - 1;
}

// The fit as the next query of the same prediction source on this machine reads it; its path.
std::string write_calibration(const TuneReport& report, const TuneRequest& r, const Query& q, const std::string& db) {
  TuneCalibration c;
  c.fit = report.fit;
  c.source = report.calibration_source;
  c.host = this_host_name();
  c.device = r.device;
  c.model = report.model;
  c.resolution = fmt::format("{}x{}", q.resolution.width, q.resolution.height);
  c.fitted_at = now_utc();
  c.path = tune_calibration_path(db, c.source);
  write_tune_calibration(c);
  return c.path;
}

TuneReport plan_tune(const TuneRequest& r, const Recommendation& rec, data::Store& store) {
  TuneReport report;
  report.db = store.path();
  report.prediction_source = rec.prediction_source;
  report.model = rec.query().model->name;
  report.notes = rec.notes;
  auto runs = store.runs();
  if (!runs) throw InvalidInput{runs.error().message};
  std::set<std::string> own;
  for (const Row& row : rec.rows) {
    own.insert(run_key(r, rec.query(), candidate_key(*row.plan)));
    for (const planner::RankedPlan* form : row.same) own.insert(run_key(r, rec.query(), candidate_key(*form)));
  }
  report.measured_before = measured_families(*runs, r, own);
  report.cache = rec.query().cache;
  report.steps = rec.query().steps;
  report.assumed_hit_rate = stated_hit_rate(report.cache, report.steps);
  for (TuneCandidate& c : choose_candidates(rec, r.top, r.margin, report.measured_before)) {
    TuneRow row;
    row.key = run_key(r, rec.query(), c.key);
    row.candidate = std::move(c);
    for (const data::StoredRun& s : *runs)  // newest first: the latest record of the key
      if (s.run.run_key == row.key) {
        row.outcome = outcome_of(s.run, report.cache.active());
        break;
      }
    report.rows.push_back(std::move(row));
  }
  if (report.rows.empty()) throw InvalidInput{"no valid plan to tune (cpplan with the same flags says why)"};
  return report;
}

}  // namespace

Result<TuneReport> tune(const TuneRequest& r, const TuneEvents& events) {
  try {
    check_request(r);
    auto parsed = parse_request(r.options);
    if (!parsed) return parsed.error();
    Request request = *parsed;
    request.cost.tune_calibration = false;  // the fit is of the predictions without the last one
    request.cost.tune_hit_rate = false;     // the hit rate measured is compared with the stated one
    auto catalog = ProfileCatalog::load(profile_search_path(r.options.profiles, r.exe));
    if (!catalog) return catalog.error();
    auto resolved = resolve(request, std::make_shared<const ProfileCatalog>(std::move(catalog).value()), r.machine);
    if (!resolved) return resolved.error();
    // Your pipeline runs the format and cache it was written with: a tune measures plans of one.
    if (resolved->query().ranks_precisions())
      return Error{fmt::format("--dtype = {}: cpplan tune measures the plans of one format (name one)", r.options.precision)};
    if (resolved->query().ranks_caches())
      return Error{fmt::format("--cache = {}: cpplan tune measures the plans of one cache (name one, or none)",
                               r.options.cache)};
    auto rec = recommend(*resolved);
    if (!rec) return rec.error();
    data::Store store = open_store(r.options.db);
    TuneReport report = plan_tune(r, **rec, store);
    const fs::path dir = store.path() + ".tune";
    fs::create_directories(dir);
    int done = 0;
    const int total = static_cast<int>(std::count_if(report.rows.begin(), report.rows.end(), [](const TuneRow& row) {
      return row.outcome.status == TuneStatus::kPending;
    }));
    reprice(report);
    report.fit = fit_of(report);
    while (auto next = next_launch(report, r.margin)) {
      if (events.cancel && events.cancel->load()) break;
      if (events.launch_started) events.launch_started(report, *next, done, total);
      if (!launch_row(r, (*rec)->query(), store, dir, report.rows[*next], events.cancel)) break;
      reprice(report);
      report.fit = fit_of(report);
      if (events.launch_ended) events.launch_ended(report, *next, ++done, total);
    }
    report.cancelled = events.cancel && events.cancel->load();
    for (TuneRow& row : report.rows) row.calibrated_step_ms = fitted_step_ms(report.fit, row.candidate);
    report.best = fastest_measured(report);
    report.regret = regret_of(report, (*rec)->top());
    report.calibration_source = tune_source(r.options.hardware == "local", r.options.cluster,
                                            (*rec)->query().hardware->name);
    if (report.fit.runs > 0) report.calibration_path = write_calibration(report, r, (*rec)->query(), store.path());
    if (report.hit_rate) {
      report.hit_rate->path = tune_hit_rate_path(store.path());
      write_measured_hit_rate(*report.hit_rate);
    }
    for (const TuneRow& row : report.rows)
      if (std::string note = cache_count_note(report, row); !note.empty()) report.notes.push_back(std::move(note));
    return report;
  } catch (const InvalidInput& e) {
    return Error{e.message};
  } catch (const fs::filesystem_error& e) {
    return Error{printable(e.what())};
  }
}

}  // namespace cpplan::session
