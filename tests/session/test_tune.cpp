// cpplan tune's pieces in the session: the plan families, the candidates it measures and the fit it
// learns from each run. The fit's expected values are worked by hand from its formulas (geometric
// means in log space, kPriorRuns = 0.05), the candidates from the planner's rows for a 2-GPU query.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "session/engine/engine.h"
#include "session/engine/internal/tune_calibration.h"
#include "session/engine/internal/tune_hit_rate.h"
#include "session/jobs/tune_candidates.h"
#include "session/jobs/tune_fit.h"
#include "tests/support/fixtures.h"

using cpplan::ParallelConfig;
using cpplan::session::PlanFamily;
using cpplan::session::TuneCandidate;

namespace {

ParallelConfig config(int ring, int ulysses, int tp = 1, int pp = 1) {
  ParallelConfig c;
  c.context_parallel_config.ring_degree = ring;
  c.context_parallel_config.ulysses_degree = ulysses;
  c.tensor_parallel_config.tp_degree = tp;
  c.pipefusion.degree = pp;
  return c;
}

TuneCandidate candidate(PlanFamily family, double predicted_step_ms) {
  TuneCandidate c;
  c.family = family;
  c.predicted_step_ms = predicted_step_ms;
  return c;
}

cpplan::session::Machine no_machine() { throw std::logic_error("no --hardware local here"); }

}  // namespace

TEST_CASE("a plan's family is how it splits the work", "[session][tune]") {
  using cpplan::session::family_of;
  CHECK(family_of(config(1, 1)) == PlanFamily::kSingle);
  CHECK(family_of(config(1, 4)) == PlanFamily::kUlysses);
  CHECK(family_of(config(4, 1)) == PlanFamily::kRing);
  CHECK(family_of(config(2, 2)) == PlanFamily::kHybrid);
  CHECK(family_of(config(1, 2, 2)) == PlanFamily::kHybrid);
  CHECK(family_of(config(1, 1, 4)) == PlanFamily::kTensor);
  CHECK(family_of(config(1, 1, 1, 4)) == PlanFamily::kPipeFusion);
}

TEST_CASE("the tune's fit: a scale for the machine and a factor per family, shrunk toward the model",
          "[session][tune]") {
  const TuneCandidate ulysses = candidate(PlanFamily::kUlysses, 10), ring = candidate(PlanFamily::kRing, 20);
  const TuneCandidate tp = candidate(PlanFamily::kTensor, 30);

  SECTION("no run: the model as it is") { CHECK(cpplan::session::fitted_step_ms(cpplan::session::fit_tune({}), ulysses) == 10); }
  SECTION("one run: its ratio is the scale, its family's factor 1") {
    const auto fit = cpplan::session::fit_tune({{&ulysses, 35}});
    CHECK(fit.scale == Approx(3.5));
    CHECK(cpplan::session::fitted_step_ms(fit, ulysses) == Approx(35));
    CHECK(cpplan::session::fitted_step_ms(fit, tp) == Approx(105));  // an unmeasured family: 30 x 3.5
  }
  SECTION("two families: scale sqrt(3 x 2), factors (ratio / scale)^(1 / 1.05)") {
    // ratios 30/10 = 3 and 40/20 = 2; scale sqrt(6) = 2.44949; ulysses (3 / 2.44949)^(1/1.05) =
    // 1.21298, ring (2 / 2.44949)^(1/1.05) = 0.824417.
    const auto fit = cpplan::session::fit_tune({{&ulysses, 30}, {&ring, 40}});
    CHECK(fit.runs == 2);
    CHECK(fit.scale == Approx(2.44949).epsilon(1e-5));
    CHECK(fit.family.at(PlanFamily::kUlysses) == Approx(1.21298).epsilon(1e-5));
    CHECK(fit.family.at(PlanFamily::kRing) == Approx(0.824417).epsilon(1e-5));
    CHECK(cpplan::session::fitted_step_ms(fit, ulysses) == Approx(29.7118).epsilon(1e-5));  // within 1% of the 30 measured
    CHECK(cpplan::session::fitted_step_ms(fit, ring) == Approx(40.3880).epsilon(1e-5));
    CHECK(cpplan::session::fitted_step_ms(fit, tp) == Approx(30 * 2.44949).epsilon(1e-5));
  }
}

TEST_CASE("the candidates: the predicted best, then each family's best, at most K", "[session][tune]") {
  cpplan::session::Options o;
  o.model = "flux.1-dev";
  o.hardware = "h100-sxm";
  o.gpus = "2";
  o.res = "1024x1024";
  const cpplan::session::Engine engine(cpplan::test::fitted_catalog(), no_machine);
  auto resolved = engine.resolve(o);
  REQUIRE(resolved.ok());
  auto rec = engine.recommend(*resolved);
  REQUIRE(rec.ok());
  const auto& rows = (*rec)->rows;
  REQUIRE(rows.size() >= 3);

  const auto four = cpplan::session::choose_candidates(**rec, 4, 0.1, {});
  REQUIRE(four.size() == 4);
  CHECK(four[0].predicted_rank == 1);
  CHECK(four[0].why == "predicted best");
  CHECK(four[0].predicted_step_ms == rows[0].plan->predicted->step_ms);
  for (std::size_t i = 0; i < four.size(); ++i)
    for (std::size_t j = i + 1; j < four.size(); ++j) CHECK(four[i].key != four[j].key);

  const auto one = cpplan::session::choose_candidates(**rec, 1, 0.1, {});
  REQUIRE(one.size() == 1);
  CHECK(one[0].key == four[0].key);

  // Every family measured already and a margin of 0: only the frameworks' bests are left to choose.
  const std::set<PlanFamily> all{PlanFamily::kSingle,     PlanFamily::kUlysses,    PlanFamily::kRing,
                                 PlanFamily::kHybrid,     PlanFamily::kTensor,     PlanFamily::kCfg,
                                 PlanFamily::kPipeFusion, PlanFamily::kFullyShard, PlanFamily::kData};
  for (const TuneCandidate& c : cpplan::session::choose_candidates(**rec, 10, 0, all))
    CHECK((c.why == "predicted best" || c.why.find("'s best") != std::string::npos ||
           c.why.find("within 0%") != std::string::npos));
}

TEST_CASE("the tune's calibration is read back on the host that fitted it and corrects a step", "[session][tune]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("cpplan-tune-calibration-{}", ::getpid());
  fs::create_directories(dir.string() + "/runs.db.tune");
  const std::string db = (dir / "runs.db").string();
  cpplan::session::TuneCalibration c;
  c.fit.scale = 2;
  c.fit.family[PlanFamily::kUlysses] = 1.5;
  c.fit.runs = 3;
  c.source = "local";
  c.host = "box-1";
  c.device = "cpu";
  c.model = "tune_cpu_config";
  c.resolution = "256x256";
  c.fitted_at = "2026-12-03T05:00:00Z";
  c.path = cpplan::session::tune_calibration_path(db, "local");
  CHECK(c.path == db + ".tune/calibration-local.json");
  cpplan::session::write_tune_calibration(c);

  const auto back = cpplan::session::read_tune_calibration(db, "local", "box-1");
  REQUIRE(back);
  CHECK(back->fit.scale == 2);
  CHECK(back->fit.factor(PlanFamily::kUlysses) == 1.5);
  CHECK(back->fit.factor(PlanFamily::kRing) == 1);
  CHECK(!cpplan::session::read_tune_calibration(db, "local", "box-2"));       // another host's
  CHECK(!cpplan::session::read_tune_calibration(db, "cluster-a", "box-1"));   // another source's

  // 10 ms predicted: ulysses 2 x scale 2 x 1.5 = 30 ms; ring 2 (no factor) x 2 = 20 ms.
  cpplan::costmodel::Prediction p;
  p.step_ms = 10;
  const auto correct = cpplan::session::with_tune({}, back->fit);
  CHECK(correct(p, config(1, 2)) == Approx(30));
  CHECK(correct(p, config(2, 1)) == Approx(20));

  std::ofstream(c.path) << R"({"scale": -1})";
  CHECK_THROWS_AS(cpplan::session::read_tune_calibration(db, "local", "box-1"), cpplan::session::InvalidInput);
  fs::remove_all(dir);
}

TEST_CASE("a candidate's mean step at a hit rate is its computed and cached steps over the steps",
          "[session][tune][cache]") {
  // fbcache's defaults: warm-up 4, at most 3 cached in a row; 10 steps leave 6 after the warm-up.
  TuneCandidate c = candidate(PlanFamily::kSingle, 0);
  c.computed_step_ms = 10;
  c.cached_step_ms = 2;
  cpplan::CacheSpec s = cpplan::cache_defaults(cpplan::CachePolicy::kFbcache);
  using cpplan::session::mean_step_ms_at;
  s.hit_rate = 1.0 / 3;  // floor(6 / 3) = 2 cached: (8 x 10 + 2 x 2) / 10
  CHECK(mean_step_ms_at(c, s, 10) == Approx(8.4));
  s.hit_rate = 0.5;  // 3 cached: (7 x 10 + 3 x 2) / 10
  CHECK(mean_step_ms_at(c, s, 10) == Approx(7.6));
  s.hit_rate = 0.9;  // floor(5.4) = 5, the cap's 6 - 6 / 4 = 5: (5 x 10 + 5 x 2) / 10
  CHECK(mean_step_ms_at(c, s, 10) == Approx(6));
  CHECK(mean_step_ms_at(c, cpplan::CacheSpec{}, 10) == 10);  // no cache: the computed step
}

TEST_CASE("a measured hit rate is kept per model and cache and prices a query's threshold caches",
          "[session][tune][cache]") {
  namespace fs = std::filesystem;
  using namespace cpplan::session;
  const fs::path dir = fs::temp_directory_path() / fmt::format("cpplan-tune-hit-rate-{}", ::getpid());
  fs::create_directories(dir.string() + "/runs.db.tune");
  const std::string db = (dir / "runs.db").string();
  MeasuredHitRate m;
  m.model = "tune_cpu_config";
  m.cache = cpplan::cache_defaults(cpplan::CachePolicy::kFbcache);
  m.cached_steps = 2;
  m.counted_steps = 6;
  m.runs = 1;
  m.host = "box-1";
  m.measured_at = "2026-12-07T01:00:00Z";
  m.path = tune_hit_rate_path(db);
  CHECK(m.path == db + ".tune/hit-rates.json");
  write_measured_hit_rate(m);
  m.cached_steps = 4;  // a later tune of the same model and cache replaces the entry
  m.counted_steps = 12;
  m.runs = 2;
  write_measured_hit_rate(m);

  const auto back = read_measured_hit_rate(db, "tune_cpu_config", m.cache);
  REQUIRE(back);
  CHECK((back->cached_steps == 4 && back->counted_steps == 12 && back->runs == 2));
  CHECK(back->hit_rate() == Approx(1.0 / 3));
  cpplan::CacheSpec other = m.cache;
  other.warmup_steps = 2;  // another parameter: another entry, none
  CHECK(!read_measured_hit_rate(db, "tune_cpu_config", other));
  CHECK(!read_measured_hit_rate(db, "flux.1-dev", m.cache));

  cpplan::ModelProfile model;
  model.name = "tune_cpu_config";
  cpplan::Query q;
  q.model = &model;
  q.cache = m.cache;
  q.caches = {cpplan::CacheSpec{}, m.cache, cpplan::cache_defaults(cpplan::CachePolicy::kTaylorseer)};
  const auto applied = apply_measured_hit_rates(q, db);
  REQUIRE(applied.size() == 1);  // fbcache once, for q.cache and its entry in q.caches
  CHECK(q.cache.hit_rate == Approx(1.0 / 3));
  CHECK(q.caches[1].hit_rate == Approx(1.0 / 3));
  CHECK(q.caches[2] == cpplan::cache_defaults(cpplan::CachePolicy::kTaylorseer));  // a fixed schedule: as it was
  CHECK(hit_rate_source_text(applied) ==
        fmt::format(", fbcache hit rate 0.33 measured by cpplan tune over 2 runs ({})", m.path));

  std::ofstream(m.path) << R"({"entries": 3})";
  CHECK_THROWS_AS(read_measured_hit_rate(db, "tune_cpu_config", m.cache), InvalidInput);
  fs::remove_all(dir);
}
