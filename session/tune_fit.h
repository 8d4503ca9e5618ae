#pragma once
// What `cpplan tune` learns from each measured launch: this machine's correction of the model's
// step times, a scale for the machine and a factor per plan family, fitted in log space from the
// model's prediction (the prior) and the measurements so far.

#include <map>
#include <vector>

#include "session/plan_family.h"

namespace cpplan::session {

struct TuneCandidate;  // session/tune_candidates.h

// step_ms on this machine = predicted step_ms x scale x family factor (1 for a family not measured).
struct TuneFit {
  double scale = 1;
  std::map<PlanFamily, double> family;
  int runs = 0;  // measurements it was fitted to
  double step_ms(const TuneCandidate& c) const;
  double factor(PlanFamily f) const;  // the family's factor, 1 when not measured
};

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
