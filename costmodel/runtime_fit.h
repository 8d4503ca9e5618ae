#pragma once
// Fitting the runtime and hardware defaults to end-to-end timings. A prediction made with the
// priors is a sum over the step's blocks of max(host terms, GPU terms) plus the waits at
// collectives, times the steps, plus the once-per-image terms. The fit scales each kind of term
// by a multiplier of its own (theta_j >= its lower bound, prior 1): per runtime the host's ops of
// the blocks, of Ulysses and of Ring, its collectives' host cost and waits, the step's prologue
// and the pipeline's per-image work; per GPU architecture GEMM, attention, memory-bound and
// convolution time; per link kind communication. With the side of each max fixed the model is
// linear in theta: non-negative least squares on relative error with a ridge toward the priors
// (strength chosen by cross-validation), alternated with re-deciding the sides until they settle.

#include <string>
#include <utility>
#include <vector>

namespace cpplan::costmodel {

// term = (parameter index, ms at theta = 1); index kFixed: a term no parameter scales.
using Terms = std::vector<std::pair<int, double>>;
inline constexpr int kFixed = -1;

struct FitBlock {
  Terms host, device, sync;
  bool overlapped = true;  // max(host, device); else host + device
};

struct FitObservation {
  std::vector<FitBlock> blocks;  // every block group of a step and the step's rest
  double steps = 1;              // blocks x steps: 1 for a per-step figure
  Terms once;                    // per image: encoding, decode, the pipeline's host work (0 for per-step)
  double measured_ms = 0;
  std::vector<std::string> groups;  // e.g. {"hardware=l20", "source=xdit-flux"}: for held-out errors
};

struct FitParameter {
  std::string name;    // e.g. "runtime.diffusers.host", "architecture.ada.gemm"
  double lower = 0;    // theta stays at or above it (an efficiency cannot pass the peak)
};

// ms predicted for `o` with multipliers `theta`.
double predict_fitted(const FitObservation& o, const std::vector<double>& theta);

struct RuntimeFitResult {
  std::vector<double> theta;       // fitted on every observation
  double lambda = 0;               // ridge strength chosen by cross-validation
  std::vector<double> fitted_ms;   // in-sample
  std::vector<double> held_out_ms; // nested k-fold: each from a fit (and lambda) that did not see it
  int folds = 0;
  // Per group value (as in FitObservation::groups): the MAPE of its observations predicted by a
  // fit of all the others.
  std::vector<std::pair<std::string, double>> held_out_groups;
};

// Fits `observations` (at least 2). Every group prefix in `group_keys` ("hardware", "source")
// gets a leave-one-value-out error.
RuntimeFitResult fit_runtime_parameters(const std::vector<FitObservation>& observations,
                                        const std::vector<FitParameter>& parameters, int folds,
                                        const std::vector<std::string>& group_keys);

}  // namespace cpplan::costmodel
