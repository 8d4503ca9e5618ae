#include "exec/commands.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "exec/machine.h"
#include "launch/launcher.h"
#include "executor/probe.h"
#include "executor/rendezvous.h"
#include "executor/run_parts.h"
#include "session/engine/calibration.h"
#include "session/engine/local_model.h"

namespace cpplan::exec {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace cli;
using session::env;

namespace {

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
  o.max_message_bytes = std::min(o.max_message_bytes, session::physical_memory_mib() * kMiB / 64);
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

  data::Store store = session::open_store(p.db);  // refuse a foreign database before measuring
  costmodel::MeasurementSet set;
  const auto cpu_before = executor::host_cpu_time();
  {
    const fs::path result = fs::temp_directory_path() / fmt::format("cpplan-probe-{}.json", getpid());
    std::vector<std::string> argv{exe, "probe", "--worker", "rank", "--nproc", p.nproc, "--device", cuda ? "cuda" : "cpu"};
    for (const auto& m : p.models) argv.insert(argv.end(), {"--model", m});
    if (p.quick) argv.push_back("--quick");
    const auto outcome = launch::launch_local(argv, nproc, {"CPPLAN_RESULT_FILE=" + result.string()});
    if (outcome.status != launch::LaunchStatus::kOk) {
      fmt::print(err, "cpplan probe: {}\n", outcome.reason);
      return outcome.status == launch::LaunchStatus::kCancelled ? 130 : kExitRuntime;
    }
    std::ifstream in(result);
    set = samples_from_json(json::parse(in));
    std::error_code ec;
    fs::remove(result, ec);
  }
  const double steal = executor::host_steal_fraction(cpu_before, executor::host_cpu_time());
  const data::HardwareFingerprint hw = machine(cuda).fingerprint;
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
  if (const std::string line = session::contended_line(steal, "while the probe ran",
                                                       "its figures are a slowed machine's; probe again when the host is quiet");
      !line.empty())
    fmt::print(out, "{}\n", line);
  return kExitOk;
}

}  // namespace cpplan::exec
