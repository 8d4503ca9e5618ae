#include "costmodel/calibration.h"

#include "costmodel/least_squares.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace cpplan::costmodel {

const std::vector<std::string>& calibration_features() {
  static const std::vector<std::string> kNames = {
      "device_gemm_ms", "device_attention_ms", "device_memory_bound_ms", "device_comm_ms", "host_ms",
      "sync_ms",        "step_constant",       "bound_contention_ms",    "collective_calls", "distributed_step"};
  return kNames;
}

const std::vector<std::string>& legacy_calibration_features() {
  static const std::vector<std::string> kNames = {"gemm_ms",       "attention_ms",  "memory_bound_ms",
                                                  "launch_ms",     "comm_ms",       "step_constant",
                                                  "contention_ms", "collective_calls", "distributed_step"};
  return kNames;
}

std::vector<double> features_of(const Prediction& p, double oversubscription) {
  double gemm = 0, attention = 0, memory = 0, comm = 0, host = 0, sync = 0;
  // As BlockCost::time_ms() combines them: the side of the max that wins (a tie is the device's,
  // as host_bound() says), both sides for a synchronous runtime, then the waits.
  auto add = [&](const BlockCost& b) {
    const bool device_side = !b.overlapped || !b.host_bound();
    const bool host_side = !b.overlapped || b.host_bound();
    if (device_side) {
      gemm += b.gemm_ms;
      attention += b.attention_ms;
      memory += b.memory_ms;
      comm += b.comm_ms;
    }
    if (host_side) host += b.host_ms;
    sync += b.sync_ms;
  };
  for (int i = 0; i < p.block_count; ++i) add(p.blocks[i]);
  add(p.step_rest);
  const double bound_compute = gemm + attention + memory + host;
  return {gemm, attention, memory, comm, host, sync, 1.0, bound_compute * std::max(0.0, oversubscription),
          p.collective_calls, p.collective_calls > 0 ? 1.0 : 0.0};
}

std::vector<double> legacy_features_of(const Prediction& p, double oversubscription) {
  double gemm = 0, attention = 0, memory = 0, launch = 0, comm = p.step_comm_extra_ms;
  for (int i = 0; i < p.block_count; ++i) {
    const BlockCost& b = p.blocks[i];
    gemm += b.gemm_ms;
    attention += b.attention_ms;
    memory += b.memory_ms;
    launch += b.host_ms;
    comm += b.comm_ms;
  }
  const double kernels = gemm + attention + memory + launch;
  return {gemm,   attention, memory, launch, comm, 1.0, kernels * std::max(0.0, oversubscription), p.collective_calls,
          p.collective_calls > 0 ? 1.0 : 0.0};
}

double calibrated_step_ms(const Calibration& c, const Prediction& p, double oversubscription) {
  if (c.coefficients.empty()) return p.step_ms;
  const bool current = c.features == calibration_features();
  const auto f = current ? features_of(p, oversubscription) : legacy_features_of(p, oversubscription);
  double sum = 0;
  for (std::size_t i = 0; i < f.size() && i < c.coefficients.size(); ++i) sum += f[i] * c.coefficients[i];
  return sum;
}

StepCorrection step_correction(Calibration c, double cores) {
  return [c = std::move(c), cores](const Prediction& p, const ParallelConfig& config) {
    return calibrated_step_ms(c, p, static_cast<double>(config.world_size()) / std::max(1.0, cores) - 1);
  };
}

namespace {

// The prior the fit shrinks toward: the measured model as it is (each analytic term x 1, which
// sums to its step time; no constant, no contention term).
constexpr double kPrior[] = {1, 1, 1, 1, 1, 1, 0, 0, 0, 0};

// Shrinkage strengths tried (besides none, below). With a handful of runs of a few plan kinds the
// terms are nearly collinear, and plain NNLS trades one for another (GEMM x 0, memory-bound x 36)
// in ways that do not extrapolate to other sizes; cross-validation picks how far to pull the
// terms' multipliers toward the prior. The added costs (constant, contention, per collective,
// per distributed step) are not shrunk: they have no prior value to be pulled to.
constexpr double kShrinkage[] = {0.01, 0.03, 0.1, 0.3, 1, 3, 10};

// min sum_r (x . f_r / m_r - 1)^2 + lambda |x - prior|^2 over x >= 0: NNLS on augmented rows.
Eigen::VectorXd fit(const std::vector<Observation>& runs, const std::vector<std::size_t>& rows, double lambda) {
  const auto n = static_cast<Eigen::Index>(calibration_features().size());
  const auto m = static_cast<Eigen::Index>(rows.size());
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(m + n, n);
  Eigen::VectorXd b = Eigen::VectorXd::Zero(m + n);
  for (Eigen::Index r = 0; r < m; ++r) {
    const Observation& o = runs[rows[static_cast<std::size_t>(r)]];
    for (Eigen::Index j = 0; j < n; ++j) a(r, j) = o.features[j] / o.measured_ms;
    b[r] = 1.0;
  }
  for (Eigen::Index j = 0; j < n; ++j) {  // only the terms' multipliers: the added costs are free
    if (kPrior[j] == 0) continue;
    a(m + j, j) = std::sqrt(lambda);
    b[m + j] = std::sqrt(lambda) * kPrior[j];
  }
  return nnls(a, b);
}

double apply(const Eigen::VectorXd& x, const Observation& o) {
  double sum = 0;
  for (Eigen::Index j = 0; j < x.size(); ++j) sum += x[j] * o.features[j];
  return sum;
}

// The k-fold MAPE over `rows` of fits with shrinkage `lambda`.
double cv_error(const std::vector<Observation>& runs, const std::vector<std::size_t>& rows, int folds, double lambda) {
  double error = 0;
  for (int f = 0; f < folds; ++f) {
    const Eigen::VectorXd x = fit(runs, fold_rows(rows, folds, f, false), lambda);
    for (std::size_t i : fold_rows(rows, folds, f, true))
      error += std::abs(apply(x, runs[i]) - runs[i].measured_ms) / runs[i].measured_ms;
  }
  return error / static_cast<double>(rows.size());
}

// The shrinkage with the lowest k-fold MAPE over `rows` (the smallest of equals). No shrinkage at
// all only when it is clearly better (a tenth less error): with a handful of runs an unshrunk fit
// that scores a little better in cross-validation has traded the terms for one another, and
// picks the wrong plan more often on sizes it has not seen.
double choose_shrinkage(const std::vector<Observation>& runs, const std::vector<std::size_t>& rows, int folds) {
  folds = std::min<int>(folds, static_cast<int>(rows.size()));
  if (folds < 2) return 0;
  double best = kShrinkage[0], best_error = std::numeric_limits<double>::infinity();
  for (const double lambda : kShrinkage) {
    const double error = cv_error(runs, rows, folds, lambda);
    if (error < best_error * (1 - 1e-9)) {
      best = lambda;
      best_error = error;
    }
  }
  return cv_error(runs, rows, folds, 0) < 0.9 * best_error ? 0 : best;
}

std::vector<double> ranks_of(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return v[i] < v[j]; });
  std::vector<double> rank(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (std::size_t k = i; k <= j; ++k) rank[order[k]] = (i + j) / 2.0;  // ties share the mean rank
    i = j + 1;
  }
  return rank;
}

// Repeated runs of one configuration (the same features: the same model, size and plan priced on
// the same probes) as one row at their median step, in the order each first appears. A run slowed
// by something else on the machine then does not pull the fit unless most of its repeats were, and
// a configuration run five times weighs what one run once does.
std::vector<Observation> median_of_repeats(const std::vector<Observation>& runs) {
  std::vector<Observation> rows;
  std::vector<std::vector<double>> measured;
  for (const Observation& o : runs) {
    const auto same = std::find_if(rows.begin(), rows.end(), [&](const Observation& r) { return r.features == o.features; });
    if (same == rows.end()) {
      rows.push_back(o);
      measured.push_back({o.measured_ms});
    } else {
      measured[static_cast<std::size_t>(same - rows.begin())].push_back(o.measured_ms);
    }
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::vector<double>& m = measured[i];
    std::sort(m.begin(), m.end());
    const std::size_t half = m.size() / 2;
    rows[i].measured_ms = m.size() % 2 ? m[half] : (m[half - 1] + m[half]) / 2;
  }
  return rows;
}

}  // namespace

double mape(const std::vector<double>& predicted, const std::vector<double>& measured) {
  double sum = 0;
  for (std::size_t i = 0; i < predicted.size(); ++i) sum += std::abs(predicted[i] - measured[i]) / measured[i];
  return predicted.empty() ? 0 : sum / static_cast<double>(predicted.size());
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2) return 0;
  const auto ra = ranks_of(a), rb = ranks_of(b);
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / ra.size();
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / rb.size();
  double num = 0, da = 0, db = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    num += (ra[i] - ma) * (rb[i] - mb);
    da += (ra[i] - ma) * (ra[i] - ma);
    db += (rb[i] - mb) * (rb[i] - mb);
  }
  return da > 0 && db > 0 ? num / std::sqrt(da * db) : 0;
}

Calibration fit_calibration(const std::vector<Observation>& measured_runs, int folds) {
  Calibration c;
  c.features = calibration_features();
  c.runs = static_cast<int>(measured_runs.size());
  const std::vector<Observation> runs = median_of_repeats(measured_runs);
  c.configurations = static_cast<int>(runs.size());
  c.folds = std::max(2, std::min(folds, c.configurations));
  if (runs.size() < 2) return c;
  std::vector<double> held_out(runs.size()), raw(runs.size()), measured(runs.size());
  std::vector<std::size_t> all(runs.size());
  std::iota(all.begin(), all.end(), 0);
  // Nested: each fold chooses its shrinkage on its own training runs, so the held-out error
  // scores the whole procedure on runs it never saw.
  for (int f = 0; f < c.folds; ++f) {
    const std::vector<std::size_t> train = fold_rows(all, c.folds, f, false);
    const Eigen::VectorXd x = fit(runs, train, choose_shrinkage(runs, train, c.folds));
    for (std::size_t i : fold_rows(all, c.folds, f, true)) held_out[i] = apply(x, runs[i]);
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    raw[i] = runs[i].predicted_ms;
    measured[i] = runs[i].measured_ms;
  }
  c.mape_before = mape(raw, measured);
  c.mape_after = mape(held_out, measured);
  c.rank_corr_before = spearman(raw, measured);
  c.rank_corr_after = spearman(held_out, measured);
  c.shrinkage = choose_shrinkage(runs, all, c.folds);
  const Eigen::VectorXd x = fit(runs, all, c.shrinkage);
  c.coefficients.assign(x.data(), x.data() + x.size());
  return c;
}

}  // namespace cpplan::costmodel
