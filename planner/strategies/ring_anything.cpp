// Ring Anything (r > 1, ring_anything=True): u must be 1; no divisibility needed; no
// attention mask; the backend must return the LSE.
#include <fmt/format.h>

#include "planner/cp_rules.h"

namespace cpplan::planner {
namespace {
class RingAnythingRules final : public CpRules {
 public:
  CpVariant variant() const override { return CpVariant::kRingAnything; }
  bool candidate(int ring, int ulysses) const override { return ring > 1 && ulysses == 1; }
  void configure(ContextParallelConfig& cp) const override { cp.ring_anything = true; }
  void validate(const Query& q, const ParallelConfig& c, std::vector<std::string>& reasons) const override {
    const int u = c.ulysses(), r = c.ring();
    if (u != 1)
      reasons.push_back(fmt::format(
          "ulysses_degree = {}: ring_anything needs ulysses_degree = 1 (anything modes do not combine with Unified)", u));
    if (r <= 1) {
      reasons.push_back(fmt::format("ring_degree = {}: ring_anything needs ring_degree > 1", r));
      return;
    }
    rules::require_token_per_rank(q, "ring_degree", r, reasons);
    if (q.model->attention_mask)
      reasons.push_back(fmt::format("ring_anything: {} passes an attention mask, which Ring Anything does not support",
                                    q.model->name));
    rules::require_lse_backend(q, c, reasons);
  }
};
}  // namespace
const CpRules& ring_anything_rules() { static const RingAnythingRules r; return r; }
}  // namespace cpplan::planner
