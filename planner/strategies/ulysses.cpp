// Ulysses (u > 1, r = 1): every split length divisible by u, heads per TP rank divisible by u.
#include "planner/cp_rules.h"

namespace cpplan::planner {
namespace {
class UlyssesRules final : public CpRules {
 public:
  CpVariant variant() const override { return CpVariant::kUlysses; }
  CpRulesTraits traits() const override {
    return {.anything_mode = false, .even_form = CpVariant::kUlysses, .joins_pipefusion = true};
  }
  bool candidate(int ring, int ulysses) const override { return ulysses > 1 && ring == 1; }
  void validate(const Query& q, const ParallelConfig& c, std::vector<Violation>& out) const override {
    rules::require_even_split(q, "ulysses_degree", c.ulysses(), out);
    rules::require_heads_divisible(q, c, out);
  }
};
}  // namespace
const CpRules& ulysses_rules() { static const UlyssesRules r; return r; }
}  // namespace cpplan::planner
