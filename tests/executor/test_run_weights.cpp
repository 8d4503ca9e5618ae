// `cpplan run --weights int8` as a real process, one rank and two over loopback (Gloo): the bytes
// the ranks hold are the hand-derived int8 weights and scales of flux-tiny's block linears (the
// rest in fp32), the latents stay close to the fp32 run's and every plan reproduces the int8
// single rank's, the prediction prices the planner's int8-weight-only bytes, the store keeps the
// run under a key of its own, calibrate leaves it out, and a bad --weights is one line, exit 3.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "data/store.h"
#include "exec/machine.h"
#include "executor/npy.h"
#include "tests/executor/process.h"

// Last: LibTorch (above) defines glog's CHECK, which would replace Catch's and go uncounted.
#undef CHECK
#include <catch2/catch.hpp>

#include "tests/executor/calibrate_exclusion.h"
#include "tests/executor/saved_run.h"

namespace fs = std::filesystem;
using cpplan::test::run_process;
using nlohmann::json;

namespace {

fs::path work_dir() { return cpplan::test::process_temp_dir("cpplan-run-weights-"); }

// flux-tiny (profiles/models/flux-tiny.toml) as the executor builds it: D = 192, F = 768 (GELU),
// 12 heads of 16 with q/k RMSNorm, 64 patch channels, 2 double-stream + 2 single-stream blocks,
// adaLN per block; the int8 layers are the blocks' attention and FFN linears (the planner's
// block_linear_params), one int8 byte a weight and one fp32 scale an output channel; everything
// else (biases, norms, modulation, embedders, final layer) fp32.
//   per double-block stream: adaLN 6D x D + 6D = 222,336 fp32 params = 889,344 B
//     q, k, v, out: 4 x (D x D int8 = 36,864 + D bias x 4 = 768 + D scales x 4 = 768) = 153,600 B
//     q/k norm 2 x 16 x 4 = 128 B
//     FFN in: F x D int8 147,456 + F bias 3,072 + F scales 3,072 = 153,600 B
//     FFN out: D x F int8 147,456 + D bias 768 + D scales 768 = 148,992 B
//     -> 1,345,664 B; a double block's two streams 2,691,328 B
//   per single block: adaLN 3D x D + 3D = 111,168 params = 444,672 B; q, k, v 3 x 38,400 = 115,200 B;
//     FFN in 153,600 B; norms 128 B; proj_out (D + F) x D int8 184,320 + 768 + 768 = 185,856 B
//     -> 899,456 B
//   embedders x 64 x D + D = 12,480, text D x D + D = 37,056, timestep 256 x D + D = 49,344 and
//   D x D + D = 37,056; final adaLN 2D x D + 2D = 74,112 and proj_out D x 64 + 64 = 12,352
//     -> 222,400 params = 889,600 B
//   whole: 2 x 2,691,328 + 2 x 899,456 + 889,600 = 8,071,168 B
// In fp32 the same 3,998,464 parameters take 15,993,856 B.
constexpr double kDoubleBlockInt8Bytes = 2691328, kSingleBlockInt8Bytes = 899456, kWholeLayersBytes = 889600;
constexpr double kInt8Bytes = 2 * kDoubleBlockInt8Bytes + 2 * kSingleBlockInt8Bytes + kWholeLayersBytes;
constexpr double kFp32Bytes = 3998464.0 * 4;

// The planner's int8-weight-only weights of flux-tiny as the CPU rank runs it (fp32): its block
// linears, 2 x 2 x (4D^2 + 2DF) + 2 x (4D^2 + 2DF) = 2,654,208 weights at one byte (scales not
// counted), the rest of the profile's 4,109,824 parameters at 4 bytes: 2,654,208 + 1,455,616 x 4.
constexpr double kPredictedInt8Bytes = 2654208 + 1455616.0 * 4;

// Int8 weights against fp32: each weight is off by at most half its row's step, max |w| / 255, a
// rounding error about 0.3% of the row's spread (uniform, max |w| / 255 / sqrt(3) over Gaussian
// rows whose max is about 3 standard deviations); through 14 linears a pass and 3 steps it moves
// the latents by a few tenths of a percent at most of their largest value (measured 1.8e-3 on
// flux-tiny 128x128, seed 0). The bound leaves room for other seeds and BLAS orders, and is far
// below the latents' own scale (a wrong scale or a transposed shard gives errors of order 1).
constexpr double kInt8Tolerance = 2e-2;

double relative_error(const at::Tensor& a, const at::Tensor& reference) {
  return (a - reference).abs().max().item<double>() / reference.abs().max().item<double>();
}

cpplan::test::SavedRun run(const std::string& db, const std::vector<std::string>& flags) {
  return cpplan::test::run_saved("flux-tiny", "128x128", flags, work_dir(), db);
}

std::map<std::string, double> metrics_of(const cpplan::data::RunRecord& r) {
  return {r.metrics.begin(), r.metrics.end()};
}

}  // namespace

TEST_CASE("cpplan run --weights int8 on one rank holds the hand-derived int8 bytes and stays close to fp32",
          "[executor][int8][store]") {
  const std::string db = (work_dir() / "int8-one.db").string();
  // --hardware: the prediction beside each run (this machine has no probe in this database).
  const auto fp32 = run(db, {"--hardware", "h100-sxm"});
  const auto int8 = run(db, {"--weights", "int8", "--hardware", "h100-sxm"});
  REQUIRE(int8.result["status"] == "ok");
  const json& m = int8.result["measured"];
  CHECK(int8.result["weights"] == "int8");
  CHECK(m["weights"] == "int8");
  CHECK(fp32.result["weights"] == "fp32");
  CHECK(m["param_bytes"].get<double>() == kInt8Bytes);
  CHECK(fp32.result["measured"]["param_bytes"].get<double>() == kFp32Bytes);
  // The counted CPU allocator's load phase sees exactly the tensors' bytes.
  CHECK(m["phases"]["load"].get<double>() == kInt8Bytes);
  // The prediction prices the planner's int8-weight-only weights; fp32's its 4 bytes a parameter.
  CHECK(int8.result["predicted"]["phases"]["load"].get<double>() == kPredictedInt8Bytes);
  CHECK(fp32.result["predicted"]["phases"]["load"].get<double>() == 4109824.0 * 4);
  const double error = relative_error(int8.latents, fp32.latents);
  std::printf("flux-tiny 128x128, 3 steps: int8 weights %.0f B against fp32 %.0f B; latents %.2e from fp32\n",
              kInt8Bytes, kFp32Bytes, error);
  CHECK(error > 0);  // the weights were quantized
  CHECK(error <= kInt8Tolerance);

  auto store = cpplan::data::Store::open(db);
  REQUIRE(store.ok());
  auto runs = store.value().runs("flux-tiny");
  REQUIRE(runs.ok());
  REQUIRE(runs.value().size() == 2);  // newest first: the int8 run did not replace the fp32 one
  const auto& q = runs.value()[0].run;
  const auto& f = runs.value()[1].run;
  CHECK(q.run_key == f.run_key + "|weights-int8");
  CHECK(q.dtype == "fp32");  // the compute dtype
  auto qm = metrics_of(q), fm = metrics_of(f);
  CHECK(qm["weights.int8"] == 1);
  CHECK(fm.count("weights.int8") == 0);
  CHECK(qm["rank0.param_bytes"] == kInt8Bytes);
  CHECK(fm["rank0.param_bytes"] == kFp32Bytes);
}

TEST_CASE("cpplan run --weights int8 on 2 ranks over loopback shards the int8 weights with their scales",
          "[executor][int8][multirank]") {
  const std::string db = (work_dir() / "int8-two.db").string();
  const auto one = run(db, {"--weights", "int8"});
  SECTION("tensor parallel 2: each rank holds half of every int8 weight and the scales of its rows") {
    // Per rank: column-parallel q, k, v and FFN in keep half their rows (int8, bias and scales);
    // row-parallel out, FFN out and proj_out half their columns, their bias and scales whole.
    //   double-block stream: adaLN 889,344; q, k, v 3 x (18,432 + 384 + 384) = 57,600; out 18,432 +
    //     768 + 768 = 19,968; norms 128; FFN in 73,728 + 1,536 + 1,536 = 76,800; FFN out 73,728 +
    //     768 + 768 = 75,264 -> 1,119,104 B; a double block 2,238,208 B
    //   single block: adaLN 444,672; q, k, v 57,600; FFN in 76,800; norms 128; proj_out 92,160 + 768
    //     + 768 = 93,696 -> 672,896 B
    //   whole layers 889,600 B: 2 x 2,238,208 + 2 x 672,896 + 889,600 = 6,711,808 B
    const auto tp = run(db, {"--weights", "int8", "--tp", "2"});
    CHECK(tp.result["measured"]["param_bytes"].get<double>() == 6711808.0);
    CHECK(relative_error(tp.latents, one.latents) <= 1e-4);
    auto store = cpplan::data::Store::open(db);
    auto runs = store.value().runs("flux-tiny");
    REQUIRE(runs.ok());
    auto m = metrics_of(runs.value().front().run);
    CHECK(m["rank0.param_bytes"] == 6711808.0);
    CHECK(m["rank1.param_bytes"] == 6711808.0);
  }
  SECTION("ulysses 2 with fully sharded blocks: the int8 weights and their scales gathered apart") {
    const auto fsdp = run(db, {"--weights", "int8", "--ulysses", "2", "--fully-shard", "2"});
    CHECK(relative_error(fsdp.latents, one.latents) <= 1e-4);
    // Each rank holds half of each block's int8 bytes and half of its fp32 ones, each flat padded
    // to an even count (at most one element more), and the whole layers.
    const double blocks = 2 * kDoubleBlockInt8Bytes + 2 * kSingleBlockInt8Bytes;
    CHECK(fsdp.result["measured"]["param_bytes"].get<double>() == Approx(kWholeLayersBytes + blocks / 2).margin(32));
  }
  SECTION("PipeFusion 2: each stage holds its blocks' int8 weights and the whole layers") {
    const auto pf = run(db, {"--weights", "int8", "--pipefusion", "2", "--num-pipeline-patch", "2"});
    REQUIRE(pf.result["status"] == "ok");
    auto store = cpplan::data::Store::open(db);
    auto runs = store.value().runs("flux-tiny");
    REQUIRE(runs.ok());
    auto m = metrics_of(runs.value().front().run);
    CHECK(m["rank0.param_bytes"] == kWholeLayersBytes + 2 * kDoubleBlockInt8Bytes);  // stage 0: the double blocks
    CHECK(m["rank1.param_bytes"] == kWholeLayersBytes + 2 * kSingleBlockInt8Bytes);  // stage 1: the single blocks
  }
}

TEST_CASE("calibrate leaves out the runs made with int8 weights", "[executor][int8][store]") {
  cpplan::test::check_calibrate_leaves_out((work_dir() / "int8-calibrate.db").string(), "weights-int8",
                                           {"weights.int8", 1});
}

TEST_CASE("cpplan run refuses a --weights it does not hold in one line with exit 3 and records nothing",
          "[executor][int8]") {
  const std::string db = (work_dir() / "int8-refused.db").string();
  for (const std::string weights : {"int4", "INT8", "fp8"}) {
    const auto p = run_process({CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--steps", "2",
                                "--weights", weights, "--ulysses", "2", "--db", db});
    INFO(weights << ": " << p.err);
    CHECK(p.code == 3);
    CHECK(p.err == "cpplan: --weights = " + weights +
                       ": must be same (the blocks' linear weights in the --dtype) or int8 (weight-only int8, one "
                       "scale per output channel)\n");
    CHECK(p.out.empty());
  }
  CHECK_FALSE(fs::exists(db));  // no database, no row
}
