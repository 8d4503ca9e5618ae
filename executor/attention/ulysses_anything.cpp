// Ulysses Anything: uneven all-to-all with per-rank lengths (learned by an all-gather), heads
// zero-padded to a multiple of u; zero heads attend to zero values and are dropped at the end.
// Text a model keeps whole stays out of the all-to-alls, as in Ulysses.
#include "executor/attention.h"

namespace cpplan::executor {
namespace {

struct Layout {
  int64_t u, b, heads, padded, d, mine;
  std::vector<int64_t> lengths;
};

at::Tensor pad_heads(const at::Tensor& x, const Layout& l) {
  if (l.padded == l.heads) return x;
  return at::cat({x, at::zeros({l.b, l.padded - l.heads, x.size(2), l.d}, x.options())}, 1);
}

at::Tensor to_heads(const at::Tensor& x, Comm& g, const Layout& l) {
  const at::Tensor p = pad_heads(x, l);
  const int64_t hu = l.padded / l.u;
  const at::Tensor send = p.reshape({l.b, l.u, hu, l.mine, l.d}).permute({1, 0, 2, 3, 4}).contiguous().view(-1);
  std::vector<int64_t> send_counts(l.u, l.b * hu * l.mine * l.d), recv_counts;
  for (int64_t len : l.lengths) recv_counts.push_back(l.b * hu * len * l.d);
  const at::Tensor recv = g.all_to_all_flat(send, send_counts, recv_counts);
  std::vector<at::Tensor> parts;
  int64_t offset = 0;
  for (int64_t i = 0; i < l.u; ++i) {
    parts.push_back(recv.narrow(0, offset, recv_counts[i]).view({l.b, hu, l.lengths[i], l.d}));
    offset += recv_counts[i];
  }
  return at::cat(parts, 2);
}

at::Tensor to_sequence(const at::Tensor& y, Comm& g, const Layout& l) {
  const int64_t hu = l.padded / l.u;
  std::vector<at::Tensor> pieces;
  std::vector<int64_t> send_counts, recv_counts(l.u, l.b * hu * l.mine * l.d);
  int64_t offset = 0;
  for (int64_t i = 0; i < l.u; ++i) {
    pieces.push_back(y.narrow(2, offset, l.lengths[i]).contiguous().view(-1));
    send_counts.push_back(pieces.back().numel());
    offset += l.lengths[i];
  }
  const at::Tensor recv = g.all_to_all_flat(at::cat(pieces), send_counts, recv_counts);
  const at::Tensor heads = recv.view({l.u, l.b, hu, l.mine, l.d}).permute({1, 0, 2, 3, 4}).reshape({l.b, l.padded, l.mine, l.d});
  return heads.narrow(1, 0, l.heads);
}

class UlyssesAnythingAttention final : public AttentionOp {
 public:
  CpVariant variant() const override { return CpVariant::kUlyssesAnything; }
  at::Tensor forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     AttentionContext& ctx) const override {
    Comm& g = ctx.mesh->ulysses();
    const int64_t t = ctx.text_tokens;
    Layout l{g.size(), q.size(0), q.size(1), 0, q.size(3), q.size(2) - t, {}};
    l.padded = (l.heads + l.u - 1) / l.u * l.u;
    // Every rank learns the others' lengths, as the reference does; the length travels on the
    // group's device (NCCL takes no host tensor).
    const at::Tensor mine = at::full({1}, l.mine, at::TensorOptions(at::kLong).device(q.device()));
    const at::Tensor all = g.all_gather_cat(mine, 0).cpu();
    for (int64_t i = 0; i < l.u; ++i) l.lengths.push_back(all[i].item<int64_t>());
    auto gather = [&](const at::Tensor& x) {
      const at::Tensor split = to_heads(split_part(x, t), g, l);
      return t > 0 ? at::cat({head_slice(pad_heads(text_part(x, t), l), g.rank(), g.size()), split}, 2) : split;
    };
    const int first = ctx.mesh->coords().ring * g.size();
    const at::Tensor o = attention_of_kind(ctx, gather(q), gather(k), gather(v), ctx.keys_valid(first, g.size()));
    return with_whole_text(o, t, g, l.heads, to_sequence(split_part(o, t), g, l));
  }
};
}  // namespace
const AttentionOp& ulysses_anything_attention_op() { static const UlyssesAnythingAttention op; return op; }
}  // namespace cpplan::executor
