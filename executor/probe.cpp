#include "executor/probe.h"


#include <algorithm>

#include "costmodel/hardware_model.h"
#include "executor/attention.h"
#include "executor/rendezvous.h"
#include "executor/runner.h"

namespace cpplan::executor {

std::string fmt_label(const char* what, int g, double bytes);

namespace {

using Clock = std::chrono::steady_clock;
using costmodel::Collective;
using costmodel::CollectiveSample;
using costmodel::KernelKind;
using costmodel::KernelSample;

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Repetitions by size: enough for a stable median without spending seconds on large messages.
int repetitions(double bytes) { return std::clamp(static_cast<int>(4e7 / std::max(bytes, 1.0)), 3, 25); }

// Times `op` `reps` times after one warm-up, every rank of `pg` starting together; median us.
// On a GPU the time runs until the device has finished the collective.
double time_collective(GroupBase& pg, const at::Device& device, int reps, const std::function<void()>& op) {
  op();
  synchronize(device);
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    pg.barrier()->wait();
    synchronize(device);
    const auto t0 = Clock::now();
    op();
    synchronize(device);
    t.push_back(us_since(t0));
  }
  return median(t);
}

std::vector<CollectiveSample> probe_collectives(const ProbeOptions& o, const c10::intrusive_ptr<c10d::Store>& store,
                                                int rank, int world, const std::function<void(const std::string&)>& step) {
  std::vector<CollectiveSample> out;
  for (int g = 2; g <= world; ++g) {
    if (world % g != 0) continue;
    // Every rank belongs to one group of g consecutive ranks; all groups run at once, as a
    // plan's groups of one axis do.
    const int index = rank / g, me = rank % g;
    auto pg = new_group(store, "probe/" + std::to_string(g) + "/" + std::to_string(index), me, g, o.timeout,
                        o.device.device);
    const at::Device dev = o.device.device;
    const auto f32 = at::TensorOptions(at::kFloat).device(dev);
    for (double bytes = 1024; bytes <= o.max_message_bytes; bytes *= 4) {
      const int64_t n = static_cast<int64_t>(bytes / 4) / g * g;
      at::Tensor x = at::randn({n}, f32);
      const int reps = repetitions(bytes * g);
      auto record = [&](Collective kind, bool uneven, double size, double us) {
        const double algbw = size / (us * 1e-6) / 1e9;
        // The probe's ranks run on this machine: one node.
        out.push_back({kind, g, uneven, size, us, algbw, algbw * costmodel::busbw_factor(kind, g), 1});
      };
      step(fmt_label("all_gather", g, bytes));
      record(Collective::kAllGather, false, bytes * g, time_collective(*pg, dev, reps, [&] {
               std::vector<at::Tensor> in{x};
               std::vector<std::vector<at::Tensor>> outs(1);
               for (int i = 0; i < g; ++i) outs[0].push_back(at::empty_like(x));
               pg->allgather(outs, in)->wait();
             }));
      step(fmt_label("all_to_all", g, bytes));
      record(Collective::kAllToAll, false, bytes, time_collective(*pg, dev, reps, [&] {
               at::Tensor y = at::empty_like(x);
               std::vector<int64_t> in_splits, out_splits;
               pg->alltoall_base(y, x, out_splits, in_splits)->wait();
             }));
      // Uneven: rank i sends one element more to the ranks below it (Ulysses Anything's shape).
      {
        std::vector<int64_t> send(g, n / g), recv(g, n / g);
        for (int j = 0; j < g; ++j) {
          if (j < me) ++send[j];
          if (me < j) ++recv[j];
        }
        int64_t total_send = 0, total_recv = 0;
        for (int j = 0; j < g; ++j) total_send += send[j], total_recv += recv[j];
        at::Tensor xs = at::randn({total_send}, f32);
        step(fmt_label("all_to_all uneven", g, bytes));
        record(Collective::kAllToAll, true, bytes, time_collective(*pg, dev, reps, [&] {
                 at::Tensor y = at::empty({total_recv}, f32);
                 auto r = recv, s = send;  // c10d moves the split vectors away
                 pg->alltoall_base(y, xs, r, s)->wait();
               }));
      }
      step(fmt_label("all_reduce", g, bytes));
      at::Tensor r = x.clone();
      record(Collective::kAllReduce, false, bytes, time_collective(*pg, dev, reps, [&] {
               std::vector<at::Tensor> v{r};
               pg->allreduce(v)->wait();
             }));
      step(fmt_label("send_recv", g, bytes));
      at::Tensor incoming = at::empty_like(x);
      // The ring shift Ring attention posts.
      Comm ring(pg, me, g, nullptr, dev.is_cuda() ? Transport::kNccl : Transport::kGloo);
      record(Collective::kSendRecv, false, bytes, time_collective(*pg, dev, reps, [&] {
               auto pending = ring.exchange(x, (me + 1) % g, incoming, (me + g - 1) % g, 0);
               ring.wait(pending);
             }));
    }
  }
  return out;
}

// Kernels of the blocks: GEMMs of the projections and FFN, attention, memory-bound work.
std::vector<KernelSample> probe_kernels(const ProbeOptions& o, int concurrent, const std::function<void(const std::string&)>& step) {
  std::vector<KernelSample> out;
  const at::Device dev = o.device.device;
  const at::TensorOptions opts = o.device.options();
  const double elem = static_cast<double>(c10::elementSize(o.device.dtype));
  // Work per repetition sets the count: ~0.2 GFLOP on a CPU, ~50 GFLOP on a GPU (~1000x faster).
  const double budget = dev.is_cuda() ? 5e10 : 2e8;
  StepTimer timer(dev);
  auto timed = [&](const std::function<void()>& f, double work) {
    f();
    synchronize(dev);
    const int reps = std::clamp(static_cast<int>(budget / std::max(work, 1.0)), 3, 50);
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      timer.start();
      f();
      t.push_back(timer.stop_ms() * 1e3);
    }
    return median(t);
  };
  std::vector<std::pair<int64_t, int64_t>> gemm_shapes;  // (k, n)
  std::vector<std::pair<int64_t, int64_t>> attention_shapes;  // (heads, head_dim)
  for (const ModelProfile* m : o.models) {
    const int64_t d = m->hidden(), f = m->ffn_hidden;
    for (auto s : {std::pair{d, d}, {d, 3 * d}, {d, f}, {f, d}}) gemm_shapes.push_back(s);
    for (int shards : {1, 2}) attention_shapes.emplace_back(m->heads / shards, m->head_dim);
  }
  for (int64_t tokens = 16; tokens <= o.max_tokens; tokens *= 2) {
    for (auto [k, n] : gemm_shapes) {
      const at::Tensor a = at::randn({tokens, k}, opts), w = at::randn({n, k}, opts);
      const double flops = 2.0 * tokens * k * n;
      step("gemm " + std::to_string(tokens) + "x" + std::to_string(k) + "x" + std::to_string(n));
      const double us = timed([&] { (void)at::linear(a, w); }, flops);
      out.push_back({KernelKind::kGemm, "m=" + std::to_string(tokens) + " k=" + std::to_string(k) + " n=" + std::to_string(n),
                     flops, elem * (tokens * k + k * n + tokens * n), static_cast<double>(tokens), concurrent, us});
    }
    for (auto [h, hd] : attention_shapes) {
      const at::Tensor q = at::randn({1, h, tokens, hd}, opts);
      const double flops = 4.0 * tokens * tokens * h * hd;
      step("attention " + std::to_string(tokens) + " tokens " + std::to_string(h) + " heads");
      const double us = timed([&] { (void)attention_with_lse(q, q, q); }, flops);
      out.push_back({KernelKind::kAttention, "q=kv=" + std::to_string(tokens) + " h=" + std::to_string(h) + " d=" + std::to_string(hd),
                     flops, elem * 4 * tokens * h * hd, static_cast<double>(tokens), concurrent, us});
    }
  }
  // Memory-bound: an elementwise add reads two and writes one; the 1-element one is the
  // per-kernel overhead.
  for (int64_t n = 1; n <= (int64_t{1} << 24); n *= 4) {
    const at::Tensor a = at::randn({n}, opts), b = at::randn({n}, opts);
    step("elementwise " + std::to_string(n));
    const double bytes = 3 * elem * n;
    const double us = timed([&] { (void)at::add(a, b); }, bytes * 10);
    out.push_back({KernelKind::kMemory, "add n=" + std::to_string(n), 0, bytes, 1, concurrent, us});
  }
  return out;
}

}  // namespace

costmodel::MeasurementSet probe_rank(const ProbeOptions& o, const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                     int world) {
  costmodel::MeasurementSet set;
  // Progress: the number of measurement steps is fixed by the options, the same on every rank.
  int total = 0, done = 0;
  {
    int sizes = 0;
    for (double b = 1024; b <= o.max_message_bytes; b *= 4) ++sizes;
    int groups = 0;
    for (int g = 2; g <= world; ++g) groups += world % g == 0;
    int token_steps = 0;
    for (int t = 16; t <= o.max_tokens; t *= 2) ++token_steps;
    const int kernels = token_steps * 6 * static_cast<int>(o.models.size()) + 13;
    total = groups * sizes * 5 + kernels * (world > 1 ? 2 : 1);
  }
  auto step = [&](const std::string& what) {
    ++done;
    if (rank == 0 && o.progress) o.progress(std::min(1.0, static_cast<double>(done) / std::max(1, total)), what);
  };
  if (o.device.cuda()) (void)use_cuda_device(o.device.device.index());
  set.collectives = probe_collectives(o, store, rank, world, step);
  Group world_group;
  if (world > 1) world_group = new_group(store, "probe/world", rank, world, o.timeout, o.device.device);
  // Kernels alone (the other ranks wait; all cores to one rank, as a one-rank run has them),
  // then every rank at once with its share of the cores (as a plan's ranks run).
  if (world_group) world_group->barrier()->wait();
  share_cpu_threads(1);
  if (rank == 0) set.kernels = probe_kernels(o, 1, step);
  if (world_group) {
    world_group->barrier()->wait();
    share_cpu_threads(world);
    auto together = probe_kernels(o, world, step);
    if (rank == 0) set.kernels.insert(set.kernels.end(), together.begin(), together.end());
    world_group->barrier()->wait();
  }
  return set;
}

std::string fmt_label(const char* what, int g, double bytes) {
  const double kib = bytes / 1024;
  return std::string(what) + ", " + std::to_string(g) + " ranks, " +
         (kib >= 1024 ? std::to_string(static_cast<int>(kib / 1024)) + " MiB" : std::to_string(static_cast<int>(kib)) + " KiB");
}

}  // namespace cpplan::executor
