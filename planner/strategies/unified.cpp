// Unified / USP (r > 1 and u > 1, so >= 4 devices): lengths divisible by r*u (the sequence is
// split over the flattened CP mesh), heads per TP rank divisible by u, an LSE backend.
#include <fmt/format.h>

#include "planner/cp_rules.h"

namespace cpplan::planner {
namespace {
class UnifiedRules final : public CpRules {
 public:
  CpVariant variant() const override { return CpVariant::kUnified; }
  CpRulesTraits traits() const override {
    return {.anything_mode = false, .even_form = CpVariant::kUnified, .joins_pipefusion = true};
  }
  bool candidate(int ring, int ulysses) const override { return ring > 1 && ulysses > 1; }
  void validate(const Query& q, const ParallelConfig& c, std::vector<Violation>& out) const override {
    // In long long: `cpplan check` passes degrees up to 2^17 each before the world size is checked.
    rules::require_even_split(q, "ring_degree x ulysses_degree", 1LL * c.ring() * c.ulysses(), out);
    rules::require_heads_divisible(q, c, out);
  }
};
}  // namespace
const CpRules& unified_rules() { static const UnifiedRules r; return r; }
}  // namespace cpplan::planner
