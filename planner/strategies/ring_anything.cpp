// Ring Anything (r > 1, ring_anything=True): u must be 1; no divisibility needed; no
// attention mask; the backend must return the LSE.
#include <fmt/format.h>

#include "planner/cp_rules.h"

namespace cpplan::planner {
namespace {
class RingAnythingRules final : public CpRules {
 public:
  CpVariant variant() const override { return CpVariant::kRingAnything; }
  CpRulesTraits traits() const override {
    return {.anything_mode = true, .even_form = CpVariant::kRing, .joins_pipefusion = false};
  }
  bool candidate(int ring, int ulysses) const override { return ring > 1 && ulysses == 1; }
  void configure(ContextParallelConfig& cp) const override { cp.ring_anything = true; }
  void validate(const Query& q, const ParallelConfig& c, std::vector<Violation>& out) const override {
    const int u = c.ulysses(), r = c.ring();
    if (u != 1)
      out.push_back({RuleId::kAnythingModeNotUnified, "ulysses_degree", std::to_string(u),
                     "ring_anything needs ulysses_degree = 1 (anything modes do not combine with Unified)",
                     Lever::kVariant});
    if (r <= 1) {
      out.push_back({RuleId::kAnythingModeNeedsDegree, "ring_degree", std::to_string(r),
                     "ring_anything needs ring_degree > 1", Lever::kVariant});
      return;
    }
    rules::require_token_per_rank(q, "ring_degree", r, out);
    if (q.model->attention_mask)
      out.push_back({RuleId::kRingAnythingNoMask, "ring_anything", "",
                     fmt::format("{} passes an attention mask, which Ring Anything does not support", q.model->name),
                     Lever::kVariant});
  }
};
}  // namespace
const CpRules& ring_anything_rules() { static const RingAnythingRules r; return r; }
}  // namespace cpplan::planner
