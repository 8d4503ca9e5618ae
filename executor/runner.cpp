#include "executor/runner.h"

#include <ATen/CPUGeneratorImpl.h>
#include <sched.h>
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <ATen/Parallel.h>

#include <algorithm>
#include <numeric>
#include <thread>

#include "executor/memory.h"
#include "executor/mesh.h"
#include "executor/model.h"

namespace cpplan::executor {

namespace {

// Fault injection for the failure tests and drills: CPPLAN_FAULT_KILL="RANK:STEP" makes that
// rank kill itself (SIGKILL, no cleanup) when it reaches that step. -1 when unset.
int fault_step(int rank) {
  const char* spec = std::getenv("CPPLAN_FAULT_KILL");
  int r = -1, step = -1;
  if (!spec || std::sscanf(spec, "%d:%d", &r, &step) != 2 || r != rank) return -1;
  return step;
}

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
    at::set_num_threads(std::max(1, CPU_COUNT(&use)));
    return;
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(std::max(1, cores / std::max(1, local_ranks)));
}

std::vector<int64_t> split_lengths(int64_t length, int parts) {
  std::vector<int64_t> out(parts, length / parts);
  for (int64_t i = 0; i < length % parts; ++i) ++out[i];
  return out;
}

double RunFigures::median_step_ms() const { return percentile_step_ms(0.5); }

double RunFigures::percentile_step_ms(double p) const {
  if (step_ms.empty()) return 0;
  std::vector<double> s = step_ms;
  std::sort(s.begin(), s.end());
  const double pos = p * (s.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const auto hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

RunFigures run_rank(const RunSpec& spec, const c10::intrusive_ptr<c10d::Store>& store, int rank, int world) {
  const ModelProfile& m = *spec.model;
  const ParallelConfig& pc = spec.config;
  const char* local_world = std::getenv("LOCAL_WORLD_SIZE");
  share_cpu_threads(local_world ? std::atoi(local_world) : world);
  const DeviceSpec& dev = spec.device;
  if (dev.cuda()) (void)use_cuda_device(dev.device.index());
  reset_peak_memory(dev.device);
  if (spec.max_memory_bytes > 0) limit_memory(dev.device, spec.max_memory_bytes);
  Mesh mesh(store, rank, pc, spec.timeout, dev.device,
            spec.sync_collectives ? CollectiveTiming::kSynchronized : CollectiveTiming::kEvents);
  const MeshCoords& xy = mesh.coords();
  const CpVariant variant = classify(pc.context_parallel_config);
  auto model = build_model(m, spec.seed, mesh.tp(), dev, attention_op(variant));
  const bool split_text = model->cp_plan().split_text;

  // Geometry and the CP split (the same rule on every rank).
  const auto seq = compute_sequence(m, spec.resolution, spec.frames, m.text_tokens);
  if (!seq) throw std::runtime_error(seq.error().message);
  const int64_t s_img = seq->image_tokens, s_txt = seq->text_tokens, g = m.pixel_granularity();
  const int cp = xy.cp_size, me = xy.cp();
  const auto img_len = split_lengths(s_img, cp);
  const auto txt_len = split_text ? split_lengths(s_txt, cp) : std::vector<int64_t>(cp, s_txt);
  const AttentionContext actx = attention_context(mesh, pc, m, img_len, split_text ? txt_len : std::vector<int64_t>{}, s_txt);
  const at::Tensor image_rope = image_rope_angles(seq->latent_frames, spec.resolution.height / g,
                                                  spec.resolution.width / g, m.head_dim)
                                    .narrow(0, offset_of(img_len, me), img_len[me])
                                    .to(dev.device);
  const at::Tensor text_rope = text_rope_angles(txt_len[me], m.head_dim).to(dev.device);

  // The same noise and text embeddings as a single-rank run (drawn on CPU on every device); this
  // replica's share of the batch. Latents stay fp32; the model sees them in its dtype.
  at::Generator gen = at::detail::createCPUGenerator(spec.seed ^ 0x9e3779b97f4a7c15ULL);
  const at::Tensor latents = at::randn({spec.batch, s_img, m.in_channels}, gen, at::TensorOptions(at::kFloat)).to(dev.device);
  const at::Tensor cond = at::randn({spec.batch, s_txt, m.hidden()}, gen, at::TensorOptions(at::kFloat)).to(dev.options());
  const at::Tensor uncond = at::randn({spec.batch, s_txt, m.hidden()}, gen, at::TensorOptions(at::kFloat)).to(dev.options());
  // A model with a text attention mask (Qwen-Image) sees padded prompts: the prompt's tokens, then
  // padding its attention drops (the negative prompt shorter than the prompt).
  const at::Tensor cond_valid = m.attention_mask ? text_valid(spec.batch, s_txt, s_txt - s_txt / 4, dev.device) : at::Tensor();
  const at::Tensor uncond_valid = m.attention_mask ? text_valid(spec.batch, s_txt, s_txt / 2, dev.device) : at::Tensor();
  const int64_t per_replica = spec.batch / pc.dp_degree;
  auto mine = [&](const at::Tensor& t) { return t.narrow(0, xy.dp * per_replica, per_replica); };

  // apply_context_parallel: split the inputs at entry, gather the output at exit.
  auto forward = [&](const at::Tensor& x, const at::Tensor& text, const at::Tensor& valid, double sigma) {
    ForwardInputs in;
    in.latents = x.narrow(1, offset_of(img_len, me), img_len[me]).to(dev.dtype);
    in.text = split_text ? text.narrow(1, offset_of(txt_len, me), txt_len[me]) : text;
    in.timestep = at::full({x.size(0)}, sigma, at::TensorOptions(at::kFloat).device(dev.device));
    in.image_rope = image_rope;
    in.text_rope = text_rope;
    AttentionContext call = actx;
    if (valid.defined()) mask_keys(call, valid, split_text ? txt_len : std::vector<int64_t>{}, img_len);
    return mesh.cp().all_gather_uneven(model->forward(in, call), 1, img_len).to(at::kFloat);
  };
  const bool true_cfg = m.guidance == Guidance::kTrueCfg;
  auto mine_valid = [&](const at::Tensor& t) { return t.defined() ? mine(t) : t; };
  auto velocity = [&](const at::Tensor& x, double sigma) {
    if (!true_cfg) return forward(x, mine(cond), mine_valid(cond_valid), sigma);
    at::Tensor vc, vu;
    if (pc.cfg_degree == 2) {
      // One pass per CFG group, then one all-gather of the prediction per step.
      const bool c = xy.cfg == 0;
      const at::Tensor v = forward(x, mine(c ? cond : uncond), mine_valid(c ? cond_valid : uncond_valid), sigma);
      const at::Tensor both = mesh.cfg().all_gather_cat(v.unsqueeze(0), 0);
      vc = both[0];
      vu = both[1];
    } else {
      const at::Tensor valid = cond_valid.defined() ? at::cat({mine(cond_valid), mine(uncond_valid)}) : at::Tensor();
      const auto two = forward(at::cat({x, x}), at::cat({mine(cond), mine(uncond)}), valid, sigma).chunk(2);
      vc = two[0];
      vu = two[1];
    }
    return vu + spec.guidance_scale * (vc - vu);
  };

  at::Tensor x = mine(latents).clone();
  for (int i = 0; i < spec.warmup; ++i) (void)velocity(x, 1.0);

  std::vector<double> step_ms, comm_ms;
  const CommStats before = mesh.stats();
  const int kill_at = fault_step(rank);
  StepTimer timer(dev.device);
  synchronize(dev.device);
  for (int i = 0; i < spec.steps; ++i) {
    if (i == kill_at) raise(SIGKILL);
    const double sigma = 1.0 - static_cast<double>(i) / spec.steps;
    const double next = 1.0 - static_cast<double>(i + 1) / spec.steps;
    const double comm0 = mesh.stats().seconds;
    timer.start();
    x = x + (next - sigma) * velocity(x, sigma);
    step_ms.push_back(timer.stop_ms());
    comm_ms.push_back((mesh.stats().seconds - comm0) * 1e3);
  }
  const double bytes_per_step = (mesh.stats().bytes_sent - before.bytes_sent) / std::max(1, spec.steps);

  // Figures of every rank to rank 0: step times, comm per step, bytes, peak memory.
  std::vector<double> mine_figures = step_ms;
  mine_figures.insert(mine_figures.end(), comm_ms.begin(), comm_ms.end());
  mine_figures.push_back(bytes_per_step);
  mine_figures.push_back(peak_memory_bytes(dev.device));
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
  const at::Tensor compute = (steps_all - comm_all).mean(1);
  f.compute_ms = compute.max().item<double>();
  f.comm_ms = comm_all.mean(1).max().item<double>();
  f.bytes_sent = all.select(1, 2 * n).max().item<double>();
  for (int r = 0; r < world; ++r) f.peak_mem_bytes.push_back(all[r][2 * n + 1].item<double>());
  f.latents = final_latents;
  return f;
}

}  // namespace cpplan::executor
