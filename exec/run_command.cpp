#include "exec/commands.h"

#include <torch/version.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fstream>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/render.h"
#include "exec/machine.h"
#include "exec/run_cache.h"
#include "exec/run_weights.h"
#include "exec/stop_signals.h"
#include "core/version.h"
#include "data/store.h"
#include "executor/attention.h"
#include "launch/launch_env.h"
#include "launch/launcher.h"
#include "executor/memory.h"
#include "executor/npy.h"
#include "executor/rendezvous.h"
#include "session/engine/executor_support.h"
#include "executor/runner.h"
#include "session/engine/calibration.h"
#include "session/engine/engine.h"
#include "session/engine/local_model.h"
#include "session/jobs/sweep.h"

namespace cpplan::exec {

using namespace cli;
using session::env;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {


struct Prepared {
  std::shared_ptr<const session::Engine> engine;
  session::Resolved resolved;  // the query as the ranks run it, resolved by the engine
  Plan plan;
  executor::DeviceSpec device;
};

Prepared prepare(Args a, const std::string& exe, std::ostream& err) {
  executor::DeviceSpec device = rank_device(a.device, a.dtype);
  device.weights = parse_weights(a.weights);
  ParallelConfig config;
  if (!a.plan.empty() && a.plan != "best") throw InvalidInput{fmt::format("--plan = {}: must be best", a.plan)};
  if (a.plan.empty()) {
    config = plan_config(a);
    if (a.gpus.empty()) a.gpus = std::to_string(std::max<long long>(1, config.world_size()));
  } else if (a.gpus.empty()) {
    a.gpus = a.nproc.empty() ? "1" : a.nproc;
  }
  // Only names the profile predictions would use (see finish); on a GPU, the profile nvidia-smi's
  // name matches (build_query), h100-sxm when none does.
  if (a.hardware.empty() && !device.cuda()) a.hardware = session::kFallbackHardware;
  if (a.runtime.empty()) a.runtime = "cpplan";  // predictions of this executor's runs
  auto engine = session::Engine::open(a.profiles, exe);
  if (!engine) throw InvalidInput{engine.error().message};
  auto resolved_flags = engine->resolve(a);
  if (!resolved_flags) throw InvalidInput{resolved_flags.error().message};
  for (const std::string& note : resolved_flags->notes) err << note << '\n';
  // The query priced with the weights as the ranks hold them (--plan best ranks plans so too).
  session::Resolved resolved = priced_as_held(std::move(resolved_flags).value(), device.weights);
  if (!a.plan.empty()) {  // cpplan's first row for the same flags (planner::best_plan)
    auto best = engine->best(resolved);
    if (!best) throw InvalidInput{fmt::format("--plan = best: {}", best.error().message)};
    config = *best;
  }
  Plan plan = engine->plan_of(resolved, config);
  if (!plan.valid())
    throw InvalidInput{fmt::format("plan {} ({}) is invalid: {}", plan_label(config), display_name(plan.variant),
                                   fmt::join(plan.reasons(), "; "))};
  if (const std::string why = session::unsupported_plan(*resolved.query().model, config); !why.empty())
    throw InvalidInput{why};
  return {std::make_shared<const session::Engine>(std::move(engine).value()), std::move(resolved),
          std::move(plan), device};
}

// A byte size: a number and an optional unit (B, KiB, MiB, GiB, TiB binary; KB, MB, GB, TB decimal).
int64_t parse_bytes(const std::string& flag, const std::string& text) {
  static const std::map<std::string, double> units{{"", 1},         {"B", 1},         {"KiB", 1024.0},
                                                   {"MiB", 0x1p20},  {"GiB", 0x1p30},  {"TiB", 0x1p40},
                                                   {"KB", 1e3},      {"MB", 1e6},      {"GB", 1e9},
                                                   {"TB", 1e12}};
  std::size_t end = 0;
  double value = -1;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
  }
  const auto unit = units.find(end ? text.substr(end) : std::string("?"));
  const double bytes = unit == units.end() ? -1 : value * unit->second;
  if (!(bytes >= 1 << 20 && bytes <= 0x1p50) || !std::isdigit(static_cast<unsigned char>(text[0])))
    throw InvalidInput{fmt::format("{} = '{}': must be a size from 1MiB to 1024TiB, such as 512MiB or 2GiB", flag, text)};
  return static_cast<int64_t>(bytes);
}

// Where a rank under our launcher leaves its one-line failure.
std::string rank_error_file(const std::string& result_file, int rank) {
  return (fs::path(result_file).parent_path() / fmt::format("rank{}.error", rank)).string();
}

// "oom" when the message is an allocator's out-of-memory error, else "failed".
std::string failure_status(const std::string& message) {
  return executor::oom_bytes(message) ? "oom" : "failed";
}

executor::RunSpec make_spec(const Args& a, const Prepared& p) {
  executor::RunSpec s;
  s.model = p.resolved.query().model;
  s.resolution = p.resolved.query().resolution;
  s.frames = p.resolved.query().frames;
  s.steps = p.resolved.query().steps;
  s.batch = p.resolved.query().batch;
  s.warmup = parse_int("--warmup", a.warmup, 0, 1000);
  s.seed = static_cast<uint64_t>(parse_int("--seed", a.seed, 0, 1 << 30));
  s.timeout = std::chrono::seconds(parse_int("--timeout", a.timeout, 1, 86400));
  s.config = p.plan.config;
  if (!a.max_memory.empty()) s.max_memory_bytes = parse_bytes("--max-memory", a.max_memory);
  s.device = p.device;
  s.sync_collectives = a.sync_collectives;
  // --cache: the query's (priced by the predictions too) as the executor's fixed schedule,
  // checked against the model and plan before any rank starts.
  auto cache = executor::run_schedule(p.resolved.query().cache, s.steps);
  if (!cache) throw InvalidInput{cache.error().message};
  s.cache = std::move(cache).value();
  if (const auto runs = executor::check_cache(s); !runs) throw InvalidInput{runs.error().message};
  return s;
}

std::string dtype_name(const executor::RunSpec& s) { return s.device.dtype == at::kBFloat16 ? "bf16" : "fp32"; }

// The attention kernel the ranks ran: FlashAttention (with its LSE), else cpplan's fp32 math.
std::string attention_backend(const executor::RunSpec& s) {
  if (executor::flash_attention_fits(s.device.device, s.device.dtype, s.model->head_dim)) return "flash";
  return s.device.cuda() ? "math-cuda" : "math";
}


json figures_json(const executor::RunFigures& f) {
  return {{"step_ms", f.step_ms},     {"compute_ms", f.compute_ms},        {"comm_ms", f.comm_ms},
          {"bytes_sent", f.bytes_sent}, {"peak_mem_bytes", f.peak_mem_bytes},
          {"load_mem_bytes", f.load_mem_bytes}, {"load_build_peak_bytes", f.load_build_peak_bytes},
          {"param_bytes", f.param_bytes},
          {"computed_step_ms", f.computed_step_ms}, {"cached_step_ms", f.cached_step_ms},
          {"steal_fraction", f.steal_fraction}};
}

executor::RunFigures figures_from_json(const json& j) {
  executor::RunFigures f;
  f.step_ms = j.at("step_ms").get<std::vector<double>>();
  f.compute_ms = j.at("compute_ms");
  f.comm_ms = j.at("comm_ms");
  f.bytes_sent = j.at("bytes_sent");
  f.peak_mem_bytes = j.at("peak_mem_bytes").get<std::vector<double>>();
  f.load_mem_bytes = j.value("load_mem_bytes", std::vector<double>{});
  f.load_build_peak_bytes = j.value("load_build_peak_bytes", std::vector<double>{});
  f.param_bytes = j.value("param_bytes", std::vector<double>{});
  f.steal_fraction = j.value("steal_fraction", -1.0);
  f.computed_step_ms = j.value("computed_step_ms", std::vector<double>{});
  f.cached_step_ms = j.value("cached_step_ms", std::vector<double>{});
  return f;
}

// The record of a run: its configuration, outcome and identity (no measurement yet).
data::RunRecord run_record(const Prepared& p, const executor::RunSpec& spec, const std::string& status,
                           const std::string& error, const std::string& started) {
  const Query& q = p.resolved.query();
  data::RunRecord r;
  r.model = q.model->name;
  r.width = q.resolution.width;
  r.height = q.resolution.height;
  r.frames = q.frames;
  r.steps = spec.steps;
  r.batch = q.batch;
  r.warmup = spec.warmup;
  r.dtype = dtype_name(spec);
  data::set_plan(r, p.plan.config);
  r.attention_backend = attention_backend(spec);
  r.seed = static_cast<long long>(spec.seed);
  r.status = status;
  r.error = error;
  r.started_at = started;
  r.finished_at = now_utc();
  r.cpplan_version = kVersion;
  r.run_key = session::run_key(r.model, q.resolution, r.frames, r.steps, p.plan.config, q.batch, r.seed, r.dtype);
  record_weights(r, spec.device.weights);
  // A GPU run with its collectives serialised is a diagnosis, not this machine's speed: marked,
  // and left out of calibrate's fit.
  if (spec.sync_collectives && spec.device.cuda()) r.metrics.emplace_back(session::kSyncCollectivesMetric, 1);
  if (has_cache(spec.cache)) record_cache_schedule(r, q.cache, spec.cache, spec.steps);
  return r;
}

// Why cpplan's executor measures no encode or decode phase.
constexpr std::string_view kUnmeasuredPhases =
    "encode and decode: cpplan's executor runs the transformer alone (no text encoder, no VAE)";

// The largest rank's figure, each rank's into the record's metrics as rankN.`metric`; null when
// the ranks recorded none.
json largest_rank(data::RunRecord& r, const std::vector<double>& per_rank, std::string_view metric) {
  if (per_rank.empty()) return nullptr;
  for (std::size_t i = 0; i < per_rank.size(); ++i) r.metrics.emplace_back(fmt::format("rank{}.{}", i, metric), per_rank[i]);
  return *std::max_element(per_rank.begin(), per_rank.end());
}

// Each phase's bytes per rank in tensors (the allocator's count on either device), the largest
// rank's: the load phase, what the transformers hold once built (and, apart, the most building
// them held at once); the denoising phase, the run's peak from the build on (the weights stay).
json measured_phases(data::RunRecord& r, const executor::RunFigures& figures, double peak) {
  const json load = largest_rank(r, figures.load_mem_bytes, "load_phase_bytes");
  const json build_peak = largest_rank(r, figures.load_build_peak_bytes, "load_build_peak_bytes");
  return {{"load", load},     {"load_build_peak", build_peak}, {"encode", nullptr},
          {"denoise", peak},  {"decode", nullptr},              {"not_measured", kUnmeasuredPhases}};
}

// The phases the executor runs, as predicted: the load is this rank's transformer weights (as it
// holds them: its TP shard, its PipeFusion stage), denoising the transformer's peak.
json predicted_phases(data::RunRecord& r, const costmodel::Prediction& p) {
  r.metrics.emplace_back("predicted.load_transformer_bytes", p.memory.transformer_weights);
  return {{"load", p.memory.transformer_weights}, {"denoise", p.transformer_peak_bytes}};
}

// The measured figures into the record; their JSON.
json record_measurement(data::RunRecord& r, const executor::RunFigures& figures, const executor::RunSpec& spec) {
  r.step_ms = figures.median_step_ms();
  r.step_ms_p10 = figures.percentile_step_ms(0.1);
  r.step_ms_p90 = figures.percentile_step_ms(0.9);
  r.steps_per_sec = *r.step_ms > 0 ? 1e3 / *r.step_ms : 0;
  r.compute_ms = figures.compute_ms;
  r.comm_ms = figures.comm_ms;
  r.bytes_sent = figures.bytes_sent;
  double peak = 0;
  for (std::size_t i = 0; i < figures.peak_mem_bytes.size(); ++i) {
    peak = std::max(peak, figures.peak_mem_bytes[i]);
    r.metrics.emplace_back(fmt::format("rank{}.peak_mem_bytes", i), figures.peak_mem_bytes[i]);
  }
  r.peak_mem_bytes = peak;
  r.step_times_ms = figures.step_ms;
  if (figures.steal_fraction >= 0) r.metrics.emplace_back(session::kStealMetric, figures.steal_fraction);
  json j{{"step_ms", *r.step_ms},       {"step_ms_p10", *r.step_ms_p10}, {"step_ms_p90", *r.step_ms_p90},
         {"steps_per_sec", *r.steps_per_sec}, {"peak_mem_bytes", peak},  {"compute_ms", *r.compute_ms},
         {"comm_ms", *r.comm_ms},       {"bytes_sent", *r.bytes_sent}};
  if (figures.steal_fraction >= 0) j["steal_fraction"] = figures.steal_fraction;
  j["phases"] = measured_phases(r, figures, peak);
  j["weights"] = weights_name(spec.device);
  j["param_bytes"] = measured_param_bytes(r, figures);
  if (has_cache(spec.cache)) j["cache"] = measured_cache(r, figures);
  return j;
}

// The prediction beside the measurement, for the hardware the run used, into the record; its
// JSON (null without one): this machine's measured (and calibrated) model when the store (none:
// a dry run whose database does not exist) holds its probe, else the --hardware profile's `datasheet`.
json record_prediction(data::RunRecord& r, const Args& a, const Prepared& p, const executor::RunSpec& spec,
                       const data::Store* store, const session::Machine& here, const costmodel::Prediction& datasheet) {
  json j;
  const auto step = [&](double computed_ms, double cached_ms) {
    r.predicted_step_ms = predicted_step(r, spec.cache, spec.steps, computed_ms, cached_ms, j);
    r.predicted_steps_per_sec = *r.predicted_step_ms > 0 ? 1e3 / *r.predicted_step_ms : 0;
  };
  const auto run = store ? p.engine->predict_local_run(p.resolved, *store, here, p.plan.config) : std::nullopt;
  if (run) {
    const session::LocalPrediction& lp = run->prediction;
    step(lp.step_ms, lp.cached_step_ms);
    r.predicted_peak_mem_bytes = lp.raw.peak_mem_bytes;
    r.predicted_transformer_peak_bytes = lp.raw.transformer_peak_bytes;
    r.predicted_hardware = run->hardware;
    j.update({{"hardware", r.predicted_hardware},
              {"calibrated", lp.calibrated},
              {"step_ms", *r.predicted_step_ms},
              {"steps_per_sec", *r.predicted_steps_per_sec},
              {"peak_mem_bytes", lp.raw.peak_mem_bytes},
              {"transformer_peak_bytes", lp.raw.transformer_peak_bytes},
              {"uncalibrated_step_ms", lp.raw.step_ms},
              {"source", costmodel::to_string(lp.raw.source)},
              {"phases", predicted_phases(r, lp.raw)}});
    if (has_cache(spec.cache)) j["cache"]["uncalibrated_cached_step_ms"] = lp.raw.cached_step_ms;
    return j;
  }
  if (a.hardware.empty()) return nullptr;
  step(datasheet.step_ms, datasheet.cached_step_ms);
  r.predicted_peak_mem_bytes = datasheet.peak_mem_bytes;
  r.predicted_transformer_peak_bytes = datasheet.transformer_peak_bytes;
  r.predicted_hardware = p.resolved.query().hardware->name;
  j.update({{"hardware", r.predicted_hardware},
            {"step_ms", *r.predicted_step_ms},
            {"steps_per_sec", *r.predicted_steps_per_sec},
            {"peak_mem_bytes", datasheet.peak_mem_bytes},
            {"transformer_peak_bytes", datasheet.transformer_peak_bytes},
            {"phases", predicted_phases(r, datasheet)}});
  return j;
}

// What a recorded run prints: one JSON object, or its lines.
struct RunReport {
  long long run_id = -1;
  std::string status, error, db_path;
  json measured, predicted;
};

// "phases: load 12 MiB (predicted 10), denoise 31 MiB (predicted 16); encode and decode: ...".
void print_phases(std::ostream& out, const RunReport& rep) {
  if (rep.measured.is_null() || !rep.measured.contains("phases")) return;
  const json& m = rep.measured["phases"];
  const json predicted = rep.predicted.is_null() ? json(nullptr) : rep.predicted.value("phases", json(nullptr));
  const auto phase = [&](const char* name) {
    if (m[name].is_null()) return fmt::format("{} not recorded", name);
    return fmt::format("{} {:.0f} MiB{}", name, m[name].get<double>() / kMiB,
                       predicted.is_null() ? "" : fmt::format(" (predicted {:.0f})", predicted[name].get<double>() / kMiB));
  };
  fmt::print(out, "phases, peak per rank: {}, {}; {}\n", phase("load"), phase("denoise"), kUnmeasuredPhases);
}

void print_run(std::ostream& out, const Args& a, const Prepared& p, const executor::RunSpec& spec,
               const data::RunRecord& r, const std::string& gpu_name, const session::RunPrediction& datasheet,
               const RunReport& rep) {
  const Query& q = p.resolved.query();
  if (a.json) {
    json j{{"run_id", rep.run_id}, {"status", rep.status}, {"plan", plan_json(q, datasheet.ranked, datasheet.scripts)},
           {"measured", rep.measured}, {"predicted", rep.predicted},
           {"comm_bytes_predicted", datasheet.ranked.predicted->comm_bytes}, {"db", rep.db_path},
           {"weights", weights_name(spec.device)}};
    if (has_cache(spec.cache)) j["cache"] = cache_json(q.cache, spec.cache, spec.steps);
    if (!rep.error.empty()) j["error"] = rep.error;
    if (const auto asked = executor::oom_bytes(rep.error); rep.status == "oom" && asked) j["oom_bytes"] = *asked;
    out << j.dump(2) << '\n';
    return;
  }
  const bool int8 = spec.device.weights == executor::WeightStorage::kInt8;
  fmt::print(out, "cpplan run: {} {}x{}{}, {} steps (+{} warm-up), plan {} ({}), {} ranks on {} ({}{}, {} attention)\n",
             q.model->name, q.resolution.width, q.resolution.height, q.model->video ? fmt::format("x{}", q.frames) : "",
             spec.steps, spec.warmup, plan_label(p.plan.config), display_name(p.plan.variant), r.world_size,
             spec.device.cuda() ? gpu_name : "cpu", r.dtype, int8 ? ", int8 weights" : "", r.attention_backend);
  if (!rep.measured.is_null()) {
    fmt::print(out,
               "measured: {:.2f} ms/step median (p10 {:.2f}, p90 {:.2f}), {:.2f} steps/s; compute {:.2f} + "
               "communication {:.2f} ms/step ({:.0f}%); {:.3f} MB sent per rank per step; peak {:.0f} MiB per rank; "
               "{:.1f} TFLOP/s per rank\n",
               *r.step_ms, *r.step_ms_p10, *r.step_ms_p90, *r.steps_per_sec, *r.compute_ms, *r.comm_ms,
               100.0 * *r.comm_ms / std::max(1e-9, *r.compute_ms + *r.comm_ms), *r.bytes_sent / 1e6,
               *r.peak_mem_bytes / kMiB, rep.measured.value("achieved_tflops", 0.0));
    if (const std::string line = session::contended_run_line(rep.measured.value("steal_fraction", -1.0)); !line.empty())
      fmt::print(out, "{}\n", line);
  } else {
    fmt::print(out, "{}: {}\n", rep.status, rep.error);
  }
  // The measured peak is the transformer's denoising loop alone: beside it its prediction, then
  // the whole pipeline's (text encoders, VAE) for a real deployment.
  if (!rep.predicted.is_null())
    fmt::print(out,
               "predicted on {}: {:.2f} ms/step, {:.2f} steps/s, transformer peak {:.0f} MiB per rank "
               "(whole pipeline {:.1f} GiB)\n",
               rep.predicted["hardware"].get<std::string>(), *r.predicted_step_ms, *r.predicted_steps_per_sec,
               *r.predicted_transformer_peak_bytes / kMiB, *r.predicted_peak_mem_bytes / kGiB);
  else
    fmt::print(out, "predicted: this machine has no probe (cpplan probe) and no --hardware profile was given\n");
  print_phases(out, rep);
  print_cache(out, q.cache, spec.cache, spec.steps, rep.measured, rep.predicted);
  fmt::print(out, "recorded: run {} in {}\n", rep.run_id, rep.db_path);
}

// The run's prediction, for the element size and attention kernel the ranks run, into the record
// and `predicted` (record_prediction).
session::RunPrediction predict_as_run(const Args& a, const Prepared& p, const executor::RunSpec& spec,
                                      data::RunRecord& record, const data::Store* store, const session::Machine& here,
                                      json& predicted) {
  const Query& q = p.resolved.query();
  // Predicted for the element size the ranks ran (the profiles are bf16).
  const ModelProfile as_run = session::as_executed(*q.model, spec.device.dtype == at::kFloat);
  Query run_query = q;
  run_query.model = &as_run;
  // The attention kernel the ranks ran (its score tensors, if any, are the run's memory).
  std::optional<RuntimeProfile> runtime;
  if (q.runtime) runtime = session::as_executed(*q.runtime, attention_backend(spec) != "flash");
  if (runtime) run_query.runtime = &*runtime;
  session::RunPrediction prediction = p.engine->predict_run(p.resolved, run_query, p.plan);
  predicted = record_prediction(record, a, p, spec, store, here, *prediction.ranked.predicted);
  return prediction;
}

// What a run records besides its measurement, made before its steps: its configuration and
// identity, this machine, the open store and the prediction. A failure then records in
// milliseconds: when one task dies of a signal, srun gives the step's other tasks one second
// between SIGTERM and SIGKILL (slurmstepd's SIG_TERM_KILL).
struct PendingRun {
  data::RunRecord record;  // status, error, finish time and measurement unset
  session::Machine here;
  session::RunPrediction prediction;  // the plan as the ranks run it
  RunReport report;                   // the database and the predicted JSON
  std::optional<data::Store> store;
};

// The run's pending record: its store opened (a foreign or newer database refused before the run
// is spent) and its prediction made, for the element size and attention kernel the ranks run.
PendingRun pending_run(const Args& a, const Prepared& p, const executor::RunSpec& spec, const std::string& started) {
  PendingRun run{run_record(p, spec, "", "", started), machine(spec.device.cuda()), {}, {}, std::nullopt};
  run.report.db_path = a.db.empty() ? data::Store::default_path() : a.db;
  auto store = data::Store::open(run.report.db_path);
  if (!store) throw InvalidInput{store.error().message};
  run.store.emplace(std::move(store).value());
  run.prediction = predict_as_run(a, p, spec, run.record, &*run.store, run.here, run.report.predicted);
  return run;
}

// Records the run (measured, or how it failed) with its prediction in the store, and prints it.
int finish(PendingRun& pending, const Args& a, const Prepared& p, const executor::RunSpec& spec,
           const executor::RunFigures* figures, const std::string& status, const std::string& error,
           std::ostream& out, std::ostream& err) {
  data::RunRecord r = pending.record;
  r.status = status;
  r.error = error;
  r.finished_at = now_utc();
  RunReport rep = pending.report;
  rep.status = status;
  rep.error = error;
  if (figures) rep.measured = record_measurement(r, *figures, spec);
  const costmodel::Prediction& prediction = *pending.prediction.ranked.predicted;
  // Achieved throughput: the model's FLOPs of a step on the busiest rank over the measured step
  // (a computed step's, with a step cache: step_flops are a computed step's).
  const double step_ms = figures && !figures->computed_step_ms.empty() && has_cache(spec.cache)
                             ? figures->median_computed_step_ms()
                             : r.step_ms.value_or(0);
  if (figures && step_ms > 0) {
    const double tflops = prediction.step_flops / (step_ms * 1e-3) / 1e12;
    r.metrics.emplace_back("achieved_tflops", tflops);
    rep.measured["step_tflop"] = prediction.step_flops / 1e12;
    rep.measured["achieved_tflops"] = tflops;
  }
  auto id = pending.store->record_run(pending.here.fingerprint, r);
  if (!id) {
    fmt::print(err, "cpplan run: {}\n", id.error().message);
    return kExitRuntime;
  }
  rep.run_id = *id;
  print_run(out, a, p, spec, r, pending.here.fingerprint.gpu_name, pending.prediction, rep);
  if (status == "ok") return kExitOk;
  if (status == "cancelled") return 130;
  return kExitRuntime;
}

// torchrun's error file (TORCHELASTIC_ERROR_FILE; nothing when unset), in the layout
// torch.distributed.elastic writes: its agent reports `line` as this rank's failure.
void write_torchrun_error(const std::string& path, const std::string& line) {
  if (path.empty()) return;
  const json extra{{"py_callstack", line}, {"timestamp", std::to_string(std::time(nullptr))}};
  std::ofstream(path) << json{{"message", {{"message", line}, {"extraInfo", extra}}}}.dump();
}

// The run recorded once: by rank 0's end, or by the signal that stopped it first.
class RecordOnce {
 public:
  int operator()(const std::function<int()>& record) {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return kExitOk;
    done_ = true;
    return record();
  }

 private:
  std::mutex mu_;
  bool done_ = false;
};

// One rank of a job started by a launcher (ours, torchrun, srun, mpirun): rendezvous through
// MASTER_ADDR/MASTER_PORT or torchrun's agent store. Rank 0 records the run, unless our own
// launcher does (CPPLAN_RESULT_FILE); a stop signal from the launcher records it cancelled.
int worker(const Args& a, const Prepared& p, const launch::LaunchEnv& job, std::ostream& out, std::ostream& err) {
  const executor::RunSpec spec = make_spec(a, p);
  const executor::Rendezvous rendezvous = executor::rendezvous_for(job, spec.timeout);
  const int rank = rendezvous.rank, world = rendezvous.world_size;
  if (world != p.plan.config.world_size())
    throw InvalidInput{fmt::format("{} = {}: the plan {} needs {} ranks", job.world_variable, world,
                                   plan_label(p.plan.config), p.plan.config.world_size())};
  const std::string started = now_utc();
  const std::string result_file = env("CPPLAN_RESULT_FILE");  // our launcher's: it records
  RecordOnce record;
  std::optional<PendingRun> pending;  // rank 0's, when it records
  std::exception_ptr unrecordable;     // why rank 0 cannot record (its database), raised once the ranks meet
  if (result_file.empty() && rank == 0) try {
      pending = pending_run(a, p, spec, started);
    } catch (const InvalidInput&) {
      unrecordable = std::current_exception();
    }
  // A launcher also stops the ranks whose peer failed: the failure they see at once is the truer
  // record, so the signal's waits half a second for it (srun's SIGKILL follows in one).
  if (result_file.empty())
    on_stop_signal([&](int signal) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      if (rank == 0 && pending)
        record([&] {
          const std::string why = fmt::format("rank 0: ended by SIG{} from {}", sigabbrev_np(signal),
                                              launch::launcher_name(job.launcher));
          return finish(*pending, a, p, spec, nullptr, "cancelled", why, out, err);
        });
    });
  executor::RunFigures figures;
  // c10d logs its socket errors on stderr; the failure is reported once, below.
  executor::quiet_torch_logs();
  try {
    auto store = executor::connect_store(rendezvous);
    // Once the ranks have met: a database rank 0 cannot record into ends them all, not a wait.
    if (unrecordable) std::rethrow_exception(unrecordable);
    figures = executor::run_rank(spec, store, rank, world);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    msg = msg.substr(0, msg.find('\n'));
    fmt::print(err, "cpplan run: rank {}: {}\n", rank, msg);
    const std::string why = fmt::format("rank {}: {}", rank, msg);
    write_torchrun_error(job.error_file, "cpplan run: " + why);
    // Rank 0 records the failure; under our launcher the launcher does, from the line each failed
    // rank leaves beside the result file.
    if (!result_file.empty())
      std::ofstream(rank_error_file(result_file, rank)) << why;
    else if (rank == 0 && pending)
      record([&] { return finish(*pending, a, p, spec, nullptr, failure_status(msg), why, out, err); });
    return kExitRuntime;
  }
  if (rank != 0) return kExitOk;
  if (!a.save_latents.empty())
    if (auto w = executor::write_npy(a.save_latents, figures.latents); !w) fmt::print(err, "cpplan run: {}\n", w.error().message);
  if (!result_file.empty()) {  // our launcher records and prints
    json j = figures_json(figures);
    j["started_at"] = started;
    std::ofstream(result_file) << j.dump();
    return kExitOk;
  }
  return record([&] { return finish(*pending, a, p, spec, &figures, "ok", "", out, err); });
}

// The rank of `job`: a bad command line or plan is reported in torchrun's error file too.
int rank_of_job(const Args& a, const launch::LaunchEnv& job, const std::string& exe, std::ostream& out,
                std::ostream& err) {
  try {
    const Prepared p = prepare(a, exe, err);
    return worker(a, p, job, out, err);
  } catch (const InvalidInput& e) {
    write_torchrun_error(job.error_file, "cpplan run: " + e.message);
    throw;
  } catch (const std::exception& e) {
    write_torchrun_error(job.error_file, std::string("cpplan run: ") + e.what());
    throw;
  }
}

}  // namespace

// The prediction a run of the plan would record, without running it or recording anything: from
// the database's probe and calibration when the database exists (a dry run creates none), else
// the --hardware profile's; null without either.
json dry_run_prediction(const Args& a, const Prepared& p, const executor::RunSpec& spec) {
  const std::string path = a.db.empty() ? data::Store::default_path() : a.db;
  std::optional<data::Store> store;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    auto opened = data::Store::open(path);
    if (!opened) throw InvalidInput{opened.error().message};
    store.emplace(std::move(opened).value());
  }
  data::RunRecord record = run_record(p, spec, "", "", now_utc());
  json predicted;
  predict_as_run(a, p, spec, record, store ? &*store : nullptr, machine(spec.device.cuda()), predicted);
  return predicted;
}

// "predicted on local (calibration v1): 13.27 ms/step; cache fixed F1B0, warm-up 2, every 2: 16 computed
// steps of 13.27 ms, 14 cached of 3.39 ms, denoising 259.84 ms".
void print_dry_run_prediction(std::ostream& out, const CacheSpec& c, const executor::CacheSchedule& s, int steps,
                              const json& predicted) {
  if (predicted.is_null()) {
    fmt::print(out, "predicted: this machine has no probe in the database (cpplan probe) and no --hardware profile was given\n");
    return;
  }
  fmt::print(out, "predicted on {}: {:.2f} ms/step", predicted["hardware"].get<std::string>(),
             predicted["step_ms"].get<double>());
  if (has_cache(s)) {
    const json& k = predicted["cache"];
    fmt::print(out, "; cache {} F{}B{}, warm-up {}, every {}: {} computed steps of {:.2f} ms, {} cached of {:.2f} ms, denoising {:.2f} ms",
               to_string(c.policy), c.first_blocks, c.last_blocks, c.warmup_steps, c.every, s.computed_steps(steps),
               k["computed_step_ms"].get<double>(), s.cached_steps(steps), k["cached_step_ms"].get<double>(),
               k["denoise_ms"].get<double>());
  }
  fmt::print(out, "\n");
}

// --dry-run: the plan the run would execute, as text or JSON (its label, CP variant and ranks), and
// the prediction the run would record (dry_run_prediction).
int print_dry_run(const Args& a, const Prepared& p, const executor::RunSpec& spec, std::ostream& out) {
  const ParallelConfig& c = p.plan.config;
  const json predicted = dry_run_prediction(a, p, spec);
  if (a.json) {
    out << json{{"plan", plan_label(c)}, {"cp_variant", to_string(p.plan.variant)}, {"world_size", c.world_size()},
                {"model", p.resolved.query().model->name}, {"predicted", predicted}}
               .dump(2)
        << '\n';
  } else {
    fmt::print(out, "cpplan run --dry-run: plan {} ({}), {} ranks; nothing run\n", plan_label(c),
               display_name(p.plan.variant), c.world_size());
    print_dry_run_prediction(out, p.resolved.query().cache, spec.cache, spec.steps, predicted);
  }
  return kExitOk;
}

// --list-unsupported: every valid plan of the query (its --gpus, else 1 to 8) that the executor
// does not run, a line each (label: why), or as JSON; nothing when it runs them all.
int print_unsupported(Args a, const std::string& exe, std::ostream& out) {
  if (a.runtime.empty()) a.runtime = "cpplan";
  auto engine = session::Engine::open(a.profiles, exe);
  if (!engine) throw InvalidInput{engine.error().message};
  std::vector<std::string> counts = {a.gpus};
  if (a.gpus.empty()) counts = {"1", "2", "3", "4", "5", "6", "7", "8"};
  json listed = json::array();
  for (const std::string& gpus : counts) {
    a.gpus = gpus;
    auto resolved = engine->resolve(a);
    if (!resolved) throw InvalidInput{resolved.error().message};
    for (const session::UnsupportedPlan& u : session::unsupported_plans(resolved->query())) {
      if (!a.json) fmt::print(out, "{} on {} GPUs: {}\n", u.label, gpus, u.reason);
      listed.push_back({{"gpus", resolved->query().gpus}, {"plan", u.label}, {"reason", u.reason}});
    }
  }
  if (a.json) out << json{{"unsupported", listed}}.dump(2) << '\n';
  return kExitOk;
}

int run_command(const Args& a, int argc, const char* const* argv, const std::string& exe, std::ostream& out,
                std::ostream& err) {
  if (a.list_unsupported) return print_unsupported(a, exe, out);
  if (const auto job = adopt_launcher()) return rank_of_job(a, *job, exe, out, err);
  Prepared p = prepare(a, exe, err);
  const executor::RunSpec spec = make_spec(a, p);  // refuses what the ranks would (a --cache they cannot run)
  if (a.dry_run) return print_dry_run(a, p, spec, out);

  const int world = static_cast<int>(p.plan.config.world_size());
  const int nproc = a.nproc.empty() ? world : parse_int("--nproc", a.nproc, 1, kMaxGpus);
  if (nproc != world)
    throw InvalidInput{fmt::format("--nproc = {}: the plan {} needs {} ranks", nproc, plan_label(p.plan.config), world)};
  check_local_gpus(spec.device, nproc);
  const std::string started = now_utc();
  PendingRun pending = pending_run(a, p, spec, started);  // a foreign database refused before the run
  // The local launcher, one rank or many: the same command line for every rank (argv, no shell),
  // each rank a process with the same environment and thread share.
  const fs::path dir = fs::temp_directory_path() / fmt::format("cpplan-run-{}", getpid());
  fs::create_directories(dir);
  const std::string result_file = (dir / "rank0.json").string();
  std::vector<std::string> rank_argv{exe};
  for (int i = 1; i < argc; ++i) rank_argv.emplace_back(argv[i]);
  const auto outcome = launch::launch_local(rank_argv, nproc, {"CPPLAN_RESULT_FILE=" + result_file});
  executor::RunFigures figures;
  bool have = false;
  if (outcome.status == launch::LaunchStatus::kOk) {
    std::ifstream in(result_file);
    try {
      figures = figures_from_json(json::parse(in));
      have = true;
    } catch (const std::exception&) {
    }
  }
  std::string status = outcome.status == launch::LaunchStatus::kCancelled ? "cancelled" : "failed";
  std::string why = outcome.reason.empty() ? "rank 0 wrote no result" : outcome.reason;
  if (!have && status == "failed") {
    // The cause in the ranks' words: an out-of-memory rank first (its peers fail after it),
    // else the rank the launcher saw fail first.
    for (int r = 0; r < nproc; ++r) {
      std::ifstream in(rank_error_file(result_file, r));
      std::string line;
      if (!std::getline(in, line)) continue;
      if (failure_status(line) == "oom") {
        status = "oom";
        why = line;
        break;
      }
      if (r == outcome.failed_rank) why = line;
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (have) return finish(pending, a, p, spec, &figures, "ok", "", out, err);
  fmt::print(err, "cpplan run: {}: {}\n", status, why);
  return finish(pending, a, p, spec, nullptr, status, why, out, err);
}

}  // namespace cpplan::exec
