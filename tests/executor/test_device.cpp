// The device and precision a run names: bf16 ranks (the precision of GPU runs) computing the same
// function as fp32 ones, the attention block merge every Ring variant relies on in both
// precisions, and the one-line refusals of --device and --dtype.
#include <nlohmann/json.hpp>

#include <filesystem>

#include "data/store.h"
#include "executor/device.h"
#include "tests/executor/process.h"

// Last: LibTorch (above) defines glog's CHECK, which would replace Catch's and go uncounted.
#undef CHECK
#include <catch2/catch.hpp>

#include "tests/executor/attention_checks.h"
#include "tests/executor/saved_run.h"

namespace fs = std::filesystem;
using cpplan::test::run_process;
using nlohmann::json;

namespace {

fs::path work_dir() { return cpplan::test::process_temp_dir("cpplan-device-"); }

using Run = cpplan::test::SavedRun;

Run run_flux_tiny(const std::vector<std::string>& flags) {
  return cpplan::test::run_saved("flux-tiny", "128x128", flags, work_dir(), (work_dir() / "runs.db").string());
}

}  // namespace

TEST_CASE("blockwise attention merged with the LSE equals full attention, fp32 and bf16", "[executor][attention]") {
  SECTION("fp32") { cpplan::test::check_blockwise_attention(at::TensorOptions(at::kFloat), 1e-5); }
  SECTION("bf16") { cpplan::test::check_blockwise_attention(at::TensorOptions(at::kBFloat16), 2e-2); }
}

TEST_CASE("bf16 ranks compute the fp32 run's function and parallel bf16 runs agree with one rank",
          "[executor][multirank][bf16]") {
  const Run fp32 = run_flux_tiny({});
  const Run single = run_flux_tiny({"--dtype", "bf16"});
  CHECK(single.result["status"] == "ok");
  // bf16 weights and activations (8 bits of mantissa) over 3 Euler steps.
  const double vs_fp32 = cpplan::test::max_relative_error(single.latents, fp32.latents);
  INFO("bf16 vs fp32, one rank: " << vs_fp32);
  CHECK(vs_fp32 <= 2e-2);  // measured 4.7e-3
  CHECK(vs_fp32 > 0);  // it did run in bf16
  for (const std::vector<std::string>& plan : {std::vector<std::string>{"--ring", "2", "--rotate-method", "p2p"},
                                              std::vector<std::string>{"--ulysses", "2"},
                                              std::vector<std::string>{"--tp", "2"}}) {
    std::vector<std::string> args = plan;
    args.insert(args.end(), {"--dtype", "bf16"});
    SECTION("bf16 " + plan[0] + " " + plan[1]) {
      const Run r = run_flux_tiny(args);
      const double error = cpplan::test::max_relative_error(r.latents, single.latents);
      INFO(plan[0] << " 2 vs one rank, both bf16: " << error);
      CHECK(error <= 1e-2);  // measured 3.1e-3 to 3.6e-3
      CHECK(r.result["measured"]["achieved_tflops"].get<double>() > 0);
    }
  }
  auto store = cpplan::data::Store::open((work_dir() / "runs.db").string());
  REQUIRE(store.ok());
  auto runs = store.value().runs("flux-tiny");
  REQUIRE(runs.ok());
  REQUIRE(!runs.value().empty());
  CHECK(runs.value().front().run.dtype == "bf16");
  CHECK(runs.value().back().run.dtype == "fp32");
}

TEST_CASE("a bad --dtype or --device (run, probe) is one line and exit 3", "[executor][cli]") {
  const std::string db = (work_dir() / "refused.db").string();
  auto p = run_process({CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--dtype", "fp16", "--db", db});
  CHECK(p.code == 3);
  CHECK(p.err == "cpplan: --dtype = fp16: must be fp32 or bf16\n");
  p = run_process({CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--device", "tpu", "--db", db});
  CHECK(p.code == 3);
  CHECK(p.err == "cpplan: --device = tpu: must be cpu or cuda\n");
  if (!cpplan::executor::cuda_built()) {
    p = run_process({CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--device", "cuda", "--db", db});
    CHECK(p.code == 3);
    CHECK_THAT(p.err, Catch::Contains("--device = cuda: this build's LibTorch has no CUDA"));
  }
  p = run_process({CPPLAN_BINARY, "probe", "--device", "tpu", "--db", db});
  CHECK(p.code == 3);
  CHECK(p.err == "cpplan: --device = tpu: must be cpu or cuda\n");
  if (!cpplan::executor::cuda_built()) {
    p = run_process({CPPLAN_BINARY, "probe", "--device", "cuda", "--db", db});
    CHECK(p.code == 3);
    CHECK_THAT(p.err, Catch::Contains("--device = cuda: this build's LibTorch has no CUDA"));
  }
  CHECK_FALSE(fs::exists(db));
}
