#pragma once
// What `cpplan tune` learns from each measured launch: this machine's correction of the model's
// step times, a scale for the machine and a factor per plan family, fitted in log space from the
// model's prediction (the prior) and the measurements so far.

#include <vector>

#include "session/engine/internal/tune_calibration.h"

namespace cpplan::session {

struct TuneCandidate;  // session/jobs/tune_candidates.h

// The step time on this machine of candidate `c`: its predicted step_ms x fit's scale x its family's factor.
double fitted_step_ms(const TuneFit& fit, const TuneCandidate& c);

// One measured launch: the candidate and its measured step time (ms, > 0).
struct TuneMeasurement {
  const TuneCandidate* candidate = nullptr;
  double step_ms = 0;
};

// The scale is the geometric mean of measured / predicted over every run (none: 1). A family's
// factor is its runs' geometric mean of the rest, measured / (predicted x scale), shrunk toward 1
// (the model's own relative prediction) by kPriorRuns pseudo-runs: exp(sum log r / (n + kPriorRuns)).
TuneFit fit_tune(const std::vector<TuneMeasurement>& runs);

// A twentieth of a run: a plan measured on this machine is predicted from its measurement (a
// family measured once moves 20/21 of its log deviation from the scale: 75% slower than the scale
// says is predicted 70% slower; within 10% up to 1.1^21 = 7.4 times off), while a family never
// measured keeps the model's relative ranking. A tenth left 11% on a CPU Ulysses 3.3 times off.
inline constexpr double kPriorRuns = 0.05;

}  // namespace cpplan::session
