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

#include <limits>
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
  double upper = std::numeric_limits<double>::infinity();  // and at or below it (what the profiles accept)
};

// ms predicted for `o` with multipliers `theta`.
double predict_fitted(const FitObservation& o, const std::vector<double>& theta);

// A fit that did not see `test`: the observations it predicts, with the multipliers fitted to the rest.
struct HeldOutFit {
  std::string group;              // "hardware=l20" for a group left out; "" for a cross-validation fold
  std::vector<std::size_t> test;  // indices of the observations left out
  std::vector<double> theta;
  int repeat = 0;                 // a fold's repeat of the cross-validation (each deals the rows anew)
};

struct RuntimeFitResult {
  std::vector<double> theta;       // fitted on every observation
  double lambda = 0;               // ridge strength chosen by cross-validation
  std::vector<double> fitted_ms;   // in-sample
  int folds = 0;
  int repeats = 1;
  // The nested k-fold fits of each repeat (each with the lambda chosen on its own training rows),
  // then one per group value (as in FitObservation::groups) fitted to all the other observations.
  // The caller predicts their held-out observations with the real cost model.
  std::vector<HeldOutFit> held_out;
};

// Fits `observations` (at least 2). The nested k-fold cross-validation runs `repeats` times, each
// dealing the rows to the folds anew, so that its error does not hang on one split. Every group
// prefix in `group_keys` ("hardware", "source") gets a leave-one-value-out error.
// The ridge strength of each fit is the one with the lowest error over its own training rows: by
// k-fold cross-validation over the rows, or, with `ridge_group_keys`, by leaving out each value of
// those group prefixes in turn (the error of a GPU kind or a source the fit has not seen, which a
// weak ridge fitted to rows of every group does not show).
RuntimeFitResult fit_runtime_parameters(const std::vector<FitObservation>& observations,
                                        const std::vector<FitParameter>& parameters, int folds,
                                        const std::vector<std::string>& group_keys, int repeats = 1,
                                        const std::vector<std::string>& ridge_group_keys = {});

// The linear model's predictions of the observations held out by r.held_out's folds (index as
// `observations`), and its MAPE of each left-out group: the stand-in the fit itself works with.
std::vector<double> linear_held_out_ms(const std::vector<FitObservation>& observations, const RuntimeFitResult& r);
std::vector<std::pair<std::string, double>> linear_held_out_groups(const std::vector<FitObservation>& observations,
                                                                   const RuntimeFitResult& r);

}  // namespace cpplan::costmodel
