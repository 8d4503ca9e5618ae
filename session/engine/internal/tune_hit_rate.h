#pragma once
// The hit rate of a threshold step cache (core/cache.h) that `cpplan tune` measured on the user's
// own pipeline (python/cpplan_record.py counts the steps its middle block ran in), kept beside the
// database in DB.tune/hit-rates.json, one entry per model and cache (policy, first and last blocks,
// warm-up, cap): a later query with --db DB and no --cache-hit-rate prices that cache with it.
// Unlike the tune's calibration it is the pipeline's, not the machine's: any host reads it.

#include <optional>
#include <string>
#include <vector>

#include "core/cache.h"
#include "core/plan.h"

namespace cpplan::session {

// Measured hit rates go up to --cache-hit-rate's bound: validate_cache wants one below 1.
inline constexpr double kMaxMeasuredHitRate = 0.99;

struct MeasuredHitRate {
  std::string model;
  CacheSpec cache;        // the policy and its parameters it was measured with (hit_rate unused)
  int cached_steps = 0;   // cached steps after the warm-up, over the runs
  int counted_steps = 0;  // steps after the warm-up, over the runs
  int runs = 0;
  std::string host, measured_at;
  std::string path;  // where it is (read) or goes (write)
  // cached_steps / counted_steps, at most kMaxMeasuredHitRate; 0 with no step counted.
  double hit_rate() const;
};

// Whether `s` is a threshold policy (its computed steps follow a hit rate).
bool threshold_cache(const CacheSpec& s);
// DB.tune/hit-rates.json, DB the store's path.
std::string tune_hit_rate_path(const std::string& db_path);
// Writes `m` into m.path (creating the file; its directory exists), replacing the entry of the same
// model and cache; InvalidInput when the file is there but is not one, or cannot be written.
void write_measured_hit_rate(const MeasuredHitRate& m);
// The entry of `model` and cache `s` beside the store `db_path`; none when there is none.
// InvalidInput (naming the file) when the file is there but is not one.
std::optional<MeasuredHitRate> read_measured_hit_rate(const std::string& db_path, const std::string& model,
                                                      const CacheSpec& s);
// Sets the hit rate of q's threshold caches (q.cache and each of q.caches) to the one measured for
// q.model beside `db_path`; returns the entries applied, each policy once.
std::vector<MeasuredHitRate> apply_measured_hit_rates(Query& q, const std::string& db_path);
// ", fbcache hit rate 0.33 measured by cpplan tune over 2 runs (PATH)" per entry; "" for none.
std::string hit_rate_source_text(const std::vector<MeasuredHitRate>& applied);

}  // namespace cpplan::session
