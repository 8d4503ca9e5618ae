#pragma once
// Attention over the context-parallel group. Each CP variant is one AttentionOp in
// executor/attention/, listed in attention_registry.cpp. Inputs are this rank's heads (after
// tensor parallelism) and tokens (after the CP split): q, k, v of shape [B, H, S_local, hd];
// the result has the shape of q and equals full attention over the whole sequence.

#include <ATen/ATen.h>

#include <utility>
#include <vector>

#include "core/parallel_config.h"
#include "executor/mesh.h"

namespace cpplan::executor {

struct AttentionContext {
  Mesh* mesh = nullptr;
  ContextParallelConfig cp;
  std::vector<int64_t> cp_lengths;  // local sequence length of every CP rank, in CP rank order
};

class AttentionOp {
 public:
  virtual ~AttentionOp() = default;
  virtual CpVariant variant() const = 0;
  virtual at::Tensor forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             AttentionContext& ctx) const = 0;
};

const AttentionOp& attention_op(CpVariant v);

// Whether attention_with_lse runs FlashAttention for tensors of this device, dtype and head size:
// a CUDA LibTorch 2.x, CUDA tensors in bf16 or fp16, head_dim a multiple of 8 up to 256. Else it
// runs the fp32 math path.
bool flash_attention_fits(const at::Device& device, at::ScalarType dtype, int64_t head_dim);

// Local attention that also returns the log-sum-exp of the scores, [B, H, S_q] (fp32).
std::pair<at::Tensor, at::Tensor> attention_with_lse(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);
// Folds one block's partial attention (block_out in any precision, its LSE l in fp32) into the
// running (out, lse), both fp32: softmax over the union of the key sets. !fp32 rounds the running
// output to bf16 after each merge (convert_to_fp32=False). out undefined: starts the fold.
void merge_partial_attention(at::Tensor& out, at::Tensor& lse, const at::Tensor& block_out, const at::Tensor& l,
                             bool fp32 = true);
// Plain local attention (no LSE), what `native` SDPA gives.
at::Tensor attention_local(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// Ring attention of q against K/V held by the ranks of `ring`: `lengths[i]` is rank i's K/V length.
// allgather: gather every block once (padded to the longest when lengths differ); p2p: pass
// blocks around the ring, the next transfer overlapping the current block's attention.
at::Tensor ring_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, Comm& ring,
                          const std::vector<int64_t>& lengths, const ContextParallelConfig& cp);

// Ulysses all-to-alls with equal lengths: [B, H, S, hd] sequence-sharded <-> [B, H/u, u*S, hd].
at::Tensor sequence_to_heads(const at::Tensor& x, Comm& g);
at::Tensor heads_to_sequence(const at::Tensor& y, Comm& g);

}  // namespace cpplan::executor
