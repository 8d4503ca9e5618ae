// Calibration: NNLS recovers known coefficients from synthetic runs, cross-validation scores
// held-out runs only, the metrics are the textbook ones, and the features split a prediction as
// the cost model combines its terms (and the legacy list still applies).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/calibration.h"
#include "tests/support/fixtures.h"

using namespace cpplan;
using namespace cpplan::costmodel;

namespace {
// Synthetic runs whose measured time is an exact non-negative combination of the features.
std::vector<Observation> synthetic(const std::vector<double>& truth, double noise, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> term(0.1, 10.0);
  std::normal_distribution<double> jitter(0.0, noise);
  std::vector<Observation> runs;
  for (int i = 0; i < 60; ++i) {
    Observation o;
    double measured = 0;
    for (std::size_t j = 0; j < truth.size(); ++j) {
      const double f = j == 6 ? 1.0 : (j == 7 && i % 3 ? 0.0 : term(gen));  // constant; contention on a third
      o.features.push_back(f);
      measured += truth[j] * f;
    }
    o.predicted_ms = o.features[0] + o.features[1] + o.features[2] + o.features[3] + o.features[4] + o.features[5];
    o.measured_ms = measured * (1.0 + jitter(gen));
    runs.push_back(o);
  }
  return runs;
}
}  // namespace

TEST_CASE("calibration recovers known coefficients from noiseless synthetic runs", "[costmodel][calibration]") {
  const std::vector<double> truth = {1.4, 0.8, 2.0, 0.5, 1.1, 0.9, 3.0, 0.25, 0.3, 0.7};
  const Calibration c = fit_calibration(synthetic(truth, 0.0, 1), 5);
  REQUIRE(c.coefficients.size() == truth.size());
  for (std::size_t j = 0; j < truth.size(); ++j) {
    INFO("coefficient " << c.features[j]);
    CHECK(c.coefficients[j] == Approx(truth[j]).epsilon(1e-6));
  }
  CHECK(c.mape_after < 1e-6);
  CHECK(c.rank_corr_after == Approx(1.0));
  CHECK(c.runs == 60);
  CHECK(c.folds == 5);
}

TEST_CASE("repeated runs of one configuration are one row at their median: one slowed run does not pull the fit",
          "[costmodel][calibration]") {
  const std::vector<double> truth = {1.4, 0.8, 2.0, 0.5, 1.1, 0.9, 3.0, 0.25, 0.3, 0.7};
  std::vector<Observation> runs;
  const double repeat[3][3] = {{0.9, 1.0, 5.0}, {5.0, 0.9, 1.0}, {1.0, 5.0, 0.9}};  // median 1, mean 2.3
  int k = 0;
  for (const Observation& o : synthetic(truth, 0.0, 1))
    for (const double factor : repeat[k++ % 3]) {
      Observation r = o;
      r.measured_ms *= factor;
      runs.push_back(r);
    }
  const Calibration c = fit_calibration(runs, 5);
  CHECK(c.runs == 180);
  CHECK(c.configurations == 60);
  for (std::size_t j = 0; j < truth.size(); ++j) {
    INFO("coefficient " << c.features[j]);
    CHECK(c.coefficients[j] == Approx(truth[j]).epsilon(1e-6));
  }
  CHECK(c.mape_after < 1e-6);
  // Two repeats: their mean.
  Observation a = runs[0], b = runs[0];
  a.measured_ms = 10;
  b.measured_ms = 14;
  std::vector<Observation> two = {a, b};
  for (std::size_t i = 3; i < runs.size(); i += 3) two.push_back(runs[i + 1]);  // the other configurations once
  const Calibration d = fit_calibration(two, 5);
  CHECK(d.runs == 61);
  CHECK(d.configurations == 60);
  double before = std::abs(a.predicted_ms - 12) / 12;  // the first configuration at (10 + 14) / 2
  for (std::size_t i = 2; i < two.size(); ++i) before += std::abs(two[i].predicted_ms - two[i].measured_ms) / two[i].measured_ms;
  CHECK(d.mape_before == Approx(before / 60));
}

TEST_CASE("calibration keeps coefficients non-negative", "[costmodel][calibration]") {
  // A negative true coefficient cannot be represented; the fit clamps it at zero.
  const Calibration c = fit_calibration(synthetic({1.0, 0.0, 0.5, 0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 0.0}, 0.02, 2), 4);
  for (double x : c.coefficients) CHECK(x >= 0.0);
  CHECK(c.mape_after < 0.05);
}

TEST_CASE("cross-validated error is measured on held-out runs only", "[costmodel][calibration]") {
  // With noise, the held-out error exceeds the noise-free fit but stays near the noise level.
  const auto runs = synthetic({1.4, 0.8, 2.0, 0.5, 1.1, 0.9, 3.0, 0.25, 0.3, 0.7}, 0.05, 3);
  const Calibration c = fit_calibration(runs, 5);
  CHECK(c.mape_after > 0.01);
  CHECK(c.mape_after < 0.08);
  CHECK(c.mape_before > c.mape_after);  // the raw sum of terms misses the constant and weights
}

TEST_CASE("MAPE and Spearman correlation match hand-computed values", "[costmodel][calibration]") {
  CHECK(mape({110, 90, 50}, {100, 100, 50}) == Approx((0.1 + 0.1 + 0.0) / 3));
  CHECK(spearman({1, 2, 3, 4}, {10, 20, 30, 40}) == Approx(1.0));
  CHECK(spearman({1, 2, 3, 4}, {40, 30, 20, 10}) == Approx(-1.0));
  // ranks (0,1,2,3) vs (1,0,2,3): d^2 = 2, rho = 1 - 6*2/(4*15) = 0.8
  CHECK(spearman({1, 2, 3, 4}, {2, 1, 3, 4}) == Approx(0.8));
}

TEST_CASE("an empty calibration leaves the prediction as it is", "[costmodel][calibration]") {
  Prediction p;
  p.step_ms = 12.5;
  CHECK(calibrated_step_ms(Calibration{}, p, 0) == 12.5);
}

TEST_CASE("with few noisy runs of collinear terms the fit shrinks toward the measured model", "[costmodel][calibration]") {
  // Nine runs whose terms move together (as GEMM and attention do over a few sizes of one model)
  // and a truth close to the raw model plus a cost per distributed step: plain NNLS trades the
  // terms for one another on the noise; cross-validation chooses to shrink the multipliers, keeps
  // every term, finds the added cost, and stays near the noise on held-out runs.
  std::mt19937 gen(11);
  std::normal_distribution<double> jitter(0.0, 0.08);
  std::vector<Observation> runs;
  for (int i = 0; i < 9; ++i) {
    const double size = 1.0 + i % 3;  // three sizes
    Observation o;
    o.features = {4.0 * size * size, 1.0 * size * size * size * 0.9, 0.2 * size, (i / 3) * 0.8 * size, 0.5,
                  (i / 3) * 0.1, 1.0, 0.0, (i / 3) * 8.0, i / 3 > 0 ? 1.0 : 0.0};
    double truth = 3.0 * o.features[9];  // a fixed cost per distributed step, as on real machines
    for (int j = 0; j < 6; ++j) truth += 1.05 * o.features[j];
    o.predicted_ms = o.features[0] + o.features[1] + o.features[2] + o.features[3] + o.features[4] + o.features[5];
    o.measured_ms = truth * (1.0 + jitter(gen));
    runs.push_back(o);
  }
  const Calibration c = fit_calibration(runs, 3);
  CHECK(c.shrinkage > 0);
  for (int j = 0; j < 5; ++j) {
    INFO("coefficient " << c.features[j]);
    CHECK(c.coefficients[j] > 0.3);  // no term traded away entirely
  }
  CHECK(c.coefficients[9] == Approx(3.0).margin(1.5));  // the distributed step's cost, unshrunk
  CHECK(c.mape_after < 0.15);  // 8% noise on the runs
}

namespace {

struct Case {
  std::string what;
  Query q;
  ParallelConfig c;
  CpVariant v;
};

// Predictions of several plans under several runtimes: host-bound blocks (eager diffusers on an
// H100), device-bound ones (compiled; a long video sequence), a synchronous runtime (host + device),
// no runtime (kernel launches only), and Ring, Ulysses, TP, CFG and DP plans.
std::vector<std::pair<std::string, Prediction>> several_predictions(RuntimeProfile& synchronous) {
  const ProfileCatalog& cat = cpplan::test::catalog();
  const RuntimeProfile* diffusers = cat.find_runtime("diffusers");
  const RuntimeProfile* compiled = cat.find_runtime("compiled");
  const RuntimeProfile* cpplan_rt = cat.find_runtime("cpplan");
  REQUIRE(diffusers);
  REQUIRE(compiled);
  REQUIRE(cpplan_rt);
  synchronous = *cpplan_rt;
  synchronous.overlaps_device = false;
  std::vector<Case> cases;
  auto add = [&](std::string what, Query q, const RuntimeProfile* rt, ParallelConfig c) {
    q.runtime = rt;
    cases.push_back({std::move(what), q, c, classify(c.context_parallel_config)});
  };
  using cpplan::test::config;
  using cpplan::test::make_query;
  add("flux ulysses 4, diffusers", make_query("flux.1-dev", 4, 1024, 1024), diffusers, config(1, 4));
  add("flux ring 2 x ulysses 2, compiled", make_query("flux.1-dev", 4, 1024, 1024), compiled, config(2, 2));
  add("flux tp 2 x ulysses 2, cpplan", make_query("flux.1-dev", 4, 1024, 1024), cpplan_rt, config(1, 2, 2));
  add("flux ring 4, synchronous", make_query("flux.1-dev", 4, 1024, 1024), &synchronous, config(4, 1));
  add("flux single GPU, kernel launches", make_query("flux.1-dev", 1, 512, 512), nullptr, config(1, 1));
  add("wan ulysses 4 x cfg 2, diffusers", make_query("wan2.1-t2v-14b", 8, 1280, 720, 81), diffusers, config(1, 4, 1, 2));
  Query batch = make_query("flux.1-dev", 4, 1024, 1024);
  batch.batch = 4;
  add("flux ulysses 2 x dp 2, batch 4, compiled", batch, compiled, config(1, 2, 1, 1, 2));
  std::vector<std::pair<std::string, Prediction>> out;
  for (const Case& k : cases) {
    const DatasheetModel hw(*k.q.hardware);
    out.emplace_back(k.what, CostModel(hw).predict(k.q, k.c, k.v));
  }
  return out;
}

}  // namespace

TEST_CASE("the features split the step as the model combines its terms: the terms x 1 sum to step_ms",
          "[costmodel][calibration]") {
  RuntimeProfile synchronous;
  const auto predictions = several_predictions(synchronous);
  const std::vector<std::string>& names = calibration_features();
  REQUIRE(names.size() == 10);
  // The terms with a prior of 1: the device's terms where the device bounds a block, the host's
  // where the host does, the waits. The added costs (constant, contention, collectives, distributed
  // step) have a prior of 0.
  const std::vector<double> prior = {1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  Calibration as_is;
  as_is.features = names;
  as_is.coefficients = prior;
  int host_bound = 0, device_bound = 0;
  for (const auto& [what, p] : predictions) {
    INFO(what);
    const std::vector<double> f = features_of(p, 0.0);
    REQUIRE(f.size() == names.size());
    double terms = 0;
    for (std::size_t j = 0; j < 6; ++j) terms += f[j];
    CHECK(std::abs(terms - p.step_ms) <= 1e-9 * p.step_ms);
    CHECK(std::abs(calibrated_step_ms(as_is, p, 0.0) - p.step_ms) <= 1e-9 * p.step_ms);
    for (int i = 0; i < p.block_count; ++i) (p.blocks[i].host_bound() ? host_bound : device_bound)++;
  }
  CHECK(host_bound > 0);    // both sides of the max are exercised
  CHECK(device_bound > 0);
}

TEST_CASE("a host-bound block contributes its host time and no device term, a device-bound one the reverse",
          "[costmodel][calibration]") {
  Prediction p;
  p.block_count = 2;
  BlockCost& host = p.blocks[0];  // host 10 ms against a device of 2 + 1 + 1 + 2 = 6 ms
  host.gemm_ms = 2, host.attention_ms = 1, host.memory_ms = 1, host.comm_ms = 2, host.host_ms = 10, host.sync_ms = 0.5;
  BlockCost& device = p.blocks[1];  // device 8 + 4 + 2 + 1 = 15 ms against a host of 3 ms
  device.gemm_ms = 8, device.attention_ms = 4, device.memory_ms = 2, device.comm_ms = 1, device.host_ms = 3;
  p.step_rest.overlapped = false;  // a synchronous rest: 0.25 + 0.75 ms, both counted
  p.step_rest.memory_ms = 0.25, p.step_rest.host_ms = 0.75;
  p.collective_calls = 3;
  p.step_ms = 10 + 0.5 + 15 + 0.25 + 0.75;  // 26.5, as BlockCost::time_ms() adds them
  const std::vector<double> f = features_of(p, 0.5);
  CHECK(f[0] == 8.0);         // device_gemm_ms: the device-bound block's only
  CHECK(f[1] == 4.0);         // device_attention_ms
  CHECK(f[2] == 2.0 + 0.25);  // device_memory_bound_ms, with the rest's scheduler update
  CHECK(f[3] == 1.0);         // device_comm_ms
  CHECK(f[4] == 10.0 + 0.75); // host_ms: the host-bound block's and the synchronous rest's
  CHECK(f[5] == 0.5);         // sync_ms
  CHECK(f[0] + f[1] + f[2] + f[3] + f[4] + f[5] == p.step_ms);
  CHECK(f[6] == 1.0);
  CHECK(f[7] == 0.5 * (8.0 + 4.0 + 2.25 + 10.75));  // bound compute x oversubscription
  CHECK(f[8] == 3.0);
  CHECK(f[9] == 1.0);
}

TEST_CASE("a calibration stored with the legacy feature list applies to the legacy features, as it did",
          "[costmodel][calibration]") {
  RuntimeProfile synchronous;
  const auto predictions = several_predictions(synchronous);
  Calibration legacy;
  legacy.features = legacy_calibration_features();
  legacy.coefficients = {1.5, 0.75, 2.0, 0.5, 1.25, 3.0, 0.125, 0.0625, 4.0};
  Calibration unnamed = legacy;  // before names were read: coefficients in the legacy order
  unnamed.features = {"gemm", "attention", "memory", "launch", "comm", "constant", "contention"};
  unnamed.coefficients.resize(7);
  for (const auto& [what, p] : predictions) {
    INFO(what);
    // By hand from the blocks: every block's GEMM, attention and memory-bound time (not the
    // scheduler's), launches = every block's host time, comm with the step's gathers.
    double gemm = 0, attention = 0, memory = 0, launch = 0, comm = p.step_rest.comm_ms;
    for (int i = 0; i < p.block_count; ++i) {
      gemm += p.blocks[i].gemm_ms;
      attention += p.blocks[i].attention_ms;
      memory += p.blocks[i].memory_ms;
      launch += p.blocks[i].host_ms;
      comm += p.blocks[i].comm_ms;
    }
    const double oversubscription = 1.0;
    const double contention = (gemm + attention + memory + launch) * oversubscription;
    const double distributed = p.collective_calls > 0 ? 1.0 : 0.0;
    const double expected = 1.5 * gemm + 0.75 * attention + 2.0 * memory + 0.5 * launch + 1.25 * comm + 3.0 +
                            0.125 * contention + 0.0625 * p.collective_calls + 4.0 * distributed;
    CHECK(calibrated_step_ms(legacy, p, oversubscription) == Approx(expected).epsilon(1e-12));
    const double expected_unnamed = 1.5 * gemm + 0.75 * attention + 2.0 * memory + 0.5 * launch + 1.25 * comm + 3.0 +
                                    0.125 * contention;
    CHECK(calibrated_step_ms(unnamed, p, oversubscription) == Approx(expected_unnamed).epsilon(1e-12));
  }
}
