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
  const bool ringed = (v == CpVariant::kRing || v == CpVariant::kUnified) && ctx.frames_whole;
  if (v != CpVariant::kNone && v != CpVariant::kUlysses && !ringed)
    throw std::invalid_argument("frame-grouped attention (temporal blocks) runs on one rank, under Ulysses, or under "
                                "Ring (Unified) with every frame of a rank's positions on it");
  for (const int64_t n : ctx.image_lengths)
    if (n != ctx.image_lengths.front())
      throw std::invalid_argument("frame-grouped attention under Ulysses needs equal token shares");
}

// The u group's tokens after the all-to-all, [u ranks][frames][positions] -> frame-major over
// the group's positions [frames][u ranks x positions] (`to_frames`), or back.
at::Tensor regroup_frames(const at::Tensor& x, int64_t u, int64_t frames, bool to_frames) {
  const int64_t b = x.size(0), h = x.size(1), p = x.size(2) / (u * frames), d = x.size(3);
  if (to_frames) return x.reshape({b, h, u, frames, p, d}).transpose(2, 3).reshape({b, h, -1, d});
  return x.reshape({b, h, frames, u, p, d}).transpose(2, 3).reshape({b, h, -1, d});
}

// Ring over spatial tokens (xDiT's Latte): every rank holds every frame of its positions, so the
// temporal groups (a position's frames) are local and the spatial ones (a frame's positions) are
// ring attention of each frame's queries over the ring ranks' shares of that frame. Under
// Unified the u group's all-to-all comes first (heads / u, the group's positions). K/V blocks
// hold the same tokens as plain Ring's: the same bytes.
at::Tensor ringed_groups(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, AttentionContext& ctx,
                         TokenGroups groups) {
  Comm& ring = ctx.mesh->ring();
  const bool unified = ctx.mesh->coords().ulysses_size > 1;
  Comm* u = unified ? &ctx.mesh->ulysses() : nullptr;
  const int64_t frames = ctx.frames, width = unified ? u->size() : 1;
  auto in = [&](const at::Tensor& x) {
    return unified ? regroup_frames(sequence_to_heads(x, *u), width, frames, true) : x;
  };
  const at::Tensor qh = in(q), kh = in(k), vh = in(v);
  at::Tensor o;
  if (groups == TokenGroups::kPosition) {
    o = grouped_attention_local(qh, kh, vh, frames, groups);
  } else {
    std::vector<int64_t> positions;  // each ring rank's positions (its u group's)
    for (int j = 0; j < ring.size(); ++j) {
      int64_t n = 0;
      for (int i = 0; i < width; ++i) n += ctx.image_lengths[j * width + i] / frames;
      positions.push_back(n);
    }
    o = from_groups(ring_attention(to_groups(qh, frames, groups), to_groups(kh, frames, groups),
                                   to_groups(vh, frames, groups), ring, positions, ctx.cp),
                    qh.size(1), frames, groups);
  }
  return unified ? heads_to_sequence(regroup_frames(o, width, frames, false), *u) : o;
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
  if (op.variant() != CpVariant::kUlysses) return ringed_groups(q, k, v, ctx, groups);
  Comm& g = ctx.mesh->ulysses();
  const at::Tensor o = grouped_attention_local(sequence_to_heads(q, g), sequence_to_heads(k, g),
                                               sequence_to_heads(v, g), ctx.frames, groups);
  return heads_to_sequence(o, g);
}

}  // namespace cpplan::executor
