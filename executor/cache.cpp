#include "executor/cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace cpplan::executor {

bool CacheSchedule::active() const { return std::find(computed.begin(), computed.end(), false) != computed.end(); }

bool CacheSchedule::computed_at(int step) const { return computed.empty() || computed.at(step); }

int CacheSchedule::computed_steps(int steps) const {
  int n = 0;
  for (int i = 0; i < steps; ++i) n += computed_at(i) ? 1 : 0;
  return n;
}

int CacheSchedule::cached_steps(int steps) const { return steps - computed_steps(steps); }

namespace {

// "cache <field> = <value>: must be at least <least>", or nothing when value >= least.
Result<bool> at_least(const char* field, int value, int least) {
  if (value >= least) return true;
  return Error{fmt::format("cache {} = {}: must be at least {}", field, value, least)};
}

}  // namespace

Result<CacheSchedule> fixed_cache_schedule(int steps, int warmup_steps, int every, int first_blocks, int last_blocks) {
  for (const auto& check : {at_least("steps", steps, 1), at_least("warmup_steps", warmup_steps, 1),
                            at_least("every", every, 1), at_least("first_blocks", first_blocks, 1),
                            at_least("last_blocks", last_blocks, 0)})
    if (!check) return check.error();
  CacheSchedule s;
  s.first_blocks = first_blocks;
  s.last_blocks = last_blocks;
  for (int i = 0; i < steps; ++i) s.computed.push_back(i < warmup_steps || (i - warmup_steps + 1) % every == 0);
  return s;
}

Result<CacheSchedule> run_schedule(const CacheSpec& spec, int steps) {
  const std::string_view policy = to_string(spec.policy);
  if (spec.policy == CachePolicy::kNone) return CacheSchedule{};
  if (const std::string_view why = executor_refusal(spec.policy); !why.empty())
    return Error{fmt::format("--cache = {}: cpplan run runs a fixed schedule only (--cache fixed); {} {}", policy,
                             policy, why)};
  if (spec.warmup_steps < 1)
    return Error{fmt::format("--cache-warmup = {}: must be at least 1 for cpplan run (the first step is computed: "
                             "nothing is cached before it)",
                             spec.warmup_steps)};
  if (spec.first_blocks < 1)
    return Error{fmt::format("--cache-fn = {}: must be at least 1 for cpplan run (a cached step runs the first block)",
                             spec.first_blocks)};
  if (spec.max_continuous_cached != -1)
    return Error{fmt::format("--cache-max-cached = {}: --cache fixed caches the steps its schedule says "
                             "(--cache-warmup, --cache-every); it takes no cap",
                             spec.max_continuous_cached)};
  return fixed_cache_schedule(steps, spec.warmup_steps, spec.every, spec.first_blocks, spec.last_blocks);
}

Result<bool> validate(const CacheSchedule& s, int steps, int blocks) {
  if (s.computed.empty()) return true;
  for (const auto& check : {at_least("first_blocks", s.first_blocks, 1), at_least("last_blocks", s.last_blocks, 0)})
    if (!check) return check;
  if (s.first_blocks + s.last_blocks >= blocks)
    return Error{fmt::format("cache first_blocks + last_blocks = {} + {}: must leave at least one middle block of "
                             "the model's {}",
                             s.first_blocks, s.last_blocks, blocks)};
  if (static_cast<int>(s.computed.size()) != steps)
    return Error{fmt::format("cache computed = {} steps: must give one per denoising step (steps = {})",
                             s.computed.size(), steps)};
  if (!s.computed[0])
    return Error{"cache computed[0] = false: the first step must be computed (nothing is cached before it)"};
  return true;
}

StepCache::StepCache(int first_blocks, int last_blocks, int blocks)
    : first_{0, first_blocks},
      middle_{first_blocks, blocks - first_blocks - last_blocks},
      last_{blocks - last_blocks, last_blocks} {}

at::Tensor StepCache::forward(const DitModel& model, const ForwardInputs& inputs, AttentionContext& attention,
                              CachePass pass, bool computed) {
  const ForwardInputs in = model.with_conditioning(inputs);  // one conditioning for the three pieces
  at::Tensor hidden = model.run_span(model.embed(in), in, attention, first_);
  if (computed) {
    const at::Tensor after = model.run_span(hidden, in, attention, middle_);
    residuals_[pass] = after - hidden;
    hidden = after;
  } else {
    const auto stored = residuals_.find(pass);
    if (stored == residuals_.end())
      throw std::logic_error("step cache: a cached pass before any computed pass of its kind");
    hidden = hidden + stored->second;
  }
  if (last_.count > 0) hidden = model.run_span(hidden, in, attention, last_);
  return model.project_out(hidden, in);
}

}  // namespace cpplan::executor
