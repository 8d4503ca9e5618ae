#pragma once
// A run with a step cache (`cpplan run --cache fixed`): its schedule and figures in the store's
// record (metrics, no schema change; the run key names the schedule), in its JSON and its line of
// text. The ranks follow executor::CacheSchedule; the query's CacheSpec holds its parameters.

#include <nlohmann/json.hpp>

#include <iosfwd>

#include "core/cache.h"
#include "data/store.h"
#include "executor/cache.h"
#include "executor/runner.h"

namespace cpplan::exec {

// Whether the run follows a step-cache schedule (every step computed or not).
inline bool has_cache(const executor::CacheSchedule& s) { return !s.computed.empty(); }

// The schedule `s` of `steps` steps (parameters `c`) into the record: its parameters and steps of
// each kind as metrics (session::kStepCacheMetric, the cached steps, marks the run: calibrate
// leaves it out), and in the run key, so that a cached run is never taken for the uncached run of
// its plan (a sweep resumes by key).
void record_cache_schedule(data::RunRecord& r, const CacheSpec& c, const executor::CacheSchedule& s, int steps);

// A cached run's measured steps into the record's metrics: the median computed and cached step
// (ms; none without steps of the kind) and the whole denoising, every timed step summed; their JSON.
nlohmann::json measured_cache(data::RunRecord& r, const executor::RunFigures& f);

// The predicted step a record keeps (ms): `computed_ms` without a cache; with one, the median of
// the predicted steps in the schedule's order (the measured step is the measured steps' median),
// the computed and cached step and the whole denoising into the metrics and out["cache"].
double predicted_step(data::RunRecord& r, const executor::CacheSchedule& s, int steps, double computed_ms,
                      double cached_ms, nlohmann::json& out);

// The schedule a cached run followed: its parameters and every step, computed or not.
nlohmann::json cache_json(const CacheSpec& c, const executor::CacheSchedule& s, int steps);

// Its line of text, from the run's measured and predicted JSON (null when absent): "cache fixed
// F1B0, warm-up 2, every 2: 16 computed steps, median 38.39 ms (predicted 34.75, -9.5%); 14
// cached, median 10.56 ms (predicted ...); denoising 762.92 ms (predicted ...)". Nothing
// without a cache.
void print_cache(std::ostream& out, const CacheSpec& c, const executor::CacheSchedule& s, int steps,
                 const nlohmann::json& measured, const nlohmann::json& predicted);

}  // namespace cpplan::exec
