// Ulysses Anything: uneven all-to-all with per-rank lengths (learned by an all-gather), heads
// zero-padded to a multiple of u; zero heads attend to zero values and are dropped at the end.
#include "executor/attention.h"

namespace cpplan::executor {
namespace {

struct Layout {
  int64_t u, b, heads, padded, d, mine;
  std::vector<int64_t> lengths;
};

at::Tensor to_heads(const at::Tensor& x, Comm& g, const Layout& l) {
  at::Tensor p = x;
  if (l.padded > l.heads) p = at::cat({x, at::zeros({l.b, l.padded - l.heads, l.mine, l.d}, x.options())}, 1);
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
    Layout l{g.size(), q.size(0), q.size(1), 0, q.size(3), q.size(2), {}};
    l.padded = (l.heads + l.u - 1) / l.u * l.u;
    // Every rank learns the others' lengths, as the reference does.
    const at::Tensor mine = at::full({1}, l.mine, at::kLong);
    const at::Tensor all = g.all_gather_cat(mine, 0);
    for (int64_t i = 0; i < l.u; ++i) l.lengths.push_back(all[i].item<int64_t>());
    const at::Tensor o = attention_local(to_heads(q, g, l), to_heads(k, g, l), to_heads(v, g, l));
    return to_sequence(o, g, l);
  }
};
}  // namespace
const AttentionOp& ulysses_anything_attention_op() { static const UlyssesAnythingAttention op; return op; }
}  // namespace cpplan::executor
