#include "executor/comm.h"

#include <chrono>

namespace cpplan::executor {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
double nbytes(const at::Tensor& t) { return static_cast<double>(t.numel() * t.element_size()); }
}  // namespace

void Comm::account(double seconds, double bytes) {
  if (!stats_) return;
  stats_->seconds += seconds;
  stats_->bytes_sent += bytes;
  ++stats_->calls;
}

at::Tensor Comm::all_gather_cat(const at::Tensor& t, int64_t dim) {
  if (size_ == 1) return t;
  const auto t0 = Clock::now();
  std::vector<at::Tensor> in{t.contiguous()};
  // Gather straight into one tensor [n, ...] through contiguous views: no extra copy.
  auto shape = in[0].sizes().vec();
  shape.insert(shape.begin(), size_);
  const at::Tensor out = at::empty(shape, in[0].options());
  std::vector<std::vector<at::Tensor>> views(1);
  for (int i = 0; i < size_; ++i) views[0].push_back(out[i]);
  pg_->allgather(views, in)->wait();
  // nccl-tests: size = n x local bytes, busbw factor (n-1)/n
  account(since(t0), nbytes(t) * (size_ - 1));
  return dim == 0 ? out.flatten(0, 1) : out.movedim(0, dim).flatten(dim, dim + 1);
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
  const auto t0 = Clock::now();
  at::Tensor in = t.contiguous();
  at::Tensor out = at::empty_like(in);
  std::vector<int64_t> splits;  // empty: equal splits along dim 0
  pg_->alltoall_base(out, in, splits, splits)->wait();
  account(since(t0), nbytes(t) * (size_ - 1) / size_);
  return out;
}

at::Tensor Comm::all_to_all_flat(const at::Tensor& flat, const std::vector<int64_t>& send_counts,
                                 const std::vector<int64_t>& recv_counts) {
  if (size_ == 1) return flat;
  const auto t0 = Clock::now();
  int64_t total = 0;
  for (auto c : recv_counts) total += c;
  at::Tensor in = flat.contiguous();
  at::Tensor out = at::empty({total}, in.options());
  auto send = send_counts, recv = recv_counts;
  pg_->alltoall_base(out, in, recv, send)->wait();
  double sent = 0;
  for (int i = 0; i < size_; ++i)
    if (i != rank_) sent += static_cast<double>(send_counts[i]) * in.element_size();
  account(since(t0), sent);
  return out;
}

void Comm::all_reduce(at::Tensor& t) {
  if (size_ == 1) return;
  const auto t0 = Clock::now();
  std::vector<at::Tensor> v{t};
  pg_->allreduce(v)->wait();
  account(since(t0), nbytes(t) * 2.0 * (size_ - 1) / size_);
}

c10::intrusive_ptr<c10d::Work> Comm::isend(at::Tensor& t, int dst, int tag) {
  std::vector<at::Tensor> v{t};
  account(0, nbytes(t));
  return pg_->send(v, dst, tag);
}

c10::intrusive_ptr<c10d::Work> Comm::irecv(at::Tensor& t, int src, int tag) {
  std::vector<at::Tensor> v{t};
  return pg_->recv(v, src, tag);
}

void Comm::wait(const c10::intrusive_ptr<c10d::Work>& work) {
  const auto t0 = Clock::now();
  work->wait();
  if (stats_) stats_->seconds += since(t0);
}

}  // namespace cpplan::executor
