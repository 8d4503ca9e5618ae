#pragma once
// Calibration of the analytic model against measured runs: the step time is modelled as a
// non-negative combination of the prediction's own terms (GEMM, attention, memory-bound work,
// kernel launches, communication, contention of ranks sharing a device), fitted by least
// squares (Eigen) to the runs of one machine and scored by k-fold cross-validation.

#include <string>
#include <vector>

namespace cpplan::costmodel {

struct Calibration {
  int version = 0;                      // assigned by the store, increasing per fingerprint
  std::string fingerprint;              // hardware key (data::HardwareFingerprint::key())
  std::string fitted_at;                // ISO-8601 UTC
  std::vector<std::string> features;    // names of the terms, in coefficient order
  std::vector<double> coefficients;     // step_ms = sum(coefficient x feature)
  int runs = 0;                         // measured runs it was fitted to
  int folds = 0;                        // k of the cross-validation
  double mape_before = 0, mape_after = 0;          // held-out, fraction (0.1 = 10%)
  double rank_corr_before = 0, rank_corr_after = 0; // Spearman, held-out
};

}  // namespace cpplan::costmodel
