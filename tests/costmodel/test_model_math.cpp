// The cost of the newer models' math (docs/usage.md, "Models with other math"), derived by hand:
// linear attention and the conv-GLU FFN (SANA), temporal blocks (Latte), long skips (HunyuanDiT),
// a mixture-of-experts FFN (HiDream), a narrower text stream (Mochi), two transformers (Wan2.2
// A14B); and the plans their structure refuses.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "core/sequence.h"
#include "costmodel/cost_model.h"
#include "costmodel/predict_terms.h"
#include "costmodel/step_context.h"
#include "tests/costmodel/datasheet_prediction.h"
#include "tests/support/fixtures.h"

using cpplan::BlockGroup;
using cpplan::BlockKind;
using cpplan::ModelProfile;
using cpplan::costmodel::forward_flops;
using cpplan::test::config;

namespace {

ModelProfile from(const std::string& base) { return *cpplan::test::catalog().find_model(base); }

// A SANA-like model: PixArt-Sigma's shape (D = 1152, 16 x 72 heads, 28 cross blocks, 300 text
// tokens) with linear attention and a conv-GLU FFN of F = 2.5 D = 2880.
ModelProfile sana_like() {
  ModelProfile m = from("pixart-sigma");
  m.attention = cpplan::AttentionKind::kLinear;
  m.ffn_kind = cpplan::FfnKind::kConvGlu;
  m.ffn_hidden = 2880;
  return m;
}

}  // namespace

TEST_CASE("linear attention and a conv-GLU FFN cost what SANA's math runs", "[costmodel][model_math]") {
  const ModelProfile m = sana_like();
  const auto q = cpplan::test::make_query(m, 1, 1024, 1024);
  // 1024 / (VAE 8 x patch 2) = 64 -> 4096 image tokens; per block:
  //   linears: self q, k, v, out and cross q, out (6 D^2), the FFN D -> 2F and F -> D (3 D F), on S_img;
  //   the depthwise 3x3 conv: 2 x 9 x 2F per image token;
  //   linear self-attention: 4 x S_img x (head_dim + 1) x D (relu(k)^T [v, 1], then relu(q) against it);
  //   cross k, v on the text (2 x 2 D^2 x S_txt) and the cross-attention (4 x S_img x S_txt x D).
  const double d = 1152, f = 2880, img = 4096, txt = 300, hd = 72;
  const double per_block = 2.0 * (6.0 * d * d + 3.0 * d * f) * img + 2.0 * 9.0 * 2.0 * f * img +
                           4.0 * img * (hd + 1) * d + 4.0 * d * d * txt + 4.0 * img * txt * d;
  CHECK(forward_flops(m, q.sequence) == Approx(28.0 * per_block).epsilon(1e-12));
  // The step charges both CFG passes (true CFG, one GPU).
  CHECK(cpplan::test::datasheet_prediction(q, config(1, 1)).step_flops == Approx(2.0 * 28.0 * per_block).epsilon(1e-9));
}

TEST_CASE("Ring on linear attention all-reduces the K^T V state, the conv-GLU FFN all-gathers its halo rows",
          "[costmodel][model_math]") {
  const ModelProfile m = sana_like();
  const auto q = cpplan::test::make_query(m, 2, 1024, 1024);
  const cpplan::costmodel::DatasheetModel hw(*q.hardware);
  const cpplan::RuntimeProfile rt;
  const auto pc = config(2, 1);
  const cpplan::costmodel::StepContext ctx(q, pc, cpplan::CpVariant::kRing, hw, rt, nullptr);
  REQUIRE(ctx.samples == 2);  // true CFG, both passes batched on each rank
  const auto terms = cpplan::costmodel::block_terms(ctx, m.blocks[0]);
  // Per block and sample: the fp32 state 16 heads x 72 x 73 x 4 bytes = 336,384, all-reduced over 2
  // ranks (busbw factor 2 x 1/2 = 1); the halo: 2 ranks x (2 rows of 64 tokens) x 2F = 5760
  // channels x 2 bytes = 2,949,120 gathered (busbw factor 1/2). No K/V block is passed.
  const double state = 16.0 * 72 * 73 * 4, halo = 2.0 * 2 * 64 * 5760 * 2;
  CHECK(terms.bytes_sent == Approx(28.0 * 2.0 * (state * 1.0 + halo * 0.5)));
}

TEST_CASE("temporal blocks attend across frames, the others within a frame", "[costmodel][model_math]") {
  // A Latte-like video model: Wan2.1-1.3B's shape, its 30 blocks as 15 spatial + 15 temporal.
  ModelProfile m = from("wan2.1-t2v-1.3b");
  m.blocks = {BlockGroup{BlockKind::kCross, 15}, BlockGroup{BlockKind::kCross, 15, false, false, true}};
  const auto q = cpplan::test::make_query(m, 1, 832, 480, 81);
  // 81 frames / 4 + 1 = 21 latent frames of 52 x 30 = 1560 tokens: S = 32,760. Self-attention:
  // spatial 4 x S x 1560 x D, temporal 4 x S x 21 x D. The spatial blocks are Wan's cross blocks;
  // the temporal ones have no cross-attention (self q, k, v, out and the FFN only).
  const double d = 1536, f = 8960, img = 32760, txt = 512, frame = 1560, frames = 21;
  const double spatial = 2.0 * (6.0 * d * d + 2.0 * d * f) * img + 4.0 * d * d * txt + 4.0 * img * txt * d;
  const double temporal = 2.0 * (4.0 * d * d + 2.0 * d * f) * img;
  const double expected = 15.0 * (spatial + 4.0 * img * frame * d) + 15.0 * (temporal + 4.0 * img * frames * d);
  CHECK(forward_flops(m, q.sequence) == Approx(expected).epsilon(1e-12));
  CHECK(cpplan::test::datasheet_prediction(q, config(1, 1)).step_flops == Approx(2.0 * expected).epsilon(1e-9));
}

TEST_CASE("long skips add a 2D x D linear, whole on every TP rank", "[costmodel][model_math]") {
  ModelProfile m = from("pixart-sigma");
  m.blocks = {BlockGroup{BlockKind::kCross, 15}, BlockGroup{BlockKind::kCross, 13, false, false, false, true}};
  const ModelProfile plain = from("pixart-sigma");
  const auto q = cpplan::test::make_query(m, 1, 1024, 1024), base = cpplan::test::make_query(plain, 1, 1024, 1024);
  // 13 skip blocks x 2 x (2D x D) x 4096 tokens more than the same 28 blocks without skips.
  const double d = 1152;
  CHECK(forward_flops(m, q.sequence) - forward_flops(plain, base.sequence) ==
        Approx(13.0 * 2.0 * 2.0 * d * d * 4096).epsilon(1e-12));
  // On 2-way TP the skip linear stays whole on each rank, the rest is halved (both CFG passes
  // on each rank).
  const double skip = 13.0 * 2.0 * 2.0 * d * d * 4096, all = forward_flops(m, q.sequence);
  const double tp2 = cpplan::test::datasheet_prediction(cpplan::test::make_query(m, 2, 1024, 1024), config(1, 1, 2)).step_flops;
  CHECK(tp2 == Approx(2.0 * ((all - skip) / 2.0 + skip)).epsilon(1e-9));
}

TEST_CASE("a mixture of experts runs the router and each token's experts, and holds every expert",
          "[costmodel][model_math]") {
  // FLUX.1-dev's shape with HiDream's FFN: 4 routed experts of F each, 2 active, 1 shared.
  ModelProfile m = from("flux.1-dev");
  m.ffn_kind = cpplan::FfnKind::kSwiGlu;
  const ModelProfile dense = m;
  m.experts = 4;
  m.active_experts = 2;
  m.shared_experts = 1;
  const auto q = cpplan::test::make_query(m, 1, 1024, 1024);
  // Per token and block: 3 experts x 3 D F (SwiGLU) + the router D x 4, instead of one 3 D F.
  const double d = 3072, f = 12288, seq = 4096 + 512, blocks = 57;
  CHECK(forward_flops(m, q.sequence) - forward_flops(dense, q.sequence) ==
        Approx(blocks * 2.0 * seq * (2.0 * 3.0 * d * f + d * 4)).epsilon(1e-12));
  // Memory: each block holds 5 FFNs (4 routed + 1 shared) and the router, all TP-sharded but
  // the router; params (a fixed count) do not change, so the weights do not either: what changes
  // is the share TP divides.
  const double held = cpplan::costmodel::block_linear_params(m, m.blocks[0]);
  const double held_dense = cpplan::costmodel::block_linear_params(dense, dense.blocks[0]);
  CHECK(held - held_dense == Approx(2.0 * (4.0 * 3.0 * d * f + d * 4)).epsilon(1e-12));  // both streams
}

TEST_CASE("a narrower text stream runs its own width", "[costmodel][model_math]") {
  // Qwen-Image's shape (60 double blocks, D = 3072, F = 4D, 512 text tokens at 1024 px) with a
  // text stream of 1536 and its FFN of 6144.
  ModelProfile m = from("qwen-image");
  m.text_hidden = 1536;
  m.text_ffn_hidden = 6144;
  const auto q = cpplan::test::make_query(m, 1, 1024, 1024);
  const double d = 3072, f = 12288, img = 4096, txt = q.sequence.text_tokens, w = 1536, wf = 6144;
  const double seq = img + txt;
  const double per_block = 2.0 * (4.0 * d * d + 2.0 * d * f) * img + 2.0 * (4.0 * d * w + 2.0 * w * wf) * txt +
                           4.0 * seq * seq * d;
  CHECK(forward_flops(m, q.sequence) == Approx(60.0 * per_block).epsilon(1e-12));
  CHECK(cpplan::test::datasheet_prediction(q, config(1, 1)).step_flops ==
        Approx(m.passes_per_step() * 60.0 * per_block).epsilon(1e-9));
}

TEST_CASE("two transformers are both held, a step runs one", "[costmodel][model_math]") {
  ModelProfile m = from("wan2.1-t2v-14b");
  const ModelProfile one = m;
  m.transformers = 2;
  const auto q = cpplan::test::make_query(m, 1, 832, 480, 81), q1 = cpplan::test::make_query(one, 1, 832, 480, 81);
  const auto p = cpplan::test::datasheet_prediction(q, config(1, 1));
  const auto p1 = cpplan::test::datasheet_prediction(q1, config(1, 1));
  CHECK(p.memory.transformer_weights == 2.0 * p1.memory.transformer_weights);
  CHECK(p.step_flops == p1.step_flops);
}

TEST_CASE("an offloaded idle transformer halves the weights held and loads each transformer once per image",
          "[costmodel][model_math]") {
  // Wan2.2 A14B's shape: two Wan2.1-14B transformers, on one H100 (host link: PCIe Gen5 x16,
  // 64 GB/s at 0.8 efficiency, profiles/hardware/h100-sxm.toml).
  ModelProfile m = from("wan2.1-t2v-14b");
  m.transformers = 2;
  auto held = cpplan::test::make_query(m, 1, 832, 480, 81);
  auto offloaded = held;
  offloaded.offload_idle_transformer = true;
  const auto both = cpplan::test::datasheet_prediction(held, config(1, 1));
  const auto one = cpplan::test::datasheet_prediction(offloaded, config(1, 1));
  // Held: both transformers' weights; offloaded: one's, params x 2 bytes (bf16, no TP).
  CHECK(one.memory.transformer_weights == Approx(m.params * 2));
  CHECK(both.memory.transformer_weights == Approx(2 * m.params * 2));
  // Each of the two loads per image moves params x 2 bytes at 64 x 0.8 = 51.2 GB/s.
  const double load_ms = m.params * 2 / 51.2e9 * 1e3;
  CHECK(both.pipeline.transformer_load_ms == 0);
  CHECK(one.pipeline.transformer_load_ms == Approx(2 * load_ms));
  CHECK(one.image_ms - both.image_ms == Approx(2 * load_ms));
  CHECK(one.step_ms == both.step_ms);
  CHECK(one.peak_mem_bytes < both.peak_mem_bytes);
}

TEST_CASE("a GEMM says which side of the roofline set its time", "[costmodel][roofline]") {
  // 100 TFLOP/s at full efficiency, 1000 GB/s at full efficiency, no small-GEMM penalty
  // (half rows 0): 1 GFLOP takes 1e9 / 1e14 s = 0.01 ms; 1 MB takes 0.001 ms and 100 MB 0.1 ms.
  cpplan::HardwareProfile hw;
  hw.name = "roofline";
  hw.bf16_tflops = 100;
  hw.memory_bandwidth_gbps = 1000;
  hw.gemm_efficiency = 1;
  hw.gemm_half_rows = 0;
  hw.memory_efficiency = 1;
  const cpplan::costmodel::DatasheetModel model(hw);
  const auto math = model.gemm(1e9, 1e6, 1024);
  CHECK(math.ms == Approx(0.01));
  CHECK_FALSE(math.bandwidth_bound);
  const auto traffic = model.gemm(1e9, 1e8, 1024);
  CHECK(traffic.ms == Approx(0.1));
  CHECK(traffic.bandwidth_bound);
  // A GPU with a tenth of the compute and the same bandwidth (an H20 beside an H100): 1 GFLOP
  // is 0.1 ms of math, so 50 MB (0.05 ms) that bound the first GPU's GEMM hide under it here.
  CHECK(model.gemm(1e9, 5e7, 1024).bandwidth_bound);
  hw.bf16_tflops = 10;
  const cpplan::costmodel::DatasheetModel slow(hw);
  const auto same = slow.gemm(1e9, 5e7, 1024);
  CHECK(same.ms == Approx(0.1));
  CHECK_FALSE(same.bandwidth_bound);
}
