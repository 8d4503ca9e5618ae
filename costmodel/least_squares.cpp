#include "costmodel/least_squares.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace cpplan::costmodel {

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

namespace {

// SplitMix64's finalizer: a fixed, well-mixed 64-bit hash.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<std::size_t> fold_rows(const std::vector<std::size_t>& rows, int folds, int f, bool held_out, int deal) {
  std::vector<std::size_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  if (deal != kInOrder) {
    const auto key = [deal](std::size_t i) { return mix((static_cast<std::uint64_t>(deal) << 32) ^ i); };
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  }
  std::vector<bool> in_fold(rows.size(), false);
  for (std::size_t rank = 0; rank < order.size(); ++rank)
    in_fold[order[rank]] = static_cast<int>(rank % static_cast<std::size_t>(folds)) == f;
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (in_fold[i] == held_out) out.push_back(rows[i]);
  return out;
}

}  // namespace cpplan::costmodel
