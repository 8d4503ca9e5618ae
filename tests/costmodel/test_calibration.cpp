// Calibration: NNLS recovers known coefficients from synthetic runs, cross-validation scores
// held-out runs only, and the metrics are the textbook ones.
#include <catch2/catch.hpp>

#include <random>

#include "costmodel/calibration.h"

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
      const double f = j == 5 ? 1.0 : (j == 6 && i % 3 ? 0.0 : term(gen));  // constant; contention on a third
      o.features.push_back(f);
      measured += truth[j] * f;
    }
    o.predicted_ms = o.features[0] + o.features[1] + o.features[2] + o.features[3] + o.features[4];
    o.measured_ms = measured * (1.0 + jitter(gen));
    runs.push_back(o);
  }
  return runs;
}
}  // namespace

TEST_CASE("calibration recovers known coefficients from noiseless synthetic runs", "[costmodel][calibration]") {
  const std::vector<double> truth = {1.4, 0.8, 2.0, 0.5, 1.1, 3.0, 0.25, 0.3, 0.7};
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

TEST_CASE("calibration keeps coefficients non-negative", "[costmodel][calibration]") {
  // A negative true coefficient cannot be represented; the fit clamps it at zero.
  const Calibration c = fit_calibration(synthetic({1.0, 0.0, 0.5, 0.0, 1.0, 2.0, 0.0, 0.0, 0.0}, 0.02, 2), 4);
  for (double x : c.coefficients) CHECK(x >= 0.0);
  CHECK(c.mape_after < 0.05);
}

TEST_CASE("cross-validated error is measured on held-out runs only", "[costmodel][calibration]") {
  // With noise, the held-out error exceeds the noise-free fit but stays near the noise level.
  const auto runs = synthetic({1.4, 0.8, 2.0, 0.5, 1.1, 3.0, 0.25, 0.3, 0.7}, 0.05, 3);
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
    o.features = {4.0 * size * size, 1.0 * size * size * size * 0.9, 0.2 * size, 0.5, (i / 3) * 0.8 * size, 1.0, 0.0,
                  (i / 3) * 8.0, i / 3 > 0 ? 1.0 : 0.0};
    double truth = 3.0 * o.features[8];  // a fixed cost per distributed step, as on real machines
    for (int j = 0; j < 5; ++j) truth += 1.05 * o.features[j];
    o.predicted_ms = o.features[0] + o.features[1] + o.features[2] + o.features[3] + o.features[4];
    o.measured_ms = truth * (1.0 + jitter(gen));
    runs.push_back(o);
  }
  const Calibration c = fit_calibration(runs, 3);
  CHECK(c.shrinkage > 0);
  for (int j = 0; j < 5; ++j) {
    INFO("coefficient " << c.features[j]);
    CHECK(c.coefficients[j] > 0.3);  // no term traded away entirely
  }
  CHECK(c.coefficients[8] == Approx(3.0).margin(1.5));  // the distributed step's cost, unshrunk
  CHECK(c.mape_after < 0.15);  // 8% noise on the runs
}
