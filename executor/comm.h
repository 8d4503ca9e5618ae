#pragma once
// One communication group of the mesh (a tensor, Ulysses, Ring, CP, CFG or data-parallel group)
// over a c10d process group, with the wall time spent in collectives and the bytes each rank
// sends counted as nccl-tests does (size x bus-bandwidth factor), so that runs can be compared
// with the cost model term by term.

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <vector>

namespace cpplan::executor {

struct CommStats {
  double seconds = 0;   // wall time inside collectives (waiting included)
  double bytes_sent = 0;
  long long calls = 0;
};

class Comm {
 public:
  Comm() = default;  // a group of one: every collective is the identity
  Comm(c10::intrusive_ptr<c10d::ProcessGroup> pg, int rank, int size, CommStats* stats)
      : pg_(std::move(pg)), rank_(rank), size_(size), stats_(stats) {}

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
  // Non-blocking point-to-point; wait() on the result, timed as communication.
  c10::intrusive_ptr<c10d::Work> isend(at::Tensor& t, int dst, int tag);
  c10::intrusive_ptr<c10d::Work> irecv(at::Tensor& t, int src, int tag);
  void wait(const c10::intrusive_ptr<c10d::Work>& work);

 private:
  void account(double seconds, double bytes);

  c10::intrusive_ptr<c10d::ProcessGroup> pg_;
  int rank_ = 0;
  int size_ = 1;
  CommStats* stats_ = nullptr;
};

}  // namespace cpplan::executor
