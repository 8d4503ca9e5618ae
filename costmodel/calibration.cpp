#include "costmodel/calibration.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cpplan::costmodel {

const std::vector<std::string>& calibration_features() {
  static const std::vector<std::string> kNames = {"gemm_ms", "attention_ms", "memory_bound_ms", "launch_ms",
                                                  "comm_ms", "step_constant", "contention_ms"};
  return kNames;
}

std::vector<double> features_of(const Prediction& p, double oversubscription) {
  double gemm = 0, attention = 0, memory = 0, launch = 0, comm = p.step_comm_extra_ms;
  for (int i = 0; i < p.block_count; ++i) {
    const BlockCost& b = p.blocks[i];
    gemm += b.gemm_ms;
    attention += b.attention_ms;
    memory += b.memory_ms;
    launch += b.overhead_ms;
    comm += b.comm_ms;
  }
  const double kernels = gemm + attention + memory + launch;
  return {gemm, attention, memory, launch, comm, 1.0, kernels * std::max(0.0, oversubscription)};
}

double calibrated_step_ms(const Calibration& c, const Prediction& p, double oversubscription) {
  if (c.coefficients.empty()) return p.step_ms;
  const auto f = features_of(p, oversubscription);
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

// Lawson-Hanson active-set NNLS: min |A x - b| subject to x >= 0.
Eigen::VectorXd nnls(const Eigen::MatrixXd& a, const Eigen::VectorXd& b) {
  const int n = static_cast<int>(a.cols());
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  std::vector<bool> passive(n, false);
  for (int iteration = 0; iteration < 3 * n + 10; ++iteration) {
    const Eigen::VectorXd w = a.transpose() * (b - a * x);
    int best = -1;
    for (int j = 0; j < n; ++j)
      if (!passive[j] && w[j] > 1e-12 && (best < 0 || w[j] > w[best])) best = j;
    if (best < 0) break;
    passive[best] = true;
    while (true) {
      std::vector<int> cols;
      for (int j = 0; j < n; ++j)
        if (passive[j]) cols.push_back(j);
      Eigen::MatrixXd ap(a.rows(), static_cast<Eigen::Index>(cols.size()));
      for (std::size_t k = 0; k < cols.size(); ++k) ap.col(static_cast<Eigen::Index>(k)) = a.col(cols[k]);
      const Eigen::VectorXd z_p = ap.colPivHouseholderQr().solve(b);
      Eigen::VectorXd z = Eigen::VectorXd::Zero(n);
      for (std::size_t k = 0; k < cols.size(); ++k) z[cols[k]] = z_p[static_cast<Eigen::Index>(k)];
      bool feasible = true;
      for (int j : cols) feasible = feasible && z[j] > 0;
      if (feasible) {
        x = z;
        break;
      }
      double alpha = 1;
      for (int j : cols)
        if (z[j] <= 0) alpha = std::min(alpha, x[j] / (x[j] - z[j]));
      x += alpha * (z - x);
      for (int j : cols)
        if (x[j] <= 1e-12) {
          passive[j] = false;
          x[j] = 0;
        }
    }
  }
  return x;
}

Eigen::VectorXd fit(const std::vector<Observation>& runs, const std::vector<std::size_t>& rows) {
  const auto n = static_cast<Eigen::Index>(calibration_features().size());
  Eigen::MatrixXd a(static_cast<Eigen::Index>(rows.size()), n);
  Eigen::VectorXd b(static_cast<Eigen::Index>(rows.size()));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Observation& o = runs[rows[r]];
    for (Eigen::Index j = 0; j < n; ++j) a(static_cast<Eigen::Index>(r), j) = o.features[j] / o.measured_ms;
    b[static_cast<Eigen::Index>(r)] = 1.0;
  }
  return nnls(a, b);
}

double apply(const Eigen::VectorXd& x, const Observation& o) {
  double sum = 0;
  for (Eigen::Index j = 0; j < x.size(); ++j) sum += x[j] * o.features[j];
  return sum;
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

Calibration fit_calibration(const std::vector<Observation>& runs, int folds) {
  Calibration c;
  c.features = calibration_features();
  c.runs = static_cast<int>(runs.size());
  c.folds = std::max(2, std::min(folds, c.runs));
  if (runs.size() < 2) return c;
  std::vector<double> held_out(runs.size()), raw(runs.size()), measured(runs.size());
  for (int f = 0; f < c.folds; ++f) {
    std::vector<std::size_t> train;
    for (std::size_t i = 0; i < runs.size(); ++i)
      if (static_cast<int>(i % c.folds) != f) train.push_back(i);
    const Eigen::VectorXd x = fit(runs, train);
    for (std::size_t i = 0; i < runs.size(); ++i)
      if (static_cast<int>(i % c.folds) == f) held_out[i] = apply(x, runs[i]);
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    raw[i] = runs[i].predicted_ms;
    measured[i] = runs[i].measured_ms;
  }
  c.mape_before = mape(raw, measured);
  c.mape_after = mape(held_out, measured);
  c.rank_corr_before = spearman(raw, measured);
  c.rank_corr_after = spearman(held_out, measured);
  std::vector<std::size_t> all(runs.size());
  std::iota(all.begin(), all.end(), 0);
  const Eigen::VectorXd x = fit(runs, all);
  c.coefficients.assign(x.data(), x.data() + x.size());
  return c;
}

}  // namespace cpplan::costmodel
