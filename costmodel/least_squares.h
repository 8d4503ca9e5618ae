#pragma once
// Non-negative least squares, shared by the calibrations (calibration.cpp, runtime_fit.cpp).

#include <Eigen/Dense>

namespace cpplan::costmodel {

// Lawson-Hanson active-set NNLS: min |A x - b| subject to x >= 0.
Eigen::VectorXd nnls(const Eigen::MatrixXd& a, const Eigen::VectorXd& b);

}  // namespace cpplan::costmodel
