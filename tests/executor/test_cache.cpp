// The executor's fixed step cache (executor/cache.h): its schedules and refusals by hand, a
// cached step's math against the model's blocks run apart (no cache code), and real ranks (one
// thread each, Gloo over loopback, one in-process store, as test_families.cpp; `cpplan run --cache`
// itself in test_run_cache.cpp) against the single-rank run. Each rank caches the residual of its own shard,
// so any plan computes the single rank's latents.
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/plan.h"
#include "executor/cache.h"
#include "executor/comm.h"
#include "executor/model.h"
#include "executor/run_parts.h"
#include "executor/runner.h"

// Last: LibTorch (above) defines glog's CHECK, which would replace Catch's and go uncounted.
#undef CHECK
#include <catch2/catch.hpp>

#include "tests/executor/rank_threads.h"
#include "tests/support/fixtures.h"

namespace {

using cpplan::ParallelConfig;
using cpplan::executor::CacheSchedule;
using cpplan::executor::RunFigures;
using cpplan::executor::RunSpec;

// `steps` denoising steps of `model` at its default size, no warm-up pass, on the plan `pc`;
// `draws`: the model's weights drawn once for the runs that share it.
RunSpec spec_for(const std::string& model, const ParallelConfig& pc, int steps, const CacheSchedule& cache,
                 std::shared_ptr<cpplan::executor::WeightDraws> draws) {
  const cpplan::Query q = cpplan::test::make_query(model, static_cast<int>(pc.world_size()));
  RunSpec s;
  s.weight_draws = std::move(draws);
  s.model = q.model;
  s.resolution = q.resolution;
  s.frames = q.frames;
  s.warmup = 0;
  s.steps = steps;
  s.config = pc;
  s.seed = 7;
  s.timeout = std::chrono::seconds(60);
  s.cache = cache;
  return s;
}

// run_rank on every rank of the plan, one thread each; rank 0's figures.
RunFigures run_threads(const RunSpec& s) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  const int world = static_cast<int>(s.config.world_size());
  return cpplan::test::on_rank_threads<RunFigures>(
      world, [&](int rank) { return cpplan::executor::run_rank(s, store, rank, world); })[0];
}

double relative_error(const at::Tensor& a, const at::Tensor& reference) {
  return (a - reference).abs().max().item<double>() / reference.abs().max().item<double>();
}

CacheSchedule schedule(int steps, int warmup, int every, int first, int last) {
  auto s = cpplan::executor::fixed_cache_schedule(steps, warmup, every, first, last);
  REQUIRE(s.ok());
  return s.value();
}

// B for `model`: 1 where its blocks leave a middle block after F = 1 and B = 1, else 0.
int middle_and_last(const std::string& model) {
  return cpplan::test::make_query(model, 1).model->total_blocks() >= 3 ? 1 : 0;
}

CacheSchedule every_step_computed(int steps, int first, int last) { return schedule(steps, steps, 1, first, last); }

// Ulysses 2, Ring 2, TP 2 (the middle blocks' all-reduces skipped on both ranks), Ulysses 2 with
// every block sharded over both ranks (fs_degree 2: the middle blocks' all-gathers skipped), and
// where the model has true CFG its two CFG groups apart (cfg_degree 2).
std::vector<ParallelConfig> two_rank_plans(const std::string& model) {
  ParallelConfig sharded = cpplan::test::config(1, 2);
  sharded.fs_degree = 2;
  std::vector<ParallelConfig> plans = {cpplan::test::config(1, 2), cpplan::test::config(2, 1),
                                       cpplan::test::config(1, 1, 2), sharded};
  if (cpplan::test::make_query(model, 2).model->guidance == cpplan::Guidance::kTrueCfg)
    plans.push_back(cpplan::test::config(1, 1, 1, 2));
  return plans;
}

}  // namespace

TEST_CASE("fixed_cache_schedule computes the warm-up steps and then every every-th step", "[executor][cache]") {
  using V = std::vector<bool>;
  SECTION("10 steps, warm-up 2, every 3: computed 0, 1, 4 and 7") {
    const CacheSchedule s = schedule(10, 2, 3, 1, 0);
    CHECK(s.computed == V{true, true, false, false, true, false, false, true, false, false});
    CHECK(s.active());
    CHECK(s.computed_steps(10) == 4);
    CHECK(s.cached_steps(10) == 6);
  }
  SECTION("6 steps, warm-up 1, every 2: computed 0, 2 and 4; F and B as given") {
    const CacheSchedule s = schedule(6, 1, 2, 3, 2);
    CHECK(s.computed == V{true, false, true, false, true, false});
    CHECK(s.first_blocks == 3);
    CHECK(s.last_blocks == 2);
  }
  SECTION("every 1 computes every step: not active") {
    const CacheSchedule s = schedule(5, 1, 1, 1, 0);
    CHECK(s.computed == V(5, true));
    CHECK_FALSE(s.active());
  }
  SECTION("a warm-up longer than the steps computes every step") {
    CHECK(schedule(4, 6, 2, 1, 0).computed == V(4, true));
  }
  SECTION("an empty schedule (the default) computes every step and caches none") {
    const CacheSchedule s;
    CHECK_FALSE(s.active());
    CHECK(s.computed_at(3));
    CHECK(s.computed_steps(4) == 4);
    CHECK(s.cached_steps(4) == 0);
  }
}

TEST_CASE("fixed_cache_schedule refuses each bad input in one line naming the field, the value and the rule",
          "[executor][cache]") {
  using cpplan::executor::fixed_cache_schedule;
  CHECK(fixed_cache_schedule(0, 1, 2, 1, 0).error().message == "cache steps = 0: must be at least 1");
  CHECK(fixed_cache_schedule(4, 0, 2, 1, 0).error().message == "cache warmup_steps = 0: must be at least 1");
  CHECK(fixed_cache_schedule(4, 1, 0, 1, 0).error().message == "cache every = 0: must be at least 1");
  CHECK(fixed_cache_schedule(4, 1, 2, 0, 0).error().message == "cache first_blocks = 0: must be at least 1");
  CHECK(fixed_cache_schedule(4, 1, 2, 1, -1).error().message == "cache last_blocks = -1: must be at least 0");
}

TEST_CASE("run_schedule runs --cache fixed as its fixed schedule and refuses what no fixed schedule runs in one line",
          "[executor][cache]") {
  using cpplan::CachePolicy;
  using cpplan::executor::run_schedule;
  using V = std::vector<bool>;
  CHECK(run_schedule(cpplan::CacheSpec{}, 4).value().computed.empty());  // no cache
  cpplan::CacheSpec fixed = cpplan::cache_defaults(CachePolicy::kFixed);
  fixed.first_blocks = 2, fixed.last_blocks = 1, fixed.warmup_steps = 2, fixed.every = 3;
  // 7 steps, warm-up 2, every 3: computed 0, 1 and 4 (4 - 2 + 1 = 3), cached 2, 3, 5 and 6.
  const CacheSchedule s = run_schedule(fixed, 7).value();
  CHECK(s.computed == V{true, true, false, false, true, false, false});
  CHECK(s.first_blocks == 2);
  CHECK(s.last_blocks == 1);
  for (const CachePolicy p : {CachePolicy::kFbcache, CachePolicy::kDbcache, CachePolicy::kTeacache, CachePolicy::kMagcache}) {
    const std::string name(cpplan::to_string(p));
    CHECK(run_schedule(cpplan::cache_defaults(p), 8).error().message ==
          "--cache = " + name + ": cpplan run runs a fixed schedule only (--cache fixed); " + name +
              " decides each step by a threshold, so which steps it caches is not known ahead");
  }
  CHECK(run_schedule(cpplan::cache_defaults(CachePolicy::kTaylorseer), 8).error().message ==
        "--cache = taylorseer: cpplan run runs a fixed schedule only (--cache fixed); taylorseer extrapolates its "
        "cached steps where the executor reuses the middle blocks' residual");
  cpplan::CacheSpec bad = fixed;
  bad.warmup_steps = 0;
  CHECK(run_schedule(bad, 8).error().message ==
        "--cache-warmup = 0: must be at least 1 for cpplan run (the first step is computed: nothing is cached before it)");
  bad = fixed;
  bad.first_blocks = 0;
  CHECK(run_schedule(bad, 8).error().message ==
        "--cache-fn = 0: must be at least 1 for cpplan run (a cached step runs the first block)");
  bad = fixed;
  bad.max_continuous_cached = 2;
  CHECK(run_schedule(bad, 8).error().message ==
        "--cache-max-cached = 2: --cache fixed caches the steps its schedule says (--cache-warmup, --cache-every); it "
        "takes no cap");
}

TEST_CASE("validate refuses a schedule that leaves no middle block, misses steps or caches the first step",
          "[executor][cache]") {
  using cpplan::executor::validate;
  CacheSchedule s = schedule(4, 1, 2, 2, 2);
  CHECK(validate(s, 4, 5).ok());
  CHECK(validate(s, 4, 4).error().message ==
        "cache first_blocks + last_blocks = 2 + 2: must leave at least one middle block of the model's 4");
  CHECK(validate(s, 5, 5).error().message == "cache computed = 4 steps: must give one per denoising step (steps = 5)");
  s.computed[0] = false;
  CHECK(validate(s, 4, 5).error().message ==
        "cache computed[0] = false: the first step must be computed (nothing is cached before it)");
  s.first_blocks = 0;
  CHECK(validate(s, 4, 5).error().message == "cache first_blocks = 0: must be at least 1");
  CHECK(validate(CacheSchedule{}, 4, 1).ok());  // no cache: nothing to check
}

TEST_CASE("the runner refuses a cache under PipeFusion, on long-skip blocks and on a cached switch of transformer",
          "[executor][cache]") {
  using cpplan::executor::check_cache;
  const CacheSchedule alternate = schedule(4, 1, 2, 1, 0);  // computed 0, 2
  SECTION("PipeFusion") {
    ParallelConfig pc = cpplan::test::config(1, 1);
    pc.pipefusion.degree = pc.pipefusion.patches = 2;
    CHECK(check_cache(spec_for("flux-tiny", pc, 4, alternate, nullptr)).error().message ==
          "cache with pipefusion degree = 2: must be 1 (PipeFusion's stages run no step cache)");
  }
  SECTION("HunyuanDiT's long skips") {
    CHECK(check_cache(spec_for("hunyuandit-tiny", cpplan::test::config(1, 1), 4, alternate, nullptr)).error().message ==
          "cache on hunyuandit-tiny: its blocks with skip = true run no step cache (the long skips its middle blocks "
          "leave have no residual)");
  }
  SECTION("Wan2.2's second transformer starts at step 2 of 4: cached there, refused; computed there, run") {
    const RunSpec refused = spec_for("wan22-tiny", cpplan::test::config(1, 1), 4, schedule(4, 2, 3, 1, 0), nullptr);
    const std::string line = "cache computed[2] = false: step 2 is the first of wan22-tiny's transformer 2, whose "
                             "cache starts empty; it must be computed";
    CHECK(check_cache(refused).error().message == line);
    auto store = c10::make_intrusive<c10d::HashStore>();
    CHECK_THROWS_WITH(cpplan::executor::run_rank(refused, store, 0, 1), line);
    CHECK(check_cache(spec_for("wan22-tiny", cpplan::test::config(1, 1), 4, alternate, nullptr)).ok());
  }
  SECTION("flux-tiny's 4 blocks with F = 2 and B = 2") {
    CHECK(check_cache(spec_for("flux-tiny", cpplan::test::config(1, 1), 4, schedule(4, 1, 2, 2, 2), nullptr))
              .error()
              .message == "cache first_blocks + last_blocks = 2 + 2: must leave at least one middle block of the "
                          "model's 4");
  }
}

TEST_CASE("a schedule with every step computed gives the latents of a run without a cache, bitwise",
          "[executor][multirank][cache]") {
  // flux-tiny (4 blocks): F 1, B 1; wan-tiny (2 blocks, cross-attention with true CFG): F 1, B 0.
  for (const std::string model : {"flux-tiny", "wan-tiny"}) {
    const auto draws = cpplan::executor::make_weight_draws();
    for (const ParallelConfig& pc : {cpplan::test::config(1, 1), cpplan::test::config(1, 2)}) {
      INFO(model << " " << cpplan::plan_label(pc));
      const CacheSchedule all = every_step_computed(3, 1, middle_and_last(model));
      const at::Tensor plain = run_threads(spec_for(model, pc, 3, CacheSchedule{}, draws)).latents;
      const at::Tensor computed = run_threads(spec_for(model, pc, 3, all, draws)).latents;
      CHECK(at::equal(computed, plain));
    }
  }
}

TEST_CASE("warm-up passes leave the step cache empty: with 2 of them the cached run's latents are those with none",
          "[executor][multirank][cache]") {
  // The warm-up passes run the whole model at sigma 1 and leave the cache untouched (runner.h): the
  // timed result is the one without them, bitwise, and its cached step is still cached (the
  // latents differ from an uncached run's).
  const auto draws = cpplan::executor::make_weight_draws();
  for (const ParallelConfig& pc : {cpplan::test::config(1, 1), cpplan::test::config(1, 2)}) {
    INFO(cpplan::plan_label(pc));
    const CacheSchedule cache = schedule(3, 1, 2, 1, 1);  // computed 0, 2; cached 1
    RunSpec warmed = spec_for("flux-tiny", pc, 3, cache, draws);
    warmed.warmup = 2;
    const at::Tensor with_warmup = run_threads(warmed).latents;
    CHECK(at::equal(with_warmup, run_threads(spec_for("flux-tiny", pc, 3, cache, draws)).latents));
    CHECK(relative_error(with_warmup, run_threads(spec_for("flux-tiny", pc, 3, {}, draws)).latents) > 1e-4);
  }
}

TEST_CASE("a cached step adds the residual the middle blocks left at the last computed step to the first blocks' "
          "output, by hand from the model's blocks run apart",
          "[executor][cache]") {
  // flux-tiny: blocks 0-1 double-stream, 2-3 single-stream; 2 steps (sigma 1, 0.5, 0), the first
  // computed, the second cached. Each piece is a model holding only its blocks (the same weights:
  // model.h), run through embed / run_blocks / project_out, never through the cache.
  namespace ex = cpplan::executor;
  for (const int last : {0, 1}) {
    SECTION("F = 1, B = " + std::to_string(last)) {
      const CacheSchedule cache = schedule(2, 1, 2, 1, last);  // computed, cached
      REQUIRE(cache.computed == std::vector<bool>{true, false});
      const RunSpec spec = spec_for("flux-tiny", cpplan::test::config(1, 1), 2, cache, nullptr);
      const at::Tensor run = run_threads(spec).latents;

      const cpplan::ModelProfile& m = *spec.model;
      ex::Comm one;
      const ex::AttentionOp& op = ex::attention_op(cpplan::CpVariant::kNone);
      const int n = m.total_blocks();
      const auto first = ex::build_model(m, spec.seed, one, ex::DeviceSpec{}, op, ex::BlockRange{0, 1});
      const auto middle = ex::build_model(m, spec.seed, one, ex::DeviceSpec{}, op, ex::BlockRange{1, n - 1 - last});
      const auto end = ex::build_model(m, spec.seed, one, ex::DeviceSpec{}, op, ex::BlockRange{n - last, last});
      const int64_t side = spec.resolution.width / m.pixel_granularity();
      const ex::Conditioning c = ex::draw_inputs(spec, side * side, m.text_tokens);
      ex::AttentionContext ctx;
      auto inputs = [&](const at::Tensor& x, double sigma) {
        ex::ForwardInputs in;
        in.latents = x;
        in.text = c.cond;
        in.timestep = at::full({1}, sigma, at::kFloat);
        in.image_rope = ex::image_rope_angles(1, side, side, m.head_dim);
        in.text_rope = ex::text_rope_angles(m.text_tokens, m.head_dim);
        return in;
      };
      auto last_blocks = [&](const at::Tensor& h, const ex::ForwardInputs& in) {
        return last > 0 ? end->run_blocks(h, in, ctx) : h;
      };
      // Step 0 (sigma 1), computed: the residual r = h(after the middle) - h(after block 0).
      const at::Tensor x0 = c.latents;
      const ex::ForwardInputs in0 = inputs(x0, 1.0);
      const at::Tensor h1 = first->run_blocks(first->embed(in0), in0, ctx);
      const at::Tensor h_mid = middle->run_blocks(h1, in0, ctx);
      const at::Tensor r = h_mid - h1;
      const at::Tensor x1 = x0 + (0.5 - 1.0) * first->project_out(last_blocks(h_mid, in0), in0);
      // Step 1 (sigma 0.5), cached: block 0 on the new latents, plus r, then the last blocks.
      const ex::ForwardInputs in1 = inputs(x1, 0.5);
      const at::Tensor g1 = first->run_blocks(first->embed(in1), in1, ctx);
      const at::Tensor expected = x1 + (0.0 - 0.5) * first->project_out(last_blocks(g1 + r, in1), in1);

      const double error = relative_error(run, expected);
      std::printf("flux-tiny F = 1, B = %d, [computed, cached]: relative difference %.3g from the hand derivation\n",
                  last, error);
      CHECK(error <= 1e-6);
      // The cached step is not the whole model's step: the hand derivation tells them apart.
      const at::Tensor whole = run_threads(spec_for("flux-tiny", cpplan::test::config(1, 1), 2, {}, nullptr)).latents;
      CHECK(relative_error(whole, expected) > 1e-3);
    }
  }
}

TEST_CASE("the pieces of a pass read the conditioning with_conditioning computed once, not the timestep again",
          "[executor][cache]") {
  // A step cache runs a pass in three pieces (first, middle, last blocks) and computes the
  // timestep's conditioning once for them, as a cache hook on the blocks sees the model's one
  // forward. Carried conditioning of sigma 1 with the timestep then set to 0.25: the pieces give
  // the sigma-1 pass (the whole model's forward), not the sigma-0.25 one.
  namespace ex = cpplan::executor;
  for (const std::string name : {"flux-tiny", "wan-tiny"}) {
    SECTION(name) {
      const RunSpec spec = spec_for(name, cpplan::test::config(1, 1), 1, {}, nullptr);
      const cpplan::ModelProfile& m = *spec.model;
      ex::Comm one;
      const auto model = ex::build_model(m, spec.seed, one, ex::DeviceSpec{}, ex::attention_op(cpplan::CpVariant::kNone),
                                         ex::BlockRange{});
      const cpplan::Sequence& seq = cpplan::test::make_query(name, 1).sequence;
      const int64_t rows = spec.resolution.height / m.pixel_granularity();
      const int64_t cols = spec.resolution.width / m.pixel_granularity();
      const ex::Conditioning c = ex::draw_inputs(spec, seq.image_tokens, m.text_tokens);
      ex::AttentionContext ctx;
      ctx.frames = seq.latent_frames;
      ctx.grid_rows = rows;
      ctx.grid_cols = cols;
      ex::ForwardInputs in;
      in.latents = c.latents;
      in.text = c.cond;
      in.timestep = at::full({1}, 1.0, at::kFloat);
      in.image_rope = ex::image_rope_angles(seq.latent_frames, rows, cols, m.head_dim);
      in.text_rope = ex::text_rope_angles(m.text_tokens, m.head_dim);
      auto pieces = [&](const ex::ForwardInputs& i) { return model->project_out(model->run_blocks(model->embed(i), i, ctx), i); };

      ex::ForwardInputs carried = model->with_conditioning(in);
      REQUIRE(carried.conditioning.defined());
      carried.timestep = at::full({1}, 0.25, at::kFloat);
      ex::ForwardInputs later = in;
      later.timestep = carried.timestep;
      const at::Tensor whole = model->forward(in, ctx);
      CHECK(relative_error(pieces(carried), whole) <= 1e-6);
      CHECK(relative_error(pieces(later), whole) > 1e-3);
    }
  }
}

TEST_CASE("with cached steps, Ulysses 2, Ring 2, TP 2, FSDP 2 and CFG 2 reproduce the single-rank latents",
          "[executor][multirank][cache]") {
  // flux-tiny: double- and single-stream blocks, text split with the image; hunyuan-tiny: the text
  // whole on every rank; qwen-tiny: a text attention mask, true CFG; wan-tiny: cross-attention, true
  // CFG (batched on one rank, a pass per group under cfg 2); latte-tiny: its temporal block cached
  // (Ring holds every frame of its positions); wan22-tiny: two transformers (cleared at step 2).
  for (const std::string model : {"flux-tiny", "hunyuan-tiny", "qwen-tiny", "wan-tiny", "latte-tiny", "wan22-tiny"}) {
    const CacheSchedule cache = schedule(4, 1, 2, 1, middle_and_last(model));  // computed 0, 2; cached 1, 3
    const auto draws = cpplan::executor::make_weight_draws();
    const at::Tensor single = run_threads(spec_for(model, cpplan::test::config(1, 1), 4, cache, draws)).latents;
    const at::Tensor uncached = run_threads(spec_for(model, cpplan::test::config(1, 1), 4, {}, draws)).latents;
    // The cached steps do change the result (the residual is not the middle blocks' at that step).
    CHECK(relative_error(single, uncached) > 1e-4);
    for (const ParallelConfig& pc : two_rank_plans(model)) {
      const std::string label = cpplan::plan_label(pc);
      INFO(model << " " << label);
      const at::Tensor two = run_threads(spec_for(model, pc, 4, cache, draws)).latents;
      REQUIRE(two.sizes() == single.sizes());
      const double error = relative_error(two, single);
      std::printf("%s %s, steps [computed, cached, computed, cached], F 1 B %d: relative difference %.3g from one "
                  "rank\n",
                  model.c_str(), label.c_str(), cache.last_blocks, error);
      CHECK(error <= 1e-5);
    }
  }
}

TEST_CASE("with cached steps, Ulysses 2 reproduces one rank on every other tiny family the cache runs on",
          "[executor][multirank][cache]") {
  // FLUX.2's shared modulation, SD3.5-medium's second image attention, CogVideoX's sequential
  // blocks with expert adaLN, HiDream's experts, SANA's linear attention and conv-GLU (its halos
  // cross the CP split in the first block), Mochi's narrower text stream.
  for (const std::string model : {"flux2-tiny", "sd35-tiny", "cogvideox-tiny", "hidream-tiny", "sana-tiny",
                                  "mochi-tiny"}) {
    const CacheSchedule cache = schedule(3, 1, 2, 1, middle_and_last(model));  // computed 0, 2; cached 1
    const auto draws = cpplan::executor::make_weight_draws();
    const at::Tensor single = run_threads(spec_for(model, cpplan::test::config(1, 1), 3, cache, draws)).latents;
    const at::Tensor two = run_threads(spec_for(model, cpplan::test::config(1, 2), 3, cache, draws)).latents;
    const double error = relative_error(two, single);
    std::printf("%s ulysses 2, steps [computed, cached, computed], F 1 B %d: relative difference %.3g from one rank\n",
                model.c_str(), cache.last_blocks, error);
    INFO(model);
    CHECK(error <= 1e-5);
  }
}

TEST_CASE("a cached step sends the bytes of its first and last blocks alone: its middle blocks run no collective",
          "[executor][multirank][cache]") {
  // flux-tiny under Ulysses 2: its 4 blocks each run one joint attention over [text; image] (the
  // same all-to-alls, X bytes a block), and the pass ends with the velocity's all-gather (G). A
  // computed step sends A = 4X + G; a cached step with F = 1, B = 0 sends C1 = X + G, with F = 1,
  // B = 1 C2 = 2X + G: A - C1 = 3 (C2 - C1). bytes_sent is the mean over the steps [computed, cached].
  const auto draws = cpplan::executor::make_weight_draws();
  const ParallelConfig pc = cpplan::test::config(1, 2);
  const double a = run_threads(spec_for("flux-tiny", pc, 1, {}, draws)).bytes_sent;
  auto cached_step_bytes = [&](int last) {
    return 2 * run_threads(spec_for("flux-tiny", pc, 2, schedule(2, 1, 2, 1, last), draws)).bytes_sent - a;
  };
  const double c1 = cached_step_bytes(0), c2 = cached_step_bytes(1);
  std::printf("flux-tiny ulysses 2, bytes per rank: computed step %.0f, cached step F 1 B 0 %.0f, F 1 B 1 %.0f\n", a,
              c1, c2);
  CHECK(c2 > c1);
  CHECK(a - c1 == 3 * (c2 - c1));
}

TEST_CASE("cached steps are timed in cached_step_ms and computed ones in computed_step_ms, in step order",
          "[executor][multirank][cache]") {
  const auto draws = cpplan::executor::make_weight_draws();
  for (const ParallelConfig& pc : {cpplan::test::config(1, 1), cpplan::test::config(1, 2)}) {
    INFO(cpplan::plan_label(pc));
    const RunFigures cached = run_threads(spec_for("flux-tiny", pc, 5, schedule(5, 1, 2, 1, 0), draws));
    REQUIRE(cached.step_ms.size() == 5);  // computed 0, 2, 4; cached 1, 3
    CHECK(cached.computed_step_ms == std::vector<double>{cached.step_ms[0], cached.step_ms[2], cached.step_ms[4]});
    CHECK(cached.cached_step_ms == std::vector<double>{cached.step_ms[1], cached.step_ms[3]});
    const RunFigures plain = run_threads(spec_for("flux-tiny", pc, 3, {}, draws));
    CHECK(plain.computed_step_ms == plain.step_ms);
    CHECK(plain.cached_step_ms.empty());
    CHECK(plain.median_cached_step_ms() == 0);
  }
}

TEST_CASE("percentile_ms interpolates between the sorted times and gives 0 for none", "[executor][cache]") {
  using cpplan::executor::percentile_ms;
  CHECK(percentile_ms({3, 1, 2}, 0.5) == 2);
  CHECK(percentile_ms({4, 1, 3, 2}, 0.5) == 2.5);
  CHECK(percentile_ms({4, 1, 3, 2}, 1.0) == 4);
  CHECK(percentile_ms({}, 0.5) == 0);
  RunFigures f;
  f.computed_step_ms = {5, 1, 3};
  f.cached_step_ms = {2, 4};
  CHECK(f.median_computed_step_ms() == 3);
  CHECK(f.median_cached_step_ms() == 3);
}
