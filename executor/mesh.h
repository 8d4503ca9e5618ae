#pragma once
// The device mesh of a plan: ranks laid out tp innermost, then ulysses, ring, pp, cfg, dp (xDiT's
// tp-sp-pp-cfg-dp order, Ulysses inside Ring), one process group per axis that has more than one
// rank, plus the flattened context-parallel group (ulysses inner), the fully-shard group (F
// consecutive ranks, laid over the others: it adds no rank) and the world.

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>

#include "core/parallel_config.h"
#include "executor/comm.h"

namespace cpplan::executor {

struct MeshCoords {
  int tp = 0, ulysses = 0, ring = 0, pp = 0, cfg = 0, dp = 0;  // pp: the PipeFusion stage
  int ulysses_size = 1, cp_size = 1, pp_size = 1;
  int fs = 0, fs_size = 1;  // rank in the fully-shard group (ranks [g*F, g*F+F) for group g) and F
  int cp() const { return ring * ulysses_size + ulysses; }  // rank in the flattened CP group (ulysses inner)
};

class Mesh {
 public:
  // Builds this rank's groups; every rank of the world must call it with the same config.
  // Gloo groups on CPU, NCCL groups when `device` is a GPU, their collectives timed as `timing`
  // says (NCCL only: Gloo's block and are timed by the clock).
  Mesh(c10::intrusive_ptr<c10d::Store> store, int rank, const ParallelConfig& config,
       std::chrono::milliseconds timeout, const at::Device& device = at::Device(at::kCPU),
       CollectiveTiming timing = CollectiveTiming::kEvents);

  const MeshCoords& coords() const { return coords_; }
  Comm& world() { return world_; }
  Comm& tp() { return tp_; }
  Comm& ulysses() { return ulysses_; }
  Comm& ring() { return ring_; }
  Comm& cp() { return cp_; }
  Comm& pp() { return pp_; }  // the PipeFusion stages of this rank's pipeline, in stage order
  Comm& cfg() { return cfg_; }
  Comm& dp() { return dp_; }
  Comm& fs() { return fs_; }  // F consecutive ranks sharing one copy of the block weights
  // Every group's figures, with the collectives timed by CUDA events read: waits for the last
  // one, so read it where the device's work is done (a step's end).
  CommStats& stats() {
    stats_.resolve();
    return stats_;
  }

 private:
  CommStats stats_;
  MeshCoords coords_;
  Comm world_, tp_, ulysses_, ring_, cp_, pp_, cfg_, dp_, fs_;
};

// Coordinates of `rank` in the mesh of `config`.
MeshCoords mesh_coords(int rank, const ParallelConfig& config);

}  // namespace cpplan::executor
