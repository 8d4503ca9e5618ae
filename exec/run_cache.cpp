#include "exec/run_cache.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <numeric>
#include <utility>
#include <vector>

#include "session/engine/calibration.h"
#include "session/jobs/sweep.h"

namespace cpplan::exec {

using nlohmann::json;

void record_cache_schedule(data::RunRecord& r, const CacheSpec& c, const executor::CacheSchedule& s, int steps) {
  const int computed = s.computed_steps(steps);
  r.run_key += session::cache_key(c);
  for (const auto& [name, value] :
       {std::pair<const char*, double>{"cache.first_blocks", c.first_blocks}, {"cache.last_blocks", c.last_blocks},
        {"cache.warmup_steps", c.warmup_steps}, {"cache.every", c.every}, {"cache.computed_steps", computed},
        {session::kStepCacheMetric, steps - computed}})
    r.metrics.emplace_back(name, value);
}

json measured_cache(data::RunRecord& r, const executor::RunFigures& f) {
  const auto median = [&](const char* metric, const std::vector<double>& ms) -> json {
    if (ms.empty()) return nullptr;
    r.metrics.emplace_back(metric, executor::percentile_ms(ms, 0.5));
    return r.metrics.back().second;
  };
  const double denoise = std::accumulate(f.step_ms.begin(), f.step_ms.end(), 0.0);
  r.metrics.emplace_back("cache.denoise_ms", denoise);
  return {{"computed_steps", f.computed_step_ms.size()},
          {"cached_steps", f.cached_step_ms.size()},
          {"computed_step_ms", median("cache.computed_step_ms", f.computed_step_ms)},
          {"cached_step_ms", median("cache.cached_step_ms", f.cached_step_ms)},
          {"denoise_ms", denoise}};
}

double predicted_step(data::RunRecord& r, const executor::CacheSchedule& s, int steps, double computed_ms,
                      double cached_ms, json& out) {
  if (!has_cache(s)) return computed_ms;
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) ms.push_back(s.computed_at(i) ? computed_ms : cached_ms);
  const double denoise = std::accumulate(ms.begin(), ms.end(), 0.0);
  for (const auto& [name, value] : {std::pair<const char*, double>{"predicted.computed_step_ms", computed_ms},
                                    {"predicted.cached_step_ms", cached_ms}, {"predicted.denoise_ms", denoise}})
    r.metrics.emplace_back(name, value);
  out["cache"] = {{"computed_step_ms", computed_ms}, {"cached_step_ms", cached_ms}, {"denoise_ms", denoise}};
  return executor::percentile_ms(ms, 0.5);
}

json cache_json(const CacheSpec& c, const executor::CacheSchedule& s, int steps) {
  std::vector<bool> computed;
  for (int i = 0; i < steps; ++i) computed.push_back(s.computed_at(i));
  return {{"policy", to_string(c.policy)}, {"first_blocks", c.first_blocks}, {"last_blocks", c.last_blocks},
          {"warmup_steps", c.warmup_steps}, {"every", c.every},    {"computed_steps", s.computed_steps(steps)},
          {"cached_steps", s.cached_steps(steps)}, {"computed", computed}};
}

void print_cache(std::ostream& out, const CacheSpec& c, const executor::CacheSchedule& s, int steps,
                 const json& measured, const json& predicted) {
  if (!has_cache(s)) return;
  const json m = measured.is_null() ? json(nullptr) : measured.value("cache", json(nullptr));
  const json p = predicted.is_null() ? json(nullptr) : predicted.value("cache", json(nullptr));
  // "median 38.39 ms (predicted 34.75, -9.5%)", or what of it there is.
  const auto figure = [&](const char* key) {
    const json got = m.is_null() ? json(nullptr) : m[key];
    std::string text = got.is_number() ? fmt::format("{:.2f} ms", got.get<double>()) : "not measured";
    if (p.is_null()) return text;
    const double want = p[key].get<double>();
    if (!got.is_number() || got.get<double>() <= 0) return text + fmt::format(" (predicted {:.2f})", want);
    return text + fmt::format(" (predicted {:.2f}, {:+.1f}%)", want, 100.0 * (want / got.get<double>() - 1));
  };
  fmt::print(out, "cache {} F{}B{}, warm-up {}, every {}: {} computed steps, median {}; {} cached, median {}; denoising {}\n",
             to_string(c.policy), c.first_blocks, c.last_blocks, c.warmup_steps, c.every, s.computed_steps(steps),
             figure("computed_step_ms"), s.cached_steps(steps), figure("cached_step_ms"), figure("denoise_ms"));
}

}  // namespace cpplan::exec
