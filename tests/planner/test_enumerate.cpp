// Enumeration of every ring x ulysses x tp x pipefusion x cfg x dp factorization (with the
// anything variants, and P, 2P and 4P patches for P PipeFusion stages) and the ranking of plans:
// valid and fitting, valid out of memory, invalid.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "planner/planner.h"
#include "tests/support/fixtures.h"
#include "tests/support/rule_ids.h"

using cpplan::CpVariant;
using cpplan::planner::enumerate;
using cpplan::planner::PlannerOptions;
using cpplan::planner::PlanReport;
using cpplan::planner::RankedPlan;
using cpplan::test::make_query;

namespace {
std::map<CpVariant, int> count_by_variant(const std::vector<cpplan::ParallelConfig>& configs) {
  std::map<CpVariant, int> n;
  for (const auto& c : configs) ++n[cpplan::classify(c.context_parallel_config)];
  return n;
}

PlanReport plan(const cpplan::Query& q, const PlannerOptions& options = {}) {
  const cpplan::costmodel::DatasheetModel hw(*q.hardware);
  const cpplan::costmodel::CostModel cost(hw);
  const cpplan::planner::Planner planner(cost);
  return planner.plan(q, options);
}

// The configs without PipeFusion (the factorizations of ring x ulysses x tp x cfg x dp).
std::vector<cpplan::ParallelConfig> without_pipefusion(const std::vector<cpplan::ParallelConfig>& all) {
  std::vector<cpplan::ParallelConfig> out;
  for (const auto& c : all)
    if (c.pp() == 1) out.push_back(c);
  return out;
}

// The ranking's tiers (planner.h): valid plans that fit, those some framework runs first; then the
// valid ones out of memory; then the invalid.
int tier(const RankedPlan& p) {
  if (!p.plan.valid()) return 3;
  if (!p.predicted->fits_memory) return 2;
  return p.cpplan_only() ? 1 : 0;
}

// Tiers never go back, and within the valid tiers the step time never decreases.
void check_ranked(const PlanReport& r) {
  for (std::size_t i = 0; i < r.plans.size(); ++i) {
    const RankedPlan& p = r.plans[i];
    INFO("plan " << i << ": " << cpplan::plan_label(p.plan.config));
    CHECK(p.predicted.has_value() == p.plan.valid());
    CHECK(p.plan.variant == cpplan::classify(p.plan.config.context_parallel_config));
    if (i == 0) continue;
    const RankedPlan& prev = r.plans[i - 1];
    CHECK(tier(prev) <= tier(p));
    if (tier(prev) == tier(p) && tier(p) < 3) CHECK(prev.predicted->step_ms <= p.predicted->step_ms);
  }
}
}  // namespace

TEST_CASE("enumerate(4) lists 23 configs: 15 factorizations with their variants", "[planner][enumerate]") {
  // Ordered factorizations of 4 = 2^2 into (r, u, t, c, d): C(2 + 4, 4) = 15.
  // By (r, u), with the t x c x d factorizations of the rest:
  //   (1,1): 6 x 1 (none)            = 6
  //   (2,1): 3 x 2 (Ring, Ring Anything) = 6      (4,1): 1 x 2 = 2
  //   (1,2): 3 x 2 (Ulysses, Ulysses Anything) = 6 (1,4): 1 x 2 = 2
  //   (2,2): 1 x 1 (Unified)         = 1
  // = 23
  const auto all = without_pipefusion(enumerate(4));
  CHECK(all.size() == 23);
  const auto by = count_by_variant(all);
  CHECK(by.at(CpVariant::kNone) == 6);
  CHECK(by.at(CpVariant::kRing) == 4);
  CHECK(by.at(CpVariant::kRingAnything) == 4);
  CHECK(by.at(CpVariant::kUlysses) == 4);
  CHECK(by.at(CpVariant::kUlyssesAnything) == 4);
  CHECK(by.at(CpVariant::kUnified) == 1);

  std::set<std::tuple<int, int, int, int, int, bool, bool>> distinct;
  for (const auto& c : all) {
    INFO(cpplan::plan_label(c));
    CHECK(c.world_size() == 4);
    const auto& cp = c.context_parallel_config;
    distinct.insert({c.ring(), c.ulysses(), c.tp(), c.cfg_degree, c.dp_degree, cp.ulysses_anything, cp.ring_anything});
    // the flags only where they apply
    if (cp.ulysses_anything) CHECK((c.ulysses() > 1 && c.ring() == 1));
    if (cp.ring_anything) CHECK((c.ring() > 1 && c.ulysses() == 1));
  }
  CHECK(distinct.size() == all.size());
}

TEST_CASE("allow_anything = false leaves one config per factorization", "[planner][enumerate]") {
  PlannerOptions options;
  options.allow_anything = false;
  const auto plain = without_pipefusion(enumerate(4, options));
  CHECK(plain.size() == 15);
  for (const auto& c : plain) {
    CHECK(c.world_size() == 4);
    CHECK_FALSE(c.context_parallel_config.ulysses_anything);
    CHECK_FALSE(c.context_parallel_config.ring_anything);
  }
}

TEST_CASE("enumerate(8) and the edge cases", "[planner][enumerate]") {
  // 8 = 2^3 into 5 factors: C(7, 4) = 35 factorizations. With r = 2^a, u = 2^b the rest has
  // C(3 - a - b + 2, 2) factorizations; variants 1 for a = b = 0, 2 for exactly one of a, b > 0,
  // 1 for both: 10 + 2 x (6 + 6 + 3 + 3 + 1 + 1) + 3 + 1 + 1 = 55.
  // PipeFusion adds, for P = 2^e with t = 1 and no anything mode, the factorizations of the rest
  // over (r, u, c, d): C(3 - e + 3, 3) = 10, 4, 1 for e = 1, 2, 3; one variant each (Unified when
  // r, u > 1), times 3 patch counts: 45.
  CHECK(enumerate(8).size() == 55 + 45);
  CHECK(without_pipefusion(enumerate(8)).size() == 55);
  PlannerOptions plain;
  plain.allow_anything = false;
  CHECK(enumerate(8, plain).size() == 35 + 45);
  for (const auto& c : enumerate(8)) CHECK(c.world_size() == 8);
  // 1 GPU: the single trivial config.
  const auto one = enumerate(1);
  REQUIRE(one.size() == 1);
  CHECK(cpplan::plan_label(one[0]) == "single GPU");
  // 3 GPUs (prime): 5 placements of the 3 without PipeFusion, ring and ulysses with two variants
  // each: 3 + 2 + 2 = 7; and pipefusion 3 with 3, 6 and 12 patches.
  CHECK(enumerate(3).size() == 7 + 3);
  CHECK(enumerate(0).empty());
  CHECK(enumerate(-4).empty());
}

TEST_CASE("enumerate(4) adds 15 PipeFusion configs: 5 factorizations x 3 patch counts", "[planner][enumerate][pipefusion]") {
  // P = 2 with the other factor 2 on ring, ulysses, cfg or dp (never tp, never an anything mode),
  // and P = 4 alone: 5 factorizations, each with M = P, 2P, 4P.
  std::multiset<std::string> labels;
  for (const auto& c : enumerate(4)) {
    if (c.pp() == 1) continue;
    CHECK(c.world_size() == 4);
    CHECK(c.tp() == 1);
    CHECK_FALSE(c.context_parallel_config.ulysses_anything);
    CHECK_FALSE(c.context_parallel_config.ring_anything);
    CHECK(c.pipefusion.warmup_steps == 1);  // xDiT's default
    labels.insert(cpplan::plan_label(c));
  }
  CHECK(labels == std::multiset<std::string>{
                      "ring 2 x pipefusion 2 (2 patches)",    "ring 2 x pipefusion 2 (4 patches)",
                      "ring 2 x pipefusion 2 (8 patches)",    "ulysses 2 x pipefusion 2 (2 patches)",
                      "ulysses 2 x pipefusion 2 (4 patches)", "ulysses 2 x pipefusion 2 (8 patches)",
                      "pipefusion 2 (2 patches) x cfg 2",     "pipefusion 2 (4 patches) x cfg 2",
                      "pipefusion 2 (8 patches) x cfg 2",     "pipefusion 2 (2 patches) x dp 2",
                      "pipefusion 2 (4 patches) x dp 2",      "pipefusion 2 (8 patches) x dp 2",
                      "pipefusion 4 (4 patches)",             "pipefusion 4 (8 patches)",
                      "pipefusion 4 (16 patches)"});
  // The options fix the patches and warm-up steps; the bound drops patch counts past it.
  PlannerOptions fixed;
  fixed.pipeline_patches = 6;
  fixed.pipefusion_warmup_steps = 3;
  for (const auto& c : enumerate(4, fixed))
    if (c.pp() > 1) CHECK((c.pipefusion.patches == 6 && c.pipefusion.warmup_steps == 3));
  PlannerOptions bounded;
  bounded.max_patches = 8;  // pipefusion 4 keeps M = 4 and 8, drops 16; pipefusion 2 keeps all
  CHECK(without_pipefusion(enumerate(4, bounded)).size() + 14 == enumerate(4, bounded).size());
}

TEST_CASE("fully_shard = kAll follows each config without TP or PipeFusion with its fs variants",
          "[planner][enumerate][fs]") {
  // By default enumerate lists no fully-sharded config (Planner::plan adds them for plans that do
  // not fit): the counts above stand.
  for (const auto& c : enumerate(8)) CHECK(c.fs() == 1);
  PlannerOptions all;
  all.fully_shard = cpplan::planner::FullyShardPlans::kAll;
  // 4 GPUs: the configs with t = 1 and P = 1 are the (r, u) variants over c x d = 4 / (r u):
  //   (1,1): 3   (2,1): 2 x 2   (4,1): 1 x 2   (1,2): 2 x 2   (1,4): 1 x 2   (2,2): 1   = 16,
  // each with F = 2 and 4 (F divides r x u x c x d = 4): 32 more, 23 + 15 + 32 = 70.
  const auto four = enumerate(4, all);
  CHECK(four.size() == 70);
  int sharded = 0;
  for (const auto& c : four) {
    if (c.fs() == 1) continue;
    ++sharded;
    INFO(cpplan::plan_label(c));
    CHECK(c.tp() == 1);
    CHECK(c.pp() == 1);
    CHECK(c.world_size() == 4);
    CHECK(c.world_size() % c.fs() == 0);
  }
  CHECK(sharded == 32);
  // 8 GPUs: (r, u, c, d) factorizations of 8 = 2^3 with t = 1: r = u = 1: 4; one of r, u above 1
  // (a = 1, 2, 3 leaves 3, 2, 1 for c x d): 6 x 2 variants x 2 axes = 24; both: (2,2): 2,
  // (2,4): 1, (4,2): 1 = 4: 32 configs, each with F = 2, 4, 8: 96 more than 55 + 45.
  CHECK(enumerate(8, all).size() == 55 + 45 + 96);
  // Each sharded config follows its twin, in ascending F.
  const auto variants = cpplan::planner::fully_shard_variants(cpplan::test::config(1, 4));
  REQUIRE(variants.size() == 2);
  CHECK(cpplan::plan_label(variants[0]) == "ulysses 4 x fs 2");
  CHECK(cpplan::plan_label(variants[1]) == "ulysses 4 x fs 4");
  CHECK(cpplan::planner::fully_shard_variants(cpplan::test::config(1, 2, 2)).empty());
}

TEST_CASE("Plans that do not fit are followed by their fully-sharded variants, which need less memory",
          "[planner][plan][fs]") {
  // FLUX.2-dev (32.2B parameters, 64 GB in bf16) on 8 x L20 (48 GB): no unsharded plan without TP
  // or PipeFusion fits, so each valid one brings its fs 2, 4, 8 variants.
  const auto q = make_query("flux.2-dev", 8, 1024, 1024, 0, "l20");
  const auto r = plan(q);
  check_ranked(r);
  int sharded = 0, fitting_sharded = 0;
  for (const auto& p : r.plans) {
    if (!p.plan.valid() || p.plan.config.fs() == 1) continue;
    ++sharded;
    INFO(cpplan::plan_label(p.plan.config));
    cpplan::ParallelConfig twin = p.plan.config;
    twin.fs_degree = 1;
    const auto it = std::find_if(r.plans.begin(), r.plans.end(), [&](const RankedPlan& x) { return x.plan.config == twin; });
    REQUIRE(it != r.plans.end());
    CHECK_FALSE(it->predicted->fits_memory);
    // The denoising loop's memory: the whole pipeline's peak also holds the text encoders as the
    // frameworks running each place them (xDiT shards FLUX.2-dev's Mistral with the transformer).
    CHECK(p.predicted->transformer_peak_bytes < it->predicted->transformer_peak_bytes);
    CHECK(p.predicted->step_ms >= it->predicted->step_ms);
    if (p.predicted->fits_memory) ++fitting_sharded;
  }
  CHECK(sharded > 0);
  CHECK(fitting_sharded > 0);
  // kNone: no fully-sharded plan.
  PlannerOptions none;
  none.fully_shard = cpplan::planner::FullyShardPlans::kNone;
  for (const auto& p : plan(q, none).plans) CHECK(p.plan.config.fs() == 1);
}

TEST_CASE("enumerate is stable: the same order on every call", "[planner][enumerate]") {
  const auto a = enumerate(8);
  const auto b = enumerate(8);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(cpplan::plan_label(a[i]) == cpplan::plan_label(b[i]));
    CHECK(cpplan::classify(a[i].context_parallel_config) == cpplan::classify(b[i].context_parallel_config));
  }
}

TEST_CASE("Planning FLUX.1-dev at 1008x1008 on 4 GPUs: 8 valid plans, Ulysses Anything first", "[planner][plan]") {
  // Valid (c = d = 1, since FLUX.1-dev is distilled and the batch is 1): tp 4; ring 2 x tp 2 and
  // ring 4 as Ring Anything; ulysses 2 x tp 2 and ulysses 4 as Ulysses Anything; pipefusion 4
  // with 4, 8 and 16 patches of the 63 latent rows. The 15 PipeFusion configs with ring 2 or
  // ulysses 2 have patches of an odd token count (63 columns x 32, 31, 16, 15, 8 or 7 rows: one
  // odd row count in each split), with cfg 2 or dp 2 nothing to split. 23 + 15 - 8 = 30 invalid.
  // With one image, the 10 data-parallel configs are left out unless asked for (--all): dp 2 with
  // ring 2 (2 variants), ulysses 2 (2), tp 2, cfg 2; dp 4; dp 2 x pipefusion 2 (3 patch counts).
  const auto q = make_query("flux.1-dev", 4, 1008, 1008);
  PlannerOptions with_dp;
  with_dp.single_image_dp = true;
  const auto all = plan(q, with_dp);
  CHECK(all.valid_count == 8);
  CHECK(all.invalid_count == 30);
  CHECK(all.plans.size() == 38);
  const auto r = plan(q);
  CHECK(r.valid_count == 8);
  CHECK(r.invalid_count == 20);
  REQUIRE(r.plans.size() == 28);
  for (const auto& p : r.plans) CHECK(p.plan.config.dp_degree == 1);
  check_ranked(r);
  for (int i = 0; i < 8; ++i) CHECK(r.plans[i].plan.valid());
  for (std::size_t i = 8; i < r.plans.size(); ++i) {
    CHECK_FALSE(r.plans[i].plan.valid());
    CHECK_FALSE(r.plans[i].plan.reasons().empty());
  }
  const auto& top = r.plans.front();
  CHECK(top.plan.variant == CpVariant::kUlyssesAnything);
  CHECK(cpplan::plan_label(top.plan.config) == "ulysses 4");
  CHECK(top.predicted->fits_memory);
  CHECK(top.predicted->step_ms > 0);
}

TEST_CASE("Planning FLUX.1-dev at 1024x1024 on 4 GPUs: 19 valid plans", "[planner][plan]") {
  // c = d = 1: tp 4; ring 2 x tp 2 (Ring, Ring Anything); ulysses 2 x tp 2 (Ulysses, Ulysses
  // Anything); ring 4 (2 variants); ulysses 4 (2 variants); ring 2 x ulysses 2 = 10. PipeFusion:
  // ring 2 or ulysses 2 x pipefusion 2, and pipefusion 4, each with 3 patch counts (64 latent
  // rows of 64 tokens: every patch even) = 9; with cfg 2 invalid: 6 (and 10 more with dp 2 or 4,
  // listed with --all or a batch).
  const auto r = plan(make_query("flux.1-dev", 4));
  CHECK(r.valid_count == 19);
  CHECK(r.invalid_count == 9);
  check_ranked(r);
}

TEST_CASE("Plan options: without invalid plans, and without the anything variants", "[planner][plan]") {
  const auto q = make_query("flux.1-dev", 4, 1008, 1008);
  PlannerOptions valid_only;
  valid_only.keep_invalid = false;
  const auto v = plan(q, valid_only);
  CHECK(v.valid_count == 8);
  CHECK(v.invalid_count == 20);  // still counted
  CHECK(v.plans.size() == 8);
  check_ranked(v);

  PlannerOptions plain;
  plain.allow_anything = false;
  const auto p = plan(q, plain);
  // only tp 4 and pipefusion 4 (three patch counts) survive at 1008x1008 without the anything modes
  CHECK(p.valid_count == 4);
  CHECK(p.invalid_count == 18);  // 26 with the 8 data-parallel configs without the anything modes
  REQUIRE(p.plans.size() == 22);
}

TEST_CASE("Valid plans that do not fit rank after those that fit and before invalid ones", "[planner][plan][memory]") {
  // FLUX.2-dev on 1 x RTX 4090 (24 GB): 64 GB of transformer alone; the single config is valid
  // but out of memory.
  const auto alone = plan(make_query("flux.2-dev", 1, 1024, 1024, 0, "rtx4090"));
  REQUIRE(alone.plans.size() == 1);
  CHECK(alone.valid_count == 1);
  CHECK(alone.plans[0].plan.valid());
  CHECK_FALSE(alone.plans[0].predicted->fits_memory);

  // FLUX.2-dev on 2 x RTX 4090: nothing fits (tp 2 still holds half of 64 GB of sharded weights),
  // so every valid plan is in tier 2 (out of memory), then the invalid (3). (On 4 GPUs tp 4 with
  // the text encoder streamed from CPU memory fits.)
  const auto four = plan(make_query("flux.2-dev", 2, 1024, 1024, 0, "rtx4090"));
  check_ranked(four);
  CHECK(four.valid_count > 0);
  for (const auto& p : four.plans)
    if (p.plan.valid()) CHECK_FALSE(p.predicted->fits_memory);
  CHECK(tier(four.plans.front()) == 2);
  CHECK(tier(four.plans.back()) == 3);

  // FLUX.1-dev on 4 x H100 fits everywhere: the valid plans are all tier 0.
  const auto fits = plan(make_query("flux.1-dev", 4));
  for (int i = 0; i < fits.valid_count; ++i) CHECK(tier(fits.plans[i]) == 0);
}

TEST_CASE("evaluate gives one config its verdict, prediction and frameworks", "[planner][plan]") {
  const auto q = make_query("flux.1-dev", 4, 1008, 1008);
  const cpplan::costmodel::DatasheetModel hw(*q.hardware);
  const cpplan::costmodel::CostModel cost(hw);
  const cpplan::planner::Planner planner(cost);

  const auto bad = planner.evaluate(q, cpplan::test::config(4, 1));
  CHECK_FALSE(bad.plan.valid());
  CHECK_FALSE(bad.predicted.has_value());
  CHECK(bad.frameworks.bits == 0u);
  REQUIRE(bad.plan.violations.size() == 1);
  CHECK(bad.plan.violations.front().id == cpplan::RuleId::kEvenSplitImageTokens);

  const auto good = planner.evaluate(q, cpplan::test::config(4, 1, 1, 1, 1, false, true));
  CHECK(good.plan.valid());
  REQUIRE(good.predicted.has_value());
  CHECK(good.predicted->step_ms == Approx(good.predicted->compute_ms + good.predicted->comm_ms));
  CHECK(good.frameworks.has(cpplan::planner::Framework::kDiffusers));
  CHECK_FALSE(good.frameworks.has(cpplan::planner::Framework::kXdit));
}
