// PipeFusion's cost (costmodel/pipefusion_cost.h, docs/cost-model.md "PipeFusion"): the stage
// split, the pipelined and warm-up steps, the mean step, the point-to-point bytes and the memory of
// a stage. Every expected value is derived by hand below from the profiles' numbers and round
// figures of a stand-in hardware model.
#include <catch2/catch.hpp>

#include "costmodel/pipefusion_cost.h"
#include "tests/costmodel/round_hardware.h"
#include "tests/support/fixtures.h"

using cpplan::BlockGroup;
using cpplan::BlockKind;
using cpplan::Bytes;
using cpplan::ParallelConfig;
using cpplan::RuntimeProfile;
using cpplan::costmodel::Collective;
using cpplan::costmodel::CommAxis;
using cpplan::costmodel::CommGroup;
using cpplan::costmodel::CostModel;
using cpplan::costmodel::HardwareModel;
using cpplan::costmodel::Prediction;
using cpplan::costmodel::Source;
using cpplan::costmodel::StepContext;
using cpplan::costmodel::Timed;
using cpplan::test::config;
using cpplan::test::make_query;
namespace cm = cpplan::costmodel;

namespace {

using cpplan::test::RoundHardware;

// 10 us per op: a double block 100 ops (1 ms), a single block 50 (0.5 ms), 40 outside the blocks.
RuntimeProfile round_runtime() {
  RuntimeProfile rt;
  rt.name = "round";
  rt.us_per_op = 10;
  rt.ops.double_block = 100;
  rt.ops.single_block = 50;
  rt.ops.step = 40;
  return rt;
}

ParallelConfig pipefusion(int stages, int patches, int warmup, int ulysses = 1) {
  ParallelConfig c = config(1, ulysses);
  c.pipefusion = {stages, patches, warmup};
  return c;
}

}  // namespace

TEST_CASE("FLUX.1-dev's 57 blocks split into xDiT's ceil stages across the double and single groups",
          "[costmodel][pipefusion]") {
  const auto q = make_query("flux.1-dev", 4);
  // 19 double + 38 single = 57 blocks; P = 4: ceil(57 / 4) = 15 -> 15 + 15 + 15 + 12. Stage 0 is
  // 15 double blocks; stage 1 the other 4 double and 11 single; stage 2 15 single; stage 3 12.
  const auto four = cm::pipefusion_stages(*q.model, 4);
  REQUIRE(four.size() == 4);
  REQUIRE(four[0].size() == 1);
  CHECK((four[0][0].kind == BlockKind::kDouble && four[0][0].count == 15));
  REQUIRE(four[1].size() == 2);
  CHECK((four[1][0].kind == BlockKind::kDouble && four[1][0].count == 4));
  CHECK((four[1][1].kind == BlockKind::kSingle && four[1][1].count == 11));
  CHECK((four[2].size() == 1 && four[2][0].count == 15));
  CHECK((four[3].size() == 1 && four[3][0].kind == BlockKind::kSingle && four[3][0].count == 12));
  // P = 2: ceil(57 / 2) = 29 -> 19 double + 10 single, then 28 single.
  const auto two = cm::pipefusion_stages(*q.model, 2);
  REQUIRE(two.size() == 2);
  REQUIRE(two[0].size() == 2);
  CHECK(two[0][0].count == 19);
  CHECK(two[0][1].count == 10);
  CHECK((two[1].size() == 1 && two[1][0].count == 28));
}

TEST_CASE("The pipelined step: P stage slots and P - 1 sends fill the pipe, M - 1 more slots follow",
          "[costmodel][pipefusion]") {
  // P = 2, M = 4, a stage's patch 3 ms, a send 1 ms, rest 0.5 ms: 2 x 3 + 1 x 1 + 3 x 3 + 0.5 =
  // 16.5 ms; of it 4 x 3 = 12 ms busy and 0.5 ms rest, so the bubble is 4 ms (one slot + one send).
  CHECK(cm::pipelined_step_ms(2, 4, 3.0, 1.0, 0.5) == Approx(16.5));
  CHECK(cm::pipeline_bubble_ms(2, 4, 3.0, 1.0, 0.5) == Approx(4.0));
  // Sends slower than a stage (1 ms stage, 3 ms send): 2 x 1 + 1 x 3 + 3 x 3 = 14; bubble 14 - 12 = 2.
  CHECK(cm::pipelined_step_ms(2, 4, 1.0, 3.0, 0) == Approx(14.0));
  CHECK(cm::pipeline_bubble_ms(2, 4, 1.0, 3.0, 0) == Approx(2.0));
  // One patch is a sequential pass: P = 4, M = 1: 4 x 2 + 3 x 1 = 11 ms, bubble 11 - 2 = 9.
  CHECK(cm::pipelined_step_ms(4, 1, 2.0, 1.0, 0) == Approx(11.0));
}

TEST_CASE("flux-tiny 128x128 on 2 stages, 4 patches: the warm-up, pipelined and mean step by hand",
          "[costmodel][pipefusion]") {
  // 128 / 16 = 8 latent rows of 8 tokens: 64 image tokens, 16 text; D = 192, F = 768, bf16;
  // guidance-distilled: one sample per forward. 4 patches of 2 rows = 16 image tokens; each
  // patch carries the 16 text tokens: 32 tokens per patch forward, 80 for the full sequence.
  auto q = make_query("flux-tiny", 2, 128, 128);
  q.steps = 4;
  const RuntimeProfile rt = round_runtime();
  q.runtime = &rt;
  const RoundHardware hw(*q.hardware);
  const Prediction p = CostModel(hw).predict(q, pipefusion(2, 4, 1), cpplan::CpVariant::kNone);
  const cm::PipeFusionCost& c = p.pipefusion;
  REQUIRE(c.active());
  CHECK(c.stages == 2);
  CHECK(c.patches == 4);
  CHECK(c.warmup_steps == 1);
  // Stages 2 + 2: the 2 double blocks, then the 2 single ones. Memory-bound work per token per
  // block: 10 D + 8 D + 2 F = 1920 + 1536 + 1536 = 4992 elements x 2 bytes (the same for both
  // kinds). On a patch (32 tokens): 319,488 bytes = 0.319488 ms per block, under the host's 1 ms
  // (double) and 0.5 ms (single): host-bound. Stage 0: 2 ms, stage 1: 1 ms; stage 0 sets the pace.
  CHECK(c.stage_blocks == 2);
  CHECK(c.stage_patch_ms == Approx(2.0));
  // A patch's hidden states: 32 x 192 x 2 = 12,288 bytes: 0.01 + 0.012288 ms.
  CHECK(c.p2p_patch_ms == Approx(0.022288));
  // The full sequence's: 80 x 192 x 2 = 30,720 bytes: 0.01 + 0.03072 ms.
  CHECK(c.p2p_full_ms == Approx(0.04072));
  // The last patch's velocity back to stage 0: 16 x 64 channels x 2 = 2048 bytes: 0.012048 ms.
  CHECK(c.return_ms == Approx(0.012048));
  // Rest: the scheduler's 3 x 64 x 64 x 4 = 49,152 bytes (0.049152 ms) against 40 ops x 10 us =
  // 0.4 ms on the host: 0.4 ms. Pipelined: 2 x 2 + 1 x 0.022288 + 3 x 2 + 0.4 + 0.012048.
  CHECK(c.pipelined_step_ms == Approx(10.434336));
  CHECK(c.bubble_ms == Approx(10.434336 - 4 * 2.0 - 0.412048));  // 2.022288: one slot + one send
  // Warm-up: stage 0 on 80 tokens: host 2 ms vs 2 x 798,720 bytes = 1.59744 ms: 2 ms; stage 1:
  // host 1 ms vs 1.59744 ms: GPU-bound; + one full send 0.04072 + rest 0.4 + the latent's
  // velocity 64 x 64 x 2 = 8192 bytes (0.018192 ms).
  CHECK(c.warmup_step_ms == Approx(2.0 + 1.59744 + 0.04072 + 0.4 + 0.018192));  // 4.056352
  // The mean of 1 warm-up and 3 pipelined steps; the image is 4 of them.
  CHECK(p.step_ms == Approx((4.056352 + 3 * 10.434336) / 4));  // 8.83984
  CHECK(p.image_ms == Approx(4 * p.step_ms + p.pipeline.total_ms()));
  // Point-to-point time of stage 0's rank per step: (1 x 0.04072 + 3 x 4 x 0.022288) / 4.
  CHECK(p.axis_comm_ms[static_cast<int>(CommAxis::kPp)] == Approx((0.04072 + 12 * 0.022288) / 4));
}

TEST_CASE("The bytes a stage sends per step follow the warm-up and pipelined formulas for flux-tiny",
          "[costmodel][pipefusion][comm_bytes]") {
  // 64 image tokens, 16 text, D = 192, b = 2, one sample, no CP (k = 1), 4 steps, W = 1, M = 4:
  //   warm-up:   (64 + 16) x 192 x 2 = 30,720 bytes
  //   pipelined: (64 + 4 x 16) x 192 x 2 = 49,152 bytes (every patch carries the text)
  //   mean: (30,720 + 3 x 49,152) / 4 = 44,544 bytes; no CP or CFG collective adds any.
  auto q = make_query("flux-tiny", 2, 128, 128);
  q.steps = 4;
  const RoundHardware hw(*q.hardware);
  const CostModel cost(hw);
  CHECK(cost.predict(q, pipefusion(2, 4, 1), cpplan::CpVariant::kNone).comm_bytes == 44544.0);
  CHECK(cost.predict(q, pipefusion(2, 4, 1), cpplan::CpVariant::kNone).pipefusion.p2p_bytes == 44544.0);
  // Four stages: the same per sending rank (stages 0 to 2 each send every patch once).
  q.gpus = 4;
  CHECK(cost.predict(q, pipefusion(4, 4, 1), cpplan::CpVariant::kNone).comm_bytes == 44544.0);
  // No warm-up: every step pipelined, 49,152 bytes.
  CHECK(cost.predict(q, pipefusion(4, 4, 0), cpplan::CpVariant::kNone).comm_bytes == 49152.0);
}

TEST_CASE("A stage holds its blocks' weights and a K/V buffer of the full sequence per block",
          "[costmodel][pipefusion][memory]") {
  // flux-tiny: D = 192 (D^2 = 36,864), F = 768. Linears per stream 4 D^2 + 2 D F = 442,368: a
  // double block 884,736, a single 442,368; adaLN 12 D^2 = 442,368 (double), 3 D^2 = 110,592
  // (single). Blocks 2 x (884,736 + 442,368) + 2 x (442,368 + 110,592) = 3,760,128 of 4,109,824
  // parameters; the rest, 349,696, sits on the first and the last stage.
  auto q = make_query("flux-tiny", 2, 128, 128);
  CHECK(cm::pipefusion_weight_bytes(*q.model, 2) == 2.0 * (2 * 1327104 + 349696));  // stage 0: 6,007,808
  CHECK(cm::pipefusion_weight_bytes(*q.model, 4) == 2.0 * (1327104 + 349696));      // one double block
  // FLUX.1-dev (D = 3072, F = 12,288): a double block 226,492,416 + 113,246,208 = 339,738,624
  // parameters, a single 141,557,760; 19 x 339,738,624 + 38 x 141,557,760 = 11,834,228,736 of
  // 11,901,408,320; rest 67,179,584. Four stages: stage 0 has 15 double blocks.
  const auto flux = make_query("flux.1-dev", 4);
  CHECK(cm::pipefusion_weight_bytes(*flux.model, 4) == 2.0 * (15.0 * 339738624 + 67179584));
  CHECK(cm::pipefusion_weight_bytes(*flux.model, 1) == 2.0 * 11901408320.0);

  // K/V buffer per block: 2 x (64 + 16) x 192 x 2 = 61,440 bytes; stage 0 keeps 2 blocks'.
  const RoundHardware hw(*q.hardware);
  const RuntimeProfile rt = round_runtime();
  const auto pc = pipefusion(2, 4, 1);
  const StepContext ctx(q, pc, cpplan::CpVariant::kNone, hw, rt, nullptr);
  CHECK(cm::kv_buffer_bytes_per_block(ctx) == 61440.0);
  const Prediction p = CostModel(hw).predict(q, pc, cpplan::CpVariant::kNone);
  CHECK(p.memory.transformer_weights == 6007808.0);
  CHECK(p.memory.attention_extra == 122880.0);  // no CP strategy transient: the buffer alone
  CHECK(p.memory.activations > 122880.0);
  // With Ulysses 2 each rank keeps half: 2 x (32 + 8) x 192 x 2 = 30,720 bytes per block.
  q.gpus = 4;
  const auto pu = pipefusion(2, 4, 1, 2);
  const StepContext split(q, pu, cpplan::CpVariant::kUlysses, hw, rt, nullptr);
  CHECK(cm::kv_buffer_bytes_per_block(split) == 30720.0);
}

TEST_CASE("A plan without PipeFusion is priced as the sum of its blocks and the rest of the step",
          "[costmodel][pipefusion]") {
  // The P = 1 path is today's: step = every block group's time + the rest of the step; no
  // PipeFusion terms, no point-to-point time.
  const auto q = make_query("flux.1-dev", 4, 1024, 1024);
  const cm::DatasheetModel hw(*q.hardware);
  const auto pc = config(1, 4);
  const Prediction p = CostModel(hw).predict(q, pc, cpplan::CpVariant::kUlysses);
  CHECK_FALSE(p.pipefusion.active());
  double sum = p.step_rest.time_ms();
  for (int i = 0; i < p.block_count; ++i) sum += p.blocks[i].time_ms();
  CHECK(p.step_ms == Approx(sum));
  CHECK(p.axis_comm_ms[static_cast<int>(CommAxis::kPp)] == 0);
  // The pp group of the default layout sits between ring and cfg: cfg's stride is t x u x r x p.
  ParallelConfig layered = config(1, 2, 1, 2);
  layered.pipefusion = {2, 2, 1};
  const cm::CommLayout l = cm::default_layout(layered, *q.hardware);
  CHECK(l[CommAxis::kPp].ranks == 2);
  CHECK(l[CommAxis::kPp].stride == 2);
  CHECK(l[CommAxis::kCfg].stride == 4);
}
