// Ring (r > 1, u = 1): every split length divisible by r; the backend must return the LSE.
#include "planner/cp_rules.h"

namespace cpplan::planner {
namespace {
class RingRules final : public CpRules {
 public:
  CpVariant variant() const override { return CpVariant::kRing; }
  CpRulesTraits traits() const override {
    return {.anything_mode = false, .even_form = CpVariant::kRing, .joins_pipefusion = true};
  }
  bool candidate(int ring, int ulysses) const override { return ring > 1 && ulysses == 1; }
  void validate(const Query& q, const ParallelConfig& c, std::vector<Violation>& out) const override {
    rules::require_even_split(q, "ring_degree", c.ring(), out);
  }
};
}  // namespace
const CpRules& ring_rules() { static const RingRules r; return r; }
}  // namespace cpplan::planner
