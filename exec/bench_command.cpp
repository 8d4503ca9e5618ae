#include "exec/commands.h"

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "cli/app.h"
#include "exec/machine.h"
#include "executor/comm.h"
#include "launch/launcher.h"
#include "executor/model.h"
#include "executor/rendezvous.h"
#include "executor/runner.h"
#include "session/jobs/planner_speed.h"
#include "session/query/query_fields.h"

namespace cpplan::exec {

using namespace cli;

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// The fastest sample: other load on the machine only ever adds time, so the minimum is the
// least biased estimate of what the code itself costs.
double fastest(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

// ---------------------------------------------------------------------------- executor overhead
// A bare LibTorch loop over the same modules and shapes: the model's forward and the Euler
// update, with no mesh, no CP split or gather, no timers around collectives.
double bare_step_ms(const executor::RunSpec& spec, int steps) {
  const ModelProfile& m = *spec.model;
  executor::Comm none;
  auto model = executor::build_model(m, spec.seed, none, executor::DeviceSpec{}, executor::attention_op(CpVariant::kNone));
  const auto seq = *compute_sequence(m, spec.resolution, spec.frames, m.text_tokens);
  const int64_t g = m.pixel_granularity();
  executor::ForwardInputs in;
  in.image_rope = executor::image_rope_angles(seq.latent_frames, spec.resolution.height / g, spec.resolution.width / g, m.head_dim);
  in.text_rope = executor::text_rope_angles(seq.text_tokens, m.head_dim);
  const bool cfg = m.guidance == Guidance::kTrueCfg;
  const int64_t batch = cfg ? 2 : 1;
  at::Tensor x = at::randn({1, seq.image_tokens, m.in_channels});
  in.text = at::randn({batch, seq.text_tokens, m.hidden()});
  executor::AttentionContext ctx;
  std::vector<double> times;
  for (int i = -1; i < steps; ++i) {  // one warm-up pass
    const auto t0 = Clock::now();
    in.latents = cfg ? at::cat({x, x}) : x;
    in.timestep = at::full({batch}, 0.5, at::kFloat);
    at::Tensor v = model->forward(in, ctx);
    if (cfg) {
      const auto two = v.chunk(2);
      v = two[1] + 5.0 * (two[0] - two[1]);
    }
    x = x - 0.1 * v;
    if (i >= 0) times.push_back(ms_since(t0));
  }
  return fastest(times);
}

json bench_executor(const ProfileCatalog& c, bool quick) {
  json j = json::object();
  double worst = 0;
  for (const std::string name : {"flux-tiny", "wan-tiny"}) {
    const ModelProfile* m = c.find_model(name);
    executor::RunSpec spec;
    spec.model = m;
    spec.resolution = {m->default_width, m->default_height};
    spec.frames = m->default_frames;
    spec.steps = quick ? 20 : 60;
    spec.warmup = 2;
    // Interleave the two so that machine noise hits both alike; keep the best of each.
    double ours = 1e300, bare = 1e300;
    for (int round = 0; round < 5; ++round) {
      ours = std::min(ours, fastest(executor::run_rank(spec, c10::make_intrusive<c10d::HashStore>(), 0, 1).step_ms));
      bare = std::min(bare, bare_step_ms(spec, spec.steps));
    }
    j[name] = {{"cpplan_step_ms", ours}, {"bare_libtorch_step_ms", bare}, {"ratio", ours / bare}};
    worst = std::max(worst, ours / bare);
  }
  j["executor_overhead_ratio"] = worst;
  return j;
}

// Multi-rank step time of each CP variant against one rank, through real `cpplan run` ranks.
json bench_variants(const std::string& exe, bool quick) {
  json j = json::object();
  const fs::path db = fs::temp_directory_path() / fmt::format("cpplan-bench-{}.db", getpid());
  auto run = [&](std::vector<std::string> plan) -> double {
    std::vector<std::string> argv{exe, "run", "--model", "flux-tiny", "--res", "128x128", "--steps",
                                  quick ? "6" : "30", "--warmup", "2", session::flag_of("db"), db.string(), "--json"};
    argv.insert(argv.end(), plan.begin(), plan.end());
    const fs::path out = fs::temp_directory_path() / fmt::format("cpplan-bench-{}.json", getpid());
    launch::run_to_file(argv, out.string());  // the run's JSON, or nothing when it failed
    double ms = 0;
    try {
      std::ifstream in(out);
      ms = json::parse(in)["measured"]["step_ms"].get<double>();
    } catch (...) {
    }
    std::error_code ec;
    fs::remove(out, ec);
    return ms;
  };
  const double single = run({});
  j["single_rank_step_ms"] = single;
  const std::vector<std::pair<std::string, std::vector<std::string>>> plans = {
      {"ring 2", {"--ring", "2"}},
      {"ring 2 (p2p)", {"--ring", "2", "--rotate-method", "p2p"}},
      {"ulysses 2", {"--ulysses", "2"}},
      {"ulysses 2 (anything)", {"--ulysses", "2", "--ulysses-anything"}},
      {"ring 2 (anything)", {"--ring", "2", "--ring-anything"}},
      {"unified 2x2", {"--ring", "2", "--ulysses", "2"}},
      {"tp 2", {"--tp", "2"}}};
  for (const auto& [name, flags] : plans) {
    const double ms = run(flags);
    j[name] = {{"step_ms", ms}, {"vs_single_rank", single > 0 ? ms / single : 0}};
  }
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db.string() + suffix, ec);
  return j;
}

// ---------------------------------------------------------------------------- collectives
// One rank of the collective benchmark: the executor's wrappers against raw c10d calls of the
// same sizes on the same Gloo group, interleaved, best of N.
json collectives_rank(const executor::Rendezvous& r, bool quick) {
  const int rank = r.rank, world = r.world_size;
  auto store = executor::connect_store(r);
  auto pg = executor::gloo_group(store, "bench", rank, world, r.timeout);
  executor::CommStats stats;
  executor::Comm comm(pg, rank, world, &stats);
  // Pairs per case: enough that the median ratio of identical calls sits within about 1% of 1
  // (--quick, for CI: within a few %).
  const int small_reps = quick ? 200 : 800, large_reps = quick ? 80 : 300;
  json j = json::object();
  for (const int64_t bytes : {int64_t{1} << 20, int64_t{16} << 20}) {
    const int64_t n = bytes / 4;
    at::Tensor t = at::randn({n});
    struct Case {
      std::string name;
      double factor;
      std::function<void()> ours, raw;
    };
    std::vector<Case> cases;
    cases.push_back({"all_gather", (world - 1.0) / world, [&] { (void)comm.all_gather_cat(t, 0); }, [&] {
                       std::vector<at::Tensor> in{t};
                       std::vector<std::vector<at::Tensor>> out(1);
                       for (int i = 0; i < world; ++i) out[0].push_back(at::empty_like(t));
                       pg->allgather(out, in)->wait();
                     }});
    cases.push_back({"all_to_all", (world - 1.0) / world, [&] { (void)comm.all_to_all(t.view({world, -1})); }, [&] {
                       at::Tensor out = at::empty_like(t);
                       std::vector<int64_t> splits;
                       pg->alltoall_base(out, t, splits, splits)->wait();
                     }});
    cases.push_back({"all_reduce", 2.0 * (world - 1.0) / world, [&] { comm.all_reduce(t); }, [&] {
                       std::vector<at::Tensor> v{t};
                       pg->allreduce(v)->wait();
                     }});
    for (auto& c : cases) {
      std::vector<double> ours, raw;
      const int reps = bytes <= (int64_t{1} << 20) ? small_reps : large_reps;
      for (int i = 0; i < reps; ++i) {
        // Alternate which goes first so that neither always runs on a warmer cache.
        for (int k = 0; k < 2; ++k) {
          const bool ours_now = (i + k) % 2 == 0;
          pg->barrier()->wait();
          const auto t0 = Clock::now();
          (ours_now ? c.ours : c.raw)();
          (ours_now ? ours : raw).push_back(ms_since(t0));
        }
      }
      // nccl-tests: algbw = size / time (size: the gathered output for all_gather), busbw = algbw x factor.
      const double size = c.name == "all_gather" ? static_cast<double>(bytes) * world : static_cast<double>(bytes);
      // Each repetition pairs the two calls back to back under the same conditions; the median
      // of the per-pair ratios cancels the machine's drift, which a ratio of two minima does not.
      std::vector<double> ratios;
      for (std::size_t i = 0; i < ours.size(); ++i) ratios.push_back(raw[i] / ours[i]);
      std::sort(ratios.begin(), ratios.end());
      const double ours_ms = fastest(ours), raw_ms = fastest(raw);
      j[fmt::format("{} {} MiB", c.name, bytes >> 20)] = {
          {"busbw_gbps", size * c.factor / (ours_ms * 1e-3) / 1e9},
          {"raw_busbw_gbps", size * c.factor / (raw_ms * 1e-3) / 1e9},
          {"efficiency", ratios[ratios.size() / 2]}};
    }
  }
  return j;
}

json bench_collectives(const std::string& exe, bool quick) {
  const fs::path result = fs::temp_directory_path() / fmt::format("cpplan-bench-coll-{}.json", getpid());
  std::vector<std::string> argv{exe, "bench", "--worker", "collectives"};
  if (quick) argv.push_back("--quick");
  const auto outcome = launch::launch_local(argv, 2, {"CPPLAN_RESULT_FILE=" + result.string()});
  json j;
  if (outcome.status != launch::LaunchStatus::kOk) return json{{"error", outcome.reason}};
  std::ifstream in(result);
  j = json::parse(in);
  std::error_code ec;
  fs::remove(result, ec);
  // Ratios aggregate by their geometric mean; the worst single case is reported beside it.
  double worst = 1e300, log_sum = 0;
  int cases = 0;
  for (const auto& [k, v] : j.items()) {
    const double e = v["efficiency"].get<double>();
    worst = std::min(worst, e);
    log_sum += std::log(e);
    ++cases;
  }
  j["collective_efficiency"] = cases ? std::exp(log_sum / cases) : 0.0;
  j["collective_efficiency_worst"] = worst;
  return j;
}

constexpr const char* kGpuCounts[] = {"1", "8", "64", "512", "4096"};

void print_human(std::ostream& out, const json& r) {
  fmt::print(out, "planner: {:.3g} plans/s through the cost model (target >= 1e6)\n", r["plans_per_second"].get<double>());
  for (const char* gpus : kGpuCounts) {
    const json& v = r["planner"]["rank_all_plans"][gpus];
    fmt::print(out, "  rank every plan, {:>4} GPUs: {:8.3f} ms ({} plans)\n", gpus, v["ms"].get<double>(),
               v["plans"].get<int>());
  }
  fmt::print(out, "executor overhead: {:.3f} x a bare LibTorch loop (target <= 1.05)\n",
             r["executor_overhead_ratio"].get<double>());
  for (const std::string m : {"flux-tiny", "wan-tiny"})
    fmt::print(out, "  {:<10} cpplan {:.2f} ms/step, bare {:.2f} ms/step\n", m,
               r["executor"][m]["cpplan_step_ms"].get<double>(), r["executor"][m]["bare_libtorch_step_ms"].get<double>());
  fmt::print(out, "multi-rank vs single rank, flux-tiny 128x128 on CPU (single {:.2f} ms/step):\n",
             r["variants"]["single_rank_step_ms"].get<double>());
  for (const auto& [k, v] : r["variants"].items())
    if (v.is_object())
      fmt::print(out, "  {:<22} {:8.2f} ms/step  x{:.2f}\n", k, v["step_ms"].get<double>(), v["vs_single_rank"].get<double>());
  fmt::print(out, "collectives (2 Gloo ranks, loopback): efficiency {:.3f} of raw c10d, geometric mean (worst case {:.3f}; target >= 0.95)\n",
             r["collective_efficiency"].get<double>(), r["collectives"].value("collective_efficiency_worst", 0.0));
  for (const auto& [k, v] : r["collectives"].items())
    if (v.is_object())
      fmt::print(out, "  {:<20} busbw {:7.3f} GB/s, raw {:7.3f} GB/s, efficiency {:.3f}\n", k,
                 v["busbw_gbps"].get<double>(), v["raw_busbw_gbps"].get<double>(), v["efficiency"].get<double>());
}

void print_markdown(std::ostream& out, const json& r) {
  fmt::print(out, "| figure | value | target |\n|---|---|---|\n");
  fmt::print(out, "| plans per second through the cost model | {:.3g} | >= 1e6 |\n", r["plans_per_second"].get<double>());
  for (const std::string gpus : kGpuCounts) {
    const json& v = r["planner"]["rank_all_plans"][gpus];
    fmt::print(out, "| rank every plan, {} GPUs ({} plans) | {:.3f} ms | {} |\n", gpus, v["plans"].get<int>(),
               v["ms"].get<double>(), gpus == "4096" ? "< 20 ms" : "");
  }
  fmt::print(out, "| executor overhead ratio (worst of flux-tiny, wan-tiny) | {:.3f} | <= 1.05 |\n",
             r["executor_overhead_ratio"].get<double>());
  fmt::print(out, "| collective efficiency vs raw c10d (geometric mean; worst case) | {:.3f}; {:.3f} | >= 0.95 |\n\n",
             r["collective_efficiency"].get<double>(), r["collectives"].value("collective_efficiency_worst", 0.0));
  fmt::print(out, "| plan (flux-tiny 128x128, CPU) | step ms | vs 1 rank |\n|---|---|---|\n");
  fmt::print(out, "| single rank | {:.2f} | 1.00 |\n", r["variants"]["single_rank_step_ms"].get<double>());
  for (const auto& [k, v] : r["variants"].items())
    if (v.is_object())
      fmt::print(out, "| {} | {:.2f} | {:.2f} |\n", k, v["step_ms"].get<double>(), v["vs_single_rank"].get<double>());
  fmt::print(out, "\n| collective | executor busbw GB/s | raw c10d busbw GB/s | efficiency |\n|---|---|---|---|\n");
  for (const auto& [k, v] : r["collectives"].items())
    if (v.is_object())
      fmt::print(out, "| {} | {:.3f} | {:.3f} | {:.3f} |\n", k, v["busbw_gbps"].get<double>(),
                 v["raw_busbw_gbps"].get<double>(), v["efficiency"].get<double>());
}

}  // namespace

int bench_command(const BenchArgs& b, const Args& a, const std::string& exe, std::ostream& out, std::ostream& err) {
  if (!b.worker.empty()) {
    if (b.worker != "collectives") throw InvalidInput{fmt::format("--worker = {}: must be collectives", b.worker)};
    const executor::Rendezvous rendezvous = rendezvous_env(std::chrono::seconds(60));
    const json j = collectives_rank(rendezvous, b.quick);
    if (rendezvous.rank == 0) std::ofstream(std::getenv("CPPLAN_RESULT_FILE")) << j.dump();
    return kExitOk;
  }
  auto catalog = ProfileCatalog::load(profile_search_path(a.profiles, exe));
  if (!catalog) throw InvalidInput{catalog.error().message};
  const auto t0 = Clock::now();
  json r;
  r["planner"] = session::planner_speed(*catalog, b.quick);
  r["plans_per_second"] = r["planner"]["plans_per_second"];
  r["plan_ms_4096_gpus"] = r["planner"]["plan_ms_4096_gpus"];
  r["executor"] = bench_executor(*catalog, b.quick);
  r["executor_overhead_ratio"] = r["executor"]["executor_overhead_ratio"];
  r["variants"] = bench_variants(exe, b.quick);
  r["collectives"] = bench_collectives(exe, b.quick);
  r["collective_efficiency"] = r["collectives"].value("collective_efficiency", 0.0);
  r["seconds"] = ms_since(t0) / 1e3;
  if (b.json) out << r.dump(2) << '\n';
  else if (b.markdown) print_markdown(out, r);
  else print_human(out, r);
  (void)err;
  return kExitOk;
}

}  // namespace cpplan::exec
