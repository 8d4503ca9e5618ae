#pragma once
// A transformer block's weights under fully sharded weights (xDiT's fully_shard_degree, FSDP
// wrapping each block whole). The block type exposes its tensors to
// `for_each_tensor(Block&, const TensorVisitor&)`, found by argument-dependent lookup, in a fixed
// order (executor/model.cpp's blocks).

#include <ATen/ATen.h>

#include <algorithm>
#include <functional>

#include "executor/comm.h"

namespace cpplan::executor {

using TensorVisitor = std::function<void(at::Tensor&)>;

// One transformer block's weights under fully sharded weights (xDiT's fully_shard_degree, FSDP
// wrapping each block whole): over an fs group of F ranks the block's tensors are flattened into
// one buffer padded to a multiple of F, and this rank keeps its 1/F. gather() all-gathers the
// shards just before the block runs and returns the block as views of the gathered buffer, freed
// with that temporary after the block. With F = 1 the block is held whole and gather() returns it.
// No prefetch of the next block: Gloo's collectives block, and on NCCL the compute stream waits
// for each gather, so every gather is exposed (the cost model prices xDiT's prefetch instead).
template <class Block>
class ShardedBlock {
 public:
  ShardedBlock() = default;  // a block this rank does not hold (another PipeFusion stage's)
  ShardedBlock(Block full, Comm& fs) : block_(std::move(full)) {
    if (fs.size() > 1) shard(fs);
  }

  // The whole block; a collective of the fs group when sharded (every member calls it, in order).
  Block gather(Comm& fs) const {
    if (!shard_.defined()) return block_;
    const at::Tensor flat = fs.all_gather_cat(shard_, 0);
    Block b = block_;
    int64_t offset = 0;
    for_each_tensor(b, [&](at::Tensor& t) {
      const int64_t n = t.numel();
      t = flat.narrow(0, offset, n).view(t.sizes());
      offset += n;
    });
    return b;
  }

 private:
  // Copies this rank's chunk of the flattened block (padded with zeros to F chunks) straight from
  // the block's tensors and leaves shape-only (meta) tensors in the skeleton: the full weights are
  // released here, and no flat copy of the whole block is ever made.
  void shard(Comm& fs) {
    int64_t total = 0;
    at::TensorOptions options;
    for_each_tensor(block_, [&](at::Tensor& t) {
      total += t.numel();
      options = t.options();
    });
    const int64_t chunk = (total + fs.size() - 1) / fs.size(), begin = fs.rank() * chunk;
    shard_ = at::zeros({chunk}, options);
    int64_t offset = 0;
    for_each_tensor(block_, [&](at::Tensor& t) {
      const int64_t n = t.numel(), lo = std::max(offset, begin), hi = std::min(offset + n, begin + chunk);
      if (lo < hi) shard_.narrow(0, lo - begin, hi - lo).copy_(t.reshape(-1).narrow(0, lo - offset, hi - lo));
      offset += n;
      t = at::empty(t.sizes(), t.options().device(at::kMeta));
    });
  }

  Block block_;       // whole (F = 1), or its skeleton: meta tensors that keep the shapes
  at::Tensor shard_;  // this rank's 1/F of the flattened block; undefined when whole
};

}  // namespace cpplan::executor
