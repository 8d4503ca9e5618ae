#include "cli/calibrate_commands.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/app.h"
#include "executor/device.h"
#include "cli/fingerprint.h"
#include "executor/launcher.h"
#include "executor/probe.h"
#include "cli/run_command.h"
#include "data/pipeline_timings.h"
#include "executor/rendezvous.h"

namespace cpplan::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double physical_memory_mib() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE)) / kMiB;
}

data::Store open_store(const std::string& db) {
  auto store = data::Store::open(db.empty() ? data::Store::default_path() : db);
  if (!store) throw InvalidInput{store.error().message};
  return std::move(store).value();
}

json samples_json(const costmodel::MeasurementSet& m) {
  json c = json::array(), k = json::array();
  for (const auto& s : m.collectives)
    c.push_back({static_cast<int>(s.kind), s.ranks, s.uneven, s.bytes, s.time_us, s.algbw_gbps, s.busbw_gbps});
  for (const auto& s : m.kernels)
    k.push_back({static_cast<int>(s.kind), s.shape, s.flops, s.bytes, s.rows, s.concurrent_ranks, s.time_us});
  return {{"collectives", c}, {"kernels", k}};
}

costmodel::MeasurementSet samples_from_json(const json& j) {
  costmodel::MeasurementSet m;
  for (const auto& s : j.at("collectives"))
    m.collectives.push_back({static_cast<costmodel::Collective>(s[0].get<int>()), s[1], s[2], s[3], s[4], s[5], s[6]});
  for (const auto& s : j.at("kernels"))
    m.kernels.push_back({static_cast<costmodel::KernelKind>(s[0].get<int>()), s[1], s[2], s[3], s[4], s[5], s[6]});
  return m;
}

executor::ProbeOptions probe_options(const ProbeArgs& p, const ProfileCatalog& catalog) {
  executor::ProbeOptions o;
  for (const auto& name : p.models) {
    auto m = catalog.model(name);
    if (!m) throw InvalidInput{m.error().message};
    o.models.push_back(*m);
  }
  o.max_message_bytes = p.quick ? 4.0 * (1 << 20) : 256.0 * (1 << 20);
  // Cap by memory: an all-gather holds the group's full output on every rank.
  o.max_message_bytes = std::min(o.max_message_bytes, physical_memory_mib() * kMiB / 64);
  o.max_tokens = p.quick ? 1024 : 4096;
  return o;
}

void progress_bar(std::ostream& err, double fraction, const std::string& what,
                  std::chrono::steady_clock::time_point start) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double eta = fraction > 0.02 ? elapsed * (1 - fraction) / fraction : 0;
  const int width = 30, filled = static_cast<int>(fraction * width);
  fmt::print(err, "\rprobe [{}{}] {:3.0f}% ETA {:4.0f}s  {:<40.40}", std::string(filled, '#'),
             std::string(width - filled, '.'), fraction * 100, eta, what);
  err.flush();
}

}  // namespace

std::unique_ptr<LocalModel> load_local_model(const data::Store& store, const data::HardwareFingerprint& hw) {
  auto m = store.measurements(hw.key());
  if (!m || (m->collectives.empty() && m->kernels.empty())) return nullptr;
  auto local = std::make_unique<LocalModel>();
  local->cuda = hw.device_kind == "cuda";
  local->measurements = std::move(m).value();
  local->profile = local->cuda ? costmodel::local_profile(local->measurements, hw.gpu_name,
                                                          executor::cuda_memory_bytes(0) / (1 << 20))
                               : costmodel::local_profile(local->measurements, hw.cpu_name, physical_memory_mib());
  local->fallback = std::make_unique<costmodel::DatasheetModel>(local->profile);
  local->model = std::make_unique<costmodel::MeasuredModel>(local->profile, local->measurements, *local->fallback);
  if (auto c = store.latest_calibration(hw.key()); c && c->has_value()) local->calibration = **c;
  return local;
}

std::unique_ptr<LocalModel> open_local_model(const std::string& db) {
  const std::string path = db.empty() ? data::Store::default_path() : db;
  std::error_code ec;
  if (!fs::exists(path, ec))  // a query creates no database
    throw InvalidInput{fmt::format("--hardware = local: no database at {} (run cpplan probe first)", path)};
  const data::Store store = open_store(path);
  auto local = load_local_model(store, machine_fingerprint(local_is_cuda()));
  if (!local)
    throw InvalidInput{fmt::format("--hardware = local: {} holds no probe of this machine (run cpplan probe first)",
                                   path)};
  return local;
}

ModelProfile as_executed(const ModelProfile& m, bool fp32) {
  ModelProfile as_run = m;
  if (fp32) as_run.bytes_per_activation = as_run.bytes_per_param = 4;
  return as_run;
}

void attach_runtime(LocalModel& local, const ProfileCatalog& catalog) {
  const RuntimeProfile* cpplan = catalog.find_runtime("cpplan");
  local.runtime = cpplan ? *cpplan : costmodel::kernel_launch_runtime(*local.model);
  local.runtime.us_per_op = local.model->launch_us();
}

LocalPrediction predict_local(LocalModel& local, const Query& q, const ParallelConfig& c) {
  const ModelProfile as_run = as_executed(*q.model, !local.cuda);
  Query run_query = q;
  run_query.model = &as_run;
  run_query.hardware = &local.profile;
  run_query.runtime = &local.runtime;
  const int ranks = static_cast<int>(c.world_size());
  local.model->set_concurrent_ranks(ranks);
  LocalPrediction p;
  p.raw = costmodel::CostModel(*local.model).predict(run_query, c, classify(c.context_parallel_config));
  p.calibrated = local.calibration.has_value();
  p.step_ms = p.calibrated ? local_correction(local)(p.raw, c) : p.raw.step_ms;
  return p;
}

costmodel::StepCorrection local_correction(const LocalModel& local) {
  if (!local.calibration) return {};
  return costmodel::step_correction(*local.calibration, std::max(1u, std::thread::hardware_concurrency()));
}

void add_probe_options(CLI::App& probe, ProbeArgs& p) {
  probe.add_option("--nproc", p.nproc, "ranks: collectives for every group size up to N (default 2)");
  probe.add_option("--device", p.device, "cpu | cuda (default: cuda when this build sees a GPU; one per rank, bf16)");
  probe.add_option("--db", p.db, kDbHelp);
  probe.add_option("--model", p.models, "kernel shapes of these models' blocks (default flux-tiny wan-tiny)");
  probe.add_flag("--quick", p.quick, "messages up to 4 MiB, sequences up to 1024 tokens");
  probe.add_option("--worker", p.worker, "internal")->group("");
}

void add_calibrate_options(CLI::App& calibrate, ProbeArgs& p) {
  calibrate.add_option("--db", p.db, kDbHelp);
}

int probe_command(const ProbeArgs& p, const Args& a, const std::string& exe, std::ostream& out, std::ostream& err) {
  // One GPU per rank, in bf16 as runs have it; or the CPU in fp32.
  const executor::DeviceSpec device = rank_device(p.device, "");
  const bool cuda = device.cuda();
  auto catalog = ProfileCatalog::load(profile_search_path(a.profiles, exe));
  if (!catalog) throw InvalidInput{catalog.error().message};
  executor::ProbeOptions options = probe_options(p, *catalog);
  options.device = device;
  const int nproc = parse_int("--nproc", p.nproc, 1, 64);
  if (p.worker.empty()) check_local_gpus(device, nproc);

  if (!p.worker.empty()) {  // one rank of the probe
    executor::quiet_torch_logs();
    const executor::Rendezvous rendezvous = rendezvous_env(options.timeout);
    const int rank = rendezvous.rank, world = rendezvous.world_size;
    const auto start = std::chrono::steady_clock::now();
    options.progress = [&](double f, const std::string& what) { progress_bar(err, f, what, start); };
    auto store = executor::connect_store(rendezvous);
    const auto set = executor::probe_rank(options, store, rank, world);
    if (rank == 0) {
      std::ofstream(env("CPPLAN_RESULT_FILE")) << samples_json(set).dump();
      fmt::print(err, "\n");
    }
    return kExitOk;
  }

  data::Store store = open_store(p.db);  // refuse a foreign database before measuring
  costmodel::MeasurementSet set;
  {
    const fs::path result = fs::temp_directory_path() / fmt::format("cpplan-probe-{}.json", getpid());
    std::vector<std::string> argv{exe, "probe", "--worker", "rank", "--nproc", p.nproc, "--device", cuda ? "cuda" : "cpu"};
    for (const auto& m : p.models) argv.insert(argv.end(), {"--model", m});
    if (p.quick) argv.push_back("--quick");
    const auto outcome = executor::launch_local(argv, nproc, {"CPPLAN_RESULT_FILE=" + result.string()});
    if (outcome.status != executor::LaunchStatus::kOk) {
      fmt::print(err, "cpplan probe: {}\n", outcome.reason);
      return outcome.status == executor::LaunchStatus::kCancelled ? 130 : kExitRuntime;
    }
    std::ifstream in(result);
    set = samples_from_json(json::parse(in));
    std::error_code ec;
    fs::remove(result, ec);
  }
  const data::HardwareFingerprint hw = machine_fingerprint(cuda);
  auto rows = store.record_measurements(hw, set, "probe");
  if (!rows) {
    fmt::print(err, "cpplan probe: {}\n", rows.error().message);
    return kExitRuntime;
  }
  double best_busbw = 0, best_gemm = 0;
  for (const auto& c : set.collectives) best_busbw = std::max(best_busbw, c.busbw_gbps);
  for (const auto& k : set.kernels)
    if (k.kind == costmodel::KernelKind::kGemm) best_gemm = std::max(best_gemm, k.flops / (k.time_us * 1e-6));
  fmt::print(out, "probe: {} collective and {} kernel samples of {} ({} ranks) recorded in {} (machine {})\n",
             set.collectives.size(), set.kernels.size(), cuda ? hw.gpu_name : hw.cpu_name, nproc, store.path(),
             hw.key());
  fmt::print(out, "  best busbw {:.3f} GB/s, best GEMM {:.1f} GFLOP/s\n", best_busbw, best_gemm / 1e9);
  return kExitOk;
}

int calibrate_command(const ProbeArgs& p, const Args& a, const std::string& exe, std::ostream& out, std::ostream& err) {
  auto catalog = ProfileCatalog::load(profile_search_path(a.profiles, exe));
  if (!catalog) throw InvalidInput{catalog.error().message};
  const int folds = parse_int("--folds", p.folds, 2, 100);
  data::Store store = open_store(p.db);
  const data::HardwareFingerprint hw = machine_fingerprint(local_is_cuda());
  auto local = load_local_model(store, hw);
  if (!local) throw InvalidInput{fmt::format("{}: no probe of this machine ({}); run cpplan probe first", store.path(), hw.key())};
  attach_runtime(*local, *catalog);
  auto runs = store.runs();
  if (!runs) throw InvalidInput{runs.error().message};
  local->calibration.reset();  // the features are those of the uncalibrated model
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<costmodel::Observation> observations;
  for (const data::StoredRun& r : runs.value()) {
    // This machine's executor runs: a pipeline's runs (cpplan import-runs) fit the runtimes instead.
    if (r.run.status != "ok" || !r.run.step_ms || r.hardware.key() != hw.key() || r.run.source != "executor") continue;
    // --sync-collectives runs serialised communication and computation: not this machine's speed.
    const auto& metrics = r.run.metrics;
    if (std::any_of(metrics.begin(), metrics.end(), [](const auto& m) { return m.first == kSyncCollectivesMetric; }))
      continue;
    const ModelProfile* m = catalog->find_model(r.run.model);
    if (!m) continue;
    auto seq = compute_sequence(*m, {r.run.width, r.run.height}, r.run.frames, m->text_tokens);
    if (!seq) continue;
    Query q;
    q.model = m;
    q.gpus = r.run.world_size;
    q.resolution = {r.run.width, r.run.height};
    q.frames = r.run.frames;
    q.steps = r.run.steps;
    // The images the run generated (stored since schema v3); a run recorded before that reads
    // batch 1, which a dp > 1 plan could not have run: its least batch, one image per replica.
    q.batch = r.run.batch % std::max(1, r.run.dp) == 0 ? r.run.batch : r.run.dp;
    q.sequence = *seq;
    const ParallelConfig c = data::parallel_config(r.run);
    const LocalPrediction pred = predict_local(*local, q, c);
    observations.push_back({costmodel::features_of(pred.raw, r.run.world_size / cores - 1), pred.raw.step_ms, *r.run.step_ms});
  }
  if (observations.size() < 4)
    throw InvalidInput{fmt::format("{}: {} measured runs on this machine; calibration needs at least 4 (cpplan run or cpplan sweep)",
                                   store.path(), observations.size())};
  costmodel::Calibration c = costmodel::fit_calibration(observations, folds);
  c.fingerprint = hw.key();
  c.fitted_at = now_utc();
  auto version = store.record_calibration(hw, c);
  if (!version) {
    fmt::print(err, "cpplan calibrate: {}\n", version.error().message);
    return kExitRuntime;
  }
  fmt::print(out, "calibrated on {} runs of this machine ({}), {}-fold cross-validation, stored as version {}:\n",
             c.runs, hw.key(), c.folds, *version);
  fmt::print(out, "  held-out MAPE {:.1f}% -> {:.1f}%, Spearman rank correlation {:.3f} -> {:.3f}\n", c.mape_before * 100,
             c.mape_after * 100, c.rank_corr_before, c.rank_corr_after);
  fmt::print(out, "  shrinkage toward the measured model {:.3g} (chosen by cross-validation)\n", c.shrinkage);
  for (std::size_t i = 0; i < c.features.size(); ++i) fmt::print(out, "  {:<16} x {:.4g}\n", c.features[i], c.coefficients[i]);
  return kExitOk;
}

int calibrate_pipeline_runs_command(const ProbeArgs& p, const CalibrateArgs& c, const Args& a, const std::string& exe,
                                    std::ostream& out) {
  const std::string path = p.db.empty() ? data::Store::default_path() : p.db;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InvalidInput{fmt::format("--db = {}: no database (cpplan import-runs writes one)", path)};
  const data::Store store = open_store(path);
  auto runs = store.runs();
  if (!runs) throw InvalidInput{runs.error().message};
  const auto rows = data::pipeline_timings(runs.value(), store.path());
  if (rows.size() < 2)
    throw InvalidInput{fmt::format("--db = {}: {} pipeline runs; a fit needs at least 2 (cpplan import-runs)", path,
                                   rows.size())};
  return fit_runtimes_command(rows, store.path(), c, a, exe, out);
}

}  // namespace cpplan::cli
