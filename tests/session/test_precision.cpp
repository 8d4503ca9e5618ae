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
using cpplan::test::flux_on_h100;
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
  CHECK(p8.memory.transformer_weights == Approx(15196104832.0));  // 15.2 GB against 23.8 GB in BF16
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
  CHECK(fw == "--dtype = fp8-row: xDiT runs the DiT's linears in bf16, fp8, int8, nvfp4, mxfp4 only");
  CHECK(error_of("xdit", "h100-sxm", "fp8").empty());
  CHECK(error_of("cache-dit", "h100-sxm", "fp8-row").empty());
  // Not a format: the choices.
  const std::string bad = error_of("any", "h100-sxm", "fp16");
  CHECK(bad.find("--dtype = fp16: must be bf16 | fp8 |") == 0);
  // cpplan's own executor runs BF16 (and weight-only int8), not W8A8.
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
        "xDiT runs the DiT's linears in bf16, fp8, int8, nvfp4, mxfp4 only");
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
  // A model entry's dtypes: each a format the file's [[quantization]] offers, and its source named.
  const std::string flux = "dtypes = [\"fp8\"]\ndtypes_source";
  CHECK(refused(flux, "dtypes = [\"fp8-row\"]\ndtypes_source") ==
        "frameworks/xdit.toml: models[0].dtypes = \"fp8-row\": a --dtype this file's [[quantization]] offers (fp8, int8, "
        "nvfp4, mxfp4)");
  CHECK(refused(flux, "dtypes = [\"fp8\"]\n# dtypes_source").find("models[0].dtypes_source") != std::string::npos);
  CHECK(refused(flux, "# dtypes = [\"fp8\"]\ndtypes_source").find("models[0].dtypes_source = (set): names the source") !=
        std::string::npos);
}

namespace {
// FLUX.1-dev at 1024x1024 on one A100 SXM 80GB under diffusers' runtime, in BF16.
cpplan::Query flux_on_a100() {
  cpplan::Query q = flux_on_h100();
  q.hardware = cpplan::test::fitted_catalog().find_hardware("a100-sxm-80g");
  return q;
}
}  // namespace

TEST_CASE("INT8 W8A8 weight memory and GEMM time of one FLUX block on an A100, by hand", "[costmodel][precision][int8]") {
  const cpplan::Query q = flux_on_a100();
  const HardwareProfile& hw = *q.hardware;
  const ModelProfile& m = *q.model;
  cpplan::Query int8 = q;
  int8.precision = parsed("int8");
  REQUIRE(int8.precision.weights == cpplan::WeightFormat::kInt8);
  REQUIRE(int8.precision.activations == cpplan::ActivationScaling::kDynamicRow);
  const Prediction bf = predict(q), p8 = predict(int8);
  const auto& b16 = bf.blocks[0];
  const auto& b8 = p8.blocks[0];
  REQUIRE(b8.kind == cpplan::BlockKind::kDouble);
  const double n = b8.count;

  // The datasheet ([S1] A100 datasheet): INT8 Tensor Core 624 TOPS dense (1,248 with sparsity),
  // BF16 312 TFLOPS; HBM2e 2,039 GB/s. FLUX.1-dev: D = 3,072, F = 4 D = 12,288.
  REQUIRE(hw.peaks.int8_tops == 624);
  REQUIRE(hw.bf16_tflops == 312);
  REQUIRE(hw.memory_bandwidth_gbps == Approx(2039));
  REQUIRE(m.hidden() == 3072);
  REQUIRE(m.ffn_hidden == 12288);
  // One double block's GEMMs at 1024x1024: per stream (4,096 image rows, 512 text rows, each through
  // its own stream's weights) q, k, v, out (D x D) and the MLP (D x F, F x D), 4 D^2 + 8 D^2 = 12 D^2
  // weights: 2 x 4,608 x 12 D^2 = 2 x 4,608 x 113,246,208 = 1.0437e12 operations. Each GEMM reads its weight in INT8 (1 byte) and its input in INT8
  // (1 byte, quantized per row), writes BF16 (2 bytes). The largest memory side (the 4,096-row
  // D x F up-projection: 37.7e6 weight bytes + 4,096 x (3,072 + 2 x 12,288) = 113.2e6 activation
  // bytes, 151e6 bytes over 2,039 GB/s x the memory fraction) stays under a third of its math
  // (2 x 4,096 x 3,072 x 12,288 = 309e9 over 624 TOPS x the GEMM fraction): every GEMM is
  // compute-bound, on the INT8 peak at the BF16 GEMM's fraction of it (gemm_efficiency x rows /
  // (rows + gemm_half_rows)), so the block's GEMM time is about half its BF16 time.
  double by_hand_int8 = 0, by_hand_bf16 = 0, inputs = 0, ops = 0;
  for (const Gemm& g : flux_double_block(m)) {
    by_hand_int8 += gemm_ms(hw, g, 624, 1, 1);
    by_hand_bf16 += gemm_ms(hw, g, 312, 2, 2);
    inputs += g.rows * g.k;
    ops += 2 * g.rows * g.k * g.n;
  }
  CHECK(ops == Approx(1.0437e12).epsilon(1e-4));
  CHECK(b16.gemm_ms / n == Approx(by_hand_bf16).epsilon(1e-9));
  CHECK(b8.gemm_ms / n == Approx(by_hand_int8).epsilon(1e-9));
  CHECK(by_hand_int8 == Approx(by_hand_bf16 / 2).epsilon(1e-9));  // compute-bound throughout: exactly half
  // In numbers, at the A100 profile's gemm = 0.75 and gemm_half_rows = 96 (no fit moves Ampere's):
  // image 2 x 4,096 x 12 D^2 = 9.2771e11 / (624e12 x 0.75 x 4,096 / 4,192) = 2.0288 ms, text
  // 1.1596e11 / (624e12 x 0.75 x 512 / 608) = 0.2942 ms: 2.3230 ms a double block (BF16: 4.6460).
  REQUIRE(hw.gemm_efficiency == 0.75);
  REQUIRE(hw.gemm_half_rows == 96);
  CHECK(b8.gemm_ms / n == Approx(2.3230).epsilon(1e-4));
  CHECK(b16.gemm_ms / n == Approx(4.6460).epsilon(1e-4));
  // The quantize pass, as fp8-row's: per row, one kernel per GEMM reading the BF16 input (2 bytes
  // an element) and writing INT8 (1): 3 bytes an element over the HBM. Its per-row scales (one
  // per 3,072 or 12,288 values) are left out, as are the weights' per-channel scales.
  const double hbm = hw.memory_bandwidth_gbps * 1e9 * hw.memory_efficiency;
  CHECK((b8.memory_ms - b16.memory_ms) / n == Approx(inputs * 3 / hbm * 1e3).epsilon(1e-9));
  // 4,608 rows x (4 D + D + 4 D) input elements = 127,401,984 x 3 bytes / (2,039 GB/s x 0.8) = 0.2343 ms
  CHECK(inputs == 127401984);
  CHECK((b8.memory_ms - b16.memory_ms) / n == Approx(0.2343).epsilon(1e-3));
  CHECK((b8.ops - b16.ops) / n == Approx(12));

  // Weights: the block linears in INT8 (1 byte), the rest in BF16. One double block holds 24 D^2 =
  // 226,492,416 weights: 226.5 MB in INT8 against 453.0 MB in BF16. The whole transformer: 19 double
  // and 38 single blocks hold (24 x 19 + 12 x 38) D^2 = 912 D^2 = 8,606,711,808 linear weights.
  const double d2 = 3072.0 * 3072.0;
  CHECK(24 * d2 == 226492416);
  const double linears = 912 * d2;
  CHECK(linears == 8606711808.0);
  CHECK(p8.memory.transformer_weights == Approx(linears * 1 + (m.params - linears) * 2));
  CHECK(p8.memory.transformer_weights == Approx(15196104832.0));  // 15.2 GB against 23.8 GB in BF16
  CHECK(bf.memory.transformer_weights - p8.memory.transformer_weights == Approx(linears));
}

TEST_CASE("INT8 W8A8 is refused in one line on a GPU without an INT8 peak or INT8 tensor cores", "[session][precision][int8][errors]") {
  // Blackwell Ultra cuts INT8: the B300 profile carries no INT8 peak.
  const std::string b300 = error_of("any", "b300", "int8");
  CHECK(b300.find("--dtype = int8: int8 GEMMs do not run on b300") == 0);
  CHECK(b300.find("sm103") != std::string::npos);
  CHECK(b300.find("no INT8 tensor peak") != std::string::npos);
  CHECK(b300.find('\n') == std::string::npos);
  // A TPU publishes an INT8 peak, but no framework's INT8 GEMM runs there.
  const std::string tpu = error_of("any", "tpu-v6e", "int8");
  CHECK(tpu.find("--dtype = int8: int8 GEMMs do not run on tpu-v6e") == 0);
  CHECK(tpu.find("they run on CUDA sm75 or newer and ROCm gfx908 or newer") != std::string::npos);
  // Ampere has INT8 tensor cores: an A100 runs it (no FP8 there); the weight-only INT8 too.
  CHECK(error_of("any", "a100-sxm-80g", "int8").empty());
  // xDiT's runner runs INT8 for Z-Image alone: FLUX.1-dev (the default model) is refused, naming its runner.
  CHECK(error_of("xdit", "a100-sxm-80g", "int8") ==
        "--dtype = int8: xDiT runs FLUX.1-dev in bf16, fp8 only (xfuser/model_executor/models/runner_models/flux.py "
        "175e0bf: xFuserFluxModel's ModelCapabilities use_fp8_gemms)");
  CHECK(error_of("cache-dit", "a100-sxm-80g", "int8").empty());
  CHECK(error_of("diffusers", "a100-sxm-80g", "int8").empty());
  // vLLM-Omni's INT8 W8A8 needs sm89: refused on an A100 naming the rule, run on an L40S (sm89).
  const std::string omni = error_of("vllm-omni", "a100-sxm-80g", "int8");
  CHECK(omni.find("--dtype = int8: vLLM-Omni runs --dtype int8 on CUDA sm89 or newer only") == 0);
  CHECK(omni.find('\n') == std::string::npos);
  CHECK(error_of("vllm-omni", "l40s", "int8").empty());
  // SGLang's INT8 method is not confirmed in its source: not offered.
  CHECK(error_of("sglang", "h100-sxm", "int8").find("SGLang Diffusion runs the DiT's linears in bf16") != std::string::npos);
}

TEST_CASE("dtype any ranks INT8 W8A8 where the GPU has an INT8 peak and a framework offers it", "[session][precision][int8][any]") {
  const auto& cat = cpplan::test::fitted_catalog();
  auto formats = [&](const std::string& hardware, const std::string& framework) {
    cpplan::session::Options o;
    o.gpus = "1";
    o.res = "1024x1024";
    o.hardware = hardware;
    o.framework = framework;
    o.precision = "any";
    std::ostringstream err;
    std::vector<std::string> out;
    for (const Precision& p : cpplan::session::build_query(o, cat, err).query.precisions) out.push_back(cpplan::to_string(p));
    return out;
  };
  using V = std::vector<std::string>;
  CHECK(formats("a100-sxm-80g", "any") == V{"bf16", "fp8-weight-only", "int8", "int8-weight-only"});
  CHECK(formats("h100-sxm", "any") == V{"bf16", "fp8", "fp8-row", "fp8-weight-only", "int8", "int8-weight-only"});
  // MXFP4 is xDiT's alone, and FLUX.1-dev's runner declares FP8 only; on an A100 xDiT's FP8 has no
  // tensor cores and its INT8 is Z-Image's: BF16 alone.
  CHECK(formats("b300", "any") == V{"bf16", "fp8", "fp8-row", "fp8-weight-only", "int8-weight-only", "nvfp4"});
  CHECK(formats("a100-sxm-80g", "xdit") == V{"bf16"});
  CHECK(formats("a100-sxm-80g", "vllm-omni") == V{"bf16"});
  CHECK(formats("l40s", "vllm-omni") == V{"bf16", "fp8", "int8"});
  // No framework runs INT8 on ROCm in its source: an MI300X ranks none, though it has the peak.
  const V mi300x = formats("mi300x", "any");
  CHECK(std::find(mi300x.begin(), mi300x.end(), "int8") == mi300x.end());
}

TEST_CASE("An INT8 plan's frameworks: diffusers and cache-dit on an A100, each other with its reason", "[planner][precision][int8]") {
  const auto& cat = cpplan::test::fitted_catalog();
  cpplan::session::Options o;
  o.gpus = "1";  // one GPU: vLLM-Omni's sequence parallelism does not cover FLUX.1, its format reason shows
  o.res = "1024x1024";
  o.hardware = "a100-sxm-80g";
  o.precision = "int8";
  std::ostringstream err;
  const auto c = cpplan::session::build_query(o, cat, err);
  const cpplan::Plan plan = cpplan::planner::make_plan(c.query, config(1, 1));
  REQUIRE(plan.valid());
  const auto runs = cpplan::planner::frameworks_for(c.query, plan);
  CHECK(runs.has(cpplan::Framework::kDiffusers));  // Int8DynamicActivationInt8WeightConfig
  CHECK(runs.has(cpplan::Framework::kCacheDit));   // QuantizeConfig int8_per_row
  CHECK_FALSE(runs.has(cpplan::Framework::kVllmOmni));
  CHECK_FALSE(runs.has(cpplan::Framework::kSglang));
  CHECK(std::string(cpplan::planner::unsupported_reason(cpplan::Framework::kVllmOmni, c.query, plan))
            .find("vLLM-Omni runs --dtype int8 on CUDA sm89 or newer only") == 0);
  // xDiT's runner refuses --use_int8_gemms for a model whose ModelCapabilities lack it (FLUX.1-dev).
  CHECK_FALSE(runs.has(cpplan::Framework::kXdit));
  CHECK(std::string(cpplan::planner::unsupported_reason(cpplan::Framework::kXdit, c.query, plan))
            .find("xDiT runs FLUX.1-dev in bf16, fp8 only (") == 0);
}
