#include "executor/comm.h"

#include <c10/util/StringUtil.h>

#include <stdexcept>

#include "executor/device.h"

namespace cpplan::executor {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
double nbytes(const at::Tensor& t) { return static_cast<double>(t.numel() * t.element_size()); }
}  // namespace

std::optional<std::string> collective_tensor_error(Transport transport, std::string_view collective,
                                                   const at::Tensor& t) {
  if (transport != Transport::kNccl || (t.defined() && t.is_cuda())) return std::nullopt;
  const std::string what = t.defined()
                               ? c10::str("a ", t.scalar_type(), " tensor on ", t.device(), ", shape ", t.sizes())
                               : std::string("an undefined tensor");
  return c10::str(collective, " on an NCCL group: got ", what, "; NCCL takes GPU tensors only");
}

void CommStats::resolve() {
  if (pending) seconds += pending->take_seconds();
}

void Comm::check(std::string_view collective, const at::Tensor& t) const {
  if (auto error = collective_tensor_error(nccl_ ? Transport::kNccl : Transport::kGloo, collective, t))
    throw std::runtime_error(*error);
}

// Gloo (LibTorch 1.13) has no bf16: data movement carries its 16-bit patterns as fp16, bit-exact.
at::Tensor Comm::to_wire(const at::Tensor& t) const {
  const at::Tensor c = t.contiguous();
  return !nccl_ && c.scalar_type() == at::kBFloat16 ? c.view(at::kHalf) : c;  // moved, never summed
}
at::Tensor Comm::from_wire(const at::Tensor& t, at::ScalarType type) const {
  return t.scalar_type() == type ? t : t.view(type);
}

// Gloo's collectives block: the wall clock times them. NCCL's are queued: with kEvents a CUDA
// event on the compute stream before the collective (NCCL's stream starts from this point) and
// one after wait() (the compute stream resumes once NCCL's end event has passed) bracket it on
// the GPU, read at the step's end (CommStats::resolve); with kSynchronized the device finishes
// its queued compute first (uncounted) and the collective is timed by the wall clock up to a
// second synchronisation: exposed communication, computation and communication serialised.
Comm::TimePoint Comm::open(const at::Device& device) {
  if (nccl_ && timing_ == CollectiveTiming::kSynchronized) synchronize(device);
  if (nccl_ && timing_ == CollectiveTiming::kEvents && stats_) {
    if (!stats_->pending) stats_->pending = std::make_shared<DeviceIntervals>();
    stats_->pending->begin(device);
  }
  return Clock::now();
}

void Comm::close(const at::Device& device, TimePoint t0, double bytes, bool call) {
  if (nccl_ && timing_ == CollectiveTiming::kSynchronized) synchronize(device);
  if (!stats_) return;
  if (nccl_ && timing_ == CollectiveTiming::kEvents) stats_->pending->end(device);
  else stats_->seconds += since(t0);
  stats_->bytes_sent += bytes;
  if (call) ++stats_->calls;
}

at::Tensor Comm::all_gather_cat(const at::Tensor& t, int64_t dim) {
  check("all_gather_cat", t);
  if (size_ == 1) return t;
  std::vector<at::Tensor> in{to_wire(t)};
  // Gather straight into one tensor [n, ...] through contiguous views: no extra copy.
  auto shape = in[0].sizes().vec();
  shape.insert(shape.begin(), size_);
  const at::Tensor out = at::empty(shape, in[0].options());
  std::vector<std::vector<at::Tensor>> views(1);
  for (int i = 0; i < size_; ++i) views[0].push_back(out[i]);
  const TimePoint t0 = open(t.device());
  pg_->allgather(views, in)->wait();
  // nccl-tests: size = n x local bytes, busbw factor (n-1)/n
  close(t.device(), t0, nbytes(t) * (size_ - 1));
  const at::Tensor all = from_wire(out, t.scalar_type());
  return dim == 0 ? all.flatten(0, 1) : all.movedim(0, dim).flatten(dim, dim + 1);
}

at::Tensor Comm::all_gather_uneven(const at::Tensor& t, int64_t dim, const std::vector<int64_t>& lengths) {
  check("all_gather_uneven", t);
  if (size_ == 1) return t;
  // c10d's all-gather needs equal shapes: pad to the longest, gather, slice each back.
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  at::Tensor padded = t;
  if (t.size(dim) < longest) {
    auto shape = t.sizes().vec();
    shape[dim] = longest - t.size(dim);
    padded = at::cat({t, at::zeros(shape, t.options())}, dim);
  }
  const at::Tensor all = all_gather_cat(padded, dim);
  std::vector<at::Tensor> parts;
  for (int i = 0; i < size_; ++i) parts.push_back(all.narrow(dim, i * longest, lengths[i]));
  return at::cat(parts, dim);
}

at::Tensor Comm::all_to_all(const at::Tensor& t) {
  check("all_to_all", t);
  if (size_ == 1) return t;
  at::Tensor in = to_wire(t);
  at::Tensor out = at::empty_like(in);
  std::vector<int64_t> splits;  // empty: equal splits along dim 0
  const TimePoint t0 = open(t.device());
  pg_->alltoall_base(out, in, splits, splits)->wait();
  close(t.device(), t0, nbytes(t) * (size_ - 1) / size_);
  return from_wire(out, t.scalar_type());
}

at::Tensor Comm::all_to_all_flat(const at::Tensor& flat, const std::vector<int64_t>& send_counts,
                                 const std::vector<int64_t>& recv_counts) {
  check("all_to_all_flat", flat);
  if (size_ == 1) return flat;
  int64_t total = 0;
  for (auto c : recv_counts) total += c;
  at::Tensor in = to_wire(flat);
  at::Tensor out = at::empty({total}, in.options());
  auto send = send_counts, recv = recv_counts;
  const TimePoint t0 = open(flat.device());
  pg_->alltoall_base(out, in, recv, send)->wait();
  double sent = 0;
  for (int i = 0; i < size_; ++i)
    if (i != rank_) sent += static_cast<double>(send_counts[i]) * in.element_size();
  close(flat.device(), t0, sent);
  return from_wire(out, flat.scalar_type());
}

void Comm::all_reduce(at::Tensor& t) {
  check("all_reduce", t);
  if (size_ == 1) return;
  // Gloo sums bf16 in fp32, then rounds once (NCCL sums bf16 natively).
  const bool widen = !nccl_ && t.scalar_type() == at::kBFloat16;
  std::vector<at::Tensor> v{widen ? t.to(at::kFloat) : t};
  const TimePoint t0 = open(t.device());
  pg_->allreduce(v)->wait();
  close(t.device(), t0, nbytes(t) * 2.0 * (size_ - 1) / size_);
  if (widen) t.copy_(v[0]);
}

Comm::Pending Comm::exchange(at::Tensor& send, int dst, at::Tensor& recv, int src, int tag) {
  check("exchange (send)", send);
  check("exchange (recv)", recv);
  TORCH_CHECK(recv.is_contiguous(), "Comm::exchange: the receive buffer must be contiguous");
  std::vector<at::Tensor> out{to_wire(send)}, in{to_wire(recv)};  // views: recv fills in place
  Pending p;
  p.device = send.device();
  if (stats_) {  // the transfer's time is counted where it is waited for
    stats_->bytes_sent += nbytes(send);
    ++stats_->calls;
  }
  if (!nccl_) {  // Gloo: each op is its own non-blocking transfer
    p.works.push_back(pg_->send(out, dst, tag));
    p.works.push_back(pg_->recv(in, src, tag));
    return p;
  }
  // NCCL runs a send and a recv queued one after the other on the same pair in order: each
  // would wait for the other rank's matching call. Posted as one group they proceed together.
  pg_->startCoalescing();
  auto s = pg_->send(out, dst, tag);
  auto r = pg_->recv(in, src, tag);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  p.works = {s, r, pg_->endCoalescing()};  // null where the group holds the op: skipped by wait()
#else
  std::vector<c10::intrusive_ptr<c10d::Work>> reqs{s, r};
  pg_->endCoalescing(reqs);
  p.works = reqs;
#endif
  return p;
}

void Comm::send(const at::Tensor& t, int dst, int tag) {
  check("send", t);
  std::vector<at::Tensor> out{to_wire(t)};
  const TimePoint t0 = open(t.device());
  auto work = pg_->send(out, dst, tag);
  // Gloo: returns once the peer has taken `out` (kept alive until then); NCCL: the compute
  // stream waits for the queued send, so `t` may be reused after it.
  work->wait();
  close(t.device(), t0, nbytes(t));
}

Comm::Pending Comm::recv(at::Tensor& t, int src, int tag) {
  check("recv", t);
  TORCH_CHECK(t.is_contiguous(), "Comm::recv: the receive buffer must be contiguous");
  std::vector<at::Tensor> in{to_wire(t)};  // a view: the receive fills `t` in place
  Pending p;
  p.device = t.device();
  p.works.push_back(pg_->recv(in, src, tag));
  return p;
}

void Comm::wait(Pending& pending) {
  // What is counted is the transfer left once the attention queued meanwhile is done: with
  // kEvents, the compute stream's wait for NCCL's end event; with kSynchronized, the wall time
  // after the device has finished that attention (uncounted).
  const TimePoint t0 = open(pending.device);
  for (auto& w : pending.works)
    if (w) w->wait();
  close(pending.device, t0, 0, false);
  pending.works.clear();
}

}  // namespace cpplan::executor
