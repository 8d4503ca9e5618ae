#include "executor/runner.h"

#include <ATen/CPUGeneratorImpl.h>
#include <dlfcn.h>
#include <sched.h>
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <ATen/Parallel.h>

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <thread>

#include "executor/memory.h"
#include "executor/mesh.h"
#include "executor/model.h"
#include "executor/pipefusion.h"
#include "executor/run_parts.h"

namespace cpplan::executor {

// Fault injection for the failure tests and drills: CPPLAN_FAULT_KILL="RANK:STEP" makes that
// rank kill itself (SIGKILL, no cleanup) when it reaches that step. -1 when unset.
int fault_step(int rank) {
  const char* spec = std::getenv("CPPLAN_FAULT_KILL");
  int r = -1, step = -1;
  if (!spec || std::sscanf(spec, "%d:%d", &r, &step) != 2 || r != rank) return -1;
  return step;
}

namespace {

int64_t offset_of(const std::vector<int64_t>& lengths, int index) {
  return std::accumulate(lengths.begin(), lengths.begin() + index, int64_t{0});
}

// How attention sees the sequence: the split tokens of every CP rank (its text share, when
// `text_len` splits the text, and its image share), or the text whole in front of the image
// share on every rank (joint models whose CP plan keeps the text whole).
AttentionContext attention_context(Mesh& mesh, const ParallelConfig& pc, const ModelProfile& m,
                                   const std::vector<int64_t>& img_len, const std::vector<int64_t>& text_len,
                                   int64_t text_tokens) {
  AttentionContext c;
  c.mesh = &mesh;
  c.cp = pc.context_parallel_config;
  c.image_lengths = img_len;
  c.cp_lengths = img_len;
  c.linear = m.attention == AttentionKind::kLinear;
  if (m.text_handling != TextHandling::kJoint) return c;
  if (text_len.empty()) c.text_tokens = text_tokens;
  else
    for (std::size_t i = 0; i < img_len.size(); ++i) c.cp_lengths[i] += text_len[i];
  return c;
}

// [batch, tokens] bool: the first `valid` tokens of each prompt count, the rest is padding.
at::Tensor text_valid(int64_t batch, int64_t tokens, int64_t valid, const at::Device& device) {
  return (at::arange(tokens, at::TensorOptions(at::kLong)) < valid).expand({batch, tokens}).contiguous().to(device);
}

}  // namespace

// The key masks of one forward pass: `valid` [B, S_txt] is the text's; image keys all count.
void mask_keys(AttentionContext& c, const at::Tensor& valid, const std::vector<int64_t>& text_len,
               const std::vector<int64_t>& img_len) {
  const int64_t b = valid.size(0);
  const at::TensorOptions opts = valid.options();
  c.key_valid.clear();
  int64_t offset = 0;
  for (std::size_t i = 0; i < img_len.size(); ++i) {
    const at::Tensor image = at::ones({b, img_len[i]}, opts);
    if (text_len.empty()) {
      c.key_valid.push_back(image);
      continue;
    }
    c.key_valid.push_back(at::cat({valid.narrow(1, offset, text_len[i]), image}, 1));
    offset += text_len[i];
  }
  if (text_len.empty()) c.text_valid = valid;
}

int blas_threads() {
  using GetThreads = int (*)();
  static const auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get ? get() : -1;
}

namespace {

// LibTorch's CPU GEMMs run in the BLAS it was built with; Debian's is OpenBLAS on pthreads, whose
// pool at::set_num_threads does not size: it starts with the cores the process was bound to (one,
// for a rank our launcher bound to one core) and stays so when the rank widens to run alone, or
// holds every core in each of several unbound ranks. Sized to the same count here; a BLAS without
// openblas_set_num_threads (MKL follows at::set_num_threads) is left as it is. Only a change is
// made: OpenBLAS's pool must not be resized while another thread runs BLAS (ranks run as threads
// of one test process, each sharing the cores as its process would).
void set_blas_threads(int threads) {
  using SetThreads = void (*)(int);
  static const auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set && blas_threads() != threads) set(threads);
}

void set_threads(int threads) {
  at::set_num_threads(threads);
  set_blas_threads(threads);
}

}  // namespace

void share_cpu_threads(int local_ranks) {
  // Under our launcher a rank is bound to its share of the cores (CPPLAN_RANK_CORES of them) and
  // told every core of the launcher (CPPLAN_HOST_CORES, a list): a rank that runs alone (the
  // probe's one-rank kernels) takes them all, as a one-rank run has them, then returns to its
  // share. Threads start with the affinity of the thread that creates them: widen first.
  static cpu_set_t own;
  static const bool bound = [] {
    CPU_ZERO(&own);
    return std::getenv("CPPLAN_RANK_CORES") && sched_getaffinity(0, sizeof own, &own) == 0;
  }();
  if (bound) {
    cpu_set_t use = own;
    if (const char* host = std::getenv("CPPLAN_HOST_CORES"); host && local_ranks == 1) {
      CPU_ZERO(&use);
      for (const char* p = host; *p;) {
        char* end = nullptr;
        const long core = std::strtol(p, &end, 10);
        if (end == p) break;
        if (core >= 0 && core < CPU_SETSIZE) CPU_SET(static_cast<int>(core), &use);
        p = *end == ',' ? end + 1 : end;
      }
      if (CPU_COUNT(&use) == 0) use = own;
    }
    sched_setaffinity(0, sizeof use, &use);
    set_threads(std::max(1, CPU_COUNT(&use)));
    return;
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  set_threads(std::max(1, cores / std::max(1, local_ranks)));
}

std::vector<int64_t> split_lengths(int64_t length, int parts) {
  std::vector<int64_t> out(parts, length / parts);
  for (int64_t i = 0; i < length % parts; ++i) ++out[i];
  return out;
}

double RunFigures::median_step_ms() const { return percentile_step_ms(0.5); }

double RunFigures::percentile_step_ms(double p) const { return percentile_ms(step_ms, p); }

double RunFigures::median_computed_step_ms() const { return percentile_ms(computed_step_ms, 0.5); }

double RunFigures::median_cached_step_ms() const { return percentile_ms(cached_step_ms, 0.5); }

double percentile_ms(std::vector<double> s, double p) {
  if (s.empty()) return 0;
  std::sort(s.begin(), s.end());
  const double pos = p * (s.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const auto hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

LoadPhase::LoadPhase(const at::Device& device) : device_(device) {
  reset_peak_memory(device_);
  before_bytes_ = memory_in_use_bytes(device_);
}

LoadFigures LoadPhase::end() const {
  return {memory_in_use_bytes(device_) - before_bytes_, peak_memory_bytes(device_)};
}

double parameter_bytes(const Transformers& models) {
  double bytes = 0;
  for (const auto& m : models) bytes += m->parameter_bytes();
  return bytes;
}

// The rank's device before anything lands on it: its share of the host's cores, the current
// CUDA device, the peak-memory counter from zero, and the memory cap of the spec.
void prepare_device(const RunSpec& spec, int world) {
  const char* local_world = std::getenv("LOCAL_WORLD_SIZE");
  share_cpu_threads(local_world ? std::atoi(local_world) : world);
  const DeviceSpec& dev = spec.device;
  if (dev.cuda()) (void)use_cuda_device(dev.device.index());
  reset_peak_memory(dev.device);
  if (spec.max_memory_bytes > 0) limit_memory(dev.device, spec.max_memory_bytes);
}

at::Tensor SequenceShard::local_image(const at::Tensor& x) const {
  if (!image_order.defined()) return x.narrow(1, offset_of(img_len, me), img_len[me]);
  return x.index_select(1, image_order.narrow(0, offset_of(img_len, me), img_len[me]).to(x.device()));
}

at::Tensor SequenceShard::whole_image(const at::Tensor& gathered) const {
  if (!image_order.defined()) return gathered;
  return at::empty_like(gathered).index_copy_(1, image_order.to(gathered.device()), gathered);
}

namespace {

// Every frame of each CP rank's positions (xDiT's Latte under Ring: the split is over spatial
// tokens, so temporal attention stays on the rank): the image tokens (frame-major, f x P + p) in
// CP-rank order, rank i's share the frames of its run of positions; its lengths in `img_len`.
at::Tensor frames_of_positions(int64_t frames, int64_t positions, int cp, std::vector<int64_t>& img_len) {
  const std::vector<int64_t> runs = split_lengths(positions, cp);
  std::vector<at::Tensor> parts;
  img_len.clear();
  int64_t first = 0;
  for (const int64_t n : runs) {
    const at::Tensor p = at::arange(first, first + n, at::kLong);
    parts.push_back((at::arange(frames, at::kLong).unsqueeze(1) * positions + p.unsqueeze(0)).reshape({-1}));
    img_len.push_back(frames * n);
    first += n;
  }
  return at::cat(parts);
}

bool has_temporal_blocks(const ModelProfile& m) {
  return std::any_of(m.blocks.begin(), m.blocks.end(), [](const BlockGroup& g) { return g.temporal; });
}

}  // namespace

SequenceShard shard_sequence(const RunSpec& spec, Mesh& mesh, bool split_text) {
  const ModelProfile& m = *spec.model;
  const DeviceSpec& dev = spec.device;
  const auto seq = compute_sequence(m, spec.resolution, spec.frames, m.text_tokens);
  if (!seq) throw std::runtime_error(seq.error().message);
  SequenceShard s;
  s.image_tokens = seq->image_tokens;
  s.text_tokens = seq->text_tokens;
  const int64_t g = m.pixel_granularity();
  const int cp = mesh.coords().cp_size;
  s.me = mesh.coords().cp();
  s.split_text = split_text;
  s.img_len = split_lengths(s.image_tokens, cp);
  const int64_t rows = spec.resolution.height / g, cols = spec.resolution.width / g;
  const bool frames_whole = spec.config.ring() > 1 && has_temporal_blocks(m);
  if (frames_whole) s.image_order = frames_of_positions(seq->latent_frames, rows * cols, cp, s.img_len);
  s.txt_len = split_text ? split_lengths(s.text_tokens, cp) : std::vector<int64_t>(cp, s.text_tokens);
  s.attention = attention_context(mesh, spec.config, m, s.img_len, s.text_split(), s.text_tokens);
  s.attention.frames = seq->latent_frames;
  s.attention.frames_whole = frames_whole;
  s.attention.grid_rows = rows;
  s.attention.grid_cols = cols;
  s.image_rope = s.local_image(image_rope_angles(seq->latent_frames, rows, cols, m.head_dim).unsqueeze(0))
                     .squeeze(0)
                     .to(dev.device);
  s.text_rope = text_rope_angles(s.txt_len[s.me], m.head_dim).to(dev.device);
  return s;
}

Conditioning draw_inputs(const RunSpec& spec, int64_t s_img, int64_t s_txt) {
  const ModelProfile& m = *spec.model;
  const DeviceSpec& dev = spec.device;
  at::Generator gen = at::detail::createCPUGenerator(spec.seed ^ 0x9e3779b97f4a7c15ULL);
  Conditioning c;
  c.latents = at::randn({spec.batch, s_img, m.in_channels}, gen, at::TensorOptions(at::kFloat)).to(dev.device);
  c.cond = at::randn({spec.batch, s_txt, m.hidden()}, gen, at::TensorOptions(at::kFloat)).to(dev.options());
  c.uncond = at::randn({spec.batch, s_txt, m.hidden()}, gen, at::TensorOptions(at::kFloat)).to(dev.options());
  // Padded prompts: the prompt's tokens, then padding its attention drops (the negative prompt
  // shorter than the prompt).
  if (m.attention_mask) {
    c.cond_valid = text_valid(spec.batch, s_txt, s_txt - s_txt / 4, dev.device);
    c.uncond_valid = text_valid(spec.batch, s_txt, s_txt / 2, dev.device);
  }
  return c;
}

namespace {

// The velocity of the flow on this rank's share: apply_context_parallel's split of the inputs at
// entry and gather of the output at exit, and under true CFG both passes (one per CFG group with
// an all-gather of the predictions, or batched together) combined with the guidance scale. Under
// a step cache (spec.cache given) each pass of a timed step runs through this rank's StepCache.
class Denoiser {
 public:
  Denoiser(const RunSpec& spec, Mesh& mesh, DitModel& model, const SequenceShard& shard, const Conditioning& in)
      : spec_(spec), mesh_(mesh), model_(&model), shard_(shard), in_(in),
        per_replica_(spec.batch / spec.config.dp_degree) {
    const CacheSchedule& c = spec.cache;
    if (!c.computed.empty()) cache_.emplace(c.first_blocks, c.last_blocks, spec.model->total_blocks());
  }

  // The transformer the next passes run (a two-transformer pipeline switches at its boundary):
  // on a switch the cache is cleared (check_cache made the switch's step a computed one).
  void use(DitModel& model) {
    if (cache_ && model_ != &model) cache_->clear();
    model_ = &model;
  }

  // The timed step the next passes belong to, computed or cached as the schedule says; -1 (the
  // warm-up passes): the plain model, the cache left as it is.
  void at_step(int step) { step_ = step; }

  // This data-parallel replica's share of the batch (dimension 0).
  at::Tensor mine(const at::Tensor& t) const {
    return t.narrow(0, mesh_.coords().dp * per_replica_, per_replica_);
  }

  at::Tensor velocity(const at::Tensor& x, double sigma) {
    if (spec_.model->guidance != Guidance::kTrueCfg)
      return forward(x, mine(in_.cond), mine_valid(in_.cond_valid), sigma, CachePass::kCond);
    at::Tensor vc, vu;
    if (spec_.config.cfg_degree == 2) {
      // One pass per CFG group, then one all-gather of the prediction per step.
      const bool c = mesh_.coords().cfg == 0;
      const at::Tensor v = forward(x, mine(c ? in_.cond : in_.uncond),
                                   mine_valid(c ? in_.cond_valid : in_.uncond_valid), sigma,
                                   c ? CachePass::kCond : CachePass::kUncond);
      const at::Tensor both = mesh_.cfg().all_gather_cat(v.unsqueeze(0), 0);
      vc = both[0];
      vu = both[1];
    } else {
      const at::Tensor valid =
          in_.cond_valid.defined() ? at::cat({mine(in_.cond_valid), mine(in_.uncond_valid)}) : at::Tensor();
      const at::Tensor text = at::cat({mine(in_.cond), mine(in_.uncond)});
      const auto two = forward(at::cat({x, x}), text, valid, sigma, CachePass::kBoth).chunk(2);
      vc = two[0];
      vu = two[1];
    }
    return vu + spec_.guidance_scale * (vc - vu);
  }

 private:
  at::Tensor mine_valid(const at::Tensor& t) const { return t.defined() ? mine(t) : t; }

  // One forward pass (of kind `pass`) of the rank's CP share; the output gathered over the CP
  // group, in fp32.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& text, const at::Tensor& valid, double sigma,
                     CachePass pass) {
    const SequenceShard& s = shard_;
    const DeviceSpec& dev = spec_.device;
    ForwardInputs in;
    in.latents = s.local_image(x).to(dev.dtype);
    in.text = s.split_text ? text.narrow(1, offset_of(s.txt_len, s.me), s.txt_len[s.me]) : text;
    in.timestep = at::full({x.size(0)}, sigma, at::TensorOptions(at::kFloat).device(dev.device));
    in.image_rope = s.image_rope;
    in.text_rope = s.text_rope;
    AttentionContext call = s.attention;
    if (valid.defined()) mask_keys(call, valid, s.text_split(), s.img_len);
    const at::Tensor v = cache_ && step_ >= 0
                             ? cache_->forward(*model_, in, call, pass, spec_.cache.computed_at(step_))
                             : model_->forward(in, call);
    return s.whole_image(mesh_.cp().all_gather_uneven(v, 1, s.img_len)).to(at::kFloat);
  }

  const RunSpec& spec_;
  Mesh& mesh_;
  DitModel* model_;
  const SequenceShard& shard_;
  const Conditioning& in_;
  const int64_t per_replica_;
  std::optional<StepCache> cache_;  // this rank's; none without a schedule
  int step_ = -1;
};

// The denoising loop on `x` (this replica's latents, updated in place): the warm-up passes (at
// sigma 1: the first transformer's, the whole model, the step cache untouched: it is empty when
// the timed steps start), then the timed Euler steps, each with its step's transformer.
StepTimes denoise(const RunSpec& spec, Mesh& mesh, Denoiser& denoiser, const Transformers& models, at::Tensor& x,
                  int rank) {
  for (int i = 0; i < spec.warmup; ++i) (void)denoiser.velocity(x, 1.0);
  return timed_steps(spec, mesh, rank, [&](int i, double sigma, double next) {
    denoiser.use(*models[transformer_at(i, spec.steps, static_cast<int>(models.size()))]);
    denoiser.at_step(i);
    x = x + (next - sigma) * denoiser.velocity(x, sigma);
  });
}

}  // namespace

int transformer_at(int step, int steps, int transformers) {
  return transformers > 1 && step >= (steps + 1) / 2 ? 1 : 0;
}

std::optional<HostCpuTime> host_cpu_time() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  if (!(in >> cpu) || cpu != "cpu") return std::nullopt;
  // user nice system idle iowait irq softirq steal (guest time is counted in user already)
  HostCpuTime t;
  double v = 0;
  for (int i = 0; i < 8 && in >> v; ++i) {
    t.total += v;
    if (i == 7) t.steal = v;
  }
  return t;
}

double host_steal_fraction(const std::optional<HostCpuTime>& from, const std::optional<HostCpuTime>& to) {
  if (!from || !to || to->total <= from->total) return -1;
  return (to->steal - from->steal) / (to->total - from->total);
}

StepTimes timed_steps(const RunSpec& spec, Mesh& mesh, int rank, const std::function<void(int, double, double)>& step) {
  StepTimes out;
  const CommStats before = mesh.stats();
  const int kill_at = fault_step(rank);
  StepTimer timer(spec.device.device);
  synchronize(spec.device.device);
  const std::optional<HostCpuTime> cpu_before = host_cpu_time();
  for (int i = 0; i < spec.steps; ++i) {
    if (i == kill_at) raise(SIGKILL);
    const double sigma = 1.0 - static_cast<double>(i) / spec.steps;
    const double next = 1.0 - static_cast<double>(i + 1) / spec.steps;
    const double comm0 = mesh.stats().seconds;
    timer.start();
    step(i, sigma, next);
    out.step_ms.push_back(timer.stop_ms());
    out.comm_ms.push_back((mesh.stats().seconds - comm0) * 1e3);
  }
  out.bytes_per_step = (mesh.stats().bytes_sent - before.bytes_sent) / std::max(1, spec.steps);
  out.steal_fraction = host_steal_fraction(cpu_before, host_cpu_time());
  return out;
}

// Figures of every rank to rank 0 (step times, comm per step, bytes, peak memory) and the final
// latents of every replica; the run's figures on rank 0 (the slowest rank's per step), empty on
// the others. Every rank must call it: both gathers are collectives.
RunFigures gather_figures(const RunSpec& spec, Mesh& mesh, const StepTimes& times, const at::Tensor& x, int rank,
                          int world) {
  const DeviceSpec& dev = spec.device;
  std::vector<double> mine_figures = times.step_ms;
  mine_figures.insert(mine_figures.end(), times.comm_ms.begin(), times.comm_ms.end());
  mine_figures.push_back(times.bytes_per_step);
  mine_figures.push_back(peak_memory_bytes(dev.device));
  mine_figures.push_back(times.load.held_bytes);
  mine_figures.push_back(times.load.build_peak_bytes);
  mine_figures.push_back(times.load.param_bytes);
  // Gathered over the run's own groups: on NCCL the tensors must live on the GPU.
  const at::Tensor local = at::tensor(mine_figures, at::kDouble).to(dev.device);
  const at::Tensor all = mesh.world().all_gather_cat(local.unsqueeze(0), 0).cpu();
  const at::Tensor final_latents = mesh.dp().all_gather_cat(x, 0).cpu();

  RunFigures f;
  if (rank != 0) return f;
  const int64_t n = spec.steps;
  const at::Tensor steps_all = all.narrow(1, 0, n), comm_all = all.narrow(1, n, n);
  const at::Tensor slowest = std::get<0>(steps_all.max(0));
  for (int64_t i = 0; i < n; ++i) f.step_ms.push_back(slowest[i].item<double>());
  for (int i = 0; i < spec.steps; ++i)
    (spec.cache.computed_at(i) ? f.computed_step_ms : f.cached_step_ms).push_back(f.step_ms[i]);
  const at::Tensor compute = (steps_all - comm_all).mean(1);
  f.compute_ms = compute.max().item<double>();
  f.comm_ms = comm_all.mean(1).max().item<double>();
  f.bytes_sent = all.select(1, 2 * n).max().item<double>();
  for (int r = 0; r < world; ++r) {
    f.peak_mem_bytes.push_back(all[r][2 * n + 1].item<double>());
    f.load_mem_bytes.push_back(all[r][2 * n + 2].item<double>());
    f.load_build_peak_bytes.push_back(all[r][2 * n + 3].item<double>());
    f.param_bytes.push_back(all[r][2 * n + 4].item<double>());
  }
  f.latents = final_latents;
  f.steal_fraction = times.steal_fraction;  // rank 0's host
  return f;
}

Result<bool> check_cache(const RunSpec& spec) {
  const CacheSchedule& c = spec.cache;
  if (c.computed.empty()) return true;
  const ModelProfile& m = *spec.model;
  if (auto v = validate(c, spec.steps, m.total_blocks()); !v) return v;
  if (spec.config.pp() > 1)
    return Error{fmt::format("cache with pipefusion degree = {}: must be 1 (PipeFusion's stages run no step cache)",
                             spec.config.pp())};
  for (const BlockGroup& g : m.blocks)
    if (g.skip)
      return Error{fmt::format("cache on {}: its blocks with skip = true run no step cache (the long skips its middle "
                               "blocks leave have no residual)",
                               m.name)};
  for (int i = 1; i < spec.steps; ++i) {
    const int t = transformer_at(i, spec.steps, m.transformers);
    if (t != transformer_at(i - 1, spec.steps, m.transformers) && !c.computed[i])
      return Error{fmt::format("cache computed[{}] = false: step {} is the first of {}'s transformer {}, whose cache "
                               "starts empty; it must be computed",
                               i, i, m.name, t + 1)};
  }
  return true;
}

RunFigures run_rank(const RunSpec& spec, const c10::intrusive_ptr<c10d::Store>& store, int rank, int world) {
  if (auto c = check_cache(spec); !c) throw std::invalid_argument(c.error().message);
  prepare_device(spec, world);
  const DeviceSpec& dev = spec.device;
  const ParallelConfig& pc = spec.config;
  Mesh mesh(store, rank, pc, spec.timeout, dev.device,
            spec.sync_collectives ? CollectiveTiming::kSynchronized : CollectiveTiming::kEvents);
  const CpVariant variant = classify(pc.context_parallel_config);
  if (pc.pp() > 1) return run_pipefusion_rank(spec, mesh, rank, world);
  // The load phase opens here (the mesh's set-up is not the model's); the run's peak, read at
  // the end, counts from here too: the weights are held throughout.
  const LoadPhase loading(dev.device);
  Transformers models;  // transformer t's weights drawn from seed + t; all of them held
  for (int t = 0; t < spec.model->transformers; ++t)
    models.push_back(
        build_model(*spec.model, spec.seed + t, mesh.tp(), mesh.fs(), dev, attention_op(variant), {}, spec.weight_draws.get()));
  LoadFigures load = loading.end();
  load.param_bytes = parameter_bytes(models);
  const SequenceShard shard = shard_sequence(spec, mesh, models[0]->cp_plan().split_text);
  const Conditioning inputs = draw_inputs(spec, shard.image_tokens, shard.text_tokens);
  Denoiser denoiser(spec, mesh, *models[0], shard, inputs);
  at::Tensor x = denoiser.mine(inputs.latents).clone();
  StepTimes times = denoise(spec, mesh, denoiser, models, x, rank);
  times.load = load;
  return gather_figures(spec, mesh, times, x, rank, world);
}

}  // namespace cpplan::executor
