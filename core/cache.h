#pragma once
// Step and block caches as a plan axis (--cache): which denoising steps a framework computes in full
// and which reuse cached work, as each policy the frameworks ship decides it
// (shared/reference/frameworks-runtime.md §1.5, 2.5, 3.5, 4.5, 5.5). A cached step still runs the
// first F blocks (and the last B), whose output decides (threshold policies) or a fixed schedule
// says; the middle blocks' residual is reused. TeaCache decides on the first block's modulated
// input alone (F = 0). TaylorSeer computes every N-th step and extrapolates the others.
//
// The computed-step count is exact for fixed schedules (TaylorSeer's interval, a fixed schedule);
// for threshold policies it is the warm-up plus the post-warm-up steps the hit rate leaves (a
// stated default the user sets with --cache-hit-rate), bounded by the policy's cap on consecutive
// cached steps. The cost model prices a cached step (costmodel/cost_model.cpp, add_cached_step).

#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace cpplan {

enum class CachePolicy { kNone, kFbcache, kDbcache, kTeacache, kTaylorseer, kMagcache, kFixed };
std::string_view to_string(CachePolicy p);  // "none", "fbcache", "dbcache", "teacache", "taylorseer", "magcache", "fixed"
std::optional<CachePolicy> cache_policy_from_string(std::string_view name);

struct CacheSpec {
  CachePolicy policy = CachePolicy::kNone;
  int first_blocks = 0;            // F: blocks run on every step from the first (0 for TeaCache)
  int last_blocks = 0;             // B: blocks run on every step from the last
  int warmup_steps = 0;            // computed before any step is cached
  int every = 0;                   // fixed schedules: every N-th step after the warm-up computed; 0: threshold policy
  int max_continuous_cached = -1;  // threshold policies: at most this many cached steps in a row; -1: no cap
  double hit_rate = 0;             // threshold policies: the share of post-warm-up steps cached
  // false: the framework's hook attaches to none of the model's modules (diffusers' TaylorSeer on
  // Wan's attn1/attn2): every step computed and nothing stored, whatever the schedule says.
  bool hooked = true;
  bool active() const { return policy != CachePolicy::kNone; }
  bool fixed_schedule() const { return every > 0; }
  bool operator==(const CacheSpec&) const = default;
};

// The policy's defaults as the framework that ships it sets them (frameworks-runtime.md): FBCache
// F1B0 and DBCache F8B0 with cache-dit's 8 warm-up steps, TaylorSeer's interval 5, ... The hit rate of
// a threshold policy is kDefaultHitRate until the user or a tuned run says otherwise.
inline constexpr double kDefaultHitRate = 0.5;
CacheSpec cache_defaults(CachePolicy p);

// Why policy `p` has no use for the cache parameter `flag` ("--cache-fn", "--cache-bn",
// "--cache-every", "--cache-hit-rate"; --cache-warmup and --cache-max-cached apply to every policy),
// as the phrase that follows "--cache <policy>"; empty when it takes it.
std::string_view parameter_refusal(CachePolicy p, std::string_view flag);

// Why cpplan's executor (cpplan run, --framework cpplan) does not run policy `p`, as the phrase that
// follows the policy's name: it runs the fixed schedule only, whose cached steps are known ahead
// (executor/cache.h); empty for fixed and none. The one rule the run, the planner's --framework
// cpplan and a plan row's run command read.
std::string_view executor_refusal(CachePolicy p);

// Checks `s` for a model of `blocks` blocks and `steps` steps; the error names the field, its value
// and the rule (F + B must leave a middle block; the hit rate in [0, 1); ...).
Result<bool> validate_cache(const CacheSpec& s, int blocks, int steps);

// Steps of `steps` that run every block: the warm-up, then (fixed) every N-th step after it (the
// last of each interval; TaylorSeer: the first after the warm-up, then every N-th, as diffusers), or
// (threshold) the steps the hit rate leaves, at least one in every max_continuous_cached + 1.
int computed_steps(const CacheSpec& s, int steps);
inline int cached_steps(const CacheSpec& s, int steps) { return steps - computed_steps(s, steps); }

}  // namespace cpplan
