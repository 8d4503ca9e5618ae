// Step caches as a plan axis (--cache, core/cache.h): the steps each policy computes, the time of a
// cached step and its memory, the frameworks that ship each cache, with their flags, and the
// one-line refusals. Expected values are hand derivations from the schedule rules and the
// prediction's own per-block terms (inputs to the cached step), never the cached step's total.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>

#include "core/cache.h"
#include "core/framework.h"
#include "costmodel/cost_model.h"
#include "planner/frameworks.h"
#include "planner/planner.h"
#include "planner/validate.h"
#include "session/engine/engine.h"
#include "tests/session/session_support.h"
#include "tests/support/fixtures.h"

using cpplan::CachePolicy;
using cpplan::CacheSpec;
using cpplan::costmodel::CostModel;
using cpplan::costmodel::DatasheetModel;
using cpplan::costmodel::Prediction;
using cpplan::test::config;
using cpplan::test::flux_on_h100;
using cpplan::test::make_query;

namespace {
// The one-GPU prediction of `q` on `hw`'s datasheet, and of `q` with `policy`'s default cache.
std::pair<Prediction, Prediction> plain_and_cached(const cpplan::Query& q, const DatasheetModel& hw, CachePolicy policy) {
  cpplan::Query cached = q;
  cached.cache = cpplan::cache_defaults(policy);
  return {CostModel(hw).predict(q, config(1, 1), cpplan::CpVariant::kNone),
          CostModel(hw).predict(cached, config(1, 1), cpplan::CpVariant::kNone)};
}
}  // namespace

TEST_CASE("Each cache policy computes the steps its schedule says, by hand", "[core][cache]") {
  // fixed: warm-up 1, then every 2nd step: steps 0, 2, 4, ..., 26 of 28 (1 + 27 / 2 = 14).
  CHECK(cpplan::computed_steps(cpplan::cache_defaults(CachePolicy::kFixed), 28) == 14);
  // TaylorSeer (diffusers' TaylorSeerCacheConfig defaults): steps 0-2 (disable_cache_before_step 3),
  // then the one after, every 5th: 4, 9, 14, 19, 24 (taylorseer_cache.py: (i - 3 - 1) % 5 == 0): 8.
  CHECK(cpplan::computed_steps(cpplan::cache_defaults(CachePolicy::kTaylorseer), 28) == 8);
  // 10 steps: 0, 1, 2, 4, 9. 12: the same 5. Interval 1: every step.
  CHECK(cpplan::computed_steps(cpplan::cache_defaults(CachePolicy::kTaylorseer), 10) == 5);
  CHECK(cpplan::computed_steps(cpplan::cache_defaults(CachePolicy::kTaylorseer), 12) == 5);
  CacheSpec every_step = cpplan::cache_defaults(CachePolicy::kTaylorseer);
  every_step.every = 1;
  CHECK(cpplan::computed_steps(every_step, 28) == 28);
  // Warm-up 0: steps 1, 6, 11, 16, 21, 26.
  CacheSpec no_warmup = cpplan::cache_defaults(CachePolicy::kTaylorseer);
  no_warmup.warmup_steps = 0;
  CHECK(cpplan::computed_steps(no_warmup, 28) == 6);
  // FBCache (SGLang's and vLLM-Omni's cache-dit defaults): warm-up 4, then half of the other 24
  // cached (the stated default hit rate), within the cap of 3 in a row (at most 18): 12 cached.
  const CacheSpec fb = cpplan::cache_defaults(CachePolicy::kFbcache);
  CHECK(fb.first_blocks == 1);
  CHECK(cpplan::computed_steps(fb, 28) == 16);
  // A hit rate of 0.9 would cache 21 of the 24; the cap leaves one computed in every 4: 18 cached.
  CacheSpec greedy = fb;
  greedy.hit_rate = 0.9;
  CHECK(cpplan::cached_steps(greedy, 28) == 18);
  // DBCache (cache-dit's defaults, F8B0, warm-up 8, no cap): 10 of the other 20 cached.
  CHECK(cpplan::computed_steps(cpplan::cache_defaults(CachePolicy::kDbcache), 28) == 18);
  CHECK(cpplan::computed_steps(CacheSpec{}, 28) == 28);  // none
}

TEST_CASE("A first-block cache's cached step of FLUX.1-dev on an H100, by hand", "[costmodel][cache]") {
  const cpplan::Query q = flux_on_h100();
  const DatasheetModel hw(*q.hardware);
  const auto [plain, p] = plain_and_cached(q, hw, CachePolicy::kFbcache);
  // A computed step is the plain step.
  CHECK(p.step_ms == Approx(plain.step_ms));
  // A cached step: the first double block (its group's time over its 19 blocks), the rest of the
  // step, and the cache's work on the 4608 x 3072 BF16 hidden states: the residual added (read it
  // and the states, write the sum) and the decision (the first block's output against the
  // previous step's): 5 tensors over the HBM. One GPU: no all-reduce of the decision.
  const auto& doubles = p.blocks[0];
  REQUIRE(doubles.kind == cpplan::BlockKind::kDouble);
  const double hidden = 4608.0 * 3072 * 2;
  const double hbm = q.hardware->memory_bandwidth_gbps * 1e9 * q.hardware->memory_efficiency;
  const double by_hand = doubles.time_ms() / doubles.count + p.step_rest.time_ms() + 5 * hidden / hbm * 1e3;
  CHECK(p.cached_step_ms == Approx(by_hand).epsilon(1e-9));
  CHECK(p.cached_step_ms < 0.1 * p.step_ms);
  // The image: 16 computed steps and 12 cached ones, the once-per-image terms as without a cache.
  REQUIRE(p.cached_steps == 12);
  const double once = plain.image_ms - 28 * plain.step_ms;
  CHECK(p.image_ms == Approx(16 * p.step_ms + 12 * p.cached_step_ms + once).epsilon(1e-9));
  // Memory: the residual and the previous output, held through denoising.
  CHECK(p.memory.step_cache == Approx(2 * hidden));
  CHECK(p.transformer_peak_bytes == Approx(plain.transformer_peak_bytes + 2 * hidden));
}

TEST_CASE("diffusers' TaylorSeer's cached step of FLUX.1-dev on an H100 runs every block but its attention, by hand",
          "[costmodel][cache]") {
  const cpplan::Query q = flux_on_h100();
  const DatasheetModel hw(*q.hardware);
  const auto [plain, p] = plain_and_cached(q, hw, CachePolicy::kTaylorseer);
  CHECK(p.step_ms == Approx(plain.step_ms));
  // The attention modules, per block, as the GPU's datasheet prices them: BF16 GEMMs of rows x k x n
  // reading the k x n weights and the rows' inputs, writing their outputs (2 bytes each); the
  // attention of the 4608 joint tokens, 24 heads of 128 (4 x 4608^2 x 24 x 128 FLOPs).
  const auto gemm = [&](double rows, double k, double n) {
    return hw.gemm(2 * rows * k * n, 2 * (k * n + rows * (k + n)), rows).ms;
  };
  const double d = 3072, attention = hw.attention(4.0 * 4608 * 4608 * 24 * 128, 4608, 4608, 128, q.backend).ms;
  // A double block's attn: q, k, v and out of the 4096 image tokens and of the 512 text tokens.
  const double double_attn = 4 * gemm(4096, d, d) + 4 * gemm(512, d, d) + attention;
  // A single block's attn: q, k, v of the 4608 tokens (its proj_out serves attention and MLP).
  const double single_attn = 3 * gemm(4608, d, d) + attention;
  const auto& doubles = p.blocks[0];
  const auto& singles = p.blocks[p.block_count - 1];
  REQUIRE(doubles.kind == cpplan::BlockKind::kDouble);
  REQUIRE(singles.kind == cpplan::BlockKind::kSingle);
  REQUIRE((doubles.count == 19 && singles.count == 38));
  // One GPU: no collective to wait at. Without their attention the GPU's work may drop below the
  // host's dispatch of the block's other ops, which the runtime's launches still take
  // (asynchronous: the longer of the two). The host skips the attention modules' own ops too (the
  // runtime counts them apart: 93 of a double block's, 64 of a single block's) and dispatches the
  // prediction's instead: per output, zeros_like and for orders 0 and 1 a cast, a multiply and an
  // add (7 ops); a double block's joint attention predicts 2 outputs, a single block's 1.
  REQUIRE((doubles.sync_ms == 0 && singles.sync_ms == 0 && doubles.overlapped));
  REQUIRE((q.runtime->ops.double_attention == 93 && q.runtime->ops.single_attention == 64));
  const double us = q.runtime->us_per_op * 1e-3;
  const double double_host = doubles.host_ms - 19 * 93 * us + 19 * 2 * 7 * us;
  const double single_host = singles.host_ms - 38 * 64 * us + 38 * 1 * 7 * us;
  const double blocks = std::max(doubles.device_ms() - 19 * double_attn, double_host) +
                        std::max(singles.device_ms() - 38 * single_attn, single_host);
  const double hidden = 4608.0 * 3072 * 2;
  const double hbm = q.hardware->memory_bandwidth_gbps * 1e9 * q.hardware->memory_efficiency;
  // The prediction per block: the two stored factors read, the output written (3 tensors), 57 blocks.
  const double by_hand = blocks + p.step_rest.time_ms() + 3 * 57 * hidden / hbm * 1e3;
  CHECK(p.cached_step_ms == Approx(by_hand).epsilon(1e-9));
  // The MLPs, norms and modulations still run: far from the few percent of a first-block cache.
  CHECK(p.cached_step_ms > 0.4 * p.step_ms);
  CHECK(p.cached_step_ms < 0.8 * p.step_ms);
  // 28 steps: 8 computed (tests above), 20 cached; memory: two factors per block.
  REQUIRE(p.cached_steps == 20);
  CHECK(p.memory.step_cache == Approx(2 * 57 * hidden));
}

TEST_CASE("A calibrated cost model scales a cached step's blocks and rest by its factor on the computed step",
          "[costmodel][cache]") {
  // FLUX.1-dev on an H100 with fixed F1B1 (a last block too) and a step correction of 2 x the
  // analytic step + 1 ms: the computed step is corrected, the cached step's blocks and the rest of
  // the step scaled by the same factor (corrected / analytic), the residual added (3 tensors over
  // the HBM) left as it is.
  cpplan::Query q = flux_on_h100();
  q.cache = cpplan::cache_defaults(CachePolicy::kFixed);
  q.cache.last_blocks = 1;
  const DatasheetModel hw(*q.hardware);
  const auto correction = [](const Prediction& p, const cpplan::ParallelConfig&) { return 2 * p.step_ms + 1; };
  const Prediction raw = CostModel(hw).predict(q, config(1, 1), cpplan::CpVariant::kNone);
  const Prediction p = CostModel(hw, correction).predict(q, config(1, 1), cpplan::CpVariant::kNone);
  const auto& doubles = raw.blocks[0];
  const auto& singles = raw.blocks[raw.block_count - 1];
  REQUIRE(doubles.kind == cpplan::BlockKind::kDouble);
  REQUIRE(singles.kind == cpplan::BlockKind::kSingle);
  const double blocks = doubles.time_ms() / doubles.count + singles.time_ms() / singles.count + raw.step_rest.time_ms();
  const double hidden = 4608.0 * 3072 * 2;
  const double hbm = q.hardware->memory_bandwidth_gbps * 1e9 * q.hardware->memory_efficiency;
  const double work = 3 * hidden / hbm * 1e3;
  CHECK(raw.cached_step_ms == Approx(blocks + work).epsilon(1e-9));
  CHECK(raw.cache_work_ms == Approx(work).epsilon(1e-9));
  CHECK(p.step_ms == Approx(2 * raw.step_ms + 1).epsilon(1e-9));
  CHECK(p.cached_step_ms == Approx(blocks * (2 * raw.step_ms + 1) / raw.step_ms + work).epsilon(1e-9));
  // Without a cache there is no cached step to correct.
  q.cache = {};
  CHECK(CostModel(hw, correction).predict(q, config(1, 1), cpplan::CpVariant::kNone).cached_step_ms == 0);
}

namespace {
std::string error_of(cpplan::session::Options o) {
  if (o.gpus.empty()) o.gpus = "1";
  if (o.hardware.empty()) o.hardware = "h100-sxm";
  return cpplan::test::query_error(o);
}
}  // namespace

TEST_CASE("A cache's bad parameters and a framework without it are refused in one line", "[session][cache][errors]") {
  cpplan::session::Options o;
  o.cache = "fbcache";
  o.cache_fn = "2";
  CHECK(error_of(o) == "--cache-fn = 2: --cache fbcache runs the first block alone (F1B0; dbcache sets others)");
  o = {};
  o.cache_every = "3";
  CHECK(error_of(o).rfind("--cache-every = 3: needs --cache", 0) == 0);
  o = {};
  o.cache = "taylorseer";
  o.cache_hit_rate = "0.3";
  CHECK(error_of(o) == "--cache-hit-rate = 0.3: --cache taylorseer computes a fixed schedule (set --cache-every)");
  o = {};
  o.cache = "dbcache";
  o.cache_fn = "50";
  o.cache_bn = "7";
  CHECK(error_of(o) == "--cache-fn + --cache-bn = 50 + 7: must leave at least one of the model's 57 blocks to cache");
  o = {};
  o.cache = "lru";
  CHECK(error_of(o).rfind("--cache = lru: must be none, fbcache", 0) == 0);
  o = {};
  o.cache = "dbcache";
  o.framework = "xdit";
  CHECK(error_of(o) == "--cache = dbcache: xDiT offers --cache fbcache, teacache only");
  o.cache = "fbcache";
  CHECK(error_of(o).empty());
  // --framework cpplan: what cpplan run runs, the fixed schedule.
  o.framework = "cpplan";
  CHECK(error_of(o) == "--cache = fbcache: --framework cpplan runs the fixed schedule only (--cache fixed)");
  o.cache = "fixed";
  CHECK(error_of(o).empty());
  // A cache the named framework adapts to some classes only: diffusers' MagCache ships FLUX's
  // magnitude ratios alone (MagCacheConfig raises without mag_ratios). Under --cache any it drops out.
  o = {};
  o.model = "wan2.1-t2v-14b";
  o.cache = "magcache";
  o.framework = "diffusers";
  CHECK(error_of(o) == "--cache = magcache: diffusers runs --cache magcache only for FluxTransformer2DModel, not "
                       "WanTransformer3DModel (wan2.1-t2v-14b)");
  o.cache = "taylorseer";  // it runs, attaching to nothing: every step computed (priced so)
  CHECK(error_of(o).empty());
  o.cache = "any";
  CHECK(error_of(o).empty());
}

TEST_CASE("Each framework runs its caches only with the parallelism its source shows", "[planner][cache]") {
  cpplan::session::Options o;
  o.gpus = "2";
  o.res = "1024x1024";
  o.hardware = "h100-sxm";
  o.cache = "fbcache";
  std::ostringstream err;
  const auto c = cpplan::session::build_query(o, cpplan::test::fitted_catalog(), err);
  const cpplan::Plan ulysses = cpplan::planner::make_plan(c.query, config(1, 2));
  REQUIRE(ulysses.valid());
  const auto runs = cpplan::planner::frameworks_for(c.query, ulysses);
  CHECK(runs.has(cpplan::Framework::kCacheDit));  // the metric all_reduce(AVG)-ed across ranks
  CHECK(runs.has(cpplan::Framework::kXdit));      // all_reduce over the SP group
  CHECK_FALSE(runs.has(cpplan::Framework::kDiffusers));
  CHECK(cpplan::planner::unsupported_reason(cpplan::Framework::kDiffusers, c.query, ulysses) ==
        "diffusers runs --cache fbcache only without Ulysses or Ring");
  CHECK_FALSE(runs.has(cpplan::Framework::kSglang));  // disabled when world_size > 1
  // PipeFusion runs no step cache: the plan is invalid, by its own rule.
  cpplan::ParallelConfig pf = config(1, 1);
  pf.pipefusion.degree = 2;
  pf.pipefusion.patches = 2;
  const cpplan::Plan pipe = cpplan::planner::make_plan(c.query, pf);
  REQUIRE_FALSE(pipe.valid());
  CHECK(std::any_of(pipe.violations.begin(), pipe.violations.end(),
                    [](const cpplan::Violation& v) { return v.id == cpplan::RuleId::kCacheExcludesPipeFusion; }));
  // The launch texts carry each framework's cache with the query's parameters.
  const std::string cache_dit = cpplan::planner::cache_flag(c.query, *cpplan::planner::cache_of(c.query, cpplan::Framework::kCacheDit));
  CHECK(cache_dit ==
        "cache_config=DBCacheConfig(Fn_compute_blocks=1, Bn_compute_blocks=0, max_warmup_steps=4, "
        "max_continuous_cached_steps=3)");
  CHECK(cpplan::planner::xdit_command(c.query, ulysses).find(" --use_fbcache") != std::string::npos);
}

TEST_CASE("A framework's broken [[cache]] is refused in one line naming the field, the value and the rule", "[core][cache][errors]") {
  const std::string text = cpplan::test::shipped_profile("frameworks/cache-dit.toml");
  REQUIRE(cpplan::parse_framework_profile(text, "frameworks/cache-dit.toml").ok());
  auto refused = [&](const std::string& from, const std::string& to) {
    std::string broken = text;
    const auto at = broken.find(from);
    REQUIRE(at != std::string::npos);
    const auto f = cpplan::parse_framework_profile(broken.replace(at, from.size(), to), "frameworks/cache-dit.toml");
    REQUIRE_FALSE(f.ok());
    CHECK(f.error().message.find('\n') == std::string::npos);
    return f.error().message;
  };
  const std::string lru = refused("policies = [\"dbcache\", \"fbcache\"]", "policies = [\"lru\"]");
  CHECK(lru.find("policies") != std::string::npos);
  CHECK(lru.find("lru") != std::string::npos);
  CHECK(lru.find("a cache policy (fbcache, dbcache, teacache, taylorseer, magcache)") != std::string::npos);
  // The executor's fixed schedule is cpplan's own, not a framework's.
  CHECK(refused("policies = [\"dbcache\", \"fbcache\"]", "policies = [\"fixed\"]").find("fixed") != std::string::npos);
  CHECK(refused("policies = [\"dbcache\", \"fbcache\"]", "policies = [\"dbcache\"]\nwith_tp = \"yes\"")
            .find("with_tp") != std::string::npos);
  CHECK(refused("policies = [\"dbcache\", \"fbcache\"]", "policy = [\"dbcache\"]").find("policy") != std::string::npos);
}

namespace {
// `model` on one H100 at its profile's size and steps ("" : FLUX.1-dev at 1024x1024, 28 steps), with
// `policy` at its defaults, as the session builds it for `framework` ("" : none named).
cpplan::Query cached_on_h100(const std::string& model, const std::string& policy, const std::string& framework = "") {
  cpplan::session::Options o;
  if (!model.empty()) o.model = model;
  o.gpus = "1";
  if (model.empty()) o.res = "1024x1024";
  o.hardware = "h100-sxm";
  o.cache = policy;
  if (!framework.empty()) o.framework = framework;
  std::ostringstream err;
  return cpplan::session::build_query(o, cpplan::test::fitted_catalog(), err).query;
}

cpplan::Query cached_flux(const std::string& policy, const std::string& framework) {
  return cached_on_h100("", policy, framework);
}

// Wan2.1-T2V-14B at its profile's size and 50 steps on one H100, under `policy`.
cpplan::Query cached_wan(const std::string& policy) { return cached_on_h100("wan2.1-t2v-14b", policy); }

cpplan::planner::RankedPlan single_gpu_plan(const cpplan::Query& q) {
  const DatasheetModel hw(*q.hardware);
  const CostModel cost(hw);
  return cpplan::planner::Planner(cost).evaluate(q, config(1, 1));
}
}  // namespace

TEST_CASE("Each framework's cache runs its own schedule: diffusers' FirstBlockCache has no warm-up and no cap, by hand",
          "[planner][cache]") {
  // FirstBlockCacheConfig takes the threshold alone: every step from the first may be cached, as
  // many in a row as the threshold lets. At the stated hit rate, 0.5, 14 of 28 steps are cached;
  // cache-dit's F1B0 (warm-up 4, at most 3 in a row) caches 12 of the other 24.
  const cpplan::Query q = cached_flux("fbcache", "");
  const cpplan::planner::RankedPlan p = single_gpu_plan(q);
  REQUIRE(p.predicted);
  REQUIRE(p.predicted->cached_steps == 12);  // the query's cache: the policy's defaults
  const auto& diffusers = p.run(cpplan::Framework::kDiffusers);
  const auto& cache_dit = p.run(cpplan::Framework::kCacheDit);
  REQUIRE(diffusers.runs);
  REQUIRE(cache_dit.runs);
  CHECK(diffusers.cached_steps == 14);
  CHECK(cache_dit.cached_steps == 12);
  CHECK(diffusers.differs_from(*p.predicted));
  // Two more steps cached: the image is shorter by two computed steps less two cached ones.
  REQUIRE(diffusers.where == cache_dit.where);
  const double two = 2 * (p.predicted->step_ms - p.predicted->cached_step_ms);
  CHECK(cache_dit.image_ms - diffusers.image_ms == Approx(two).epsilon(1e-9));
  // Named, diffusers prices the query with its own schedule.
  const cpplan::Query named = cached_flux("fbcache", "diffusers");
  CHECK(named.cache.warmup_steps == 0);
  CHECK(named.cache.max_continuous_cached == -1);
  const cpplan::planner::RankedPlan own = single_gpu_plan(named);
  REQUIRE(own.predicted);
  CHECK(own.predicted->cached_steps == 14);
  CHECK_FALSE(own.run(cpplan::Framework::kDiffusers).differs_from(*own.predicted));
  // MagCache computes the steps before int(0.2 x 28 + 0.5) = 6 (retention_ratio), then caches half
  // of the other 22 (11), within max_skip_steps 3 in a row (at most 22 - 22 / 4 = 17): 11 cached.
  const cpplan::Query mag = cached_flux("magcache", "diffusers");
  CHECK(mag.cache.warmup_steps == 6);
  CHECK(cpplan::cached_steps(mag.cache, 28) == 11);
}

TEST_CASE("diffusers' TaylorSeer caches steps only where its hook attaches: FLUX.1-dev's attention modules, not Wan's",
          "[planner][cache]") {
  // hooks/taylorseer_cache.py hooks the modules named ^transformer_blocks.*attn,
  // ^single_transformer_blocks.*attn, ^blocks.*attn (in full): FLUX.1-dev's transformer_blocks.N.attn
  // and single_transformer_blocks.N.attn; Wan's blocks.N.attn1 and attn2 match none, so diffusers
  // runs the flag and computes every step. The schedule by hand: 3 warm-up steps, then the step
  // after and every 5th: FLUX.1-dev's 28 steps compute 3 + (23 / 5 + 1) = 8 and cache 20; Wan2.1's
  // 50 compute 3 + (45 / 5 + 1) = 13 and cache 37.
  const cpplan::planner::RankedPlan flux = single_gpu_plan(cached_flux("taylorseer", ""));
  REQUIRE(flux.predicted);
  CHECK(flux.predicted->cached_steps == 20);
  CHECK(flux.run(cpplan::Framework::kDiffusers).cached_steps == 20);
  const cpplan::planner::RankedPlan wan = single_gpu_plan(cached_wan("taylorseer"));
  REQUIRE(wan.predicted);
  CHECK(wan.predicted->cached_steps == 37);
  const auto& run = wan.run(cpplan::Framework::kDiffusers);
  REQUIRE(run.runs);
  CHECK(run.cached_steps == 0);
  CHECK(run.differs_from(*wan.predicted));
  // Nor does it store a factor (two hidden-state tensors a block, the plan's alone): its run is
  // the plan with no cache at all, in time, placement and memory. The plan's factors overflow the
  // H100, so it offloads the text encoder; diffusers' run keeps it resident.
  const cpplan::planner::RankedPlan uncached = single_gpu_plan(cached_wan("none"));
  REQUIRE(uncached.predicted);
  const auto& plain = uncached.run(cpplan::Framework::kDiffusers);
  CHECK(wan.predicted->memory.step_cache > 0);
  CHECK(run.where == plain.where);
  CHECK(run.image_ms == Approx(plain.image_ms).epsilon(1e-12));
  CHECK(run.peak_bytes == plain.peak_bytes);
  CHECK(run.fits);
  CHECK_FALSE(wan.predicted->fits_memory);
  // Under one placement, its image is the plan's with each of the 37 cached steps a computed one.
  CHECK(cpplan::costmodel::denoise_ms(*wan.predicted, 50, 0) - cpplan::costmodel::denoise_ms(*wan.predicted, 50) ==
        Approx(37 * (wan.predicted->step_ms - wan.predicted->cached_step_ms)).epsilon(1e-9));
  // Named, diffusers prices the query as it runs it: every step computed.
  const cpplan::Query named = cached_on_h100("wan2.1-t2v-14b", "taylorseer", "diffusers");
  CHECK(cpplan::cached_steps(named.cache, 50) == 0);
  const cpplan::planner::RankedPlan own = single_gpu_plan(named);
  REQUIRE(own.predicted);
  CHECK(own.predicted->cached_steps == 0);
  CHECK(own.predicted->memory.step_cache == 0);
  CHECK(own.predicted->memory.peak() == uncached.predicted->memory.peak());
  CHECK_FALSE(own.run(cpplan::Framework::kDiffusers).differs_from(*own.predicted));
}

TEST_CASE("diffusers' TaylorSeer computes SD3.5-medium's image-only attn2 on a cached step: only attn is predicted",
          "[planner][cache]") {
  // SD3.5-medium's blocks 0-12 add an image-only self-attention, diffusers' transformer_blocks.N.attn2;
  // TaylorSeer's ^transformer_blocks.*attn matches attn in full and not attn2. Its 13 dual blocks and
  // its 11 plain ones predict the same joint attention (same tokens, heads and widths), so each
  // predicts the same device work per block, and a dual block's cached time is longer than a plain
  // one's by all of attn2's work: its projections, kernel and memory traffic.
  const cpplan::planner::RankedPlan p = single_gpu_plan(cached_on_h100("sd3.5-medium", "taylorseer"));
  REQUIRE(p.predicted);
  REQUIRE(p.predicted->block_count == 2);
  const auto& dual = p.predicted->blocks[0];
  const auto& plain = p.predicted->blocks[1];
  REQUIRE(dual.count == 13);
  REQUIRE(plain.count == 11);
  CHECK(dual.attention_module_ms / 13 == Approx(plain.attention_module_ms / 11).epsilon(1e-9));
  CHECK(dual.device_ms() / 13 > plain.device_ms() / 11);
  const double attn2 = dual.device_ms() / 13 - plain.device_ms() / 11;
  CHECK((dual.device_ms() - dual.attention_module_ms) / 13 - (plain.device_ms() - plain.attention_module_ms) / 11 ==
        Approx(attn2).epsilon(1e-9));
  CHECK(p.predicted->cached_steps == 20);
}

TEST_CASE("A cache parameter the named framework fixes otherwise is refused in one line naming its schedule",
          "[session][cache][errors]") {
  cpplan::session::Options o;
  o.cache = "fbcache";
  o.framework = "diffusers";
  o.cache_warmup = "4";
  CHECK(error_of(o) ==
        "--cache-warmup = 4: diffusers runs --cache fbcache with no warm-up and no cap on cached steps in a row "
        "(a warm-up of 0 of 28 steps)");
  o.cache_warmup = "0";
  CHECK(error_of(o).empty());  // what it runs
  o.cache_max_cached = "3";
  CHECK(error_of(o) ==
        "--cache-max-cached = 3: diffusers runs --cache fbcache with no warm-up and no cap on cached steps in a row");
  o = {};
  o.cache = "magcache";
  o.framework = "diffusers";
  o.cache_warmup = "2";
  CHECK(error_of(o) ==
        "--cache-warmup = 2: diffusers runs --cache magcache with the first 20% of the steps computed "
        "(a warm-up of 6 of 28 steps)");
  o.cache_max_cached = "2";  // max_skip_steps is MagCacheConfig's: the flag takes it
  o.cache_warmup.clear();
  CHECK(error_of(o).empty());
  // Without --framework the parameters are the query's; cache-dit's flag takes them.
  o = {};
  o.cache = "fbcache";
  o.cache_warmup = "2";
  CHECK(error_of(o).empty());
}

TEST_CASE("A [[cache]] schedule that contradicts its flag, or is out of range, is refused in one line",
          "[core][cache][errors]") {
  const std::string text = cpplan::test::shipped_profile("frameworks/cache-dit.toml");
  const auto refused = [&](const std::string& added) {
    std::string broken = text;
    const std::string at = "policies = [\"dbcache\", \"fbcache\"]";
    const auto i = broken.find(at);
    REQUIRE(i != std::string::npos);
    const auto f = cpplan::parse_framework_profile(broken.insert(i + at.size(), "\n" + added), "frameworks/cache-dit.toml");
    REQUIRE_FALSE(f.ok());
    CHECK(f.error().message.find('\n') == std::string::npos);
    return f.error().message;
  };
  CHECK(refused("warmup = 2").find("warmup = 2: the flag sets the warm-up ({W}): a fixed one contradicts it") !=
        std::string::npos);
  CHECK(refused("max_cached = 3").find("max_cached = 3: the flag sets the cap ({MC}): a fixed one contradicts it") !=
        std::string::npos);
  CHECK(refused("max_cached = 0").find("max_cached = 0: must be -1 (no cap) or at least 1") != std::string::npos);
  CHECK(refused("warmup_share = 1.5").find("warmup_share = 1.5: must be at least 0 and at most 1") != std::string::npos);
  CHECK(refused("warmup_share = 1").find("warmup_share = 1: must be below 1") != std::string::npos);
  CHECK(refused("warmup = -1").find("warmup = -1: must be between 0 and 1000") != std::string::npos);
  // The shipped diffusers file fixes both, and parses.
  CHECK(cpplan::parse_framework_profile(cpplan::test::shipped_profile("frameworks/diffusers.toml"), "frameworks/diffusers.toml").ok());
}
