#include "costmodel/runtime_fit.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "costmodel/calibration.h"
#include "costmodel/least_squares.h"

namespace cpplan::costmodel {

namespace {

// Ridge strengths tried; cross-validation picks one. With a few dozen timings of one model the
// multipliers trade off against one another; the ridge keeps those the data cannot tell apart
// near the physics they started from.
constexpr double kLambdas[] = {0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1};
// Alternations of fitting and re-deciding the side of each max.
constexpr int kMaxAlternations = 30;

double dot(const Terms& terms, const std::vector<double>& theta) {
  double s = 0;
  for (const auto& [j, v] : terms) s += (j < 0 ? 1.0 : theta[static_cast<std::size_t>(j)]) * v;
  return s;
}

// The linear model of one observation: coefficients of theta, and the fixed part (kFixed terms).
struct Linear {
  Eigen::RowVectorXd row;
  double fixed = 0;
  void add(const Terms& terms, double scale) {
    for (const auto& [j, v] : terms) (j < 0 ? fixed : row[j]) += v * scale;
  }
};

// The linear model of `o` with each block's side fixed as it falls at `theta`.
Linear linearised(const FitObservation& o, const std::vector<double>& theta, int n) {
  Linear l{Eigen::RowVectorXd::Zero(n), 0};
  for (const FitBlock& b : o.blocks) {
    const bool host = dot(b.host, theta) > dot(b.device, theta);
    if (!b.overlapped || host) l.add(b.host, o.steps);
    if (!b.overlapped || !host) l.add(b.device, o.steps);
    l.add(b.sync, o.steps);
  }
  l.add(o.once, 1);
  return l;
}

double mape_of(const std::vector<FitObservation>& obs, const std::vector<std::size_t>& rows,
               const std::vector<double>& theta) {
  double e = 0;
  for (std::size_t i : rows) e += std::abs(predict_fitted(obs[i], theta) - obs[i].measured_ms) / obs[i].measured_ms;
  return rows.empty() ? 0 : e / static_cast<double>(rows.size());
}

// Huber's loss of a relative error: squared within kHuber, linear beyond. Published timings hold
// a few runs no setting of the model's terms reaches (a box's odd collective, a chart misread);
// squared, each would pull every multiplier it shares toward itself; linear, it counts as much as
// its sign says. Fitted by iteratively reweighted least squares: weight min(1, kHuber / |r|).
constexpr double kHuber = 0.15;
double huber(double r) {
  const double a = std::abs(r);
  return a <= kHuber ? r * r : kHuber * (2 * a - kHuber);
}
double huber_weight(double r) { return std::abs(r) <= kHuber ? 1.0 : kHuber / std::abs(r); }

double objective(const std::vector<FitObservation>& obs, const std::vector<std::size_t>& rows,
                 const std::vector<double>& theta, double lambda) {
  double s = 0;
  for (std::size_t i : rows) {
    const double r = predict_fitted(obs[i], theta) / obs[i].measured_ms - 1;
    s += huber(r);
  }
  for (double t : theta) s += lambda * (t - 1) * (t - 1);
  return s;
}

// min sum ((a_i theta + fixed_i) / m_i - 1)^2 + lambda |theta - 1|^2, lower <= theta <= upper:
// NNLS on theta - lower; a parameter past its upper bound is pinned there and the rest re-solved.
std::vector<double> solve(const std::vector<Linear>& rows, const std::vector<double>& measured,
                          const std::vector<double>& weights, const std::vector<FitParameter>& params, double lambda) {
  const auto n = static_cast<Eigen::Index>(params.size());
  const auto m = static_cast<Eigen::Index>(rows.size());
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(m + n, n);
  Eigen::VectorXd b = Eigen::VectorXd::Zero(m + n);
  Eigen::VectorXd lower(n);
  for (Eigen::Index j = 0; j < n; ++j) lower[j] = params[static_cast<std::size_t>(j)].lower;
  for (Eigen::Index i = 0; i < m; ++i) {
    const Linear& l = rows[static_cast<std::size_t>(i)];
    const double mi = measured[static_cast<std::size_t>(i)];
    const double w = std::sqrt(weights[static_cast<std::size_t>(i)]);
    a.row(i) = w * l.row / mi;
    b[i] = w * (1.0 - l.fixed / mi);
  }
  for (Eigen::Index j = 0; j < n; ++j) {
    a(m + j, j) = std::sqrt(lambda);
    b[m + j] = std::sqrt(lambda);
  }
  std::vector<bool> pinned(params.size(), false);
  Eigen::VectorXd x = lower;
  for (Eigen::Index round = 0; round <= n; ++round) {
    Eigen::VectorXd fixed = Eigen::VectorXd::Zero(n);  // pinned parameters at their upper bound
    for (Eigen::Index j = 0; j < n; ++j)
      if (pinned[static_cast<std::size_t>(j)]) fixed[j] = params[static_cast<std::size_t>(j)].upper - lower[j];
    Eigen::MatrixXd free_a = a;
    for (Eigen::Index j = 0; j < n; ++j)
      if (pinned[static_cast<std::size_t>(j)]) free_a.col(j).setZero();
    Eigen::VectorXd dx = nnls(free_a, b - a * lower - a * fixed);
    for (Eigen::Index j = 0; j < n; ++j)
      if (pinned[static_cast<std::size_t>(j)]) dx[j] = fixed[j];
    x = dx + lower;
    bool more = false;
    for (Eigen::Index j = 0; j < n; ++j)
      if (x[j] > params[static_cast<std::size_t>(j)].upper) pinned[static_cast<std::size_t>(j)] = more = true;
    if (!more) break;
  }
  for (Eigen::Index j = 0; j < n; ++j) x[j] = std::min(x[j], params[static_cast<std::size_t>(j)].upper);
  return {x.data(), x.data() + x.size()};
}

// Alternates the linear fit with re-deciding each block's side and each row's Huber weight (at
// the current multipliers); keeps the best objective seen.
std::vector<double> fit(const std::vector<FitObservation>& obs, const std::vector<std::size_t>& rows,
                        const std::vector<FitParameter>& params, double lambda) {
  const int n = static_cast<int>(params.size());
  std::vector<double> theta(params.size(), 1.0), best = theta;
  double best_objective = objective(obs, rows, theta, lambda);
  for (int it = 0; it < kMaxAlternations; ++it) {
    std::vector<Linear> a;
    std::vector<double> measured, weights;
    for (std::size_t i : rows) {
      a.push_back(linearised(obs[i], theta, n));
      measured.push_back(obs[i].measured_ms);
      weights.push_back(huber_weight(predict_fitted(obs[i], theta) / obs[i].measured_ms - 1));
    }
    const std::vector<double> next = solve(a, measured, weights, params, lambda);
    const double f = objective(obs, rows, next, lambda);
    const bool settled = std::equal(next.begin(), next.end(), theta.begin(),
                                    [](double x, double y) { return std::abs(x - y) < 1e-9 * std::max(1.0, y); });
    theta = next;
    if (f < best_objective) {
      best_objective = f;
      best = next;
    }
    if (settled) break;
  }
  return best;
}

// The ridge strength with the lowest k-fold MAPE over `rows` (dealt in order: part of the fitting
// procedure, which the shipped fits were made with).
double choose_lambda(const std::vector<FitObservation>& obs, const std::vector<std::size_t>& rows,
                     const std::vector<FitParameter>& params, int folds) {
  folds = std::min<int>(folds, static_cast<int>(rows.size()));
  if (folds < 2) return kLambdas[std::size(kLambdas) / 2];
  double best = kLambdas[0], best_error = std::numeric_limits<double>::infinity();
  for (const double lambda : kLambdas) {
    double error = 0;
    for (int f = 0; f < folds; ++f) {
      const auto theta = fit(obs, fold_rows(rows, folds, f, false), params, lambda);
      const auto test = fold_rows(rows, folds, f, true);
      error += mape_of(obs, test, theta) * static_cast<double>(test.size());
    }
    if (error < best_error * (1 - 1e-9)) {
      best = lambda;
      best_error = error;
    }
  }
  return best;
}

// The observations of `rows` by each value of the group prefixes `keys` ("hardware=l20" -> rows).
std::map<std::string, std::vector<std::size_t>> group_members(const std::vector<FitObservation>& obs,
                                                              const std::vector<std::size_t>& rows,
                                                              const std::vector<std::string>& keys) {
  std::map<std::string, std::vector<std::size_t>> members;
  for (std::size_t i : rows)
    for (const auto& g : obs[i].groups)
      for (const auto& key : keys)
        if (g.rfind(key + "=", 0) == 0) members[g].push_back(i);
  return members;
}

std::vector<std::size_t> rows_without(const std::vector<std::size_t>& rows, const std::vector<std::size_t>& test) {
  std::vector<std::size_t> rest;
  for (std::size_t i : rows)
    if (std::find(test.begin(), test.end(), i) == test.end()) rest.push_back(i);
  return rest;
}

// The ridge strength with the lowest mean MAPE over the groups of `rows`, each predicted by a fit
// of the others; k-fold over the rows when fewer than two groups can be left out.
double choose_lambda_by_groups(const std::vector<FitObservation>& obs, const std::vector<std::size_t>& rows,
                               const std::vector<FitParameter>& params, int folds, const std::vector<std::string>& keys) {
  std::vector<std::pair<std::vector<std::size_t>, std::vector<std::size_t>>> splits;  // (train, test)
  for (const auto& [group, test] : group_members(obs, rows, keys)) {
    auto train = rows_without(rows, test);
    if (train.size() >= 2) splits.emplace_back(std::move(train), test);
  }
  if (splits.size() < 2) return choose_lambda(obs, rows, params, folds);
  double best = kLambdas[0], best_error = std::numeric_limits<double>::infinity();
  for (const double lambda : kLambdas) {
    double error = 0;
    for (const auto& [train, test] : splits) error += mape_of(obs, test, fit(obs, train, params, lambda));
    if (error < best_error * (1 - 1e-9)) {
      best = lambda;
      best_error = error;
    }
  }
  return best;
}

double choose_ridge(const std::vector<FitObservation>& obs, const std::vector<std::size_t>& rows,
                    const std::vector<FitParameter>& params, int folds, const std::vector<std::string>& ridge_keys) {
  return ridge_keys.empty() ? choose_lambda(obs, rows, params, folds)
                            : choose_lambda_by_groups(obs, rows, params, folds, ridge_keys);
}

// Fit on `train` with a ridge strength chosen on `train` alone.
std::vector<double> fit_cv(const std::vector<FitObservation>& obs, const std::vector<std::size_t>& train,
                           const std::vector<FitParameter>& params, int folds, const std::vector<std::string>& ridge_keys) {
  return fit(obs, train, params, choose_ridge(obs, train, params, folds, ridge_keys));
}

}  // namespace

double predict_fitted(const FitObservation& o, const std::vector<double>& theta) {
  double step = 0;
  for (const FitBlock& b : o.blocks) {
    const double h = dot(b.host, theta), d = dot(b.device, theta);
    step += (b.overlapped ? std::max(h, d) : h + d) + dot(b.sync, theta);
  }
  return o.steps * step + dot(o.once, theta);
}

RuntimeFitResult fit_runtime_parameters(const std::vector<FitObservation>& obs, const std::vector<FitParameter>& params,
                                        int folds, const std::vector<std::string>& group_keys, int repeats,
                                        const std::vector<std::string>& ridge_keys) {
  RuntimeFitResult r;
  std::vector<std::size_t> all(obs.size());
  std::iota(all.begin(), all.end(), 0);
  r.folds = std::max(2, std::min<int>(folds, static_cast<int>(obs.size())));
  r.lambda = choose_ridge(obs, all, params, r.folds, ridge_keys);
  r.theta = fit(obs, all, params, r.lambda);
  for (const auto& o : obs) r.fitted_ms.push_back(predict_fitted(o, r.theta));
  // Nested: each outer fold chooses its lambda on its own training rows; each repeat deals the rows
  // to the folds at random anew.
  r.repeats = std::max(1, repeats);
  for (int k = 0; k < r.repeats; ++k)
    for (int f = 0; f < r.folds; ++f)
      r.held_out.push_back({"", fold_rows(all, r.folds, f, true, k),
                            fit_cv(obs, fold_rows(all, r.folds, f, false, k), params, r.folds, ridge_keys), k});
  // Leave one value of each group key out.
  for (const auto& [group, test] : group_members(obs, all, group_keys)) {
    const std::vector<std::size_t> train = rows_without(all, test);
    if (train.size() < 2) continue;
    r.held_out.push_back({group, test, fit_cv(obs, train, params, r.folds, ridge_keys)});
  }
  return r;
}

std::vector<double> linear_held_out_ms(const std::vector<FitObservation>& obs, const RuntimeFitResult& r) {
  std::vector<double> out(obs.size(), 0);
  for (const HeldOutFit& h : r.held_out)
    if (h.group.empty())
      for (std::size_t i : h.test) out[i] += predict_fitted(obs[i], h.theta) / r.repeats;
  return out;
}

std::vector<std::pair<std::string, double>> linear_held_out_groups(const std::vector<FitObservation>& obs,
                                                                   const RuntimeFitResult& r) {
  std::vector<std::pair<std::string, double>> out;
  for (const HeldOutFit& h : r.held_out)
    if (!h.group.empty()) out.emplace_back(h.group, mape_of(obs, h.test, h.theta));
  return out;
}

}  // namespace cpplan::costmodel
