// The kernel model (docs/cost-model.md, "Kernels on resources"): a framework's kernels priced on a
// GPU's resources. Expected values are hand derivations from the datasheet peaks, the hardware
// profile's fractions, the kernel table's and the runtime's op counts (the inputs), never the cost
// model's own totals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "core/framework.h"
#include "core/kernels.h"
#include "costmodel/cost_model.h"
#include "session/engine/engine.h"
#include "tests/session/session_support.h"
#include "tests/support/fixtures.h"

using cpplan::AttentionBackend;
using cpplan::Elementwise;
using cpplan::FusedSet;
using cpplan::HardwareProfile;
using cpplan::KernelTable;
using cpplan::Resource;
using cpplan::costmodel::CostModel;
using cpplan::costmodel::DatasheetModel;
using cpplan::costmodel::Prediction;
using cpplan::test::config;
using cpplan::test::make_query;

namespace {

double saturating(double eff, double x, double half) { return eff * x / (x + half); }

// One FLUX.1-dev attention call at 1024x1024 (4096 image + 512 text tokens, 24 heads of 128).
constexpr double kTokens = 4096 + 512, kHeads = 24, kHeadDim = 128;
constexpr double kFlops = 4.0 * kTokens * kTokens * kHeadDim * kHeads;  // QK^T and P.V
constexpr double kScores = kTokens * kTokens * kHeads;                  // one exponential each

// One attention kernel's roofline per score of a 128-wide head (no padding: every kernel compiles
// 128) from the GPU's datasheet peaks and the kernel table's fractions: its matmuls' 4 x 128 FLOPs
// over the tensor peak (the mma.sync ceiling for FA2-class kernels where the GPU has one) and one
// exponential plus vector_ops FP32 operations over the special-function and vector peaks.
struct Roofline {
  double tensor_ps, softmax_ps;
  bool overlapped;
  double ps() const { return overlapped ? std::max(tensor_ps, softmax_ps) : tensor_ps + softmax_ps; }
};

Roofline by_hand(const HardwareProfile& hw, AttentionBackend b) {
  const KernelTable& k = hw.kernels;
  const auto& kernel = k.kernel(b);
  const double peak =
      kernel.sync_mma && hw.peaks.sync_mma_tflops > 0 ? std::min(hw.bf16_tflops, hw.peaks.sync_mma_tflops) : hw.bf16_tflops;
  const double exp = hw.peaks.exp_tera_per_s > 0 ? 1 / (hw.peaks.exp_tera_per_s * k.exp) : 0;
  const double vector = hw.peaks.vector_tflops > 0 ? k.softmax_vector_ops / (hw.peaks.vector_tflops * k.vector) : 0;
  return {4 * kHeadDim / (peak * kernel.tensor), exp + vector, kernel.overlapped};
}

// What the hardware profile's own fraction for kernel b (flash, cudnn, sage, native) gives the call.
double profiled_ms(const HardwareProfile& hw, AttentionBackend b) {
  const double eff = saturating(hw.attention_efficiency[static_cast<int>(b)], kTokens, hw.attention_half_tokens);
  return kFlops / (hw.bf16_tflops * 1e12 * eff) * 1e3;
}

Prediction predict(cpplan::Query q) {
  const DatasheetModel hw(*q.hardware);
  return CostModel(hw).predict(q, config(1, 1), cpplan::CpVariant::kNone);
}

}  // namespace

TEST_CASE("A kernel the GPU's profile has no fraction for costs its FA2 time times their rooflines' ratio", "[costmodel][kernels]") {
  const auto& cat = cpplan::test::catalog();
  const HardwareProfile& h100 = *cat.find_hardware("h100-sxm");
  REQUIRE(h100.peaks.exp_tera_per_s > 0);
  REQUIRE(h100.peaks.sync_mma_tflops > 0);
  const DatasheetModel roofline(h100);
  // FA2, cuDNN, SageAttention and torch SDPA: the profile's fitted fractions, as before.
  for (const AttentionBackend b : {AttentionBackend::kFlash, AttentionBackend::kCudnn, AttentionBackend::kSage,
                                   AttentionBackend::kNative})
    CHECK(roofline.attention(kFlops, kTokens, kTokens, kHeadDim, b).ms == Approx(profiled_ms(h100, b)).epsilon(1e-9));
  // FlashAttention-3 overlaps its softmax with wgmma matmuls at the full tensor peak; FA2 issues
  // mma.sync, capped at half the H100's rate per SM: FA3 is FA2's time times the ratio.
  const Roofline fa2 = by_hand(h100, AttentionBackend::kFlash), fa3 = by_hand(h100, AttentionBackend::kFa3);
  const auto t3 = roofline.attention(kFlops, kTokens, kTokens, kHeadDim, AttentionBackend::kFa3);
  CHECK(t3.ms == Approx(profiled_ms(h100, AttentionBackend::kFlash) * fa3.ps() / fa2.ps()).epsilon(1e-9));
  CHECK(t3.binding == (fa3.tensor_ps >= fa3.softmax_ps ? Resource::kTensor : Resource::kExp));
  // The FlashAttention-3 paper (Shah et al. 2024, figure 5): 1.5-2.0x FA2's forward throughput.
  CHECK(fa2.ps() / fa3.ps() >= 1.5);
  CHECK(fa2.ps() / fa3.ps() <= 2.1);
  // On a TPU the profile's flash fraction is its Pallas flash kernel's: splash is priced against it.
  const HardwareProfile& tpu = *cat.find_hardware("tpu-v5p");
  const Roofline flash = by_hand(tpu, AttentionBackend::kFlash), splash = by_hand(tpu, AttentionBackend::kSplash);
  CHECK(DatasheetModel(tpu).attention(kFlops, kTokens, kTokens, kHeadDim, AttentionBackend::kSplash).ms ==
        Approx(profiled_ms(tpu, AttentionBackend::kFlash) * splash.ps() / flash.ps()).epsilon(1e-9));
}

TEST_CASE("FA3 gains less over FA2 on an H20 than on an H100: its tensor cores bind both", "[costmodel][kernels]") {
  // The H20 has 148 of the H100's 989 dense BF16 TFLOPS on 78 SMs: mma.sync's per-SM rate
  // (2048 FLOP per clock) exceeds its whole peak, so FA2 is not capped below it, and its
  // exponentials cost relatively less; FA3's warp specialization has little left to hide.
  const auto& cat = cpplan::test::catalog();
  const HardwareProfile& h100 = *cat.find_hardware("h100-sxm");
  const HardwareProfile& h20 = *cat.find_hardware("h20");
  auto gain = [](const HardwareProfile& hw) {
    const DatasheetModel m(hw);
    return m.attention(kFlops, kTokens, kTokens, kHeadDim, AttentionBackend::kFlash).ms /
           m.attention(kFlops, kTokens, kTokens, kHeadDim, AttentionBackend::kFa3).ms;
  };
  CHECK(gain(h100) == Approx(by_hand(h100, AttentionBackend::kFlash).ps() / by_hand(h100, AttentionBackend::kFa3).ps()));
  CHECK(gain(h20) == Approx(by_hand(h20, AttentionBackend::kFlash).ps() / by_hand(h20, AttentionBackend::kFa3).ps()));
  CHECK(gain(h20) < gain(h100) / 1.4);
}

TEST_CASE("An H20's attention fractions come from the kernels' rooflines on its peaks, not the H100's", "[costmodel][kernels]") {
  // profiles/hardware/h20.toml gives no [efficiency] attention: each kernel's fraction is the one
  // whose time on 148 TFLOPS equals its roofline's for 128-wide heads, 4 x 128 / (148 x ps).
  const auto& cat = cpplan::test::catalog();
  const HardwareProfile& h20 = *cat.find_hardware("h20");
  const HardwareProfile& h100 = *cat.find_hardware("h100-sxm");
  REQUIRE(h20.attention_from_kernels);
  REQUIRE_FALSE(h100.attention_from_kernels);
  for (const AttentionBackend b : {AttentionBackend::kFlash, AttentionBackend::kCudnn, AttentionBackend::kSage,
                                   AttentionBackend::kNative}) {
    INFO(cpplan::to_string(b));
    CHECK(h20.attention_efficiency[static_cast<int>(b)] == Approx(4 * kHeadDim / (148.0 * by_hand(h20, b).ps())));
  }
  // FA2 is tensor-bound there, at its whole fraction (no mma.sync ceiling below 148 TFLOPS); the
  // H100's profiled FA2 fraction is about what its roofline gives under the mma.sync ceiling.
  CHECK(h20.attention_efficiency[0] == Approx(h20.kernels.kernel(AttentionBackend::kFlash).tensor));
  CHECK(h100.attention_efficiency[0] == Approx(4 * kHeadDim / (989.0 * by_hand(h100, AttentionBackend::kFlash).ps())).epsilon(0.05));
}

TEST_CASE("Fused elementwise kernels move the fused bytes and dispatch the fused ops", "[costmodel][kernels]") {
  const KernelTable& k = cpplan::test::catalog().kernels();
  double eager = 0, fused = 0, saved = 0;
  for (const auto& c : k.elementwise) eager += c.eager_bytes, fused += c.fused_bytes, saved += c.eager_ops - c.fused_ops;
  CHECK(k.elementwise_traffic({}) == Approx(eager / fused));
  CHECK(k.elementwise_traffic(FusedSet::all()) == Approx(1.0));
  FusedSet norms;
  norms.add(Elementwise::kNormModulation);
  const auto& nm = k.elementwise[static_cast<int>(Elementwise::kNormModulation)];
  CHECK(k.elementwise_traffic(norms) == Approx((eager - nm.eager_bytes + nm.fused_bytes) / fused));
  CHECK(k.ops_saved(FusedSet::all()) == Approx(saved));
  CHECK(k.unfused_excess_share({}) == Approx(1.0));
  CHECK(k.unfused_excess_share(FusedSet::all()) == Approx(0.0));
  CHECK(k.unfused_excess_share(norms) ==
        Approx((eager - fused - (nm.eager_bytes - nm.fused_bytes)) / (eager - fused)));
}

// One FLUX.1-dev double block at 1024x1024 on one H100, as diffusers runs it (torch SDPA, one
// kernel per elementwise op) and as SGLang Diffusion does (FA3, fused norm/modulation, QK-norm/RoPE
// and residual kernels): the GEMMs are the same kernels; attention, the memory-bound work and the
// host's dispatch differ by what the kernels imply.
TEST_CASE("SGLang Diffusion's kernels against diffusers' on one FLUX block on an H100, by hand", "[costmodel][kernels]") {
  const auto& cat = cpplan::test::fitted_catalog();
  const cpplan::FrameworkProfile& sglang = *cat.find_framework("sglang");
  const cpplan::FrameworkProfile& diffusers = *cat.find_framework("diffusers");
  cpplan::Query q = make_query("flux.1-dev", 1, 1024, 1024);
  q.hardware = cat.find_hardware("h100-sxm");
  q.runtime = cat.find_runtime("diffusers");
  const HardwareProfile& hw = *q.hardware;
  const auto* df_kernels = diffusers.kernels_for(hw);
  const auto* sg_kernels = sglang.kernels_for(hw);
  REQUIRE(df_kernels);
  REQUIRE(sg_kernels);
  REQUIRE(df_kernels->attention == AttentionBackend::kNative);
  REQUIRE(sg_kernels->attention == AttentionBackend::kFa3);
  REQUIRE(sg_kernels->fused.bits == FusedSet::all().bits);

  cpplan::Query df = q, sg = q;
  df.kernels = df_kernels, df.backend = df_kernels->attention;
  sg.kernels = sg_kernels, sg.backend = sg_kernels->attention;
  const Prediction pd = predict(df), ps = predict(sg);
  const auto& bd = pd.blocks[0];
  const auto& bs = ps.blocks[0];
  REQUIRE(bd.kind == cpplan::BlockKind::kDouble);
  const double n = bd.count;  // 19 double blocks

  // GEMMs: the same cuBLAS calls under both.
  CHECK(bs.gemm_ms == Approx(bd.gemm_ms));
  // Attention, per block: torch SDPA at the profile's fitted fraction; FA3 at the profile's FA2
  // time times the ratio of the two kernels' rooflines (mma.sync-capped FA2, FA3 at the peak).
  const double sdpa = profiled_ms(hw, AttentionBackend::kNative);
  const double fa3 = profiled_ms(hw, AttentionBackend::kFlash) * by_hand(hw, AttentionBackend::kFa3).ps() /
                     by_hand(hw, AttentionBackend::kFlash).ps();
  CHECK(bd.attention_ms / n == Approx(sdpa).epsilon(1e-6));
  CHECK(bs.attention_ms / n == Approx(fa3).epsilon(1e-6));
  // Memory-bound work: a fused block's bytes per token (10 D + 8 D + 2 F per hidden element, read
  // and written once, bf16) times the runtime's eager traffic; SGLang's fused kinds move one pass.
  const cpplan::ModelProfile& m = *q.model;
  const double bytes = kTokens * (10.0 * m.hidden() + 8.0 * m.hidden() + 2.0 * m.ffn_hidden) * 2.0;
  const double hbm = hw.memory_bandwidth_gbps * 1e9 * hw.memory_efficiency;
  CHECK(bd.memory_ms / n == Approx(bytes * q.runtime->elementwise_traffic / hbm * 1e3).epsilon(1e-6));
  CHECK(bs.memory_ms / n == Approx(bytes / hbm * 1e3).epsilon(1e-6));
  // Host: diffusers dispatches the runtime's ops per double block; SGLang the ones its fused
  // kernels leave (the eager ops of each fused kind replaced by its fused kernels).
  const double us = q.runtime->us_per_op, ops = q.runtime->ops.double_block;
  const double left = ops - hw.kernels.ops_saved(FusedSet::all());
  CHECK(bd.host_ms / n == Approx(ops * us * 1e-3).epsilon(1e-6));
  CHECK(bs.host_ms / n == Approx(left * us * 1e-3).epsilon(1e-6));
  // The block: the longer of host and GPU (asynchronous launches), the ratio by hand.
  const double gemm = bd.gemm_ms / n;
  const double df_block =
      std::max(ops * us * 1e-3, gemm + sdpa + bytes * q.runtime->elementwise_traffic / hbm * 1e3);
  const double sg_block = std::max(left * us * 1e-3, gemm + fa3 + bytes / hbm * 1e3);
  const double ratio = sg_block / df_block;
  CHECK(bs.device_ms() / n == Approx(gemm + fa3 + bytes / hbm * 1e3).epsilon(1e-6));
  CHECK(std::max(bs.host_ms, bs.device_ms()) / std::max(bd.host_ms, bd.device_ms()) == Approx(ratio).epsilon(1e-6));
  CHECK(ratio < 0.8);  // SGLang's block runs well faster than diffusers' eager one
}

TEST_CASE("Each framework picks its kernels on the GPU: SGLang FA3 fused, vLLM-Omni compiled, diffusers SDPA", "[costmodel][kernels][session]") {
  auto resolve = [](const std::string& framework, const std::string& hardware) {
    cpplan::session::Options o;
    o.gpus = "1";
    o.res = "1024x1024";
    o.hardware = hardware;
    o.framework = framework;
    std::ostringstream err;
    return cpplan::session::build_query(o, cpplan::test::fitted_catalog(), err);
  };
  const auto sg = resolve("sglang", "h100-sxm");
  CHECK(sg.query.backend == AttentionBackend::kFa3);
  REQUIRE(sg.query.kernels);
  CHECK(sg.query.kernels->fused.bits == FusedSet::all().bits);
  CHECK(sg.query.runtime->name == "diffusers");
  const auto vllm = resolve("vllm-omni", "h100-sxm");
  CHECK(vllm.query.backend == AttentionBackend::kFlash);
  CHECK(vllm.query.runtime->name == "compiled");
  const auto df = resolve("diffusers", "h100-sxm");
  CHECK(df.query.backend == AttentionBackend::kNative);
  CHECK(df.query.kernels->fused.bits == 0);
  // On Ada SGLang's FA3-code build runs the FA2 loop (no wgmma): flash.
  CHECK(resolve("sglang", "l20").query.backend == AttentionBackend::kFlash);
  // The predicted step differs from diffusers' eager one by the kernels, faster for both.
  auto step = [](const cpplan::session::Context& c) {
    const DatasheetModel hw(*c.query.hardware);
    return CostModel(hw).predict(c.query, config(1, 1), cpplan::CpVariant::kNone).step_ms;
  };
  CHECK(step(sg) < 0.8 * step(df));
  CHECK(step(vllm) < 0.8 * step(df));
}

TEST_CASE("An attention kernel the GPU or the framework cannot run is refused in one line naming both", "[costmodel][kernels][session]") {
  auto error_of = [](const std::string& framework, const std::string& hardware, const std::string& backend) {
    cpplan::session::Options o;
    o.gpus = "1";
    o.hardware = hardware;
    o.framework = framework;
    o.backend = backend;
    return cpplan::test::query_error(o);
  };
  const std::string gpu = error_of("any", "l20", "fa3");
  CHECK(gpu.find("--attention-backend = fa3") == 0);
  CHECK(gpu.find("FlashAttention-3") != std::string::npos);
  CHECK(gpu.find("l20") != std::string::npos);
  CHECK(gpu.find("sm90") != std::string::npos);
  CHECK(gpu.find('\n') == std::string::npos);
  // cuDNN attention runs on an H100, but SGLang Diffusion does not offer it there.
  const std::string fw = error_of("sglang", "h100-sxm", "cudnn");
  CHECK(fw.find("--attention-backend = cudnn") == 0);
  CHECK(fw.find("SGLang Diffusion") != std::string::npos);
  CHECK(fw.find("cuDNN attention") != std::string::npos);
  CHECK(fw.find("h100-sxm") != std::string::npos);
  const std::string not_offered = error_of("xdit", "h100-sxm", "fa4");
  CHECK(not_offered.find("FlashAttention-4") != std::string::npos);
  const std::string by_framework = error_of("diffusers", "h100-sxm", "splash");
  CHECK(by_framework.find("h100-sxm") != std::string::npos);
  const std::string offered = error_of("diffusers", "b200", "aiter");
  CHECK(offered.find("AITER") != std::string::npos);
  // Offered and runnable: no error.
  CHECK(error_of("xdit", "h100-sxm", "fa3").empty());
}

namespace {
// `text` with its first `from` replaced by `to` (which must occur).
std::string with(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

struct BrokenCase {
  std::string from, to;
  std::vector<std::string> says;  // the field, the value and the rule the one line names
};

void check_refused(const std::string& error, const BrokenCase& c) {
  INFO(error);
  CHECK(error.find('\n') == std::string::npos);
  for (const std::string& part : c.says) CHECK(error.find(part) != std::string::npos);
}
}  // namespace

TEST_CASE("A broken kernels.toml is refused in one line naming the field, the value and the rule", "[core][kernels][errors]") {
  const std::string text = cpplan::test::shipped_profile("kernels.toml");
  REQUIRE(cpplan::parse_kernel_table(text, "kernels.toml").ok());
  const std::vector<BrokenCase> cases = {
      {"title = \"FlashAttention-3\"\ntensor = 0.72", "title = \"FlashAttention-3\"\ntensor = 1.5",
       {"kernels.toml", "attention.fa3.tensor", "1.5"}},
      {"head_dims = [64, 96, 128, 192, 256]", "head_dims = [128, 64]",
       {"attention.fa3.head_dims", "ascending array of head dimensions"}},
      {"{ family = \"cuda\", min_cc = 90, max_cc = 90 }", "{ family = \"cuda\", min_cc = 90, max_cc = 80 }",
       {"max_cc", "80", "must be at least min_cc = 90"}},
      {"softmax = \"overlapped\"", "softmax = \"parallel\"", {"softmax", "parallel"}},
      {"[attention.fa3]", "[attention.fa9]\ntitle = \"x\"\n\n[attention.fa3]", {"fa9", "unknown attention kernel"}},
      {"fused_bytes = 8", "fused_bytes = 80", {"fused_bytes", "80", "must not exceed eager_bytes"}},
  };
  for (const BrokenCase& c : cases) {
    const auto t = cpplan::parse_kernel_table(with(text, c.from, c.to), "kernels.toml");
    REQUIRE_FALSE(t.ok());
    check_refused(t.error().message, c);
  }
}

TEST_CASE("A framework's broken [[kernels]] is refused in one line naming the field, the value and the rule", "[core][kernels][errors]") {
  const std::string text = cpplan::test::shipped_profile("frameworks/sglang.toml");
  REQUIRE(cpplan::parse_framework_profile(text, "frameworks/sglang.toml").ok());
  const std::vector<BrokenCase> cases = {
      {"attention = \"fa3\"", "attention = \"fa9\"", {"attention", "fa9", "unknown attention kernel"}},
      {"offers = [\"fa3\", \"flash\", \"native\", \"sage\"]", "offers = [\"flash\", \"native\", \"sage\"]",
       {"offers", "must include the default attention = \"fa3\""}},
      {"fused = [\"norm_modulation\"", "fused = [\"norms\"", {"fused", "norms", "unknown kind"}},
      {"on = [{ family = \"cuda\", min_cc = 90, max_cc = 90 }]", "on = [{ family = \"cuda\", min_cc = 90, max_cc = 89 }]",
       {"max_cc", "89", "must be at least min_cc = 90"}},
  };
  for (const BrokenCase& c : cases) {
    const auto f = cpplan::parse_framework_profile(with(text, c.from, c.to), "frameworks/sglang.toml");
    REQUIRE_FALSE(f.ok());
    check_refused(f.error().message, c);
  }
}
