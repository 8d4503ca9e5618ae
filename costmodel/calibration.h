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
  // Their distinct configurations: the rows of the fit, each at the median of its repeats
  // (fit-time information, not stored).
  int configurations = 0;
  int folds = 0;                        // k of the cross-validation
  double mape_before = 0, mape_after = 0;          // held-out, fraction (0.1 = 10%)
  double rank_corr_before = 0, rank_corr_after = 0; // Spearman, held-out
  // How far the fit was pulled toward the measured model (each term x 1), chosen by
  // cross-validation; fit-time information, not stored.
  double shrinkage = 0;
};

}  // namespace cpplan::costmodel

#include "costmodel/cost_model.h"

namespace cpplan::costmodel {

// Names of the calibration features, in order. The prediction's step is, per block group and for
// the rest of the step (step_rest), max(host, device) for a runtime that launches asynchronously
// (host + device otherwise) plus the waits at collectives; the features split it the same way:
// the device's terms (GEMM, attention, memory-bound, collectives) of the blocks the device bounds,
// the host's dispatch of the blocks the host bounds, the waits; so that these six terms, each x 1,
// sum to the uncalibrated step_ms. Then the added costs (no prior): a constant per step, the bound
// compute terms scaled by how far the ranks oversubscribe the device (ranks_per_device / cores - 1,
// CPU contention; 0 on GPUs), the number of collectives per step (its coefficient: ms of
// synchronisation per collective beyond what the probe's bandwidth and latency give) and 1 for a
// step of several ranks (a fixed cost of stepping together: progress threads, skew).
const std::vector<std::string>& calibration_features();

// The feature list calibrations were fitted with before this one (until schema v4): every block's
// GEMM, attention and memory-bound time (not the scheduler's update), launch time added to them,
// communication, the constant, contention over kernels + launches, collectives, distributed step.
const std::vector<std::string>& legacy_calibration_features();

// The features of one prediction (ms), in calibration_features() order. Precondition: `p` is
// uncalibrated (its blocks and step_rest as the cost model computed them).
std::vector<double> features_of(const Prediction& p, double oversubscription);

// The features of one prediction under the legacy list, as that cpplan computed them.
std::vector<double> legacy_features_of(const Prediction& p, double oversubscription);

// step_ms predicted by the calibration; the raw prediction when `c` has no coefficients. A
// calibration whose feature names are the current list's applies to features_of(); one whose names
// are all the legacy list's (or, as before names were read, any other names) applies its
// coefficients in order to legacy_features_of(): a calibration stored by an older cpplan still
// predicts what it did.
double calibrated_step_ms(const Calibration& c, const Prediction& p, double oversubscription);

// The calibration as the cost model's step correction on a machine of `cores` cores, where a plan
// of N ranks oversubscribes them by N / cores - 1.
StepCorrection step_correction(Calibration c, double cores);

struct Observation {
  std::vector<double> features;
  double predicted_ms = 0;  // the uncalibrated prediction
  double measured_ms = 0;
};

// Non-negative least squares on relative error (each row divided by its measurement, so the fit
// minimises what MAPE measures), shrunk toward the measured model by a strength chosen by k-fold
// cross-validation, and scored by nested k-fold cross-validation: every run is predicted by a fit
// (and a shrinkage choice) that did not see it. Repeated runs of one configuration (equal
// features) are one row at their median step. Fills coefficients (fitted to all rows), shrinkage,
// runs, configurations, folds and the metrics (over the rows).
Calibration fit_calibration(const std::vector<Observation>& runs, int folds);

// Mean absolute percentage error (fraction) and Spearman rank correlation.
double mape(const std::vector<double>& predicted, const std::vector<double>& measured);
double spearman(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace cpplan::costmodel
