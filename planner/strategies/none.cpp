// No context parallelism (ring = ulysses = 1): nothing to split, nothing to check.
#include "planner/cp_rules.h"

namespace cpplan::planner {
namespace {
class NoCpRules final : public CpRules {
 public:
  CpVariant variant() const override { return CpVariant::kNone; }
  CpRulesTraits traits() const override {
    return {.anything_mode = false, .even_form = CpVariant::kNone, .joins_pipefusion = true};
  }
  bool candidate(int ring, int ulysses) const override { return ring == 1 && ulysses == 1; }
  void validate(const Query&, const ParallelConfig&, std::vector<Violation>&) const override {}
};
}  // namespace
const CpRules& no_cp_rules() { static const NoCpRules r; return r; }
}  // namespace cpplan::planner
