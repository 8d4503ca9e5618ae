#pragma once
// Non-negative least squares and the cross-validation split, shared by the calibrations
// (calibration.cpp, runtime_fit.cpp).

#include <Eigen/Dense>
#include <cstddef>
#include <vector>

namespace cpplan::costmodel {

// Lawson-Hanson active-set NNLS: min |A x - b| subject to x >= 0.
Eigen::VectorXd nnls(const Eigen::MatrixXd& a, const Eigen::VectorXd& b);

// The k-fold split of `rows`: the rows (held_out) or the rest of fold f. kInOrder deals the rows to
// the folds in their given order (fold f: every k-th row from the f-th); a repeat r >= 0 deals them
// in a fixed pseudo-random order of its own, a hash of position and r (the same on every machine).
// Dealt in order, rows that come in a period of k are held out together (every Ulysses run of a
// box whose plans come in fives): an assessment deals them at random, in several repeats.
inline constexpr int kInOrder = -1;
std::vector<std::size_t> fold_rows(const std::vector<std::size_t>& rows, int folds, int f, bool held_out,
                                   int deal = kInOrder);

}  // namespace cpplan::costmodel
