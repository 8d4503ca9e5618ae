#pragma once
// The parts of one rank's run that the plain denoising loop (runner.cpp) and PipeFusion's
// (pipefusion.cpp) share: the device's preparation, the sequence's geometry, the inputs every
// rank draws alike, and the figures gathered on rank 0. Internal to the executor.

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "executor/attention.h"
#include "executor/mesh.h"
#include "executor/model.h"
#include "executor/runner.h"

namespace cpplan::executor {

// Fault injection for the failure tests and drills: CPPLAN_FAULT_KILL="RANK:STEP" makes that
// rank kill itself (SIGKILL, no cleanup) when it reaches that step. -1 when unset.
int fault_step(int rank);

// The rank's device before anything lands on it: its share of the host's cores, the current
// CUDA device, the peak-memory counter from zero, and the memory cap of the spec.
void prepare_device(const RunSpec& spec, int world);

// The geometry of the sequence and its CP split (the same rule on every rank): tokens per CP
// rank, how attention sees them, and the rotary angles of this rank's tokens.
struct SequenceShard {
  int64_t image_tokens = 0, text_tokens = 0;  // of the whole sequence
  std::vector<int64_t> img_len, txt_len;      // per CP rank; txt_len: the whole text on each unless split
  int me = 0;                                 // this rank in the CP group
  bool split_text = false;                    // the model's CP plan splits the text with the image
  AttentionContext attention;
  at::Tensor image_rope, text_rope;
  // The image tokens in CP-rank order when the shares are not runs of the sequence (Ring over the
  // spatial tokens of a model with temporal blocks: rank i holds every frame of its positions);
  // undefined when rank i holds the i-th run of img_len.
  at::Tensor image_order;
  // This rank's image tokens of x [B, S_img, C], and the whole sequence from the CP ranks' outputs
  // gathered in rank order.
  at::Tensor local_image(const at::Tensor& x) const;
  at::Tensor whole_image(const at::Tensor& gathered) const;
  // The text's split for attention and key masks: empty when the text stays whole.
  std::vector<int64_t> text_split() const { return split_text ? txt_len : std::vector<int64_t>{}; }
};

// The shard of `mesh`'s CP group for this rank; `split_text`: the model's CP plan splits the text.
SequenceShard shard_sequence(const RunSpec& spec, Mesh& mesh, bool split_text);

// The key masks of one forward pass into c.key_valid (per CP rank: its text share, when
// `text_len` splits the text, then its `img_len` image keys) and c.text_valid (the whole text's);
// `valid` [B, S_txt] is the text's, image keys all count.
void mask_keys(AttentionContext& c, const at::Tensor& valid, const std::vector<int64_t>& text_len,
               const std::vector<int64_t>& img_len);

// The inputs of the whole batch, the same as a single-rank run's: noise and text embeddings
// drawn on CPU on every device (latents in fp32, the model sees them in its dtype), and for a
// model with a text attention mask (Qwen-Image) the prompts' valid tokens.
struct Conditioning {
  at::Tensor latents, cond, uncond;
  at::Tensor cond_valid, uncond_valid;  // undefined without a text mask
};

// Noise latents [batch, S_img, C] and prompts [batch, S_txt, hidden] from the spec's seed.
Conditioning draw_inputs(const RunSpec& spec, int64_t s_img, int64_t s_txt);

// The load phase of a rank: the bytes its transformers hold once built (what the cost model's
// load phase holds: the weights once loaded), and the most its tensors held while they were built
// (beyond them: each full weight drawn before its TP shard is cut, and a PipeFusion stage's other
// blocks drawn and dropped, to keep every plan's draws the single rank's).
struct LoadFigures {
  double held_bytes = 0, build_peak_bytes = 0;
  double param_bytes = 0;  // the weights' own bytes, every transformer's (DitModel::parameter_bytes)
};
// Opens the load phase on `device` (the allocator's peak starts over); end() closes it.
class LoadPhase {
 public:
  explicit LoadPhase(const at::Device& device);
  LoadFigures end() const;

 private:
  at::Device device_;
  double before_bytes_ = 0;
};

// This host's CPU time so far from /proc/stat's first line, in jiffies: all of it and the part the
// hypervisor gave to other guests (steal); nullopt where there is no such line (not Linux).
struct HostCpuTime {
  double total = 0, steal = 0;
};
std::optional<HostCpuTime> host_cpu_time();
// Of this host's CPU time between `from` and `to`, the hypervisor's share; -1 without both.
double host_steal_fraction(const std::optional<HostCpuTime>& from, const std::optional<HostCpuTime>& to);

// This rank's own measurements of the timed steps.
struct StepTimes {
  std::vector<double> step_ms, comm_ms;  // per timed step: the whole step, time inside collectives
  double bytes_per_step = 0;             // sent by this rank
  LoadFigures load;                      // the load phase, before the steps
  double steal_fraction = -1;            // host_steal_fraction over the steps; -1 where unread
};

// The transformer of a pipeline of `transformers` (Wan2.2 A14B: 2) that denoising step `step` of
// `steps` runs: the first ceil(steps / 2) steps the high-noise one (0), the rest the low-noise one (1).
int transformer_at(int step, int steps, int transformers);
// Every transformer of the pipeline, as this rank holds it.
using Transformers = std::vector<std::unique_ptr<DitModel>>;
// Bytes in the weights of every transformer as this rank holds them (DitModel::parameter_bytes).
double parameter_bytes(const Transformers& models);

// The timed flow-matching Euler steps from sigma 1 to 0: `step(i, sigma, next)` does this rank's
// part of step i; each is timed with the collectives inside it, and CPPLAN_FAULT_KILL may end the
// rank at a step (fault_step). Shared by the runner's loop and PipeFusion's.
StepTimes timed_steps(const RunSpec& spec, Mesh& mesh, int rank, const std::function<void(int, double, double)>& step);

// Figures of every rank to rank 0 and the final latents of every replica (`x` of this rank's
// replica); the run's figures on rank 0, empty on the others. Every rank must call it.
RunFigures gather_figures(const RunSpec& spec, Mesh& mesh, const StepTimes& times, const at::Tensor& x, int rank,
                          int world);

}  // namespace cpplan::executor
