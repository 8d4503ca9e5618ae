// Ulysses: all-to-all of Q, K, V (sequence-sharded -> head-sharded), local attention over
// heads/u, all-to-all of the output back. Bytes per layer: 4 * (S/u) * hidden * b * (u-1)/u.
// Ulysses Anything splits unevenly (the longest rank bounds the time), learns the lengths
// with an all-gather, and zero-pads heads to a multiple of u. Text a model keeps whole on every
// rank is not sent: each rank attends its heads of it, and the text output's heads are
// all-gathered (S_txt * hidden * b * (u-1)/u more per layer).
#include "costmodel/cp_cost.h"

namespace cpplan::costmodel {
namespace {
class Ulysses final : public CpCostStrategy {
 public:
  explicit Ulysses(bool anything) : anything_(anything) {}
  CpVariant variant() const override { return anything_ ? CpVariant::kUlyssesAnything : CpVariant::kUlysses; }
  CpCostTraits traits() const override {
    return {.ulysses_ops = true, .ring_ops = false, .anything_ops = anything_, .ring_always_gathers = false};
  }
  AttentionCost attention(const AttentionInput& in) const override {
    const int u = in.ulysses;
    const int padded_heads = anything_ ? (in.heads + u - 1) / u * u : in.heads;
    const double hidden = 1.0 * padded_heads * in.head_dim;
    AttentionCost c;
    c.tokens = cp::local_tokens(in, u);
    c.q_tokens = c.kv_tokens = cp::sequence(in);
    c.heads = static_cast<double>(padded_heads) / u;
    const Bytes a2a = cp::split_tokens(in, u) * hidden * in.elem_bytes;
    c.add({Collective::kAllToAll, CpAxis::kUlysses, a2a, 4});
    c.layout_bytes = cp::all_to_all_layout_traffic(cp::split_tokens(in, u), hidden, in.elem_bytes);
    if (anything_) c.add({Collective::kAllGather, CpAxis::kUlysses, 8.0 * u, 1});
    // Text kept whole stays out of the all-to-alls; its output heads are all-gathered.
    if (cp::whole_text(in)) c.add({Collective::kAllGather, CpAxis::kUlysses, in.text_tokens * hidden * in.elem_bytes, 1});
    c.transient_bytes = 4.0 * c.q_tokens * (hidden / u) * in.elem_bytes;
    return c;
  }

 private:
  bool anything_;
};
}  // namespace
const CpCostStrategy& ulysses_cost() { static const Ulysses s(false); return s; }
const CpCostStrategy& ulysses_anything_cost() { static const Ulysses s(true); return s; }
}  // namespace cpplan::costmodel
