// The fit of runtime and hardware multipliers to end-to-end timings (costmodel/runtime_fit.h):
// predictions by hand, recovery of a known theta from synthetic timings whose blocks are host-
// or device-bound, lower bounds, the errors with one group left out, and the folds of the
// repeated cross-validation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "costmodel/least_squares.h"
#include "costmodel/runtime_fit.h"

using cpplan::costmodel::FitBlock;
using cpplan::costmodel::FitObservation;
using cpplan::costmodel::FitParameter;
using cpplan::costmodel::fold_rows;
using cpplan::costmodel::fit_runtime_parameters;
using cpplan::costmodel::kFixed;
using cpplan::costmodel::predict_fitted;
using cpplan::costmodel::RuntimeFitResult;
using cpplan::costmodel::Terms;

namespace {

// Parameters of the synthetic runtime: host ms per op, GEMM time, communication time.
constexpr int kHost = 0, kGemm = 1, kComm = 2;
// The truth the timings are made with: the host 2x slower than the prior, GEMMs 2x faster,
// communication 1.5x slower.
const std::vector<double> kTruth = {2.0, 0.5, 1.5};

FitBlock block(double host, double gemm, double comm, Terms sync = {}, bool overlapped = true) {
  FitBlock b;
  b.host = {{kHost, host}};
  b.device = {{kGemm, gemm}, {kComm, comm}};
  b.sync = std::move(sync);
  b.overlapped = overlapped;
  return b;
}

FitObservation observation(std::vector<FitBlock> blocks, double steps, Terms once, double measured_ms,
                           std::vector<std::string> groups) {
  FitObservation o;
  o.blocks = std::move(blocks);
  o.steps = steps;
  o.once = std::move(once);
  o.measured_ms = measured_ms;
  o.groups = std::move(groups);
  return o;
}

// Twelve timings made at theta = {2, 0.5, 1.5}, each measured_ms worked out by hand:
// per block max(2 host, 0.5 gemm + 1.5 comm) (+ sync), x steps, + once. "host" / "device" says
// which side of the max it falls on at the truth; "flips" marks blocks that fall on the other
// side at the prior theta = 1, so the fit must re-decide them.
std::vector<FitObservation> synthetic() {
  std::vector<FitObservation> o;
  auto groups = [](int i) {
    return std::vector<std::string>{i <= 6 ? "hardware=a" : "hardware=b", i % 2 ? "source=x" : "source=y", "batch=1"};
  };
  // 1: max(2*10 = 20, 0.5*16 = 8) = 20, host (flips: 10 < 16 at theta = 1)
  o.push_back(observation({block(10, 16, 0)}, 1, {}, 20, groups(1)));
  // 2: max(2*3 = 6, 0.5*30 = 15) = 15, device
  o.push_back(observation({block(3, 30, 0)}, 1, {}, 15, groups(2)));
  // 3: max(2*2 = 4, 1.5*10 = 15) = 15, device
  o.push_back(observation({block(2, 0, 10)}, 1, {}, 15, groups(3)));
  // 4: max(2*1 = 2, 0.5*10 + 1.5*10 = 20) = 20, device
  o.push_back(observation({block(1, 10, 10)}, 1, {}, 20, groups(4)));
  // 5: (max(2*5 = 10, 0.5*6 = 3) + sync 1.5*1 = 1.5) x 4 steps = 11.5 x 4 = 46, host
  o.push_back(observation({block(5, 6, 0, {{kComm, 1}})}, 4, {}, 46, groups(5)));
  // 6: (max(2*4 = 8, 0.5*4 = 2) + max(2*1 = 2, 1.5*6 = 9)) x 2 steps = 17 x 2 = 34,
  //    + once 5 (fixed) + 0.5*20 = 15: 49; one host-bound and one device-bound block
  o.push_back(observation({block(4, 4, 0), block(1, 0, 6)}, 2, {{kFixed, 5}, {kGemm, 20}}, 49, groups(6)));
  // 7: not overlapped: 2*3 + 1.5*2 = 6 + 3 = 9, + sync 2 (fixed) = 11
  o.push_back(observation({block(3, 0, 2, {{kFixed, 2}}, false)}, 1, {}, 11, groups(7)));
  // 8: max(2*2 = 4, 0.5*12 + 1.5*2 = 9) = 9, x 3 steps = 27, device
  o.push_back(observation({block(2, 12, 2)}, 3, {}, 27, groups(8)));
  // 9: max(2*8 = 16, 0.5*20 + 1.5*2 = 13) = 16, host (flips: 8 < 22 at theta = 1)
  o.push_back(observation({block(8, 20, 2)}, 1, {}, 16, groups(9)));
  // 10: max(2*6 = 12, 0.5*10 + 1.5*6 = 14) = 14, device
  o.push_back(observation({block(6, 10, 6)}, 1, {}, 14, groups(10)));
  // 11: max(2*4 = 8, 0.5*40 + 1.5*1 = 21.5) = 21.5, device
  o.push_back(observation({block(4, 40, 1)}, 1, {}, 21.5, groups(11)));
  // 12: max(2*12 = 24, 0.5*4 + 1.5*4 = 8) = 24, host
  o.push_back(observation({block(12, 4, 4)}, 1, {}, 24, groups(12)));
  return o;
}

std::vector<FitParameter> three_parameters() { return {{"host", 0}, {"gemm", 0}, {"comm", 0}}; }

double dot(const Terms& terms, const std::vector<double>& theta) {
  double s = 0;
  for (const auto& [j, v] : terms) s += (j == kFixed ? 1.0 : theta[static_cast<std::size_t>(j)]) * v;
  return s;
}

}  // namespace

TEST_CASE("predict_fitted takes the max of host and device per block, adds sync, scales by steps and adds once",
          "[costmodel][runtime_fit]") {
  FitObservation o;
  o.blocks = {block(3, 5, 0)};
  // theta = 1: max(3, 5) = 5; host 2x: max(6, 5) = 6.
  CHECK(predict_fitted(o, {1, 1, 1}) == 5);
  CHECK(predict_fitted(o, {2, 1, 1}) == 6);
  // GEMM 0.5x and comm 2x with a comm term of 4: max(3, 2.5 + 8) = 10.5.
  o.blocks = {block(3, 5, 4)};
  CHECK(predict_fitted(o, {1, 0.5, 2}) == 10.5);
  // Not overlapped: host + device = 3 + 2.5 + 8 = 13.5.
  o.blocks[0].overlapped = false;
  CHECK(predict_fitted(o, {1, 0.5, 2}) == 13.5);
  // Sync: a fixed 0.5 and 1 ms scaled by comm (2): max(6, 5) + 0.5 + 2 = 8.5 at theta {2, 1, 2}.
  o.blocks = {block(3, 5, 0, {{kFixed, 0.5}, {kComm, 1}})};
  CHECK(predict_fitted(o, {2, 1, 2}) == 8.5);
  // Ten steps and once-per-image terms 4 ms of host (x2) and 1 ms fixed: 10 x 8.5 + 8 + 1 = 94.
  o.steps = 10;
  o.once = {{kHost, 4}, {kFixed, 1}};
  CHECK(predict_fitted(o, {2, 1, 2}) == 94);
  // Two blocks, each with its own side: max(2, 1) + max(2, 3) = 5, x 10 = 50, no once.
  o.blocks = {block(1, 1, 0), block(1, 0, 3)};
  o.once.clear();
  CHECK(predict_fitted(o, {2, 1, 1}) == 50);
}

TEST_CASE("the fit recovers a known theta from timings bound on either side of the max",
          "[costmodel][runtime_fit]") {
  const auto obs = synthetic();
  // The hand-worked measurements agree with the model they describe.
  for (std::size_t i = 0; i < obs.size(); ++i) {
    INFO("observation " << i + 1);
    CHECK(predict_fitted(obs[i], kTruth) == Approx(obs[i].measured_ms));
  }

  const RuntimeFitResult r = fit_runtime_parameters(obs, three_parameters(), 5, {"hardware", "source"});
  REQUIRE(r.theta.size() == 3);
  // The ridge toward 1 is small next to twelve exact timings: within 3%.
  CHECK(r.theta[kHost] == Approx(2.0).epsilon(0.03));
  CHECK(r.theta[kGemm] == Approx(0.5).epsilon(0.03));
  CHECK(r.theta[kComm] == Approx(1.5).epsilon(0.03));
  CHECK(r.folds == 5);
  const std::vector<double> lambdas = {0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1};
  CHECK(std::find(lambdas.begin(), lambdas.end(), r.lambda) != lambdas.end());

  // In sample and held out, every timing within a few %.
  REQUIRE(r.fitted_ms.size() == obs.size());
  const std::vector<double> held_out = linear_held_out_ms(obs, r);
  REQUIRE(held_out.size() == obs.size());
  for (std::size_t i = 0; i < obs.size(); ++i) {
    INFO("observation " << i + 1);
    CHECK(r.fitted_ms[i] == Approx(obs[i].measured_ms).epsilon(0.03));
    CHECK(held_out[i] == Approx(obs[i].measured_ms).epsilon(0.05));
  }

  // Both sides of the max are used at the fitted theta, as at the truth: observation 1's block
  // (host 20 vs device 8 at the truth) is host-bound, observation 2's (6 vs 15) device-bound.
  const FitBlock& host_bound = obs[0].blocks[0];
  const FitBlock& device_bound = obs[1].blocks[0];
  CHECK(dot(host_bound.host, r.theta) > dot(host_bound.device, r.theta));
  CHECK(dot(device_bound.host, r.theta) < dot(device_bound.device, r.theta));
}

TEST_CASE("a multiplier whose optimum is below its lower bound ends at the bound", "[costmodel][runtime_fit]") {
  // One parameter, host-only blocks, both timings half of the prior: 10 ms measured 5, 4 ms
  // measured 2. Unconstrained: minimise 8 (theta - 0.5)^2 + lambda (theta - 1)^2, theta =
  // (4 + lambda) / (8 + lambda) <= 5 / 9 for every lambda <= 1: below 0.8.
  FitObservation a, b;
  a.blocks = {FitBlock{{{0, 10}}, {}, {}, true}};
  a.measured_ms = 5;
  a.groups = {"site=1"};
  b.blocks = {FitBlock{{{0, 4}}, {}, {}, true}};
  b.measured_ms = 2;
  b.groups = {"site=2"};

  const RuntimeFitResult bound = fit_runtime_parameters({a, b}, {{"host", 0.8}}, 5, {});
  REQUIRE(bound.theta.size() == 1);
  CHECK(bound.theta[0] == Approx(0.8));
  CHECK(bound.fitted_ms[0] == Approx(8));  // 10 x 0.8
  CHECK(bound.fitted_ms[1] == Approx(3.2));
  CHECK(bound.folds == 2);                 // at most one fold per observation
  CHECK(linear_held_out_groups({a, b}, bound).empty());  // no group key asked for

  // With the bound at 0.2 the optimum is free. Each 2-fold training set is one of the timings,
  // whose held-out error grows with lambda, so cross-validation picks the smallest, 0.001:
  // theta = 4.001 / 8.001.
  const RuntimeFitResult free = fit_runtime_parameters({a, b}, {{"host", 0.2}}, 5, {});
  CHECK(free.lambda == 0.001);
  CHECK(free.theta[0] == Approx(4.001 / 8.001).epsilon(1e-6));
}

TEST_CASE("a multiplier whose optimum is above its upper bound ends at the bound, the others refitted",
          "[costmodel][runtime_fit]") {
  // Parameter 0 alone explains a (10 ms measured 50: theta 5); b = 10 theta0 + 10 theta1 measured
  // 40. With theta0 <= 2 it pins at 2 and theta1 takes the rest of b: (40 - 20) / 10 = 2 (a is then
  // 20 against 50; theta1 does not enter a, so a cannot pull it). Five copies of each: every 5-fold
  // training set holds four of each, where theta1 = (1 + 2 lambda) / (0.5 + 2 lambda) (the ridge
  // pulling toward 1); a's error does not depend on lambda and b's is least at the smallest, 0.001.
  // On all ten: theta1 = (1.25 + 2 lambda) / (0.625 + 2 lambda) = 1.997, within 2% of 2.
  FitObservation a, b;
  a.blocks = {FitBlock{{{0, 10}}, {}, {}, true}};
  a.measured_ms = 50;
  b.blocks = {FitBlock{{{0, 10}, {1, 10}}, {}, {}, true}};
  b.measured_ms = 40;
  const std::vector<FitObservation> obs = {a, a, a, a, a, b, b, b, b, b};
  const RuntimeFitResult r = fit_runtime_parameters(obs, {{"p0", 0, 2}, {"p1", 0}}, 5, {});
  REQUIRE(r.theta.size() == 2);
  CHECK(r.theta[0] == Approx(2));
  CHECK(r.theta[1] == Approx(2).epsilon(0.02));
}

TEST_CASE("each group value gets the error of a fit that did not see it", "[costmodel][runtime_fit]") {
  // One host parameter. Site 1 runs at theta = 2 (10 -> 20, 5 -> 10), site 2 at theta = 1
  // (4 -> 4, 6 -> 6).
  auto host_only = [](double host, double measured, std::vector<std::string> groups) {
    FitObservation o;
    o.blocks = {FitBlock{{{0, host}}, {}, {}, true}};
    o.measured_ms = measured;
    o.groups = std::move(groups);
    return o;
  };
  const std::vector<FitObservation> obs = {host_only(10, 20, {"site=1", "other=z"}), host_only(5, 10, {"site=1"}),
                                           host_only(4, 4, {"site=2"}), host_only(6, 6, {"site=2"})};
  const RuntimeFitResult r = fit_runtime_parameters(obs, {{"host", 0}}, 5, {"site"});
  const auto groups = linear_held_out_groups(obs, r);
  std::map<std::string, double> held(groups.begin(), groups.end());
  REQUIRE(held.size() == 2);  // "other=z" is not a key asked for
  REQUIRE(held.count("site=1") == 1);
  REQUIRE(held.count("site=2") == 1);
  // Site 1 left out: site 2's timings give theta = 1 exactly (the ridge pulls toward 1 too);
  // 10 and 5 predicted for 20 and 10: 50% each.
  CHECK(held["site=1"] == Approx(0.5));
  // Site 2 left out: 0.5 (theta - 2)^2 + lambda (theta - 1)^2, theta = (2 + 2 lambda) / (1 + 2 lambda),
  // 1.998 at lambda = 0.001: 4 and 6 predicted about twice over, an error of about 100%.
  CHECK(held["site=2"] == Approx(1.0).epsilon(0.01));
  // The fit of all four lies between the two sites.
  CHECK(r.theta[0] > 1);
  CHECK(r.theta[0] < 2);
}

TEST_CASE("the ridge chosen by leaving groups out: the strongest when the groups disagree, the weakest when they agree",
          "[costmodel][runtime_fit]") {
  auto host_only = [](double host, double measured, std::string site) {
    FitObservation o;
    o.blocks = {FitBlock{{{0, host}}, {}, {}, true}};
    o.measured_ms = measured;
    o.groups = {"site=" + site};
    return o;
  };
  // Site 1 at theta = 2, site 2 at theta = 1. Site 1 left out: site 2's timings give theta = 1 at
  // any ridge (the prior is their optimum), 50% off site 1 whatever the strength. Site 2 left out:
  // site 1's theta falls from about 2 toward 1 as the ridge grows, and site 2's error (theta - 1)
  // with it. So the strongest of the grid (1) has the lowest sum.
  const std::vector<FitObservation> disagree = {host_only(10, 20, "1"), host_only(5, 10, "1"), host_only(4, 4, "2"),
                                                host_only(6, 6, "2")};
  const RuntimeFitResult by_groups = fit_runtime_parameters(disagree, {{"host", 0}}, 5, {"site"}, 1, {"site"});
  CHECK(by_groups.lambda == Approx(1));
  // Every row at theta = 2: any ridge pulls a training fit away from 2 and every held-out row
  // with it, by groups or by rows: the weakest of the grid (0.001).
  const std::vector<FitObservation> agree = {host_only(10, 20, "1"), host_only(5, 10, "1"), host_only(4, 8, "2"),
                                             host_only(6, 12, "2")};
  CHECK(fit_runtime_parameters(agree, {{"host", 0}}, 5, {"site"}, 1, {"site"}).lambda == Approx(0.001));
  CHECK(fit_runtime_parameters(agree, {{"host", 0}}, 5, {"site"}).lambda == Approx(0.001));
  // One group: nothing to leave out but everything, so the rows' k-fold chooses, as without keys.
  const std::vector<FitObservation> one_site = {host_only(10, 20, "1"), host_only(5, 10, "1"), host_only(4, 4, "1"),
                                                host_only(6, 6, "1")};
  CHECK(fit_runtime_parameters(one_site, {{"host", 0}}, 5, {"site"}, 1, {"site"}).lambda ==
        Approx(fit_runtime_parameters(one_site, {{"host", 0}}, 5, {"site"}).lambda));
}

TEST_CASE("the synthetic timings report a held-out error for every hardware and source value",
          "[costmodel][runtime_fit]") {
  const auto obs = synthetic();
  const RuntimeFitResult r = fit_runtime_parameters(obs, three_parameters(), 5, {"hardware", "source"});
  const auto groups = linear_held_out_groups(obs, r);
  std::map<std::string, double> held(groups.begin(), groups.end());
  CHECK(held.size() == 4);  // hardware=a, hardware=b, source=x, source=y; not batch=1
  for (const char* g : {"hardware=a", "hardware=b", "source=x", "source=y"}) {
    INFO(g);
    REQUIRE(held.count(g) == 1);
    // Each half alone still pins all three multipliers: exact timings predicted within 5%.
    CHECK(held[g] >= 0);
    CHECK(held[g] < 0.05);
  }
}

namespace {

std::vector<std::size_t> iota_rows(std::size_t n, std::size_t first) {
  std::vector<std::size_t> rows(n);
  for (std::size_t i = 0; i < n; ++i) rows[i] = first + i;
  return rows;
}

// Each row of `rows` in exactly one held-out fold, and each fold's rest the other rows.
void check_partition(const std::vector<std::size_t>& rows, int folds, int deal) {
  std::map<std::size_t, int> seen;
  for (int f = 0; f < folds; ++f) {
    const auto test = fold_rows(rows, folds, f, true, deal);
    const auto train = fold_rows(rows, folds, f, false, deal);
    CHECK(test.size() == rows.size() / folds);
    CHECK(test.size() + train.size() == rows.size());
    for (std::size_t i : test) ++seen[i];
  }
  CHECK(seen.size() == rows.size());
  for (const auto& [row, n] : seen) CHECK(n == 1);
}

}  // namespace

TEST_CASE("folds dealt in order hold out every k-th row, and dealt at random each repeat is a partition of its own",
          "[costmodel][runtime_fit]") {
  const auto rows = iota_rows(25, 100);
  // In order: fold 3 of 5 holds rows 3, 8, 13, 18, 23 (here numbered from 100).
  CHECK(fold_rows(rows, 5, 3, true) == std::vector<std::size_t>{103, 108, 113, 118, 123});
  for (int deal : {cpplan::costmodel::kInOrder, 0, 1, 2}) {
    INFO("deal " << deal);
    check_partition(rows, 5, deal);
    CHECK(fold_rows(rows, 5, 1, true, deal) == fold_rows(rows, 5, 1, true, deal));  // the same on every call
  }
  // Rows that come in fives (one plan kind per box and size) are not held out together at random.
  for (int deal : {0, 1, 2}) {
    INFO("deal " << deal);
    for (int f = 0; f < 5; ++f) CHECK(fold_rows(rows, 5, f, true, deal) != fold_rows(rows, 5, 3, true));
  }
  CHECK(fold_rows(rows, 5, 0, true, 0) != fold_rows(rows, 5, 0, true, 1));
}

TEST_CASE("a cross-validation repeated 3 times holds every observation out once per repeat",
          "[costmodel][runtime_fit]") {
  const auto obs = synthetic();
  const RuntimeFitResult r = fit_runtime_parameters(obs, three_parameters(), 5, {}, 3);
  CHECK(r.repeats == 3);
  std::map<std::pair<int, std::size_t>, int> held;  // (repeat, observation) -> times held out
  int folds = 0;
  for (const auto& h : r.held_out) {
    REQUIRE(h.group.empty());
    ++folds;
    for (std::size_t i : h.test) ++held[{h.repeat, i}];
  }
  CHECK(folds == 15);
  CHECK(held.size() == 3 * obs.size());
  for (const auto& [key, n] : held) CHECK(n == 1);
  // The linear stand-in's held-out prediction is the mean over the repeats: within 5% as before.
  const std::vector<double> held_out = linear_held_out_ms(obs, r);
  for (std::size_t i = 0; i < obs.size(); ++i) CHECK(held_out[i] == Approx(obs[i].measured_ms).epsilon(0.05));
}
