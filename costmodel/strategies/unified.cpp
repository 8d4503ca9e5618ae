// Unified (USP): Ulysses all-to-all over u, Ring over r inside, reverse all-to-all.
// Bytes per layer: 4 * (S/N) * hidden * b * (u-1)/u + 2 * (S/u) * hidden * b * (r-1)/r, N = u*r.
#include "costmodel/cp_cost.h"

namespace cpplan::costmodel {
namespace {
class Unified final : public CpCostStrategy {
 public:
  CpVariant variant() const override { return CpVariant::kUnified; }
  CpCostTraits traits() const override {
    return {.ulysses_ops = true, .ring_ops = true, .anything_ops = false, .ring_always_gathers = false};
  }
  AttentionCost attention(const AttentionInput& in) const override {
    const int u = in.ulysses, r = in.ring;
    const double hidden = 1.0 * in.heads * in.head_dim;
    AttentionCost c;
    c.tokens = cp::local_tokens(in, u * r);
    c.heads = static_cast<double>(in.heads) / u;
    c.calls = r;
    c.q_tokens = cp::sequence(in) / r;
    c.kv_tokens = cp::sequence(in) / r;
    c.add({Collective::kAllToAll, CpAxis::kUlysses, cp::split_tokens(in, u * r) * hidden * in.elem_bytes, 4});
    c.layout_bytes = cp::all_to_all_layout_traffic(cp::split_tokens(in, u * r), hidden, in.elem_bytes);
    const Bytes gathered = cp::split_sequence(in) * (hidden / u) * in.elem_bytes;
    if (in.ring_p2p) c.add({Collective::kSendRecv, CpAxis::kRing, 2.0 * gathered / r, r - 1, true});
    else c.add({Collective::kAllGather, CpAxis::kRing, 2.0 * gathered, 1});
    // Text kept whole: attended once as a local block, its output heads all-gathered over u.
    if (cp::whole_text(in)) c.add({Collective::kAllGather, CpAxis::kUlysses, in.text_tokens * hidden * in.elem_bytes, 1});
    c.merge_bytes = cp::merge_traffic(c.q_tokens, hidden / u, r, in.fp32_merge, in.elem_bytes);
    c.transient_bytes = 3.0 * c.q_tokens * (hidden / u) * in.elem_bytes + (in.ring_p2p ? 4.0 / r : 2.0) * gathered +
                        c.q_tokens * (hidden / u) * (in.fp32_merge ? 4.0 : in.elem_bytes);
    return c;
  }
};
}  // namespace
const CpCostStrategy& unified_cost() { static const Unified s; return s; }
}  // namespace cpplan::costmodel
