// Validity of parallel configs against shared/spec/parallelism.md: the worked FLUX.1-dev example
// and every rule with a valid and an invalid case, matched by the id of the rule that breaks
// (core/violation.h); two cases check the messages, which name the field, its value and the rule.
#include <catch2/catch.hpp>
#include <algorithm>

#include <string>
#include <vector>

#include "core/sequence.h"
#include "planner/validate.h"
#include "tests/support/fixtures.h"
#include "tests/support/rule_ids.h"

using cpplan::CpVariant;
using cpplan::test::config;
using cpplan::test::make_query;
using Id = cpplan::RuleId;
using Ids = std::vector<Id>;
using Reasons = std::vector<std::string>;

namespace {
// The ids of the rules `c` breaks, in validate()'s order; empty when it is valid.
Ids ids(const cpplan::Query& q, const cpplan::ParallelConfig& c) {
  return cpplan::test::rule_ids(cpplan::planner::validate(q, c));
}

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
  CHECK(ids(q, kRing4).empty());
  CHECK(ids(q, kUlysses4).empty());
  CHECK(ids(q, kUnified2x2).empty());
  CHECK(ids(q, kUlyssesAnything4).empty());
  CHECK(ids(q, kRingAnything4).empty());

  const auto plan = cpplan::planner::make_plan(q, kUnified2x2);
  CHECK(plan.valid());
  CHECK(plan.variant == CpVariant::kUnified);
  CHECK(cpplan::planner::make_plan(q, kUlyssesAnything4).variant == CpVariant::kUlyssesAnything);
  CHECK(cpplan::planner::make_plan(q, kRingAnything4).variant == CpVariant::kRingAnything);
}

TEST_CASE("FLUX.1-dev on 4 GPUs at 1008x1008: only the anything modes run", "[planner][validate][example]") {
  // S_img = 63 x 63 = 3969 is odd: no even split of degree 2 or 4.
  const auto q = make_query("flux.1-dev", 4, 1008, 1008);
  CHECK(ids(q, kUlyssesAnything4).empty());
  CHECK(ids(q, kRingAnything4).empty());
  CHECK(ids(q, kRing4) == Ids{Id::kEvenSplitImageTokens});
  CHECK(ids(q, kUlysses4) == Ids{Id::kEvenSplitImageTokens});
  CHECK(ids(q, kUnified2x2) == Ids{Id::kEvenSplitImageTokens});

  // Even at degree 2 (with TP 2 filling the other two GPUs).
  CHECK(ids(q, config(2, 1, 2)) == Ids{Id::kEvenSplitImageTokens});
  CHECK(ids(q, config(1, 2, 2)) == Ids{Id::kEvenSplitImageTokens});
  CHECK(ids(q, config(1, 2, 2, 1, 1, true)).empty());
  CHECK(ids(q, config(2, 1, 2, 1, 1, false, true)).empty());

  const auto plan = cpplan::planner::make_plan(q, kRing4);
  CHECK_FALSE(plan.valid());
  CHECK(plan.variant == CpVariant::kRing);
  CHECK(plan.reasons().size() == 1);
}

TEST_CASE("A violation's message names the field, its value and the rule", "[planner][validate][message]") {
  // The wording of message() itself (shared/spec/parallelism.md's form); the other cases match ids.
  const auto q = make_query("flux.1-dev", 4, 1008, 1008);
  CHECK(reasons(q, kRing4) == Reasons{"ring_degree = 4: must divide image tokens = 3969"});
  CHECK(reasons(q, kUnified2x2) == Reasons{"ring_degree x ulysses_degree = 4: must divide image tokens = 3969"});
  CHECK(reasons(make_query("flux.1-dev", 16), config(1, 4, 4)) ==
        Reasons{"ulysses_degree = 4: must divide heads per TP rank = 24 / tp_degree 4 = 6"});
  CHECK(reasons(make_query("flux.1-dev", 4), config(1, 4, 1, 1, 1, true, true)) ==
        Reasons{"ulysses_anything and ring_anything: mutually exclusive; choose one"});
}

TEST_CASE("No degree may be below 1", "[planner][validate][degrees]") {
  const auto q = make_query("flux.1-dev", 4);
  for (const auto& c : {config(0, 4), config(1, 0), config(1, 1, -1), config(1, 1, 1, 0), config(1, 1, 1, 1, 0)})
    CHECK(ids(q, c) == Ids{Id::kDegreeAtLeastOne});
  CHECK(cpplan::planner::validate(q, config(1, 1, -1)).front().field == "tp_degree");
  // All of them at once, and nothing else (the other rules would divide by them).
  CHECK(ids(q, config(0, 0, 0, 0, 0)) == Ids(5, Id::kDegreeAtLeastOne));
  CHECK(ids(q, config(1, 4)).empty());
}

TEST_CASE("The product of the degrees must equal the GPU count", "[planner][validate][degrees]") {
  const auto q = make_query("flux.1-dev", 4);
  CHECK(ids(q, config(2, 1)) == Ids{Id::kGpuCountProduct});
  CHECK(ids(q, config(4, 2)) == Ids{Id::kGpuCountProduct});
  CHECK(cpplan::planner::validate(q, config(4, 2)).front().value == "8");
  CHECK(ids(q, config(2, 1, 2)).empty());
  // One GPU: only the trivial config.
  const auto one = make_query("flux.1-dev", 1);
  CHECK(ids(one, config(1, 1)).empty());
}

TEST_CASE("ulysses_anything and ring_anything are mutually exclusive", "[planner][validate][anything]") {
  const auto q = make_query("flux.1-dev", 4);
  // The ulysses flag wins the classification, so only the exclusivity rule breaks.
  CHECK(ids(q, config(1, 4, 1, 1, 1, true, true)) == Ids{Id::kAnythingModesExclusive});
  CHECK(ids(q, config(1, 4, 1, 1, 1, true, false)).empty());
}

TEST_CASE("The anything modes do not combine with Unified", "[planner][validate][anything]") {
  const auto q = make_query("flux.1-dev", 4);
  CHECK(ids(q, config(2, 2, 1, 1, 1, true, false)) == Ids{Id::kAnythingModeNotUnified});
  CHECK(ids(q, config(2, 2, 1, 1, 1, false, true)) == Ids{Id::kAnythingModeNotUnified});
  CHECK(cpplan::planner::validate(q, config(2, 2, 1, 1, 1, false, true)).front().field == "ulysses_degree");
}

TEST_CASE("An anything flag needs a degree above 1", "[planner][validate][anything]") {
  const auto q = make_query("flux.1-dev", 4);
  CHECK(ids(q, config(1, 1, 4, 1, 1, true, false)) == Ids{Id::kAnythingModeNeedsDegree});
  CHECK(ids(q, config(1, 1, 4, 1, 1, false, true)) == Ids{Id::kAnythingModeNeedsDegree});
  CHECK(ids(q, config(1, 1, 4)).empty());
}

TEST_CASE("Ulysses needs the heads divisible by its degree", "[planner][validate][ulysses]") {
  // FLUX.1-dev at 1280x1024 with a 510-token prompt: 80 x 64 = 5120 image and 510 text tokens
  // both divide by 5, so only the head rule can break: 24 % 5 = 4.
  const auto q = with_text(make_query("flux.1-dev", 5, 1280, 1024), 510);
  REQUIRE(q.sequence.image_tokens == 5120);
  CHECK(ids(q, config(1, 5)) == Ids{Id::kUlyssesHeadsDivisible});
  // Ulysses Anything pads 24 heads to 25: padding 1 < 25 / 5 = 5.
  CHECK(ids(q, config(1, 5, 1, 1, 1, true)).empty());
  // Ring has no head rule.
  CHECK(ids(q, config(5, 1)).empty());
  // 24 % 4 = 0
  CHECK(ids(make_query("flux.1-dev", 4), config(1, 4)).empty());
}

TEST_CASE("A degree that divides neither length nor heads reports each rule", "[planner][validate][ulysses]") {
  const auto q = make_query("flux.1-dev", 5, 1280, 1024);  // 5120 image, 512 text
  CHECK(ids(q, config(1, 5)) == Ids{Id::kEvenSplitTextTokens, Id::kUlyssesHeadsDivisible});
}

TEST_CASE("Ulysses Anything pads heads only while the padding is below one rank's share",
          "[planner][validate][ulysses_anything]") {
  cpplan::ModelProfile thirty = *cpplan::test::catalog().find_model("flux.1-dev");
  thirty.heads = 30;  // 30 x 128 = 3840

  // 30 heads on 8 ranks: pad 2 to 32, and 2 < 32 / 8 = 4.
  auto q8 = make_query("flux.1-dev", 8);
  q8.model = &thirty;
  CHECK(ids(q8, config(1, 8, 1, 1, 1, true)).empty());
  // Plain Ulysses cannot: 30 % 8 = 6.
  CHECK(ids(q8, config(1, 8)) == Ids{Id::kUlyssesHeadsDivisible});

  // 30 heads on 16 ranks: pad 2 to 32, and 2 is not < 32 / 16 = 2.
  auto q16 = make_query("flux.1-dev", 16);
  q16.model = &thirty;
  CHECK(ids(q16, config(1, 16, 1, 1, 1, true)) == Ids{Id::kUlyssesAnythingHeadPadding});
}

TEST_CASE("Ulysses Anything's padding rule applies to the heads per TP rank", "[planner][validate][ulysses_anything]") {
  // flux.1-dev, tp 2: 12 heads per rank on u = 8 pads 4 to 16, and 4 is not < 16 / 8 = 2.
  const auto q = make_query("flux.1-dev", 16);
  CHECK(ids(q, config(1, 8, 2, 1, 1, true)) == Ids{Id::kUlyssesAnythingHeadPadding});
}

TEST_CASE("Uneven splits still need a token of each split part per rank", "[planner][validate][anything]") {
  // flux-tiny at 256x256: 256 image and 16 text tokens; Ring Anything over 32 ranks leaves text ranks empty.
  const auto q = make_query("flux-tiny", 32);
  CHECK(ids(q, config(32, 1, 1, 1, 1, false, true)) == Ids{Id::kTextTokenPerRank});
  CHECK(ids(make_query("flux-tiny", 16), config(16, 1, 1, 1, 1, false, true)).empty());
}

TEST_CASE("Ulysses with TP needs the heads per TP rank divisible by u", "[planner][validate][ulysses][tp]") {
  // 24 heads / tp 4 = 6 heads per rank; 6 % 4 != 0
  CHECK(ids(make_query("flux.1-dev", 16), config(1, 4, 4)) == Ids{Id::kUlyssesHeadsDivisible});
  // 24 / tp 2 = 12; 12 % 4 = 0
  CHECK(ids(make_query("flux.1-dev", 8), config(1, 4, 2)).empty());
  // Unified applies the same rule to its Ulysses part: 6 % 4 != 0 again
  CHECK(ids(make_query("flux.1-dev", 32), config(2, 4, 4)) == Ids{Id::kUlyssesHeadsDivisible});
}

TEST_CASE("Models that split text tokens need the text divisible too", "[planner][validate][ring]") {
  // FLUX.1-dev at 1536x1024: 96 x 64 = 6144 image tokens divide by 3, the 512 text tokens do not.
  const auto flux = make_query("flux.1-dev", 3, 1536, 1024);
  REQUIRE(flux.sequence.image_tokens == 6144);
  CHECK(ids(flux, config(3, 1)) == Ids{Id::kEvenSplitTextTokens});
  // With a 510-token prompt both divide.
  CHECK(ids(with_text(flux, 510), config(3, 1)).empty());

  // Wan splits only the video tokens (32760 = 3 x 10920); its 512 text tokens stay whole.
  const auto wan = make_query("wan2.1-t2v-14b", 3);
  CHECK(ids(wan, config(3, 1)).empty());

  // SD3.5-large has joint attention but keeps the 333 text tokens whole: ring 2 is fine.
  const auto sd = make_query("sd3.5-large", 2);
  CHECK(ids(sd, config(2, 1)).empty());
}

TEST_CASE("Every attention kernel can run Ring: which ones a framework runs it with is the framework's rule", "[planner][validate][backend]") {
  // torch SDPA returns its log-sum-exp through aten's flash op (diffusers' native backend runs Ring
  // so); xDiT and SGLang Diffusion refuse some kernels for Ring in their backend_rules.
  auto q = make_query("flux.1-dev", 4);
  for (int b = 0; b < cpplan::kAttentionBackendCount; ++b) {
    q.backend = static_cast<cpplan::AttentionBackend>(b);
    CHECK(ids(q, kRing4).empty());
    CHECK(ids(q, kUnified2x2).empty());
  }
}

TEST_CASE("Tensor parallelism must divide the heads and the FFN hidden size", "[planner][validate][tp]") {
  CHECK(ids(make_query("flux.1-dev", 4), config(1, 1, 4)).empty());
  // 24 % 5 and 12288 % 5
  CHECK(ids(make_query("flux.1-dev", 5), config(1, 1, 5)) == Ids{Id::kTpHeadsDivisible, Id::kTpFfnDivisible});
  // Heads divide but the FFN does not.
  cpplan::ModelProfile odd_ffn = *cpplan::test::catalog().find_model("flux.1-dev");
  odd_ffn.ffn_hidden = 12290;
  auto q = make_query("flux.1-dev", 4);
  q.model = &odd_ffn;
  CHECK(ids(q, config(1, 1, 4)) == Ids{Id::kTpFfnDivisible});
  // SD3.5-large's 38 heads: tp 2 works, tp 4 does not.
  CHECK(ids(make_query("sd3.5-large", 2), config(1, 1, 2)).empty());
  CHECK(ids(make_query("sd3.5-large", 4), config(1, 1, 4)) == Ids{Id::kTpHeadsDivisible});
}

TEST_CASE("CFG parallelism needs true CFG and a degree of 1 or 2", "[planner][validate][cfg]") {
  CHECK(ids(make_query("flux.1-dev", 2), config(1, 1, 1, 2)) == Ids{Id::kCfgNeedsGuidance});
  CHECK(ids(make_query("flux.1-schnell", 2), config(1, 1, 1, 2)) == Ids{Id::kCfgNeedsGuidance});
  CHECK(ids(make_query("wan2.1-t2v-14b", 2), config(1, 1, 1, 2)).empty());
  CHECK(ids(make_query("wan2.1-t2v-14b", 8), config(1, 4, 1, 2)).empty());
  CHECK(ids(make_query("wan2.1-t2v-14b", 3), config(1, 1, 1, 3)) == Ids{Id::kCfgDegreeAtMostTwo});
}

TEST_CASE("Data parallelism must divide the batch", "[planner][validate][dp]") {
  auto q = make_query("flux.1-dev", 2);
  CHECK(ids(q, config(1, 1, 1, 1, 2)) == Ids{Id::kDpDividesBatch});
  q.batch = 2;
  CHECK(ids(q, config(1, 1, 1, 1, 2)).empty());
  q.batch = 3;
  CHECK(ids(q, config(1, 1, 1, 1, 2)) == Ids{Id::kDpDividesBatch});
}

TEST_CASE("rotate_method alltoall is reserved, not implemented", "[planner][validate][ring]") {
  const auto q = make_query("flux.1-dev", 4);
  auto c = kRing4;
  c.context_parallel_config.rotate_method = cpplan::RotateMethod::kAllToAll;
  CHECK(ids(q, c) == Ids{Id::kRotateAllToAllUnimplemented});
  c.context_parallel_config.rotate_method = cpplan::RotateMethod::kAllGather;
  CHECK(ids(q, c).empty());
}

TEST_CASE("rotate_method p2p needs a Ring or Unified plan without ring_anything", "[planner][validate][ring]") {
  const auto q = make_query("flux.1-dev", 4);
  auto with_p2p = [](cpplan::ParallelConfig c) {
    c.context_parallel_config.rotate_method = cpplan::RotateMethod::kP2P;
    return c;
  };
  CHECK(ids(q, with_p2p(kRing4)).empty());
  CHECK(ids(q, with_p2p(kUnified2x2)).empty());
  CHECK(ids(q, with_p2p(kUlysses4)) == Ids{Id::kRotateP2pNeedsRing});
  CHECK(ids(q, with_p2p(kRingAnything4)) == Ids{Id::kRotateP2pNeedsRing});
}

TEST_CASE("Ring Anything cannot run a model that passes an attention mask", "[planner][validate][ring_anything]") {
  // Qwen-Image 1328x1328: 6889 image tokens (odd) and a text mask.
  const auto qwen = make_query("qwen-image", 2);
  CHECK(ids(qwen, config(2, 1, 1, 1, 1, false, true)) == Ids{Id::kRingAnythingNoMask});
  // Ulysses Anything has no such limit.
  CHECK(ids(qwen, config(1, 2, 1, 1, 1, true)).empty());
  // FLUX.1-dev passes no mask.
  CHECK(ids(make_query("flux.1-dev", 2, 1008, 1008), config(2, 1, 1, 1, 1, false, true)).empty());
}

TEST_CASE("validate returns every violated rule, in a stable order", "[planner][validate]") {
  // FLUX.1-dev at 1008x1008 on 4 GPUs with ring 4 x cfg 2: 8 devices, 3969 odd, distilled model.
  const auto q = make_query("flux.1-dev", 4, 1008, 1008);
  CHECK(ids(q, config(4, 1, 1, 2)) == Ids{Id::kGpuCountProduct, Id::kEvenSplitImageTokens, Id::kCfgNeedsGuidance});

  // Six at once: device count, both flags, the ulysses flag with ring > 1, TP heads and FFN, dp.
  CHECK(ids(q, config(2, 3, 5, 1, 2, true, true)) ==
        Ids{Id::kGpuCountProduct, Id::kAnythingModesExclusive, Id::kAnythingModeNotUnified, Id::kTpHeadsDivisible,
            Id::kTpFfnDivisible, Id::kDpDividesBatch});
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
  CHECK(ids(q, with_pipefusion(config(1, 2), 4, 4, 1)).empty());
  CHECK(ids(q, with_pipefusion(config(1, 2), 4, 16, 28)).empty());  // W = steps: no staleness
  CHECK(ids(make_query("flux.1-dev", 2, 1024, 1024), with_pipefusion(config(1, 1), 2, 64, 0)).empty());
}

TEST_CASE("PipeFusion: every broken rule is reported with its id", "[planner][validate][pipefusion]") {
  const auto q = make_query("flux.1-dev", 8, 1024, 1024);
  // fewer patches than stages, and more warm-up steps than steps
  CHECK(ids(q, with_pipefusion(config(1, 2), 4, 2, 29)) ==
        Ids{Id::kPipeFusionPatchesAtLeastDegree, Id::kPipeFusionWarmupAtMostSteps});
  // more patches than the 64 latent rows
  CHECK(ids(make_query("flux.1-dev", 2, 1024, 1024), with_pipefusion(config(1, 1), 2, 65, 1)) ==
        Ids{Id::kPipeFusionPatchesAtMostRows});
  // tensor parallelism, and an anything mode
  CHECK(ids(q, with_pipefusion(config(1, 1, 2), 4, 4, 1)) == Ids{Id::kPipeFusionExcludesTp});
  CHECK(ids(q, with_pipefusion(config(1, 2, 1, 1, 1, true), 4, 4, 1)) == Ids{Id::kPipeFusionExcludesAnything});
}

TEST_CASE("PipeFusion: xDiT's stage split may leave the last stages without a block", "[planner][validate][pipefusion]") {
  // flux-tiny has 2 double + 2 single = 4 blocks: 3 stages of ceil(4 / 3) = 2 are 2 + 2 + 0. xDiT
  // runs the empty stage (no block between the forward's ends: the output layer, the scheduler).
  // 3 patches of the 16-high latent: ceil(16 / 3) = 6, patches of 3, 3 and 2 token rows.
  const auto q = make_query("flux-tiny", 3, 128, 128);
  CHECK(ids(q, with_pipefusion(config(1, 1), 3, 3, 1)).empty());
  CHECK(ids(make_query("flux-tiny", 4, 128, 128), with_pipefusion(config(1, 1), 4, 4, 1)).empty());  // 1+1+1+1
}

TEST_CASE("PipeFusion: xDiT must run the patches as asked", "[planner][validate][pipefusion]") {
  // 1008 wide, 1024 high: a 128-high latent (64 token rows of 63 tokens). Ulysses 2 rounds a
  // patch to a multiple of 2 x 2 latent pixels: 2 patches of 64 are fine; 64 patches of ceil(128 /
  // 64) = 2 become 4 high, 32 of them.
  const auto q = make_query("flux.1-dev", 4, 1008, 1024);
  const auto split = Ids{Id::kPipeFusionXditPatchSplit};
  CHECK(ids(q, with_pipefusion(config(1, 2), 2, 2, 1)).empty());
  const auto changed = cpplan::planner::validate(q, with_pipefusion(config(1, 2), 2, 64, 1));
  CHECK(cpplan::test::rule_ids(changed) == split);
  CHECK_THAT(changed.front().rule, Catch::StartsWith("xDiT would run 32:"));
  CHECK(changed.front().lever == cpplan::Lever::kDegree);  // another M fixes it
  // Without sequence parallelism: 9 patches of ceil(128 / 9) = 15 round up to 16: 8.
  CHECK(ids(make_query("flux.1-dev", 2, 1024, 1024), with_pipefusion(config(1, 1), 2, 9, 1)) == split);
  // Uneven patches (22, 22, 20 token rows) under ulysses 2: its shares of a patch differ.
  CHECK(ids(make_query("flux.1-dev", 4, 1024, 1024), with_pipefusion(config(1, 2), 2, 3, 1)) == split);
  // 992 high under ulysses 4: a 124-high latent; patches of ceil(124 / 4) = 31, rounded to 32, leave
  // a last of 28, not a multiple of 2 x 4: xDiT refuses it, and only another height or degree helps.
  const auto refused = cpplan::planner::validate(make_query("flux.1-dev", 8, 1024, 992),
                                                 with_pipefusion(config(1, 4), 2, 4, 1));
  CHECK(cpplan::test::rule_ids(refused) == split);
  CHECK(refused.front().lever == cpplan::Lever::kResolution);
}

TEST_CASE("PipeFusion: patches and warm-up steps need stages, degrees below their floor", "[planner][validate][pipefusion]") {
  const auto q = make_query("flux.1-dev", 1, 1024, 1024);
  CHECK(ids(q, with_pipefusion(config(1, 1), 1, 4, 2)) ==
        Ids{Id::kPipeFusionFlagsNeedPipeFusion, Id::kPipeFusionFlagsNeedPipeFusion});
  CHECK(ids(q, with_pipefusion(config(1, 1), 0, 1, -1)) ==
        Ids{Id::kDegreeAtLeastOne, Id::kPipeFusionWarmupNonNegative});
  CHECK(ids(make_query("flux.1-dev", 4, 1024, 1024), with_pipefusion(config(1, 1), 2, 2, 1)) ==
        Ids{Id::kGpuCountProduct});
}

TEST_CASE("Fully sharded weights: F divides the ranks that share the weights, without TP or PipeFusion",
          "[planner][validate][fs]") {
  const auto q = make_query("flux.1-dev", 4, 1024, 1024);
  auto with_fs = [](cpplan::ParallelConfig c, int fs) {
    c.fs_degree = fs;
    return c;
  };
  // The group is laid over the ulysses ranks: 4 GPUs, not 16.
  CHECK(ids(q, with_fs(kUlysses4, 4)).empty());
  CHECK(ids(q, with_fs(kUlysses4, 2)).empty());
  CHECK(ids(q, with_fs(kUnified2x2, 4)).empty());
  CHECK(ids(q, with_fs(kUlysses4, 3)) == Ids{Id::kFullyShardDividesRanks});
  CHECK(ids(q, with_fs(config(1, 2, 2), 2)) == Ids{Id::kFullyShardExcludesTp});
  CHECK(ids(q, with_fs(config(1, 1, 4), 4)) == Ids{Id::kFullyShardExcludesTp, Id::kFullyShardDividesRanks});
  cpplan::ParallelConfig pf = config(1, 2);
  pf.pipefusion = {2, 2, 1};
  CHECK(ids(q, with_fs(pf, 2)) == Ids{Id::kFullyShardExcludesPipeFusion});
  CHECK(ids(q, with_fs(kUlysses4, 0)) == Ids{Id::kDegreeAtLeastOne});
}

TEST_CASE("A broken rule is typed: its id, field, value, rule and the lever a user moves",
          "[planner][validate][violation]") {
  using cpplan::Lever;
  using cpplan::Violation;
  const auto q = make_query("flux.1-dev", 4, 1008, 1008);  // 63 x 63 = 3969 image tokens
  const auto ring = cpplan::planner::validate(q, config(4, 1));
  REQUIRE(ring.size() == 1);
  CHECK(ring[0] == Violation{Id::kEvenSplitImageTokens, "ring_degree", "4", "must divide image tokens = 3969",
                             Lever::kResolution});

  // FLUX.1-dev has 24 heads, which 5 does not divide.
  const auto q5 = make_query("flux.1-dev", 5, 1024, 1024);
  const auto tp = cpplan::planner::validate(q5, config(1, 1, 5));
  REQUIRE_FALSE(tp.empty());
  CHECK(tp[0] == Violation{Id::kTpHeadsDivisible, "tp_degree", "5", "must divide num_heads = 24", Lever::kModelHeads});

  // Both anything modes: a rule with no single value ("field: rule").
  const auto both = cpplan::planner::validate(q, config(2, 2, 1, 1, 1, true, true));
  const auto exclusive = std::find_if(both.begin(), both.end(), [](const Violation& v) {
    return v.id == Id::kAnythingModesExclusive;
  });
  REQUIRE(exclusive != both.end());
  CHECK(exclusive->field == "ulysses_anything and ring_anything");
  CHECK(exclusive->value.empty());
  CHECK(exclusive->lever == Lever::kVariant);
  CHECK(exclusive->message() == "ulysses_anything and ring_anything: mutually exclusive; choose one");

  // Two data-parallel replicas for one image: the batch is the lever.
  const auto dp = cpplan::planner::validate(q, config(1, 1, 1, 1, 4));
  REQUIRE_FALSE(dp.empty());
  CHECK(dp.back().id == Id::kDpDividesBatch);
  CHECK(dp.back().field == "dp_degree");
  CHECK(dp.back().lever == Lever::kBatch);
}
