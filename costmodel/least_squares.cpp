#include "costmodel/least_squares.h"

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

}  // namespace cpplan::costmodel
