#include "session/engine/local_model.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <thread>

namespace cpplan::session {

namespace fs = std::filesystem;

data::Store open_store(const std::string& db) {
  auto store = data::Store::open(db.empty() ? data::Store::default_path() : db);
  if (!store) throw InvalidInput{store.error().message};
  return std::move(store).value();
}

std::unique_ptr<LocalModel> load_local_model(const data::Store& store, const Machine& machine) {
  const data::HardwareFingerprint& hw = machine.fingerprint;
  auto m = store.measurements(hw.key());
  if (!m || (m->collectives.empty() && m->kernels.empty())) return nullptr;
  auto local = std::make_unique<LocalModel>();
  local->cuda = hw.device_kind == "cuda";
  local->measurements = std::move(m).value();
  local->profile = costmodel::local_profile(local->measurements, local->cuda ? hw.gpu_name : hw.cpu_name,
                                            machine.memory_mib);
  local->fallback = std::make_unique<costmodel::DatasheetModel>(local->profile);
  local->model = std::make_unique<costmodel::MeasuredModel>(local->profile, local->measurements, *local->fallback);
  if (auto c = store.latest_calibration(hw.key()); c && c->has_value()) local->calibration = **c;
  return local;
}

std::unique_ptr<LocalModel> open_local_model(const std::string& db, const Machine& machine) {
  const std::string path = db.empty() ? data::Store::default_path() : db;
  std::error_code ec;
  if (!fs::exists(path, ec))  // a query creates no database
    throw InvalidInput{fmt::format("--hardware = local: no database at {} (run cpplan probe first)", path)};
  const data::Store store = open_store(path);
  auto local = load_local_model(store, machine);
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

RuntimeProfile as_executed(const RuntimeProfile& rt, bool math) {
  RuntimeProfile as_run = rt;
  if (math) {
    as_run.attention_score_tensors = 3;  // scores, scores - lse, exp(scores - lse)
    as_run.attention_score_bytes = 4;    // fp32
  }
  return as_run;
}

void attach_runtime(LocalModel& local, const ProfileCatalog& catalog) {
  const RuntimeProfile* cpplan = catalog.find_runtime("cpplan");
  local.runtime = cpplan ? *cpplan : costmodel::kernel_launch_runtime(*local.model);
  local.runtime.us_per_op = local.model->launch_us();
}

LocalPrediction predict_local(LocalModel& local, const Query& q, const ParallelConfig& c) {
  const ModelProfile as_run = as_executed(*q.model, !local.cuda);
  // A CPU rank attends on the math path; a GPU's, with FlashAttention where it fits (assumed here).
  RuntimeProfile runtime = as_executed(local.runtime, !local.cuda);
  // A CPU rank's thread runs each op's kernel as it dispatches it: its host time adds to the
  // kernels' instead of hiding behind them (a GPU's launches are asynchronous).
  if (!local.cuda) runtime.overlaps_device = false;
  Query run_query = q;
  run_query.model = &as_run;
  run_query.hardware = &local.profile;
  run_query.runtime = &runtime;
  const int ranks = static_cast<int>(c.world_size());
  local.model->set_concurrent_ranks(ranks);
  LocalPrediction p;
  p.raw = costmodel::CostModel(*local.model).predict(run_query, c, classify(c.context_parallel_config));
  p.calibrated = local.calibration.has_value();
  p.step_ms = p.calibrated ? local_correction(local)(p.raw, c) : p.raw.step_ms;
  p.cached_step_ms = costmodel::corrected_cached_step_ms(p.raw, p.step_ms);
  return p;
}

costmodel::StepCorrection local_correction(const LocalModel& local) {
  if (!local.calibration) return {};
  return costmodel::step_correction(*local.calibration, std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace cpplan::session
