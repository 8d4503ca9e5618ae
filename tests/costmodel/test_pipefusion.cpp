// PipeFusion's cost (costmodel/pipefusion_cost.h, docs/cost-model.md "PipeFusion"): the stage
// split, the pipelined phase (its fill and drain once per image), the warm-up steps, the
// per-patch host work, the mean step, the point-to-point bytes, xDiT's patch and the memory of a
// stage. Every expected value is derived by hand below from the profiles' numbers and round
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

TEST_CASE("The pipelined phase fills and drains once per image: a 4-stage, 8-patch, 27-step pipe paced by its stages",
          "[costmodel][pipefusion]") {
  // P = 4 stages of 10 ms per patch (their sum 40), a send 1 ms, the last stage's return 0.5 ms,
  // M = 8, S - W = 27 pipelined steps. A patch crosses the pipe in 40 + 3 x 1 = 43 ms and is back
  // at stage 0 after 43.5; a step's 8 patches keep stage 0 busy 8 x 10 = 80 ms > 43.5, so the
  // stages pace the pipe: cycle 80 ms, slot 10 ms, 27 x 8 = 216 slots. The last patch enters
  // stage 0 at 26 x 80 + 7 x 10 = 2150 and leaves the last stage 43 ms later: 2193 ms per image,
  // of which 216 x 10 = 2160 busy and 33 = 3 x (10 + 1) the fill and drain (the old per-step
  // model paid 33 ms in each of the 27 steps).
  const cm::PipelinedPhase ph = cm::pipelined_phase({4, 8, 27, 10.0, 40.0, 1.0, 0.5});
  CHECK(ph.latency_ms == Approx(43.0));
  CHECK(ph.loop_ms == Approx(43.5));
  CHECK(ph.cycle_ms == Approx(80.0));
  CHECK(ph.slots == 216.0);
  CHECK(ph.slot_ms == Approx(10.0));
  CHECK(ph.total_ms == Approx(2193.0));
  CHECK(ph.fill_drain_ms == Approx(33.0));
}

TEST_CASE("The pipelined phase of a 4-stage, 4-patch, 28-step image (W = 1) is paced by a patch's round trip",
          "[costmodel][pipefusion]") {
  // The same stages with M = P = 4: patch 0 is back at stage 0 only 43.5 ms after it started, 3.5
  // ms after stage 0 finished patch 3 (4 x 10 = 40), so every step takes the round trip: cycle
  // 43.5 ms, slot 43.5 / 4 = 10.875. Patch 0 of step i starts at i x 43.5; patch 3 of the last
  // (27th) step at 26 x 43.5 + 3 x 10 = 1161, and leaves the pipe 43 ms later: 1204 ms per image.
  // 108 slots x 10.875 = 1174.5 ms, so the fill and drain is 29.5 ms.
  const cm::PipelinedPhase ph = cm::pipelined_phase({4, 4, 27, 10.0, 40.0, 1.0, 0.5});
  CHECK(ph.cycle_ms == Approx(43.5));
  CHECK(ph.slots == 108.0);
  CHECK(ph.slot_ms == Approx(10.875));
  CHECK(ph.total_ms == Approx(1204.0));
  CHECK(ph.fill_drain_ms == Approx(29.5));
}

TEST_CASE("The pipelined phase paced by the link between stages, and an image without pipelined steps",
          "[costmodel][pipefusion]") {
  // P = 2 stages of 1 ms (sum 2), a send 3 ms, M = 4, 2 pipelined steps: the link carries a patch
  // every 3 ms. Patch k leaves stage 0 at k + 1 (stage 0 runs ahead), the link is busy from 1 to
  // 1 + 8 x 3 = 25 for the 8 patches, the last one's stage 1 ends at 26. Slots 8 x 3 = 24: fill
  // and drain 2 (stage 0 before the first send, stage 1 after the last).
  const cm::PipelinedPhase ph = cm::pipelined_phase({2, 4, 2, 1.0, 2.0, 3.0, 0.5});
  CHECK(ph.cycle_ms == Approx(12.0));
  CHECK(ph.slot_ms == Approx(3.0));
  CHECK(ph.total_ms == Approx(26.0));
  CHECK(ph.fill_drain_ms == Approx(2.0));
  // W = S: nothing pipelined, nothing to fill.
  const cm::PipelinedPhase none = cm::pipelined_phase({2, 4, 0, 1.0, 2.0, 3.0, 0.5});
  CHECK(none.total_ms == 0);
  CHECK(none.slots == 0);
  CHECK(none.fill_drain_ms == 0);
}

TEST_CASE("flux-tiny 128x128 on 2 stages, 4 patches: the warm-up, per-patch host, pipelined phase and step by hand",
          "[costmodel][pipefusion]") {
  // 128 / 16 = 8 latent rows of 8 tokens: 64 image tokens, 16 text; D = 192, F = 768, bf16;
  // guidance-distilled: one sample per forward. xDiT's split of the 16-high latent into 4:
  // ceil(16 / 4) = 4, a multiple of patch size 2: 4 patches of 2 token rows = 16 image tokens;
  // each patch's forward runs the 16 text tokens with it: 32 tokens, 80 for the full sequence.
  auto q = make_query("flux-tiny", 2, 128, 128);
  q.steps = 4;
  RuntimeProfile rt = round_runtime();
  rt.collective_us = 5;  // each send and receive of a patch
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
  // kinds); kernels cost nothing. On a patch (32 tokens): 319,488 bytes = 0.319488 ms per block.
  // The host: 1 ms per double block, 0.5 per single, and outside the blocks per patch the step's
  // 40 ops (0.4 ms) and a receive and a send (2 x 5 us): 0.41 ms. Stage 0: GPU 0.638976 ms, host
  // 2.41 ms: host-bound, 2.41 ms; stage 1: 1.41 ms. Stage 0 sets the pace.
  CHECK(c.stage_blocks == 2);
  CHECK(c.patch_host_extra_ms == Approx(0.41));
  CHECK(c.stage_patch_gpu_ms == Approx(0.638976));
  CHECK(c.stage_patch_host_ms == Approx(2.41));
  CHECK(c.host_bound_patch());
  CHECK(c.stage_patch_ms == Approx(2.41));
  // Sends of 384 bytes per token (192 x 2): a patch's 16 image tokens 6,144 bytes, 0.01 +
  // 0.006144 ms; the text once per step, also 6,144 bytes; the full image 24,576 bytes, 0.034576
  // ms, plus the text's send; a patch's velocity back, 16 x 64 channels x 2 = 2,048 bytes.
  CHECK(c.p2p_patch_ms == Approx(0.016144));
  CHECK(c.p2p_text_ms == Approx(0.016144));
  CHECK(c.p2p_full_ms == Approx(0.05072));
  CHECK(c.return_ms == Approx(0.012048));
  // Pipelined phase, 3 steps x 4 patches: stages 2.41 + 1.41 = 3.82 ms, link 0.016144 + 0.016144 / 4
  // = 0.02018 ms: latency 3.84018, round trip 3.852228 < 4 x 2.41, so the slot is 2.41 ms; 12
  // slots; 2 x 9.64 + 3 x 2.41 + 3.84018 = 30.35018 ms, of which 28.92 busy: fill and drain
  // 1.43018. The rest of the step on the GPU, the scheduler's 3 x 64 x 64 x 4 = 49,152 bytes and
  // the output norm and modulation's 4 x 64 x 192 x 2 = 98,304: 0.147456 ms a step.
  CHECK(c.round_trip_ms == Approx(3.852228));
  CHECK(c.pipelined_slots == 12.0);
  CHECK(c.slot_ms == Approx(2.41));
  CHECK(c.fill_drain_ms == Approx(1.43018));
  CHECK(c.pipelined_rest_ms == Approx(3 * 0.147456));
  CHECK(c.pipelined_ms == Approx(30.35018 + 0.442368));  // 30.792548
  CHECK(c.pipelined_step_ms == Approx(30.792548 / 3));
  CHECK(c.patch_host_ms == Approx(12 * 2.41));
  // Warm-up: stage 0 on 80 tokens: host 2 ms vs 2 x 798,720 bytes = 1.59744 ms: 2 ms; stage 1:
  // host 1 ms vs 1.59744 ms: GPU-bound; + the full send 0.05072 + the latent's velocity 64 x 64 x
  // 2 = 8,192 bytes (0.018192 ms) + the rest of the step, max(0.147456, 0.4 ms host) = 0.4.
  CHECK(c.warmup_step_ms == Approx(2.0 + 1.59744 + 0.05072 + 0.018192 + 0.4));  // 4.066352
  CHECK(c.warmup_ms == Approx(4.066352));
  // The image's denoising over its 4 steps; the image is 4 of them.
  CHECK(p.step_ms == Approx((4.066352 + 30.792548) / 4));  // 8.714725
  CHECK(p.image_ms == Approx(4 * p.step_ms + p.pipeline.total_ms()));
  // The host per step, the mean: a warm-up step 2 + 0.4, a pipelined one 4 x 2.41:
  // (2.4 + 3 x 9.64) / 4 = 7.83 ms.
  CHECK(p.host_ms == Approx(7.83));
  // Point-to-point time of stage 0's rank per image: 0.05072 + 3 x (4 x 0.016144 + 0.016144) =
  // 0.29288 ms; per step a quarter.
  CHECK(c.p2p_ms == Approx(0.29288));
  CHECK(p.axis_comm_ms[static_cast<int>(CommAxis::kPp)] == Approx(0.29288 / 4));
}

TEST_CASE("The bytes a stage sends per step: the image once and the joint text once, warm-up or pipelined",
          "[costmodel][pipefusion][comm_bytes]") {
  // 64 image tokens, 16 text, D = 192, b = 2, one sample, no CP (k = 1): (64 + 16) x 192 x 2 =
  // 30,720 bytes in every step: the patches add up to the image, and xDiT sends the text states
  // once per step (with patch 0), not with every patch. No CP or CFG collective adds any.
  auto q = make_query("flux-tiny", 2, 128, 128);
  q.steps = 4;
  const RoundHardware hw(*q.hardware);
  const CostModel cost(hw);
  CHECK(cost.predict(q, pipefusion(2, 4, 1), cpplan::CpVariant::kNone).comm_bytes == 30720.0);
  CHECK(cost.predict(q, pipefusion(2, 4, 1), cpplan::CpVariant::kNone).pipefusion.p2p_bytes == 30720.0);
  // Four stages: the same per sending rank (stages 0 to 2 each send every patch once).
  q.gpus = 4;
  CHECK(cost.predict(q, pipefusion(4, 4, 1), cpplan::CpVariant::kNone).comm_bytes == 30720.0);
  // No warm-up: every step pipelined, the same bytes.
  CHECK(cost.predict(q, pipefusion(4, 4, 0), cpplan::CpVariant::kNone).comm_bytes == 30720.0);
}

TEST_CASE("A patch is the largest of xDiT's split, its rows rounded to the sequence-parallel degree",
          "[costmodel][pipefusion]") {
  // flux-tiny 128x128: a 16-high latent (8 token rows of 8 tokens). M = 3: ceil(16 / 3) = 6, a
  // multiple of 2: patches of 3, 3 and 2 rows; the largest 24 tokens. Under sequence parallelism 2
  // the height rounds to a multiple of 2 x 2: 8, two patches of 4 rows, 32 tokens.
  const auto q = make_query("flux-tiny", 2, 128, 128);
  CHECK(cm::patch_query(q, 3, 1).sequence.image_tokens == 24);
  CHECK(cm::patch_query(q, 3, 1).sequence.attention_tokens == 24 + 16);
  CHECK(cm::patch_query(q, 3, 2).sequence.image_tokens == 32);
}

TEST_CASE("Under PipeFusion Ring passes the K/V buffer of the full sequence, Ulysses' all-to-alls stay a patch's",
          "[costmodel][pipefusion][ring]") {
  // flux-tiny (text split with the image), 4 patches of 16 image tokens under CP 2: a patch's
  // forward is 16 + 16 = 32 tokens, the full sequence 80. Ring all-gathers K and V of the split
  // sequence: 2 x 32 x 192 x 2 = 24,576 bytes for a patch's own tokens; xDiT's ring passes the
  // cached K/V of every patch, 2 x 80 x 192 x 2 = 61,440 bytes, the full sequence's.
  auto q = make_query("flux-tiny", 4, 128, 128);
  const RoundHardware hw(*q.hardware);
  const RuntimeProfile rt = round_runtime();
  ParallelConfig ring = config(2, 1);
  ring.pipefusion = {2, 4, 1};
  const StepContext full(q, ring, cpplan::CpVariant::kRing, hw, rt, nullptr);
  const auto patch_q = cm::patch_query(q, 4, 2);
  StepContext patch(patch_q, ring, cpplan::CpVariant::kRing, hw, rt, nullptr);
  REQUIRE(patch.attention.comm_count == 1);
  CHECK(patch.attention.comm[0].bytes == 24576.0);
  cm::attend_full_sequence(patch, full);
  CHECK(patch.attention.comm[0].bytes == Approx(61440.0));
  CHECK(patch.attention.comm[0].bytes == Approx(full.attention.comm[0].bytes));
  // Ulysses 2: the all-to-alls of Q, K, V and O carry the patch's 32 / 2 = 16 local tokens x 192 x
  // 2 = 6,144 bytes each, before and after.
  ParallelConfig ulysses = config(1, 2);
  ulysses.pipefusion = {2, 4, 1};
  const StepContext ufull(q, ulysses, cpplan::CpVariant::kUlysses, hw, rt, nullptr);
  StepContext upatch(patch_q, ulysses, cpplan::CpVariant::kUlysses, hw, rt, nullptr);
  REQUIRE(upatch.attention.comm_count >= 1);
  CHECK(upatch.attention.comm[0].bytes == 6144.0);
  cm::attend_full_sequence(upatch, ufull);
  CHECK(upatch.attention.comm[0].bytes == 6144.0);
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
