#include "executor/temporal.h"

#include <stdexcept>

namespace cpplan::executor {

namespace {

// [B, H, S, hd] (S = frames x positions, frame-major) -> [B, H x groups, tokens per group, hd].
at::Tensor to_groups(const at::Tensor& x, int64_t frames, TokenGroups groups) {
  const int64_t b = x.size(0), h = x.size(1), p = x.size(2) / frames, d = x.size(3);
  const at::Tensor grid = x.reshape({b, h, frames, p, d});
  if (groups == TokenGroups::kFrame) return grid.reshape({b, h * frames, p, d});
  return grid.transpose(2, 3).reshape({b, h * p, frames, d});
}

// The inverse of to_groups for a result of `heads` heads.
at::Tensor from_groups(const at::Tensor& y, int64_t heads, int64_t frames, TokenGroups groups) {
  const int64_t b = y.size(0), d = y.size(3), s = y.size(1) * y.size(2) / heads;
  if (groups == TokenGroups::kFrame) return y.reshape({b, heads, s, d});
  return y.reshape({b, heads, s / frames, frames, d}).transpose(2, 3).reshape({b, heads, s, d});
}

void check_groupable(const AttentionOp& op, const AttentionContext& ctx) {
  if (ctx.patch_kv)
    throw std::invalid_argument("frame-grouped attention (temporal blocks): PipeFusion's patches split the groups");
  const CpVariant v = op.variant();
  if (v != CpVariant::kNone && v != CpVariant::kUlysses)
    throw std::invalid_argument("frame-grouped attention (temporal blocks) runs on one rank or under Ulysses only");
  for (const int64_t n : ctx.image_lengths)
    if (n != ctx.image_lengths.front())
      throw std::invalid_argument("frame-grouped attention under Ulysses needs equal token shares");
}

}  // namespace

at::Tensor grouped_attention_local(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t frames,
                                   TokenGroups groups) {
  const at::Tensor o = attention_local(to_groups(q, frames, groups), to_groups(k, frames, groups),
                                       to_groups(v, frames, groups));
  return from_groups(o, q.size(1), frames, groups);
}

at::Tensor grouped_self_attention(const AttentionOp& op, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  AttentionContext& ctx, TokenGroups groups) {
  if (groups == TokenGroups::kAll) return self_attention(op, q, k, v, ctx);
  check_groupable(op, ctx);
  if (op.variant() == CpVariant::kNone) return grouped_attention_local(q, k, v, ctx.frames, groups);
  Comm& g = ctx.mesh->ulysses();
  const at::Tensor o = grouped_attention_local(sequence_to_heads(q, g), sequence_to_heads(k, g),
                                               sequence_to_heads(v, g), ctx.frames, groups);
  return heads_to_sequence(o, g);
}

}  // namespace cpplan::executor
