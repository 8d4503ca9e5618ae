#pragma once
// A transformer block's weights under fully sharded weights (xDiT's fully_shard_degree, FSDP
// wrapping each block whole). The block type exposes its tensors to
// `for_each_tensor(Block&, const TensorVisitor&)`, found by argument-dependent lookup, in a fixed
// order (executor/model.cpp's blocks).

#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "executor/comm.h"

namespace cpplan::executor {

using TensorVisitor = std::function<void(at::Tensor&)>;

// One transformer block's weights under fully sharded weights (xDiT's fully_shard_degree, FSDP
// wrapping each block whole): over an fs group of F ranks the block's tensors are flattened into
// one buffer per element type (one in the compute dtype; int8 weights, WeightStorage::kInt8, in a
// second beside their scales and biases) padded to a multiple of F, and this rank keeps its 1/F of
// each. gather() all-gathers the shards just before the block runs and returns the block as views
// of the gathered buffers, freed with those temporaries after the block. With F = 1 the block is held whole and gather() returns it.
// No prefetch of the next block: Gloo's collectives block, and on NCCL the compute stream waits
// for each gather, so every gather is exposed (the cost model prices xDiT's prefetch instead).
template <class Block>
class ShardedBlock {
 public:
  ShardedBlock() = default;  // a block this rank does not hold (another PipeFusion stage's)
  ShardedBlock(Block full, Comm& fs) : block_(std::move(full)) {
    if (fs.size() > 1) shard(fs);
  }

  // Bytes in the tensors this rank holds of the block: its shards, or the whole block (0 for a
  // block it does not hold).
  double held_bytes() const {
    double bytes = 0;
    for (const Flat& f : flats_) bytes += static_cast<double>(f.shard.nbytes());
    if (!flats_.empty()) return bytes;
    Block b = block_;
    for_each_tensor(b, [&](at::Tensor& t) { bytes += static_cast<double>(t.nbytes()); });
    return bytes;
  }

  // The whole block; a collective of the fs group when sharded (every member calls it, in order:
  // one all-gather per element type the block holds, int8 weights apart from their scales).
  Block gather(Comm& fs) const {
    if (flats_.empty()) return block_;
    std::vector<at::Tensor> whole;
    for (const Flat& f : flats_) whole.push_back(fs.all_gather_cat(f.shard, 0));
    std::vector<int64_t> offsets(flats_.size(), 0);
    Block b = block_;
    for_each_tensor(b, [&](at::Tensor& t) {
      const std::size_t i = flat_of(t.scalar_type());
      const int64_t n = t.numel();
      t = whole[i].narrow(0, offsets[i], n).view(t.sizes());
      offsets[i] += n;
    });
    return b;
  }

 private:
  // The block's tensors of one element type, flattened in visiting order; this rank's chunk.
  struct Flat {
    at::ScalarType type;
    at::TensorOptions options;
    int64_t total = 0;
    at::Tensor shard;
  };
  std::size_t flat_of(at::ScalarType type) const {
    return static_cast<std::size_t>(
        std::find_if(flats_.begin(), flats_.end(), [&](const Flat& f) { return f.type == type; }) - flats_.begin());
  }

  // Copies this rank's chunk of each flattened element type (padded with zeros to F chunks)
  // straight from the block's tensors and leaves shape-only (meta) tensors in the skeleton: the
  // full weights are released here, and no flat copy of the whole block is ever made.
  void shard(Comm& fs) {
    for_each_tensor(block_, [&](at::Tensor& t) {
      if (flat_of(t.scalar_type()) == flats_.size()) flats_.push_back({t.scalar_type(), t.options(), 0, {}});
      flats_[flat_of(t.scalar_type())].total += t.numel();
    });
    std::vector<int64_t> begin, offset(flats_.size(), 0);
    for (Flat& f : flats_) {
      const int64_t chunk = (f.total + fs.size() - 1) / fs.size();
      f.shard = at::zeros({chunk}, f.options);
      begin.push_back(fs.rank() * chunk);
    }
    for_each_tensor(block_, [&](at::Tensor& t) {
      const std::size_t i = flat_of(t.scalar_type());
      const int64_t chunk = flats_[i].shard.numel(), n = t.numel();
      const int64_t lo = std::max(offset[i], begin[i]), hi = std::min(offset[i] + n, begin[i] + chunk);
      if (lo < hi) flats_[i].shard.narrow(0, lo - begin[i], hi - lo).copy_(t.reshape(-1).narrow(0, lo - offset[i], hi - lo));
      offset[i] += n;
      t = at::empty(t.sizes(), t.options().device(at::kMeta));
    });
  }

  Block block_;             // whole (F = 1), or its skeleton: meta tensors that keep the shapes
  std::vector<Flat> flats_;  // this rank's 1/F of each element type's flattened tensors; empty when whole
};

}  // namespace cpplan::executor
