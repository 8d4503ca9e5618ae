// The DiT's linears in low precision (--dtype, core/precision.h): weights at the format's bytes,
// GEMMs on the format's tensor peak, the activations' quantization as memory-bound passes, and
// the GPUs and frameworks that run each format. Expected values are hand derivations from the
// model profile's shapes, the datasheet peaks and the profile's fractions (the inputs), never the
// cost model's own totals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "core/framework.h"
#include "core/precision.h"
#include "costmodel/cost_model.h"
#include "planner/frameworks.h"
#include "planner/validate.h"
#include "session/engine/engine.h"
#include "tests/session/session_support.h"
#include "tests/support/fixtures.h"

using cpplan::HardwareProfile;
using cpplan::ModelProfile;
using cpplan::Precision;
using cpplan::costmodel::CostModel;
using cpplan::costmodel::DatasheetModel;
using cpplan::costmodel::Prediction;
using cpplan::test::config;
using cpplan::test::make_query;

namespace {

Precision parsed(const std::string& name) {
  const auto p = cpplan::parse_precision(name);
  REQUIRE(p.ok());
  return *p;
}

Prediction predict(const cpplan::Query& q) {
  const DatasheetModel hw(*q.hardware);
  return CostModel(hw).predict(q, config(1, 1), cpplan::CpVariant::kNone);
}

// One GEMM of rows x k x n, by hand: the roofline of its FLOPs over the tensor peak at the profile's
// GEMM fraction (saturating in the rows) and of its bytes over the HBM at the memory fraction.
struct Gemm {
  double rows, k, n;
};
double gemm_ms(const HardwareProfile& hw, const Gemm& g, double peak_tflops, double weight_bytes, double in_bytes) {
  const double eff = hw.gemm_efficiency * g.rows / (g.rows + hw.gemm_half_rows);
  const double math = 2 * g.rows * g.k * g.n / (peak_tflops * 1e12 * eff);
  const double bytes = g.k * g.n * weight_bytes + g.rows * (g.k * in_bytes + g.n * 2);
  const double traffic = bytes / (hw.memory_bandwidth_gbps * 1e9 * hw.memory_efficiency);
  return std::max(math, traffic) * 1e3;
}

// A FLUX.1 double block's linears at 1024x1024: per stream q, k, v and the output projection
// (D x D each) and the GELU MLP up and down (D x F, F x D), on the 4096 image and 512 text rows.
std::vector<Gemm> flux_double_block(const ModelProfile& m) {
  const double d = m.hidden(), f = m.ffn_hidden;
  std::vector<Gemm> out;
  for (const double rows : {4096.0, 512.0}) {
    for (int i = 0; i < 4; ++i) out.push_back({rows, d, d});
    out.push_back({rows, d, f});
    out.push_back({rows, f, d});
  }
  return out;
}

// FLUX.1-dev at 1024x1024 on one H100 under diffusers' runtime, in BF16.
cpplan::Query flux_on_h100() {
  const auto& cat = cpplan::test::fitted_catalog();
  cpplan::Query q = make_query("flux.1-dev", 1, 1024, 1024);
  q.hardware = cat.find_hardware("h100-sxm");
  q.runtime = cat.find_runtime("diffusers");
  return q;
}

}  // namespace

TEST_CASE("FP8 weight memory and GEMM time of one FLUX block on an H100, by hand", "[costmodel][precision]") {
  const cpplan::Query q = flux_on_h100();
  const HardwareProfile& hw = *q.hardware;
  const ModelProfile& m = *q.model;
  REQUIRE(m.ffn_kind == cpplan::FfnKind::kGelu);
  REQUIRE(m.text_width() == m.hidden());
  REQUIRE(m.text_ffn() == m.ffn_hidden);
  cpplan::Query fp8 = q;
  fp8.precision = parsed("fp8");
  const Prediction bf = predict(q), p8 = predict(fp8);
  const auto& b16 = bf.blocks[0];
  const auto& b8 = p8.blocks[0];
  REQUIRE(b8.kind == cpplan::BlockKind::kDouble);
  const double n = b8.count;

  // GEMMs: e4m3 weights (1 byte) and inputs, BF16 outputs, on the FP8 peak (1,978.9 TFLOPS, twice
  // the BF16 one) at the BF16 GEMM's fraction of it.
  REQUIRE(hw.peaks.fp8_tflops == Approx(1978.9));
  double by_hand_fp8 = 0, by_hand_bf16 = 0, inputs = 0;
  for (const Gemm& g : flux_double_block(m)) {
    by_hand_fp8 += gemm_ms(hw, g, hw.peaks.fp8_tflops, 1, 1);
    by_hand_bf16 += gemm_ms(hw, g, hw.bf16_tflops, 2, 2);
    inputs += g.rows * g.k;
  }
  CHECK(b16.gemm_ms / n == Approx(by_hand_bf16).epsilon(1e-9));
  CHECK(b8.gemm_ms / n == Approx(by_hand_fp8).epsilon(1e-9));
  CHECK(by_hand_fp8 < 0.55 * by_hand_bf16);  // compute-bound at these sizes: about half
  // Quantizing each GEMM's input per tensor, eager: an absolute-maximum pass reading the BF16 input
  // (2 bytes an element), then a pass reading it again and writing e4m3 (2 + 1): 5 bytes an element
  // over the HBM, and two more kernels for the host to launch per GEMM.
  const double hbm = hw.memory_bandwidth_gbps * 1e9 * hw.memory_efficiency;
  CHECK((b8.memory_ms - b16.memory_ms) / n == Approx(inputs * 5 / hbm * 1e3).epsilon(1e-9));
  const double gemms = static_cast<double>(flux_double_block(m).size());
  CHECK((b8.ops - b16.ops) / n == Approx(2 * gemms));

  // Weights: every block's attention and MLP linears in e4m3, the rest (adaLN modulation,
  // embedders, output layer) in BF16. A double block holds 2 x (4 D^2 + 2 D F) = 24 D^2 of linears,
  // a single block q, k, v (3 D^2), the MLP in (D x 4D) and the joint output ((D + 4D) x D) = 12 D^2.
  const double d2 = m.hidden() * m.hidden();
  REQUIRE(m.ffn_hidden == 4 * m.hidden());
  int doubles = 0, singles = 0;
  for (const auto& g : m.blocks) (g.kind == cpplan::BlockKind::kDouble ? doubles : singles) += g.count;
  REQUIRE(doubles == 19);
  REQUIRE(singles == 38);
  const double linears = (24.0 * doubles + 12.0 * singles) * d2;  // 8.61e9 of FLUX.1-dev's 11.9e9
  CHECK(bf.memory.transformer_weights == Approx(2 * m.params));
  CHECK(p8.memory.transformer_weights == Approx(linears * 1 + (m.params - linears) * 2));
}

TEST_CASE("Per-row and static scales quantize in one pass, and weight-only formats keep the BF16 GEMM", "[costmodel][precision]") {
  const auto& cat = cpplan::test::fitted_catalog();
  const cpplan::Query q = flux_on_h100();
  const HardwareProfile& hw = *q.hardware;
  const double hbm = hw.memory_bandwidth_gbps * 1e9 * hw.memory_efficiency;
  double inputs = 0;
  for (const Gemm& g : flux_double_block(*q.model)) inputs += g.rows * g.k;
  const Prediction bf = predict(q);
  const double n = bf.blocks[0].count;
  for (const char* name : {"fp8-row", "fp8-static"}) {
    cpplan::Query r = q;
    r.precision = parsed(name);
    const Prediction p = predict(r);
    INFO(name);
    // read BF16 (2 bytes), write e4m3 (1): one kernel per GEMM
    CHECK((p.blocks[0].memory_ms - bf.blocks[0].memory_ms) / n == Approx(inputs * 3 / hbm * 1e3).epsilon(1e-9));
    CHECK((p.blocks[0].ops - bf.blocks[0].ops) / n == Approx(12));
  }
  // Weight-only: a BF16 GEMM on the BF16 peak reading 1-byte weights; no quantize pass.
  cpplan::Query w = q;
  w.precision = parsed("int8-weight-only");
  const Prediction p = predict(w);
  double by_hand = 0;
  for (const Gemm& g : flux_double_block(*q.model)) by_hand += gemm_ms(hw, g, hw.bf16_tflops, 1, 2);
  CHECK(p.blocks[0].gemm_ms / n == Approx(by_hand).epsilon(1e-9));
  CHECK(p.blocks[0].memory_ms == Approx(bf.blocks[0].memory_ms));
  // NVFP4: e2m1 values and one e4m3 scale per 16 (0.5625 bytes a weight) on a B200's FP4 peak.
  CHECK(cpplan::weight_bytes(cpplan::WeightFormat::kNvfp4) == 0.5625);
  CHECK(cpplan::weight_bytes(cpplan::WeightFormat::kMxfp4) == 0.53125);
  cpplan::Query b = q;
  b.hardware = cat.find_hardware("b200");
  b.precision = parsed("nvfp4");
  REQUIRE(b.hardware->peaks.fp4_tflops == Approx(9000));
  const Prediction pb = predict(b);
  double nvfp4 = 0;
  for (const Gemm& g : flux_double_block(*q.model))
    nvfp4 += gemm_ms(*b.hardware, g, b.hardware->peaks.fp4_tflops, 0.5625, 0.5625);
  CHECK(pb.blocks[0].gemm_ms / n == Approx(nvfp4).epsilon(1e-9));
}

namespace {
std::string error_of(const std::string& framework, const std::string& hardware, const std::string& dtype) {
  cpplan::session::Options o;
  o.gpus = "1";
  o.hardware = hardware;
  o.framework = framework;
  o.precision = dtype;
  return cpplan::test::query_error(o);
}
}  // namespace

TEST_CASE("A format the GPU or the framework cannot run is refused in one line naming both", "[session][precision][errors]") {
  const std::string fp4 = error_of("any", "h100-sxm", "nvfp4");
  CHECK(fp4.find("--dtype = nvfp4") == 0);
  CHECK(fp4.find("h100-sxm") != std::string::npos);
  CHECK(fp4.find("sm90") != std::string::npos);
  CHECK(fp4.find("sm100 or newer") != std::string::npos);
  CHECK(fp4.find('\n') == std::string::npos);
  // An A100 has no FP8 tensor cores: W8A8 FP8 is refused, FP8 weights in a BF16 GEMM run.
  CHECK(error_of("any", "a100-sxm-80g", "fp8").find("sm89 or newer") != std::string::npos);
  CHECK(error_of("any", "a100-sxm-80g", "fp8-weight-only").empty());
  // MXFP4 on an MI355X (gfx950), not on an MI300X (gfx942); NVFP4 never on ROCm.
  CHECK(error_of("any", "mi355x", "mxfp4").empty());
  CHECK(error_of("any", "mi300x", "mxfp4").find("gfx942") != std::string::npos);
  CHECK(error_of("any", "mi355x", "nvfp4").find("CUDA sm100 or newer") != std::string::npos);
  CHECK(error_of("any", "tpu-v5p", "fp8").find("tpu") != std::string::npos);
  // The framework: xDiT's --use_fp8_gemms is per tensor; per row it does not offer.
  const std::string fw = error_of("xdit", "h100-sxm", "fp8-row");
  CHECK(fw == "--dtype = fp8-row: xDiT runs the DiT's linears in bf16, fp8, nvfp4, mxfp4 only");
  CHECK(error_of("xdit", "h100-sxm", "fp8").empty());
  CHECK(error_of("cache-dit", "h100-sxm", "fp8-row").empty());
  // Not a format: the choices.
  const std::string bad = error_of("any", "h100-sxm", "fp16");
  CHECK(bad.find("--dtype = fp16: must be bf16 | fp8 |") == 0);
  // cpplan's own executor runs BF16 only.
  CHECK(error_of("cpplan", "h100-sxm", "fp8").find("BF16") != std::string::npos);
}

TEST_CASE("Each framework runs only the formats its source shows, and says so in its verdict", "[planner][precision]") {
  const auto& cat = cpplan::test::fitted_catalog();
  cpplan::session::Options o;
  o.gpus = "2";
  o.res = "1024x1024";
  o.hardware = "h100-sxm";
  o.precision = "fp8-row";
  std::ostringstream err;
  const auto c = cpplan::session::build_query(o, cat, err);
  const cpplan::Plan plan = cpplan::planner::make_plan(c.query, config(1, 2));
  REQUIRE(plan.valid());
  const auto runs = cpplan::planner::frameworks_for(c.query, plan);
  CHECK(runs.has(cpplan::Framework::kCacheDit));   // QuantizeConfig float8_per_row
  CHECK(runs.has(cpplan::Framework::kSglang));     // per-channel FP8 checkpoints
  CHECK(runs.has(cpplan::Framework::kDiffusers));  // TorchAoConfig(... PerRow())
  CHECK_FALSE(runs.has(cpplan::Framework::kXdit));
  CHECK(cpplan::planner::unsupported_reason(cpplan::Framework::kXdit, c.query, plan) ==
        "xDiT runs the DiT's linears in bf16, fp8, nvfp4, mxfp4 only");
}

TEST_CASE("A framework's broken [[quantization]] is refused in one line naming the field, the value and the rule", "[core][precision][errors]") {
  const std::string text = cpplan::test::shipped_profile("frameworks/xdit.toml");
  REQUIRE(cpplan::parse_framework_profile(text, "frameworks/xdit.toml").ok());
  auto refused = [&](const std::string& from, const std::string& to) {
    std::string broken = text;
    const auto at = broken.find(from);
    REQUIRE(at != std::string::npos);
    const auto f = cpplan::parse_framework_profile(broken.replace(at, from.size(), to), "frameworks/xdit.toml");
    REQUIRE_FALSE(f.ok());
    CHECK(f.error().message.find('\n') == std::string::npos);
    return f.error().message;
  };
  const std::string fp16 = refused("dtype = [\"fp8\"]", "dtype = [\"fp16\"]");
  CHECK(fp16.find("dtype") != std::string::npos);
  CHECK(fp16.find("fp16") != std::string::npos);
  CHECK(fp16.find("a quantized --dtype") != std::string::npos);
  CHECK(refused("dtype = [\"fp8\"]", "dtype = [\"bf16\"]").find("bf16") != std::string::npos);
  CHECK(refused("flag = \"--use_fp8_gemms\"", "flags = \"--use_fp8_gemms\"").find("flags") != std::string::npos);
}
