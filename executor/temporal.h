#pragma once
// Self-attention of a video's tokens in groups (Latte): within each latent frame (its spatial
// blocks) or across the frames at each latent position (its temporal blocks). The image tokens
// lie frame-major (frame, row, column; image_rope_angles' order) and `ctx.frames` counts the
// latent frames.

#include <ATen/ATen.h>

#include "executor/attention.h"

namespace cpplan::executor {

// Which tokens attend to each other: all of them (through the plan's AttentionOp), those of one
// frame, or those of one position (a sequence of `frames` tokens).
enum class TokenGroups { kAll, kFrame, kPosition };

// The self-attention of q, k, v [B, H, S_local, hd] grouped by `groups`. Grouped attention runs on
// one rank; under Ulysses (the all-to-alls of spatial attention; each rank then holds the whole
// sequence of its heads and attends its groups locally); or under Ring and Unified when each rank
// holds every frame of its positions (ctx.frames_whole: temporal groups local, spatial ones a
// ring over each frame's shares). The Anything variants, Ring over runs of the sequence and
// PipeFusion's patches split the groups, and throw std::invalid_argument.
at::Tensor grouped_self_attention(const AttentionOp& op, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  AttentionContext& ctx, TokenGroups groups);

// Local attention over the whole sequence [B, H, S, hd], grouped: [B, H x groups, tokens per group, hd].
at::Tensor grouped_attention_local(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t frames,
                                   TokenGroups groups);

}  // namespace cpplan::executor
