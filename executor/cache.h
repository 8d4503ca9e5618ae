#pragma once
// A fixed step cache, as FBCache (ParaAttention) and DBCache "Fn Bn" (cache-dit) run one: on every
// denoising step the first F blocks and the last B blocks run; on a computed step the middle
// blocks run too and the cache keeps the residual they added (the hidden states after them minus
// the hidden states before them: for a joint-attention model [text; image], both streams); on a
// cached step the middle blocks are skipped and that residual is added instead. Here the schedule
// of computed and cached steps is fixed ahead (no residual-difference threshold), so that the
// planner's predicted times of both kinds of step can be checked against measured runs.

#include <ATen/ATen.h>

#include <map>
#include <vector>

#include "core/cache.h"
#include "core/result.h"
#include "executor/attention.h"
#include "executor/model.h"

namespace cpplan::executor {

struct CacheSchedule {
  int first_blocks = 1;  // F: blocks [0, F) run on every step; at least 1
  int last_blocks = 0;   // B: blocks [N - B, N) run on every step; at least 0
  // Per denoising step: true = every block runs (the residual is stored), false = the middle
  // blocks reuse the stored residual. Empty (the default): no cache, the plain forward every step.
  std::vector<bool> computed;
  // Whether any step is cached.
  bool active() const;
  // Whether step `step` (0-based) runs every block: true for every step of an empty schedule.
  bool computed_at(int step) const;
  // Steps of each kind: a step of an empty schedule counts as computed (`steps` of them).
  int computed_steps(int steps) const;
  int cached_steps(int steps) const;
};

// The schedule of `steps` steps: steps [0, warmup_steps) computed, then step i computed when
// (i - warmup_steps + 1) is a multiple of `every` (the every-th step after the warm-up), the
// others cached; F = first_blocks, B = last_blocks. Steps 10, warmup 2, every 3: computed 0, 1,
// 4, 7; cached 2, 3, 5, 6, 8, 9. Refused in one line naming the field, its value and the rule:
// steps, warmup_steps, every and first_blocks at least 1, last_blocks at least 0. warmup_steps
// may exceed steps (every step computed).
Result<CacheSchedule> fixed_cache_schedule(int steps, int warmup_steps, int every, int first_blocks, int last_blocks);

// The schedule `cpplan run` runs for a query's --cache (core/cache.h) of `steps` steps: empty for
// none; fixed_cache_schedule(steps, warm-up, every, F, B) for `fixed`. Refused in one line naming
// the flag, its value and the rule: a policy that decides each step by a threshold (fbcache,
// dbcache, teacache, magcache: which steps it caches is not known ahead) or extrapolates its
// cached steps (taylorseer), and a fixed schedule that caches the first step (warm-up 0), runs no
// first block (F 0) or sets a cap on cached steps in a row (the schedule sets them).
Result<CacheSchedule> run_schedule(const CacheSpec& spec, int steps);

// Whether `s` runs on a model of `blocks` blocks for `steps` steps: an empty schedule always;
// else F >= 1, B >= 0, F + B < blocks (at least one middle block), one entry per step, and the
// first step computed (nothing is cached before it). The error names the field, value and rule.
Result<bool> validate(const CacheSchedule& s, int steps, int blocks);

// The forward passes of a step that keep residuals of their own: true CFG's conditional and
// unconditional passes apart (cfg_degree 2: each CFG group runs one), both batched together, or
// the one pass of a model without true CFG (kCond).
enum class CachePass { kCond, kUncond, kBoth };

// One rank's cache: the residual of its own share of the sequence (under context parallelism
// every rank caches its shard; the F and B blocks still run their collectives, the skipped middle
// blocks run none), one per pass kind.
class StepCache {
 public:
  // F = first_blocks, B = last_blocks of a model of `blocks` blocks; validate() passed.
  StepCache(int first_blocks, int last_blocks, int blocks);
  // The velocity of one forward pass, as DitModel::forward's: blocks [0, F), then the middle
  // blocks (`computed`: the residual of `pass` stored) or the stored residual of `pass` added,
  // then [N - B, N), the timestep's conditioning computed once for the three. A cached pass needs
  // a residual stored by a computed pass of its kind.
  at::Tensor forward(const DitModel& model, const ForwardInputs& in, AttentionContext& attention, CachePass pass,
                     bool computed);
  // Drops every residual (a two-transformer pipeline's switch: the next model's residuals differ).
  void clear() { residuals_.clear(); }
  // Whether a residual of `pass` is stored.
  bool holds(CachePass pass) const { return residuals_.count(pass) > 0; }

 private:
  BlockRange first_, middle_, last_;
  std::map<CachePass, at::Tensor> residuals_;
};

}  // namespace cpplan::executor
