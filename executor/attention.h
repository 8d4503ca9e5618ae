#pragma once
// Attention over the context-parallel group. Each CP variant is one AttentionOp in
// executor/attention/, one line each in executor/attention/registry.cpp. Inputs are this rank's
// heads (after tensor parallelism) and tokens (after the CP split): q, k, v of shape
// [B, H, S_local, hd]; the result has the shape of q and equals full attention over the whole
// sequence.

#include <ATen/ATen.h>

#include <utility>
#include <vector>

#include "core/cp_registry.h"
#include "core/parallel_config.h"
#include "executor/mesh.h"

namespace cpplan::executor {

class PatchKvCache;  // executor/pipefusion.h
struct KeyBlock;     // below

// How the sequence of one attention call lies over the CP group. Joint-attention models put
// their text first: q, k, v are [text; image] on every rank. Where the model's CP plan splits
// the text (FLUX, Qwen-Image), each rank holds its share of both and `cp_lengths` counts them;
// where it keeps the text whole (SD3, HunyuanVideo, CogVideoX), every rank holds all
// `text_tokens` text tokens in front of its image share, and every variant lets that text enter
// the attention exactly once across the group (its K/V joins once, not once per rank).
struct AttentionContext {
  Mesh* mesh = nullptr;
  ContextParallelConfig cp;
  std::vector<int64_t> cp_lengths;     // CP-split tokens of every CP rank, in CP rank order
  std::vector<int64_t> image_lengths;  // image tokens of every CP rank (image-only attention)
  int64_t text_tokens = 0;             // text tokens whole on every rank, in front of the split ones
  // Key padding masks (a text attention mask, Qwen-Image): per CP rank, [B, cp_lengths[i]] bool,
  // true where a key is attended; and [B, text_tokens] for the whole text. Empty: every key counts.
  std::vector<at::Tensor> key_valid;
  at::Tensor text_valid;
  // PipeFusion: every self-attention writes its K/V into this stage's per-block buffers of the
  // full sequence and attends against them (xDiT's displaced patches); under CP inside the stage
  // the ops do, at the level they attend (cached_keys); null otherwise.
  PatchKvCache* patch_kv = nullptr;
  // Latent frames of the image tokens (frame-major): the groups of frame-grouped attention (Latte).
  int64_t frames = 1;
  // Each CP rank holds every frame of its run of positions, [frames, positions] frame-major
  // (shard_sequence under Ring: the split is over spatial tokens); else a run of the sequence.
  bool frames_whole = false;
  // The model's self-attention is ReLU linear attention (SANA; AttentionKind::kLinear): every
  // variant runs linear_attention / its ring all-reduce instead of softmax.
  bool linear = false;
  // The latent grid of the image tokens, row-major (frame, row, column): the conv-GLU FFN's
  // 3x3 depthwise conv finds a token's neighbours in it across the CP split.
  int64_t grid_rows = 0, grid_cols = 0;

  bool masked() const { return !key_valid.empty(); }
  // Key mask of the split tokens of CP ranks [first, first + count), concatenated; undefined when
  // unmasked.
  at::Tensor split_keys_valid(int first, int count) const;
  // The same behind the whole text's mask when the text is kept whole.
  at::Tensor keys_valid(int first, int count) const;
  // The context of an image-only attention (SD3.5-medium's second attention): no text, no mask.
  AttentionContext image_only() const;
};

class AttentionOp {
 public:
  virtual ~AttentionOp() = default;
  virtual CpVariant variant() const = 0;
  virtual at::Tensor forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             AttentionContext& ctx) const = 0;
};

// The self-attention a model calls: through `ctx.patch_kv` when it is set (PipeFusion), else `op`.
at::Tensor self_attention(const AttentionOp& op, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          AttentionContext& ctx);

// PipeFusion with context parallelism inside the stage: k, v [B, H', n, hd] of CP ranks [first,
// first + count) written into the stage's buffers (ctx.patch_kv), and those ranks' keys of the
// whole sequence returned (PatchKvCache::cached).
std::pair<at::Tensor, at::Tensor> cached_keys(AttentionContext& ctx, const at::Tensor& k, const at::Tensor& v,
                                              int first, int count);

// The variant's op; every CpVariant has its own (core/cp_registry.h).
const AttentionOp& attention_op(CpVariant v);
// All of them, in CpVariant order.
const CpRegistry<AttentionOp>& all_attention_ops();

// Whether attention_with_lse runs FlashAttention for tensors of this device, dtype and head size:
// a CUDA LibTorch 2.x, CUDA tensors in bf16 or fp16, head_dim a multiple of 8 up to 256. Else it
// runs the fp32 math path.
bool flash_attention_fits(const at::Device& device, at::ScalarType dtype, int64_t head_dim);

// Local attention that also returns the log-sum-exp of the scores, [B, H, S_q] (fp32).
// `key_valid` [B, S_k] bool, when defined, drops the keys it marks false.
std::pair<at::Tensor, at::Tensor> attention_with_lse(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                     const at::Tensor& key_valid = {});
// Folds one block's partial attention (block_out in any precision, its LSE l in fp32) into the
// running (out, lse), both fp32: softmax over the union of the key sets. !fp32 rounds the running
// output to bf16 after each merge (convert_to_fp32=False). out undefined: starts the fold.
void merge_partial_attention(at::Tensor& out, at::Tensor& lse, const at::Tensor& block_out, const at::Tensor& l,
                             bool fp32 = true);
// Plain local attention (no LSE), what `native` SDPA gives.
at::Tensor attention_local(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& key_valid = {});

// ReLU linear attention (SANA), per head, fp32: out = relu(q) S / (relu(q) z + 1e-15) with the
// state S = relu(k)^T v and z = sum over tokens of relu(k). The state is kept as one tensor
// [B, H, hd, hd + 1] = relu(k)^T [v | 1] (z its last column), so one GEMM builds it and one
// applies it: 2 hd (hd + 1) FLOPs per token per head each.
at::Tensor linear_attention_state(const at::Tensor& k, const at::Tensor& v);
// relu(q) [S | z], divided: [B, H, S_q, hd] in q's dtype.
at::Tensor apply_linear_attention(const at::Tensor& q, const at::Tensor& state);
// Linear attention over the whole sequence of the ring group: each rank's state, ONE all-reduce
// (sum) of [S | z] over `ring`, then applied to the local q. `joined` (text a model keeps whole on
// every rank) adds its state once, locally, after the all-reduce.
at::Tensor linear_ring_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, Comm& ring,
                                 const KeyBlock* joined = nullptr);
// Local attention of the model's kind: linear (ctx.linear) or softmax with `key_valid`.
at::Tensor attention_of_kind(const AttentionContext& ctx, const at::Tensor& q, const at::Tensor& k,
                             const at::Tensor& v, const at::Tensor& key_valid = {});

// K/V (and their key mask, or undefined) that one rank holds whole.
struct KeyBlock {
  at::Tensor k, v, valid;
};

// Ring attention of q against K/V held by the ranks of `ring`: `lengths[i]` is rank i's K/V length,
// `valid[i]` its key mask (empty: unmasked). allgather: gather every block once (padded to the
// longest when lengths differ); p2p: pass blocks around the ring, the next transfer overlapping
// the current block's attention. `joined`, when given, is attended once more, locally (the text
// K/V a model keeps whole on every rank).
at::Tensor ring_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, Comm& ring,
                          const std::vector<int64_t>& lengths, const ContextParallelConfig& cp,
                          const std::vector<at::Tensor>& valid = {}, const KeyBlock* joined = nullptr);

// The whole-text part of q, k, v or o [B, H, S, hd] (its first `text` tokens) and the CP-split rest.
inline at::Tensor text_part(const at::Tensor& x, int64_t text) { return x.narrow(2, 0, text); }
inline at::Tensor split_part(const at::Tensor& x, int64_t text) {
  return text == 0 ? x : x.narrow(2, text, x.size(2) - text);
}
// Heads [rank * H / size, (rank + 1) * H / size) of x [B, H, S, hd]: what a Ulysses rank attends
// of the text every rank holds (no communication).
at::Tensor head_slice(const at::Tensor& x, int rank, int size);
// A Ulysses rank's output: the whole text's (its heads all-gathered over `g`, `heads` of them
// kept) in front of `split_out`, or `split_out` alone when there is no whole text.
at::Tensor with_whole_text(const at::Tensor& o, int64_t text, Comm& g, int64_t heads, const at::Tensor& split_out);

// Ulysses all-to-alls with equal lengths: [B, H, S, hd] sequence-sharded <-> [B, H/u, u*S, hd].
at::Tensor sequence_to_heads(const at::Tensor& x, Comm& g);
at::Tensor heads_to_sequence(const at::Tensor& y, Comm& g);

}  // namespace cpplan::executor
