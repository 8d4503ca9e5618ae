#pragma once
// One communication group of the mesh (a tensor, Ulysses, Ring, CP, CFG or data-parallel group)
// over a c10d process group, with the wall time spent in collectives and the bytes each rank
// sends counted as nccl-tests does (size x bus-bandwidth factor), so that runs can be compared
// with the cost model term by term.

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/version.h>

#include <vector>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif

namespace cpplan::executor {

// What a Gloo or NCCL group is in this LibTorch: a ProcessGroup in 1.x, a Backend (the same
// collectives, one transport) in 2.x.
#if TORCH_VERSION_MAJOR >= 2
using GroupBase = c10d::Backend;
#else
using GroupBase = c10d::ProcessGroup;
#endif
using Group = c10::intrusive_ptr<GroupBase>;

struct CommStats {
  double seconds = 0;   // wall time inside collectives (waiting included)
  double bytes_sent = 0;
  long long calls = 0;
};

class Comm {
 public:
  Comm() = default;  // a group of one: every collective is the identity
  // `nccl`: the group's collectives are queued on the GPU; they are timed between device
  // synchronizations so that what is counted is the exposed communication, not the launch.
  Comm(Group pg, int rank, int size, CommStats* stats, bool nccl = false)
      : pg_(std::move(pg)), rank_(rank), size_(size), stats_(stats), nccl_(nccl) {}

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Every rank's `t` (same shape), concatenated along `dim` in rank order.
  at::Tensor all_gather_cat(const at::Tensor& t, int64_t dim);
  // As all_gather_cat, for tensors whose `dim` differs by rank: `lengths[i]` is rank i's.
  at::Tensor all_gather_uneven(const at::Tensor& t, int64_t dim, const std::vector<int64_t>& lengths);
  // `t` has dim 0 == size(); slice i goes to rank i; the result's slice i came from rank i.
  at::Tensor all_to_all(const at::Tensor& t);
  // Flat uneven all-to-all: send_counts[i] elements to rank i, recv_counts[i] from rank i.
  at::Tensor all_to_all_flat(const at::Tensor& flat, const std::vector<int64_t>& send_counts,
                             const std::vector<int64_t>& recv_counts);
  void all_reduce(at::Tensor& t);  // sum, in place
  // Non-blocking ring shift: `send` to rank `dst` while `recv` arrives from rank `src`, both
  // posted at once (one NCCL group, so that two ranks sending to each other cannot deadlock).
  // `recv` must be contiguous: it is filled in place. wait() on the result, timed as communication.
  struct Pending {
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    at::Device device = at::Device(at::kCPU);
  };
  Pending exchange(at::Tensor& send, int dst, at::Tensor& recv, int src, int tag);
  void wait(Pending& pending);

 private:
  void account(double seconds, double bytes);
  at::Tensor to_wire(const at::Tensor& t) const;
  at::Tensor from_wire(const at::Tensor& t, at::ScalarType type) const;
  // On NCCL, before a collective (uncounted): lets queued compute finish; after it: waits for
  // the collective itself. No-op on Gloo, whose collectives block.
  void settle(const at::Tensor& t) const;

  Group pg_;
  int rank_ = 0;
  int size_ = 1;
  CommStats* stats_ = nullptr;
  bool nccl_ = false;
};

}  // namespace cpplan::executor
