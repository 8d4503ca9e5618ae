#include "core/cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace cpplan {

namespace {
constexpr std::string_view kNames[] = {"none", "fbcache", "dbcache", "teacache", "taylorseer", "magcache", "fixed"};
}  // namespace

std::string_view to_string(CachePolicy p) { return kNames[static_cast<int>(p)]; }

std::optional<CachePolicy> cache_policy_from_string(std::string_view name) {
  for (int i = 0; i < static_cast<int>(std::size(kNames)); ++i)
    if (kNames[i] == name) return static_cast<CachePolicy>(i);
  return std::nullopt;
}

CacheSpec cache_defaults(CachePolicy p) {
  CacheSpec s;
  s.policy = p;
  switch (p) {
    case CachePolicy::kNone: break;
    case CachePolicy::kFbcache:  // DBCache with F1B0 (cache-dit); SGLang's and vLLM-Omni's cache-dit defaults
      s.first_blocks = 1, s.warmup_steps = 4, s.max_continuous_cached = 3, s.hit_rate = kDefaultHitRate;
      break;
    case CachePolicy::kDbcache:  // cache-dit DBCacheConfig: Fn 8, Bn 0, max_warmup_steps 8, no cap
      s.first_blocks = 8, s.warmup_steps = 8, s.hit_rate = kDefaultHitRate;
      break;
    case CachePolicy::kTeacache:  // decides on the first block's modulated input: no block on a cached step
      s.hit_rate = kDefaultHitRate;
      break;
    case CachePolicy::kTaylorseer:  // diffusers TaylorSeerCacheConfig: disable_cache_before_step 3, cache_interval 5
      s.first_blocks = 0, s.warmup_steps = 3, s.every = 5;
      break;
    case CachePolicy::kMagcache:  // diffusers MagCacheConfig: threshold decides, no block on a cached step,
      s.hit_rate = kDefaultHitRate, s.max_continuous_cached = 3;  // at most max_skip_steps 3 in a row
      break;
    case CachePolicy::kFixed:  // the executor's fixed schedule (executor/cache.h): F1B0, warm-up 1, every 2nd
      s.first_blocks = 1, s.warmup_steps = 1, s.every = 2;
      break;
  }
  return s;
}

std::string_view parameter_refusal(CachePolicy p, std::string_view flag) {
  if (p == CachePolicy::kNone) return "runs no step cache";
  const bool decides_on_input = p == CachePolicy::kTeacache || p == CachePolicy::kMagcache;
  const bool fbcache = p == CachePolicy::kFbcache;
  const bool fixed = cache_defaults(p).fixed_schedule();
  if (flag == "--cache-fn")
    return decides_on_input ? "decides on the first block's input; it runs no block on a cached step"
           : fbcache        ? "runs the first block alone (F1B0; dbcache sets others)"
                            : "";
  if (flag == "--cache-bn") return decides_on_input || fbcache ? "runs no last block on a cached step" : "";
  if (flag == "--cache-every") return fixed ? "" : "decides by a threshold (set --cache-hit-rate)";
  if (flag == "--cache-hit-rate") return fixed ? "computes a fixed schedule (set --cache-every)" : "";
  return "";
}

std::string_view executor_refusal(CachePolicy p) {
  switch (p) {
    case CachePolicy::kNone:
    case CachePolicy::kFixed: return "";
    case CachePolicy::kTaylorseer: return "extrapolates its cached steps where the executor reuses the middle blocks' residual";
    case CachePolicy::kFbcache:
    case CachePolicy::kDbcache:
    case CachePolicy::kTeacache:
    case CachePolicy::kMagcache: break;
  }
  return "decides each step by a threshold, so which steps it caches is not known ahead";
}

Result<bool> validate_cache(const CacheSpec& s, int blocks, int steps) {
  if (!s.active()) return true;
  if (s.first_blocks < 0) return Error{fmt::format("--cache-fn = {}: must be at least 0", s.first_blocks)};
  if (s.last_blocks < 0) return Error{fmt::format("--cache-bn = {}: must be at least 0", s.last_blocks)};
  if (s.first_blocks + s.last_blocks >= blocks)
    return Error{fmt::format("--cache-fn + --cache-bn = {} + {}: must leave at least one of the model's {} blocks to cache",
                             s.first_blocks, s.last_blocks, blocks)};
  if (s.warmup_steps < 0 || s.warmup_steps > steps)
    return Error{fmt::format("--cache-warmup = {}: must be from 0 to the {} steps", s.warmup_steps, steps)};
  if (s.every < 0) return Error{fmt::format("--cache-every = {}: must be at least 1 (or 0: a threshold policy)", s.every)};
  if (!s.fixed_schedule() && !(s.hit_rate >= 0 && s.hit_rate < 1))
    return Error{fmt::format("--cache-hit-rate = {}: must be at least 0 and below 1", s.hit_rate)};
  if (s.max_continuous_cached == 0 || s.max_continuous_cached < -1)
    return Error{fmt::format("--cache-max-cached = {}: must be at least 1 (or -1: no cap)", s.max_continuous_cached)};
  return true;
}

namespace {
// A fixed schedule's computed steps among the `rest` after the warm-up W. cpplan's executor (--cache
// fixed) computes step i when (i - W + 1) % every == 0, the last of each interval; diffusers'
// TaylorSeer when (i - W - 1) % every == 0 (hooks/taylorseer_cache.py _measure_should_compute):
// the step after the warm-up, then every N-th.
int computed_after_warmup(const CacheSpec& s, int rest) {
  if (s.policy != CachePolicy::kTaylorseer) return rest / s.every;
  if (s.every == 1) return rest;
  return rest >= 2 ? (rest - 2) / s.every + 1 : 0;
}
}  // namespace

int computed_steps(const CacheSpec& s, int steps) {
  if (!s.active() || !s.hooked) return steps;
  const int warm = std::min(s.warmup_steps, steps), rest = steps - warm;
  if (s.fixed_schedule()) return warm + computed_after_warmup(s, rest);
  int cached = static_cast<int>(std::floor(s.hit_rate * rest + 1e-9));
  if (s.max_continuous_cached > 0)  // at least one computed step after every run of max_continuous_cached
    cached = std::min(cached, rest - rest / (s.max_continuous_cached + 1));
  return steps - cached;
}

}  // namespace cpplan
