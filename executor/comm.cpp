#include "executor/comm.h"

#include <chrono>

#include "executor/device.h"

namespace cpplan::executor {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
double nbytes(const at::Tensor& t) { return static_cast<double>(t.numel() * t.element_size()); }
}  // namespace

// Gloo (LibTorch 1.13) has no bf16: data movement carries its 16-bit patterns as fp16, bit-exact.
at::Tensor Comm::to_wire(const at::Tensor& t) const {
  const at::Tensor c = t.contiguous();
  return !nccl_ && c.scalar_type() == at::kBFloat16 ? c.view(at::kHalf) : c;  // moved, never summed
}
at::Tensor Comm::from_wire(const at::Tensor& t, at::ScalarType type) const {
  return t.scalar_type() == type ? t : t.view(type);
}

void Comm::settle(const at::Tensor& t) const {
  if (nccl_) synchronize(t.device());
}

void Comm::account(double seconds, double bytes) {
  if (!stats_) return;
  stats_->seconds += seconds;
  stats_->bytes_sent += bytes;
  ++stats_->calls;
}

at::Tensor Comm::all_gather_cat(const at::Tensor& t, int64_t dim) {
  if (size_ == 1) return t;
  std::vector<at::Tensor> in{to_wire(t)};
  settle(in[0]);
  const auto t0 = Clock::now();
  // Gather straight into one tensor [n, ...] through contiguous views: no extra copy.
  auto shape = in[0].sizes().vec();
  shape.insert(shape.begin(), size_);
  const at::Tensor out = at::empty(shape, in[0].options());
  std::vector<std::vector<at::Tensor>> views(1);
  for (int i = 0; i < size_; ++i) views[0].push_back(out[i]);
  pg_->allgather(views, in)->wait();
  settle(out);
  // nccl-tests: size = n x local bytes, busbw factor (n-1)/n
  account(since(t0), nbytes(t) * (size_ - 1));
  const at::Tensor all = from_wire(out, t.scalar_type());
  return dim == 0 ? all.flatten(0, 1) : all.movedim(0, dim).flatten(dim, dim + 1);
}

at::Tensor Comm::all_gather_uneven(const at::Tensor& t, int64_t dim, const std::vector<int64_t>& lengths) {
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
  if (size_ == 1) return t;
  at::Tensor in = to_wire(t);
  at::Tensor out = at::empty_like(in);
  settle(in);
  const auto t0 = Clock::now();
  std::vector<int64_t> splits;  // empty: equal splits along dim 0
  pg_->alltoall_base(out, in, splits, splits)->wait();
  settle(out);
  account(since(t0), nbytes(t) * (size_ - 1) / size_);
  return from_wire(out, t.scalar_type());
}

at::Tensor Comm::all_to_all_flat(const at::Tensor& flat, const std::vector<int64_t>& send_counts,
                                 const std::vector<int64_t>& recv_counts) {
  if (size_ == 1) return flat;
  int64_t total = 0;
  for (auto c : recv_counts) total += c;
  at::Tensor in = to_wire(flat);
  at::Tensor out = at::empty({total}, in.options());
  auto send = send_counts, recv = recv_counts;
  settle(in);
  const auto t0 = Clock::now();
  pg_->alltoall_base(out, in, recv, send)->wait();
  settle(out);
  double sent = 0;
  for (int i = 0; i < size_; ++i)
    if (i != rank_) sent += static_cast<double>(send_counts[i]) * in.element_size();
  account(since(t0), sent);
  return from_wire(out, flat.scalar_type());
}

void Comm::all_reduce(at::Tensor& t) {
  if (size_ == 1) return;
  // Gloo sums bf16 in fp32, then rounds once (NCCL sums bf16 natively).
  const bool widen = !nccl_ && t.scalar_type() == at::kBFloat16;
  std::vector<at::Tensor> v{widen ? t.to(at::kFloat) : t};
  settle(t);
  const auto t0 = Clock::now();
  pg_->allreduce(v)->wait();
  settle(t);
  if (widen) t.copy_(v[0]);
  account(since(t0), nbytes(t) * 2.0 * (size_ - 1) / size_);
}

Comm::Pending Comm::exchange(at::Tensor& send, int dst, at::Tensor& recv, int src, int tag) {
  TORCH_CHECK(recv.is_contiguous(), "Comm::exchange: the receive buffer must be contiguous");
  std::vector<at::Tensor> out{to_wire(send)}, in{to_wire(recv)};  // views: recv fills in place
  Pending p;
  p.device = send.device();
  account(0, nbytes(send));
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

void Comm::wait(Pending& pending) {
  // On a GPU the attention queued meanwhile finishes first, uncounted: what is counted is the
  // transfer left once it has, the communication the overlap did not hide.
  if (nccl_) synchronize(pending.device);
  const auto t0 = Clock::now();
  for (auto& w : pending.works)
    if (w) w->wait();
  if (nccl_) synchronize(pending.device);
  pending.works.clear();
  if (stats_) stats_->seconds += since(t0);
}

}  // namespace cpplan::executor
