// Ulysses Anything (u > 1, ulysses_anything=True): r must be 1; no divisibility needed; heads
// are zero-padded to a multiple of u with the limit pad < (heads + pad) / u.
#include <fmt/format.h>

#include "planner/cp_rules.h"

namespace cpplan::planner {
namespace {
class UlyssesAnythingRules final : public CpRules {
 public:
  CpVariant variant() const override { return CpVariant::kUlyssesAnything; }
  CpRulesTraits traits() const override {
    return {.anything_mode = true, .even_form = CpVariant::kUlysses, .joins_pipefusion = false};
  }
  bool candidate(int ring, int ulysses) const override { return ulysses > 1 && ring == 1; }
  void configure(ContextParallelConfig& cp) const override { cp.ulysses_anything = true; }
  void validate(const Query& q, const ParallelConfig& c, std::vector<Violation>& out) const override {
    const int u = c.ulysses(), r = c.ring();
    if (r != 1)
      out.push_back({RuleId::kAnythingModeNotUnified, "ring_degree", std::to_string(r),
                     "ulysses_anything needs ring_degree = 1 (anything modes do not combine with Unified)",
                     Lever::kVariant});
    if (u <= 1) {
      out.push_back({RuleId::kAnythingModeNeedsDegree, "ulysses_degree", std::to_string(u),
                     "ulysses_anything needs ulysses_degree > 1", Lever::kVariant});
      return;
    }
    rules::require_token_per_rank(q, "ulysses_degree", u, out);
    const int t = c.tp();
    if (t < 1 || q.model->heads % t != 0) return;  // the TP rule reports it
    const int heads = q.model->heads / t;
    const int pad = (u - heads % u) % u;
    if (1LL * pad * u >= heads + pad)  // u reaches 2^17: pad * u overflows an int
      out.push_back({RuleId::kUlyssesAnythingHeadPadding, "ulysses_degree", std::to_string(u),
                     fmt::format("ulysses_anything pads {} heads{} to {}, and the padding {} must be less than one "
                                 "rank's share {} / {} = {}",
                                 heads, t > 1 ? " per TP rank" : "", heads + pad, pad, heads + pad, u, (heads + pad) / u),
                     Lever::kModelHeads});
  }
};
}  // namespace
const CpRules& ulysses_anything_rules() { static const UlyssesAnythingRules r; return r; }
}  // namespace cpplan::planner
