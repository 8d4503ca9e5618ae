// Validity of parallel configs against shared/spec/parallelism.md: the worked FLUX.1-dev example
// and every rule with a valid and an invalid case. Messages name the field, its value and the rule.
#include <catch2/catch.hpp>
#include <algorithm>

#include <string>
#include <vector>

#include "core/sequence.h"
#include "planner/validate.h"
#include "tests/support/fixtures.h"

using cpplan::CpVariant;
using cpplan::test::config;
using cpplan::test::make_query;
using Reasons = std::vector<std::string>;

namespace {
Reasons reasons(const cpplan::Query& q, const cpplan::ParallelConfig& c) {
  return cpplan::messages(cpplan::planner::validate(q, c));
}

// The query with `text_tokens` instead of the model's default.
cpplan::Query with_text(cpplan::Query q, int text_tokens) {
  auto s = cpplan::compute_sequence(*q.model, q.resolution, q.frames, text_tokens);
  REQUIRE(s.ok());
  q.sequence = *s;
  return q;
}

const cpplan::ParallelConfig kRing4 = config(4, 1);
const cpplan::ParallelConfig kUlysses4 = config(1, 4);
const cpplan::ParallelConfig kUnified2x2 = config(2, 2);
const cpplan::ParallelConfig kUlyssesAnything4 = config(1, 4, 1, 1, 1, true, false);
const cpplan::ParallelConfig kRingAnything4 = config(4, 1, 1, 1, 1, false, true);
}  // namespace

TEST_CASE("FLUX.1-dev on 4 GPUs at 1024x1024: all five CP variants are valid", "[planner][validate][example]") {
  // S_img = 64 x 64 = 4096 and S_txt = 512 are both divisible by 4; 24 heads by 4 and 2.
  const auto q = make_query("flux.1-dev", 4, 1024, 1024);
  CHECK(reasons(q, kRing4).empty());
  CHECK(reasons(q, kUlysses4).empty());
  CHECK(reasons(q, kUnified2x2).empty());
  CHECK(reasons(q, kUlyssesAnything4).empty());
  CHECK(reasons(q, kRingAnything4).empty());

  const auto plan = cpplan::planner::make_plan(q, kUnified2x2);
  CHECK(plan.valid());
  CHECK(plan.variant == CpVariant::kUnified);
  CHECK(cpplan::planner::make_plan(q, kUlyssesAnything4).variant == CpVariant::kUlyssesAnything);
  CHECK(cpplan::planner::make_plan(q, kRingAnything4).variant == CpVariant::kRingAnything);
}

TEST_CASE("FLUX.1-dev on 4 GPUs at 1008x1008: only the anything modes run", "[planner][validate][example]") {
  // S_img = 63 x 63 = 3969 is odd: no even split of degree 2 or 4.
  const auto q = make_query("flux.1-dev", 4, 1008, 1008);
  CHECK(reasons(q, kUlyssesAnything4).empty());
  CHECK(reasons(q, kRingAnything4).empty());
  CHECK(reasons(q, kRing4) == Reasons{"ring_degree = 4: must divide image tokens = 3969"});
  CHECK(reasons(q, kUlysses4) == Reasons{"ulysses_degree = 4: must divide image tokens = 3969"});
  CHECK(reasons(q, kUnified2x2) == Reasons{"ring_degree x ulysses_degree = 4: must divide image tokens = 3969"});

  // Even at degree 2 (with TP 2 filling the other two GPUs).
  CHECK(reasons(q, config(2, 1, 2)) == Reasons{"ring_degree = 2: must divide image tokens = 3969"});
  CHECK(reasons(q, config(1, 2, 2)) == Reasons{"ulysses_degree = 2: must divide image tokens = 3969"});
  CHECK(reasons(q, config(1, 2, 2, 1, 1, true)).empty());
  CHECK(reasons(q, config(2, 1, 2, 1, 1, false, true)).empty());

  const auto plan = cpplan::planner::make_plan(q, kRing4);
  CHECK_FALSE(plan.valid());
  CHECK(plan.variant == CpVariant::kRing);
  CHECK(plan.reasons().size() == 1);
}

TEST_CASE("No degree may be below 1", "[planner][validate][degrees]") {
  const auto q = make_query("flux.1-dev", 4);
  CHECK(reasons(q, config(0, 4)) == Reasons{"ring_degree = 0: must be at least 1"});
  CHECK(reasons(q, config(1, 0)) == Reasons{"ulysses_degree = 0: must be at least 1"});
  CHECK(reasons(q, config(1, 1, -1)) == Reasons{"tp_degree = -1: must be at least 1"});
  CHECK(reasons(q, config(1, 1, 1, 0)) == Reasons{"cfg_degree = 0: must be at least 1"});
  CHECK(reasons(q, config(1, 1, 1, 1, 0)) == Reasons{"dp_degree = 0: must be at least 1"});
  // All of them at once, and nothing else (the other rules would divide by them).
  CHECK(reasons(q, config(0, 0, 0, 0, 0)).size() == 5);
  CHECK(reasons(q, config(1, 4)).empty());
}

TEST_CASE("The product of the degrees must equal the GPU count", "[planner][validate][degrees]") {
  const auto q = make_query("flux.1-dev", 4);
  CHECK(reasons(q, config(2, 1)) ==
        Reasons{"ring_degree x ulysses_degree x tp_degree x pipefusion_degree x cfg_degree x dp_degree = 2: must equal the GPU count 4"});
  CHECK(reasons(q, config(4, 2)) ==
        Reasons{"ring_degree x ulysses_degree x tp_degree x pipefusion_degree x cfg_degree x dp_degree = 8: must equal the GPU count 4"});
  CHECK(reasons(q, config(2, 1, 2)).empty());
  // One GPU: only the trivial config.
  const auto one = make_query("flux.1-dev", 1);
  CHECK(reasons(one, config(1, 1)).empty());
}

TEST_CASE("ulysses_anything and ring_anything are mutually exclusive", "[planner][validate][anything]") {
  const auto q = make_query("flux.1-dev", 4);
  // The ulysses flag wins the classification, so only the exclusivity rule breaks.
  CHECK(reasons(q, config(1, 4, 1, 1, 1, true, true)) ==
        Reasons{"ulysses_anything and ring_anything: mutually exclusive; choose one"});
  CHECK(reasons(q, config(1, 4, 1, 1, 1, true, false)).empty());
}

TEST_CASE("The anything modes do not combine with Unified", "[planner][validate][anything]") {
  const auto q = make_query("flux.1-dev", 4);
  CHECK(reasons(q, config(2, 2, 1, 1, 1, true, false)) ==
        Reasons{"ring_degree = 2: ulysses_anything needs ring_degree = 1 (anything modes do not combine with Unified)"});
  CHECK(reasons(q, config(2, 2, 1, 1, 1, false, true)) ==
        Reasons{"ulysses_degree = 2: ring_anything needs ulysses_degree = 1 (anything modes do not combine with Unified)"});
}

TEST_CASE("An anything flag needs a degree above 1", "[planner][validate][anything]") {
  const auto q = make_query("flux.1-dev", 4);
  CHECK(reasons(q, config(1, 1, 4, 1, 1, true, false)) ==
        Reasons{"ulysses_degree = 1: ulysses_anything needs ulysses_degree > 1"});
  CHECK(reasons(q, config(1, 1, 4, 1, 1, false, true)) == Reasons{"ring_degree = 1: ring_anything needs ring_degree > 1"});
  CHECK(reasons(q, config(1, 1, 4)).empty());
}

TEST_CASE("Ulysses needs the heads divisible by its degree", "[planner][validate][ulysses]") {
  // FLUX.1-dev at 1280x1024 with a 510-token prompt: 80 x 64 = 5120 image and 510 text tokens
  // both divide by 5, so only the head rule can break: 24 % 5 = 4.
  const auto q = with_text(make_query("flux.1-dev", 5, 1280, 1024), 510);
  REQUIRE(q.sequence.image_tokens == 5120);
  CHECK(reasons(q, config(1, 5)) == Reasons{"ulysses_degree = 5: must divide num_heads = 24"});
  // Ulysses Anything pads 24 heads to 25: padding 1 < 25 / 5 = 5.
  CHECK(reasons(q, config(1, 5, 1, 1, 1, true)).empty());
  // Ring has no head rule.
  CHECK(reasons(q, config(5, 1)).empty());
  // 24 % 4 = 0
  CHECK(reasons(make_query("flux.1-dev", 4), config(1, 4)).empty());
}

TEST_CASE("A degree that divides neither length nor heads reports each rule", "[planner][validate][ulysses]") {
  const auto q = make_query("flux.1-dev", 5, 1280, 1024);  // 5120 image, 512 text
  CHECK(reasons(q, config(1, 5)) == Reasons{"ulysses_degree = 5: must divide text tokens = 512",
                                            "ulysses_degree = 5: must divide num_heads = 24"});
}

TEST_CASE("Ulysses Anything pads heads only while the padding is below one rank's share",
          "[planner][validate][ulysses_anything]") {
  cpplan::ModelProfile thirty = *cpplan::test::catalog().find_model("flux.1-dev");
  thirty.heads = 30;  // 30 x 128 = 3840

  // 30 heads on 8 ranks: pad 2 to 32, and 2 < 32 / 8 = 4.
  auto q8 = make_query("flux.1-dev", 8);
  q8.model = &thirty;
  CHECK(reasons(q8, config(1, 8, 1, 1, 1, true)).empty());
  // Plain Ulysses cannot: 30 % 8 = 6.
  CHECK(reasons(q8, config(1, 8)) == Reasons{"ulysses_degree = 8: must divide num_heads = 30"});

  // 30 heads on 16 ranks: pad 2 to 32, and 2 is not < 32 / 16 = 2.
  auto q16 = make_query("flux.1-dev", 16);
  q16.model = &thirty;
  CHECK(reasons(q16, config(1, 16, 1, 1, 1, true)) ==
        Reasons{"ulysses_degree = 16: ulysses_anything pads 30 heads to 32, and the padding 2 must be less than one "
                "rank's share 32 / 16 = 2"});
}

TEST_CASE("Ulysses Anything's padding rule applies to the heads per TP rank", "[planner][validate][ulysses_anything]") {
  // flux.1-dev, tp 2: 12 heads per rank on u = 8 pads 4 to 16, and 4 is not < 16 / 8 = 2.
  const auto q = make_query("flux.1-dev", 16);
  CHECK(reasons(q, config(1, 8, 2, 1, 1, true)) ==
        Reasons{"ulysses_degree = 8: ulysses_anything pads 12 heads per TP rank to 16, and the padding 4 must be less "
                "than one rank's share 16 / 8 = 2"});
}

TEST_CASE("Uneven splits still need a token of each split part per rank", "[planner][validate][anything]") {
  // flux-tiny at 256x256: 256 image and 16 text tokens; Ring Anything over 32 ranks leaves text ranks empty.
  const auto q = make_query("flux-tiny", 32);
  CHECK(reasons(q, config(32, 1, 1, 1, 1, false, true)) ==
        Reasons{"ring_degree = 32: needs at least one text token per rank (text tokens = 16)"});
  CHECK(reasons(make_query("flux-tiny", 16), config(16, 1, 1, 1, 1, false, true)).empty());
}

TEST_CASE("Ulysses with TP needs the heads per TP rank divisible by u", "[planner][validate][ulysses][tp]") {
  // 24 heads / tp 4 = 6 heads per rank; 6 % 4 != 0
  CHECK(reasons(make_query("flux.1-dev", 16), config(1, 4, 4)) ==
        Reasons{"ulysses_degree = 4: must divide heads per TP rank = 24 / tp_degree 4 = 6"});
  // 24 / tp 2 = 12; 12 % 4 = 0
  CHECK(reasons(make_query("flux.1-dev", 8), config(1, 4, 2)).empty());
  // Unified applies the same rule to its Ulysses part: 6 % 4 != 0 again
  CHECK(reasons(make_query("flux.1-dev", 32), config(2, 4, 4)) ==
        Reasons{"ulysses_degree = 4: must divide heads per TP rank = 24 / tp_degree 4 = 6"});
}

TEST_CASE("Models that split text tokens need the text divisible too", "[planner][validate][ring]") {
  // FLUX.1-dev at 1536x1024: 96 x 64 = 6144 image tokens divide by 3, the 512 text tokens do not.
  const auto flux = make_query("flux.1-dev", 3, 1536, 1024);
  REQUIRE(flux.sequence.image_tokens == 6144);
  CHECK(reasons(flux, config(3, 1)) == Reasons{"ring_degree = 3: must divide text tokens = 512"});
  // With a 510-token prompt both divide.
  CHECK(reasons(with_text(flux, 510), config(3, 1)).empty());

  // Wan splits only the video tokens (32760 = 3 x 10920); its 512 text tokens stay whole.
  const auto wan = make_query("wan2.1-t2v-14b", 3);
  CHECK(reasons(wan, config(3, 1)).empty());

  // SD3.5-large has joint attention but keeps the 333 text tokens whole: ring 2 is fine.
  const auto sd = make_query("sd3.5-large", 2);
  CHECK(reasons(sd, config(2, 1)).empty());
}

TEST_CASE("The native attention backend cannot run Ring, Unified or Ring Anything", "[planner][validate][backend]") {
  auto q = make_query("flux.1-dev", 4);
  q.backend = cpplan::AttentionBackend::kNative;
  const std::string ring4 =
      "ring_degree = 4: attention backend native cannot return the LSE that Ring needs; use flash, cudnn or sage";
  CHECK(reasons(q, kRing4) == Reasons{ring4});
  CHECK(reasons(q, kRingAnything4) == Reasons{ring4});
  CHECK(reasons(q, kUnified2x2) ==
        Reasons{"ring_degree = 2: attention backend native cannot return the LSE that Ring needs; use flash, cudnn or "
                "sage"});
  CHECK(reasons(q, kUlysses4).empty());
  CHECK(reasons(q, kUlyssesAnything4).empty());
  for (auto b : {cpplan::AttentionBackend::kFlash, cpplan::AttentionBackend::kCudnn, cpplan::AttentionBackend::kSage}) {
    q.backend = b;
    CHECK(reasons(q, kRing4).empty());
  }
}

TEST_CASE("Tensor parallelism must divide the heads and the FFN hidden size", "[planner][validate][tp]") {
  CHECK(reasons(make_query("flux.1-dev", 4), config(1, 1, 4)).empty());
  // 24 % 5 and 12288 % 5
  CHECK(reasons(make_query("flux.1-dev", 5), config(1, 1, 5)) ==
        Reasons{"tp_degree = 5: must divide num_heads = 24", "tp_degree = 5: must divide ffn_hidden = 12288"});
  // Heads divide but the FFN does not.
  cpplan::ModelProfile odd_ffn = *cpplan::test::catalog().find_model("flux.1-dev");
  odd_ffn.ffn_hidden = 12290;
  auto q = make_query("flux.1-dev", 4);
  q.model = &odd_ffn;
  CHECK(reasons(q, config(1, 1, 4)) == Reasons{"tp_degree = 4: must divide ffn_hidden = 12290"});
  // SD3.5-large's 38 heads: tp 2 works, tp 4 does not.
  CHECK(reasons(make_query("sd3.5-large", 2), config(1, 1, 2)).empty());
  CHECK(reasons(make_query("sd3.5-large", 4), config(1, 1, 4)) == Reasons{"tp_degree = 4: must divide num_heads = 38"});
}

TEST_CASE("CFG parallelism needs true CFG and a degree of 1 or 2", "[planner][validate][cfg]") {
  CHECK(reasons(make_query("flux.1-dev", 2), config(1, 1, 1, 2)) ==
        Reasons{"cfg_degree = 2: flux.1-dev is guidance-distilled (one pass per step); there is no second pass to "
                "split"});
  CHECK(reasons(make_query("flux.1-schnell", 2), config(1, 1, 1, 2)) ==
        Reasons{"cfg_degree = 2: flux.1-schnell runs without guidance (one pass per step); there is no second pass "
                "to split"});
  CHECK(reasons(make_query("wan2.1-t2v-14b", 2), config(1, 1, 1, 2)).empty());
  CHECK(reasons(make_query("wan2.1-t2v-14b", 8), config(1, 4, 1, 2)).empty());
  CHECK(reasons(make_query("wan2.1-t2v-14b", 3), config(1, 1, 1, 3)) ==
        Reasons{"cfg_degree = 3: must be 1 or 2 (a conditional and an unconditional pass)"});
}

TEST_CASE("Data parallelism must divide the batch", "[planner][validate][dp]") {
  auto q = make_query("flux.1-dev", 2);
  CHECK(reasons(q, config(1, 1, 1, 1, 2)) ==
        Reasons{"dp_degree = 2: must divide the batch = 1 (each replica generates its own images; see --batch)"});
  q.batch = 2;
  CHECK(reasons(q, config(1, 1, 1, 1, 2)).empty());
  q.batch = 3;
  CHECK(reasons(q, config(1, 1, 1, 1, 2)) ==
        Reasons{"dp_degree = 2: must divide the batch = 3 (each replica generates its own images; see --batch)"});
}

TEST_CASE("rotate_method alltoall is reserved, not implemented", "[planner][validate][ring]") {
  const auto q = make_query("flux.1-dev", 4);
  auto c = kRing4;
  c.context_parallel_config.rotate_method = cpplan::RotateMethod::kAllToAll;
  CHECK(reasons(q, c) ==
        Reasons{"rotate_method = alltoall: reserved in the reference, not implemented; use allgather or p2p"});
  c.context_parallel_config.rotate_method = cpplan::RotateMethod::kAllGather;
  CHECK(reasons(q, c).empty());
}

TEST_CASE("rotate_method p2p needs a Ring or Unified plan without ring_anything", "[planner][validate][ring]") {
  const auto q = make_query("flux.1-dev", 4);
  auto with_p2p = [](cpplan::ParallelConfig c) {
    c.context_parallel_config.rotate_method = cpplan::RotateMethod::kP2P;
    return c;
  };
  CHECK(reasons(q, with_p2p(kRing4)).empty());
  CHECK(reasons(q, with_p2p(kUnified2x2)).empty());
  CHECK(reasons(q, with_p2p(kUlysses4)) ==
        Reasons{"rotate_method = p2p: needs a Ring or Unified plan without ring_anything (ring_degree > 1)"});
  CHECK(reasons(q, with_p2p(kRingAnything4)) ==
        Reasons{"rotate_method = p2p: needs a Ring or Unified plan without ring_anything (Ring Anything gathers padded "
                "K/V)"});
}

TEST_CASE("Ring Anything cannot run a model that passes an attention mask", "[planner][validate][ring_anything]") {
  // Qwen-Image 1328x1328: 6889 image tokens (odd) and a text mask.
  const auto qwen = make_query("qwen-image", 2);
  CHECK(reasons(qwen, config(2, 1, 1, 1, 1, false, true)) ==
        Reasons{"ring_anything: qwen-image passes an attention mask, which Ring Anything does not support"});
  // Ulysses Anything has no such limit.
  CHECK(reasons(qwen, config(1, 2, 1, 1, 1, true)).empty());
  // FLUX.1-dev passes no mask.
  CHECK(reasons(make_query("flux.1-dev", 2, 1008, 1008), config(2, 1, 1, 1, 1, false, true)).empty());
}

TEST_CASE("validate returns every violated rule, in a stable order", "[planner][validate]") {
  // FLUX.1-dev at 1008x1008 on 4 GPUs with ring 4 x cfg 2: 8 devices, 3969 odd, distilled model.
  const auto q = make_query("flux.1-dev", 4, 1008, 1008);
  CHECK(reasons(q, config(4, 1, 1, 2)) ==
        Reasons{"ring_degree x ulysses_degree x tp_degree x pipefusion_degree x cfg_degree x dp_degree = 8: must equal the GPU count 4",
                "ring_degree = 4: must divide image tokens = 3969",
                "cfg_degree = 2: flux.1-dev is guidance-distilled (one pass per step); there is no second pass to "
                "split"});

  // Six at once: device count, both flags, the ulysses flag with ring > 1, TP heads and FFN, dp.
  auto c = config(2, 3, 5, 1, 2, true, true);
  const auto many = reasons(q, c);
  CHECK(many.size() == 6);
  CHECK_THAT(many.front(), Catch::StartsWith("ring_degree x ulysses_degree x tp_degree x pipefusion_degree x cfg_degree x dp_degree = 60"));
  CHECK(many[1] == "ulysses_anything and ring_anything: mutually exclusive; choose one");
  CHECK_THAT(many[2], Catch::StartsWith("ring_degree = 2: ulysses_anything needs ring_degree = 1"));
  CHECK(many[3] == "tp_degree = 5: must divide num_heads = 24");
  CHECK(many[4] == "tp_degree = 5: must divide ffn_hidden = 12288");
  CHECK_THAT(many[5], Catch::StartsWith("dp_degree = 2: must divide the batch = 1"));
}

namespace {
// `c` with PipeFusion of P stages, M patches and W warm-up steps.
cpplan::ParallelConfig with_pipefusion(cpplan::ParallelConfig c, int p, int m, int w) {
  c.pipefusion = {p, m, w};
  return c;
}
}  // namespace

TEST_CASE("PipeFusion: FLUX.1-dev on 8 GPUs at 1024x1024 with ulysses 2 x pipefusion 4 is valid",
          "[planner][validate][pipefusion]") {
  // 57 blocks into stages of ceil(57 / 4) = 15: 15 + 15 + 15 + 12; 64 latent rows into 4 patches
  // of 16 rows x 64 columns = 1024 tokens, even over ulysses 2; warm-up 1 <= 28 steps.
  const auto q = make_query("flux.1-dev", 8, 1024, 1024);
  CHECK(reasons(q, with_pipefusion(config(1, 2), 4, 4, 1)).empty());
  CHECK(reasons(q, with_pipefusion(config(1, 2), 4, 16, 28)).empty());  // W = steps: no staleness
  CHECK(reasons(make_query("flux.1-dev", 2, 1024, 1024), with_pipefusion(config(1, 1), 2, 64, 0)).empty());
}

TEST_CASE("PipeFusion: every broken rule is reported with its field, value and rule", "[planner][validate][pipefusion]") {
  const auto q = make_query("flux.1-dev", 8, 1024, 1024);
  // fewer patches than stages, and more warm-up steps than steps
  CHECK(reasons(q, with_pipefusion(config(1, 2), 4, 2, 29)) ==
        Reasons{"num_pipeline_patch = 2: must be at least pipefusion_degree = 4 (a patch in flight per stage)",
                "pipefusion_warmup_steps = 29: must be at most the steps = 28"});
  // more patches than the 64 latent rows
  CHECK(reasons(make_query("flux.1-dev", 2, 1024, 1024), with_pipefusion(config(1, 1), 2, 65, 1)) ==
        Reasons{"num_pipeline_patch = 65: must be at most the latent rows = 64 (patches are whole rows of the latent)"});
  // tensor parallelism, and an anything mode
  CHECK(reasons(q, with_pipefusion(config(1, 1, 2), 4, 4, 1)) ==
        Reasons{"pipefusion_degree = 4 with tp_degree = 2: xDiT does not combine PipeFusion with tensor parallelism"});
  CHECK(reasons(q, with_pipefusion(config(1, 2, 1, 1, 1, true), 4, 4, 1)) ==
        Reasons{"pipefusion_degree = 4 with ulysses_anything: PipeFusion's patches split evenly; anything modes do not "
                "combine with it"});
}

TEST_CASE("PipeFusion: xDiT's stage split may leave the last stages without a block", "[planner][validate][pipefusion]") {
  // flux-tiny has 2 double + 2 single = 4 blocks: 3 stages of ceil(4 / 3) = 2 are 2 + 2 + 0. xDiT
  // runs the empty stage (no block between the forward's ends: the output layer, the scheduler).
  // 3 patches of the 16-high latent: ceil(16 / 3) = 6, patches of 3, 3 and 2 token rows.
  const auto q = make_query("flux-tiny", 3, 128, 128);
  CHECK(reasons(q, with_pipefusion(config(1, 1), 3, 3, 1)).empty());
  CHECK(reasons(make_query("flux-tiny", 4, 128, 128), with_pipefusion(config(1, 1), 4, 4, 1)).empty());  // 1+1+1+1
}

TEST_CASE("PipeFusion: xDiT must run the patches as asked", "[planner][validate][pipefusion]") {
  // 1008 wide, 1024 high: a 128-high latent (64 token rows of 63 tokens). Ulysses 2 rounds a
  // patch to a multiple of 2 x 2 latent pixels: 2 patches of 64 are fine; 64 patches of ceil(128 /
  // 64) = 2 become 4 high, 32 of them.
  const auto q = make_query("flux.1-dev", 4, 1008, 1024);
  CHECK(reasons(q, with_pipefusion(config(1, 2), 2, 2, 1)).empty());
  CHECK(reasons(q, with_pipefusion(config(1, 2), 2, 64, 1)) ==
        Reasons{"num_pipeline_patch = 64 with ring_degree x ulysses_degree = 2: xDiT would run 32: it cuts the "
                "128-high latent into patches of ceil(128 / 64) = 2 rounded up to a multiple of patch size x "
                "sequence-parallel degree (2 x 2), 4 high, and ceil(128 / 4) = 32 of them"});
  // Without sequence parallelism: 9 patches of ceil(128 / 9) = 15 round up to 16: 8.
  const auto flux = make_query("flux.1-dev", 2, 1024, 1024);
  CHECK(reasons(flux, with_pipefusion(config(1, 1), 2, 9, 1)) ==
        Reasons{"num_pipeline_patch = 9: xDiT would run 8: it cuts the 128-high latent into patches of ceil(128 / 9) = "
                "15 rounded up to a multiple of patch size x sequence-parallel degree (2 x 1), 16 high, and ceil(128 / "
                "16) = 8 of them"});
  // Uneven patches (22, 22, 20 token rows) under ulysses 2: its shares of a patch differ.
  CHECK(reasons(make_query("flux.1-dev", 4, 1024, 1024), with_pipefusion(config(1, 2), 2, 3, 1)) ==
        Reasons{"num_pipeline_patch = 3 with ring_degree x ulysses_degree = 2: xDiT cuts the latent into patches of 22 "
                "token rows and a last of 20, and its sequence-parallel split then gives the 2 ranks of a patch "
                "unequal rows (it needs equal patches)"});
  // 992 high under ulysses 4: a 124-high latent; patches of ceil(124 / 4) = 31, rounded to 32, leave
  // a last of 28, not a multiple of 2 x 4.
  CHECK(reasons(make_query("flux.1-dev", 8, 1024, 992), with_pipefusion(config(1, 4), 2, 4, 1)) ==
        Reasons{"num_pipeline_patch = 4 with ring_degree x ulysses_degree = 4: xDiT refuses it: the last patch of the "
                "124-high latent, 124 - 3 x 32 = 28, is not a multiple of patch size x sequence-parallel degree (2 x "
                "4)"});
}

TEST_CASE("PipeFusion: patches and warm-up steps need stages, degrees below their floor", "[planner][validate][pipefusion]") {
  const auto q = make_query("flux.1-dev", 1, 1024, 1024);
  CHECK(reasons(q, with_pipefusion(config(1, 1), 1, 4, 2)) ==
        Reasons{"num_pipeline_patch = 4: needs pipefusion_degree > 1 (patches are PipeFusion's)",
                "pipefusion_warmup_steps = 2: needs pipefusion_degree > 1 (warm-up steps are PipeFusion's)"});
  CHECK(reasons(q, with_pipefusion(config(1, 1), 0, 1, -1)) ==
        Reasons{"pipefusion_degree = 0: must be at least 1", "pipefusion_warmup_steps = -1: must be at least 0"});
  CHECK(reasons(make_query("flux.1-dev", 4, 1024, 1024), with_pipefusion(config(1, 1), 2, 2, 1)) ==
        Reasons{"ring_degree x ulysses_degree x tp_degree x pipefusion_degree x cfg_degree x dp_degree = 2: must equal "
                "the GPU count 4"});
}

TEST_CASE("Fully sharded weights: F divides the ranks that share the weights, without TP or PipeFusion",
          "[planner][validate][fs]") {
  const auto q = make_query("flux.1-dev", 4, 1024, 1024);
  auto with_fs = [](cpplan::ParallelConfig c, int fs) {
    c.fs_degree = fs;
    return c;
  };
  // The group is laid over the ulysses ranks: 4 GPUs, not 16.
  CHECK(reasons(q, with_fs(kUlysses4, 4)).empty());
  CHECK(reasons(q, with_fs(kUlysses4, 2)).empty());
  CHECK(reasons(q, with_fs(kUnified2x2, 4)).empty());
  CHECK(reasons(q, with_fs(kUlysses4, 3)) ==
        Reasons{"fs_degree = 3: must divide ring_degree x ulysses_degree x cfg_degree x dp_degree = 4"});
  CHECK(reasons(q, with_fs(config(1, 2, 2), 2)) ==
        Reasons{"fs_degree = 2: exclusive with tensor parallelism (tp_degree = 2)"});
  CHECK(reasons(q, with_fs(config(1, 1, 4), 4)) ==
        Reasons{"fs_degree = 4: exclusive with tensor parallelism (tp_degree = 4)",
                "fs_degree = 4: must divide ring_degree x ulysses_degree x cfg_degree x dp_degree = 1"});
  cpplan::ParallelConfig pf = config(1, 2);
  pf.pipefusion = {2, 2, 1};
  CHECK(reasons(q, with_fs(pf, 2)) ==
        Reasons{"fs_degree = 2: exclusive with PipeFusion (pipefusion_degree = 2; each stage holds other blocks)"});
  CHECK(reasons(q, with_fs(kUlysses4, 0)) == Reasons{"fs_degree = 0: must be at least 1"});
}

TEST_CASE("A broken rule is typed: its field, value, rule and the lever a user moves", "[planner][validate][violation]") {
  using cpplan::Lever;
  using cpplan::Violation;
  const auto q = make_query("flux.1-dev", 4, 1008, 1008);  // 63 x 63 = 3969 image tokens
  const auto ring = cpplan::planner::validate(q, config(4, 1));
  REQUIRE(ring.size() == 1);
  CHECK(ring[0] == Violation{"ring_degree", "4", "must divide image tokens = 3969", Lever::kResolution});

  // FLUX.1-dev has 24 heads, which 5 does not divide.
  const auto q5 = make_query("flux.1-dev", 5, 1024, 1024);
  const auto tp = cpplan::planner::validate(q5, config(1, 1, 5));
  REQUIRE_FALSE(tp.empty());
  CHECK(tp[0] == Violation{"tp_degree", "5", "must divide num_heads = 24", Lever::kModelHeads});

  // Both anything modes: a rule with no single value ("field: rule").
  const auto both = cpplan::planner::validate(q, config(2, 2, 1, 1, 1, true, true));
  const auto exclusive = std::find_if(both.begin(), both.end(), [](const Violation& v) {
    return v.field == "ulysses_anything and ring_anything";
  });
  REQUIRE(exclusive != both.end());
  CHECK(exclusive->value.empty());
  CHECK(exclusive->lever == Lever::kVariant);
  CHECK(exclusive->message() == "ulysses_anything and ring_anything: mutually exclusive; choose one");

  // Two data-parallel replicas for one image: the batch is the lever.
  const auto dp = cpplan::planner::validate(q, config(1, 1, 1, 1, 4));
  REQUIRE_FALSE(dp.empty());
  CHECK(dp.back().field == "dp_degree");
  CHECK(dp.back().lever == Lever::kBatch);
}
