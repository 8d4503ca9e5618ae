#include "session/jobs/tune_fit.h"

#include <cmath>

#include "session/jobs/tune_candidates.h"

namespace cpplan::session {

double fitted_step_ms(const TuneFit& fit, const TuneCandidate& c) {
  return c.predicted_step_ms * fit.scale * fit.factor(c.family);
}

TuneFit fit_tune(const std::vector<TuneMeasurement>& runs) {
  TuneFit fit;
  if (runs.empty()) return fit;
  double log_sum = 0;
  for (const TuneMeasurement& r : runs) log_sum += std::log(r.step_ms / r.candidate->predicted_step_ms);
  fit.scale = std::exp(log_sum / static_cast<double>(runs.size()));
  fit.runs = static_cast<int>(runs.size());
  std::map<PlanFamily, std::pair<double, int>> rest;  // sum of log residuals, runs
  for (const TuneMeasurement& r : runs) {
    auto& [sum, n] = rest[r.candidate->family];
    sum += std::log(r.step_ms / (r.candidate->predicted_step_ms * fit.scale));
    ++n;
  }
  for (const auto& [family, sum_n] : rest) fit.family[family] = std::exp(sum_n.first / (sum_n.second + kPriorRuns));
  return fit;
}

}  // namespace cpplan::session
