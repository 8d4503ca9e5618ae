#pragma once
// One communication group of the mesh (a tensor, Ulysses, Ring, CP, CFG or data-parallel group)
// over a c10d process group, with the time spent in collectives and the bytes each rank sends
// counted as nccl-tests does (size x bus-bandwidth factor), so that runs can be compared with the
// cost model term by term. Every collective first applies collective_tensor_error(): no host
// tensor reaches an NCCL group.

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/version.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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

class DeviceIntervals;  // executor/device.h

// The transport of a group: Gloo's collectives block and take host tensors; NCCL's are queued on
// the GPU and take GPU tensors only.
enum class Transport { kGloo, kNccl };

// How a collective of an NCCL group is timed (Gloo's always by the wall clock: they block).
enum class CollectiveTiming {
  // CUDA events on the compute stream where it hands over to NCCL's stream and where it resumes
  // after the collective's end event: the collective's time on the GPU, waiting for the other
  // ranks included, read at the step's end. No device-wide synchronisation.
  kEvents,
  // The device synchronised before and after each collective (`cpplan run --sync-collectives`):
  // the communication the computation did not hide, at the price of serialising both. Diagnosis.
  kSynchronized,
};

// The rule every collective of Comm applies before it touches its group: an NCCL group takes
// GPU tensors only (ProcessGroupNCCL refuses others, in words that name neither the collective
// nor the tensor). Returns one line naming the collective, the tensor and the rule; nullopt when
// `t` may go. Gloo groups take any tensor.
std::optional<std::string> collective_tensor_error(Transport transport, std::string_view collective,
                                                   const at::Tensor& t);

struct CommStats {
  double seconds = 0;   // time inside collectives, waiting included (resolved: see resolve())
  double bytes_sent = 0;
  long long calls = 0;
  // NCCL collectives timed by CUDA events that have not been read yet (kEvents).
  std::shared_ptr<DeviceIntervals> pending;
  // Adds the pending intervals to `seconds`: waits for the last recorded event, so call it where
  // the device's work is done anyway (a step's end). No-op when nothing is pending.
  void resolve();
};

class Comm {
 public:
  Comm() = default;  // a group of one: every collective is the identity
  // `transport`: kNccl when `pg` is an NCCL group (its collectives then refuse host tensors and
  // are timed as `timing` says); `stats` may be null (nothing counted).
  Comm(Group pg, int rank, int size, CommStats* stats, Transport transport = Transport::kGloo,
       CollectiveTiming timing = CollectiveTiming::kEvents)
      : pg_(std::move(pg)), rank_(rank), size_(size), stats_(stats), nccl_(transport == Transport::kNccl),
        timing_(timing) {}

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
  // `recv` must be contiguous: it is filled in place. wait() on the result, timed as communication:
  // on NCCL what the compute stream waits there, the transfer the computation did not hide.
  struct Pending {
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    at::Device device = at::Device(at::kCPU);
  };
  Pending exchange(at::Tensor& send, int dst, at::Tensor& recv, int src, int tag);
  void wait(Pending& pending);
  // One-directional point-to-point (PipeFusion's hand-over between stages): `t` to rank `dst` of
  // this group, returned once sent (Gloo: the receiver has taken it; NCCL: queued). Counted as
  // nccl-tests' send/recv: its bytes (factor 1) and the time it took.
  void send(const at::Tensor& t, int dst, int tag);
  // Posts the receive of `t` (contiguous, filled in place) from rank `src`; wait() on the result
  // before reading `t` (the wait's time is counted as communication, no bytes: the sender counts them).
  Pending recv(at::Tensor& t, int src, int tag);

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  // Throws std::runtime_error with collective_tensor_error()'s line (every build, not an assert).
  void check(std::string_view collective, const at::Tensor& t) const;
  // Brackets the communication of one collective (or of one wait): opens the interval at this
  // point of `device`'s work, and closes it, adding `bytes` (and one call when `call`) to the stats.
  TimePoint open(const at::Device& device);
  void close(const at::Device& device, TimePoint t0, double bytes, bool call = true);
  at::Tensor to_wire(const at::Tensor& t) const;
  at::Tensor from_wire(const at::Tensor& t, at::ScalarType type) const;

  Group pg_;
  int rank_ = 0;
  int size_ = 1;
  CommStats* stats_ = nullptr;
  bool nccl_ = false;
  CollectiveTiming timing_ = CollectiveTiming::kEvents;
};

}  // namespace cpplan::executor
