// The GPU suite (label cuda), built only against a CUDA LibTorch and run by scripts/gpu-check.sh:
// FlashAttention's LSE as Ring merges it, CUDA-event timing, the caching allocator's peak, a real
// `cpplan run --device cuda` recorded in the store, and a GPU out-of-memory recorded as such.
// Multi-GPU NCCL runs need a machine with two GPUs or more: the last case runs them when it has,
// comparing every plan's latents with the one-GPU run's.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "data/store.h"
#include "executor/device.h"
#include "tests/executor/process.h"

// Last: LibTorch (above) defines glog's CHECK, which would replace Catch's and go uncounted.
#undef CHECK
#include <catch2/catch.hpp>

#include "tests/executor/attention_checks.h"
#include "tests/executor/saved_run.h"
#include "tests/support/skip.h"

namespace fs = std::filesystem;
using cpplan::test::run_process;
using nlohmann::json;
namespace ex = cpplan::executor;

namespace {

fs::path work_dir() { return cpplan::test::process_temp_dir("cpplan-cuda-"); }

at::Device gpu() {
  REQUIRE(ex::cuda_device_count() > 0);
  return ex::use_cuda_device(0);
}

std::vector<std::string> flux_tiny_run(const std::string& db) {
  return {CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--steps", "3", "--device", "cuda",
          "--db", db, "--json", "--timeout", "60"};
}

}  // namespace

TEST_CASE("FlashAttention's output and LSE, folded block by block, equal the fp32 math path", "[cuda]") {
  const at::Device d = gpu();
  cpplan::test::check_blockwise_attention(at::TensorOptions(at::kBFloat16).device(d), 2e-2);
  cpplan::test::check_blockwise_attention(at::TensorOptions(at::kFloat).device(d), 1e-4);
}

TEST_CASE("CUDA events time the device's work and the caching allocator's peak counts what was held", "[cuda]") {
  const at::Device d = gpu();
  ex::reset_peak_memory(d);
  const double before = ex::peak_memory_bytes(d);
  {
    at::Tensor big = at::empty({256LL << 20}, at::TensorOptions(at::kFloat).device(d));  // 1 GiB
    big.fill_(1.0);
    ex::synchronize(d);
  }
  CHECK(ex::peak_memory_bytes(d) >= before + (1LL << 30));

  const at::Tensor a = at::randn({8192, 8192}, at::TensorOptions(at::kBFloat16).device(d));
  (void)at::matmul(a, a);
  ex::synchronize(d);
  ex::StepTimer timer(d);
  const auto t0 = std::chrono::steady_clock::now();
  timer.start();
  for (int i = 0; i < 10; ++i) (void)at::matmul(a, a);
  const double ms = timer.stop_ms();
  const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const double tflops = 10 * 2.0 * 8192.0 * 8192.0 * 8192.0 / (ms * 1e-3) / 1e12;
  INFO("10 bf16 GEMMs 8192^3: " << ms << " ms by events, " << wall << " ms wall, " << tflops << " TFLOP/s");
  CHECK(ms > 0);
  CHECK(ms <= wall + 0.5);  // the events bracket the kernels, inside the host's interval
  CHECK(tflops < 5000);     // no GPU of today does more: the timer did not lose the work
}

TEST_CASE("cpplan run --device cuda runs flux-tiny in bf16 and records the GPU machine", "[cuda]") {
  const std::string db = (work_dir() / "runs.db").string();
  const auto p = run_process(flux_tiny_run(db));
  INFO(p.err);
  REQUIRE(p.code == 0);
  const json j = json::parse(p.out);
  CHECK(j["status"] == "ok");
  CHECK(j["measured"]["step_ms"].get<double>() > 0);
  CHECK(j["measured"]["peak_mem_bytes"].get<double>() > 0);
  CHECK(j["measured"]["achieved_tflops"].get<double>() > 0);
  auto store = cpplan::data::Store::open(db);
  REQUIRE(store.ok());
  auto runs = store.value().runs("flux-tiny");
  REQUIRE(runs.ok());
  REQUIRE(runs.value().size() == 1);
  const auto& r = runs.value().front();
  CHECK(r.run.dtype == "bf16");
  CHECK(r.run.attention_backend == "flash");
  CHECK(r.hardware.device_kind == "cuda");
  CHECK(!r.hardware.gpu_name.empty());
  CHECK(!r.hardware.cuda.empty());
}

TEST_CASE("a GPU rank past --max-memory is recorded as out of memory with the bytes it asked", "[cuda]") {
  const std::string db = (work_dir() / "oom.db").string();
  std::vector<std::string> args = flux_tiny_run(db);
  args.insert(args.end(), {"--max-memory", "1MiB"});
  const auto p = run_process(args);
  INFO(p.err);
  CHECK(p.code != 0);
  const json j = json::parse(p.out);
  CHECK(j["status"] == "oom");
  CHECK(j["oom_bytes"].get<double>() > 0);
}

TEST_CASE("cpplan probe measures the GPU's kernels and --hardware local plans with them", "[cuda][probe]") {
  const std::string db = (work_dir() / "probe.db").string();
  auto p = run_process({CPPLAN_BINARY, "probe", "--nproc", "1", "--quick", "--db", db});
  INFO(p.err);
  REQUIRE(p.code == 0);
  CHECK_THAT(p.out, Catch::Contains("kernel samples of " + ex::cuda_device_name(0)));
  auto store = cpplan::data::Store::open(db);
  REQUIRE(store.ok());
  p = run_process({CPPLAN_BINARY, "--hardware", "local", "--db", db, "--gpus", "1", "--model", "flux-tiny", "--res",
                   "128x128", "--json"});
  INFO(p.err);
  REQUIRE(p.code == 0);
  CHECK_THAT(p.out, Catch::Contains("\"source\": \"measured\""));
}

// Every CP variant, tensor and CFG parallelism on NCCL against the one-GPU run of the same model and
// size, as the CPU suite (test_multirank) does over Gloo, both in bf16. Tolerance: 2e-2 of the
// latents' largest magnitude. bf16 keeps 8 bits of mantissa (a relative step of 3.9e-3); a parallel
// plan sums in another order (FlashAttention's blocks, NCCL's bf16 all-reduce, Ring's LSE merge in
// fp32) over 3 steps; on CPU the same comparison measured 3.1e-3 to 3.6e-3 (test_device).
TEST_CASE("on two GPUs or more, every NCCL plan reproduces the one-GPU run's latents", "[cuda][nccl]") {
  const int gpus = ex::cuda_device_count();
  if (gpus < 2) CPPLAN_SKIP(gpus << " GPU visible: the NCCL plans need two");
  struct Case {
    std::string model, res;
    std::vector<std::string> plan;
    int ranks;
  };
  const std::vector<Case> cases = {
      {"flux-tiny", "128x128", {"--ulysses", "2"}, 2},
      {"flux-tiny", "128x128", {"--ring", "2"}, 2},
      {"flux-tiny", "128x128", {"--ring", "2", "--rotate-method", "p2p"}, 2},
      {"flux-tiny", "128x128", {"--tp", "2"}, 2},
      {"flux-tiny", "128x128", {"--ulysses", "2", "--sync-collectives"}, 2},
      {"flux-tiny", "112x112", {"--ulysses", "2", "--ulysses-anything"}, 2},  // 49 image tokens: uneven
      {"flux-tiny", "112x112", {"--ring", "2", "--ring-anything"}, 2},
      {"wan-tiny", "128x128", {"--cfg", "2"}, 2},
      {"flux-tiny", "112x112", {"--ulysses", "3", "--ulysses-anything"}, 3},
      {"flux-tiny", "112x112", {"--ring", "3", "--ring-anything"}, 3},
      {"flux-tiny", "128x128", {"--ring", "2", "--ulysses", "2"}, 4},  // Unified
      {"flux-tiny", "128x128", {"--ulysses", "4"}, 4},
      {"flux-tiny", "128x128", {"--ulysses", "2", "--tp", "2"}, 4},
      {"wan-tiny", "128x128", {"--cfg", "2", "--ulysses", "2"}, 4},
  };
  const fs::path dir = work_dir();
  const std::string db = (dir / "nccl.db").string();
  // Catch re-enters the test case once per section: each reference run is made once.
  static std::map<std::string, cpplan::test::SavedRun> references;
  for (const Case& c : cases) {
    std::string label = c.model + " " + c.res;
    for (const auto& a : c.plan) label += " " + a;
    if (c.ranks > gpus) {
      WARN(label << ": needs " << c.ranks << " GPUs, " << gpus << " visible (not run)");
      continue;
    }
    SECTION(label) {
      const std::string key = c.model + " " + c.res;
      if (!references.count(key))
        references[key] = cpplan::test::run_saved(c.model, c.res, {"--device", "cuda"}, dir, db);
      const cpplan::test::SavedRun& reference = references.at(key);
      std::vector<std::string> flags = c.plan;
      flags.insert(flags.end(), {"--device", "cuda"});
      const cpplan::test::SavedRun r = cpplan::test::run_saved(c.model, c.res, flags, dir, db);
      CHECK(r.result["status"] == "ok");
      REQUIRE(r.latents.sizes() == reference.latents.sizes());
      const double error = cpplan::test::max_relative_error(r.latents, reference.latents);
      INFO(label << " vs one GPU, both bf16: " << error);
      CHECK(error <= 2e-2);
      CHECK(error > 0);  // the plan did run in parallel, in another order
      CHECK(r.result["measured"]["comm_ms"].get<double>() > 0);  // timed by CUDA events (or synchronised)
      CHECK(r.result["measured"]["bytes_sent"].get<double>() > 0);
      // A --sync-collectives run is marked in the store (calibrate leaves it out); the others not.
      auto store = cpplan::data::Store::open(db);
      REQUIRE(store.ok());
      auto runs = store.value().runs(c.model);
      REQUIRE(runs.ok());
      REQUIRE(!runs.value().empty());
      const auto& newest = runs.value().front();
      CHECK(newest.id == r.result["run_id"].get<long long>());
      bool marked = false;
      for (const auto& [name, value] : newest.run.metrics) marked = marked || (name == "sync_collectives" && value == 1);
      const bool synchronised = std::find(c.plan.begin(), c.plan.end(), "--sync-collectives") != c.plan.end();
      CHECK(marked == synchronised);
    }
  }
}
