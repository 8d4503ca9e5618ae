// Ring Attention with rotate_method "allgather" (shared/spec/parallelism.md): all-gather the
// concatenated K and V once, loop over the r blocks, merge outputs with their LSE.
// Bytes per layer: 2 * S * hidden * b * (r-1)/r. Text a model keeps whole on every rank is not
// gathered: its K/V joins the loop once, as a local block.
#include "costmodel/cp_cost.h"

namespace cpplan::costmodel {
namespace {
class Ring final : public CpCostStrategy {
 public:
  explicit Ring(bool anything) : anything_(anything) {}
  CpVariant variant() const override { return anything_ ? CpVariant::kRingAnything : CpVariant::kRing; }
  // Ring Anything always all-gathers its padded K/V: it has no p2p form.
  CpCostTraits traits() const override {
    return {.ulysses_ops = false, .ring_ops = true, .anything_ops = anything_, .ring_always_gathers = anything_};
  }
  AttentionCost attention(const AttentionInput& in) const override {
    const int r = in.ring;
    const double hidden = 1.0 * in.heads * in.head_dim;
    AttentionCost c;
    c.tokens = cp::local_tokens(in, r);
    c.q_tokens = c.tokens;
    c.heads = in.heads;
    c.calls = r;
    // Ring Anything pads every rank's K/V to the longest local length before gathering.
    const double gathered = anything_ ? r * cp::split_tokens(in, r) : cp::split_sequence(in);
    c.kv_tokens = cp::sequence(in) / r;  // padding is sliced off before attention
    c.merge_bytes = cp::merge_traffic(c.q_tokens, hidden, r, in.fp32_merge, in.elem_bytes);
    const Bytes acc = in.fp32_merge ? 4.0 : in.elem_bytes;
    const Bytes block = 2.0 * cp::split_tokens(in, r) * hidden * in.elem_bytes;  // one rank's K and V
    if (in.ring_p2p && !traits().ring_always_gathers) {
      // r-1 send/recv steps, each hidden behind the attention of the block in hand; two blocks live.
      c.add({Collective::kSendRecv, CpAxis::kRing, block, r - 1, true});
      c.transient_bytes = 2.0 * block + c.q_tokens * (hidden + in.heads) * acc;
    } else {
      c.add({Collective::kAllGather, CpAxis::kRing, 2.0 * gathered * hidden * in.elem_bytes, 1});
      c.transient_bytes = 2.0 * gathered * hidden * in.elem_bytes + c.q_tokens * (hidden + in.heads) * acc;
    }
    return c;
  }

 private:
  bool anything_;
};
}  // namespace
const CpCostStrategy& ring_cost() { static const Ring s(false); return s; }
const CpCostStrategy& ring_anything_cost() { static const Ring s(true); return s; }
}  // namespace cpplan::costmodel
