#include "executor/pipefusion.h"

#include <algorithm>
#include <csignal>
#include <numeric>
#include <stdexcept>

#include "core/pipefusion.h"
#include "executor/device.h"
#include "executor/model.h"
#include "executor/run_parts.h"

namespace cpplan::executor {

at::Tensor self_attention(const AttentionOp& op, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          AttentionContext& ctx) {
  // Under CP inside the stage the op caches its keys itself (PatchKvCache::cached).
  if (ctx.patch_kv && !ctx.patch_kv->cp()) return ctx.patch_kv->attend(q, k, v, ctx.linear);
  return op.forward(q, k, v, ctx);
}

std::pair<at::Tensor, at::Tensor> cached_keys(AttentionContext& ctx, const at::Tensor& k, const at::Tensor& v,
                                              int first, int count) {
  return ctx.patch_kv->cached(k, v, first, count);
}

void PatchKvCache::begin_forward(const at::Tensor& image_index, int64_t image_tokens, int64_t text,
                                 const at::Tensor& text_valid) {
  index_ = image_index;
  image_tokens_ = image_tokens;
  text_ = text;
  text_valid_ = text_valid;
  next_ = next_rows_ = 0;
}

namespace {

// Offsets into `index` (ascending image tokens) of the first and last halo tokens of each of its
// runs of consecutive tokens: a row of `cols`, or a row and one token when the run does not start
// and end at a row's edge (the diagonal neighbour; executor/model.cpp's conv_halo).
at::Tensor run_ends(const at::Tensor& index, int64_t cols) {
  const at::Tensor host = index.cpu().contiguous();
  const int64_t* p = host.data_ptr<int64_t>();
  const int64_t n = host.size(0);
  std::vector<int64_t> out;
  for (int64_t start = 0; start < n;) {
    int64_t end = start + 1;
    while (end < n && p[end] == p[end - 1] + 1) ++end;
    const int64_t length = end - start;
    const bool rows = p[start] % cols == 0 && length % cols == 0;
    const int64_t halo = rows ? cols : cols + 1;
    if (length <= 2 * halo) {  // the whole run, once
      for (int64_t i = start; i < end; ++i) out.push_back(i);
    } else {
      for (int64_t i = 0; i < halo; ++i) out.push_back(start + i);
      for (int64_t i = 0; i < halo; ++i) out.push_back(end - halo + i);
    }
    start = end;
  }
  return at::tensor(out, at::kLong).to(index.device());
}

}  // namespace

at::Tensor PatchKvCache::image_rows(const at::Tensor& x, Comm* cp, int64_t cols) {
  if (rows_.size() <= next_rows_) rows_.resize(next_rows_ + 1);
  at::Tensor& b = rows_[next_rows_++];
  const std::vector<int64_t> shape = {x.size(0), image_tokens_, x.size(2)};
  if (!b.defined() || b.sizes() != at::IntArrayRef(shape)) b = at::zeros(shape, x.options());
  b.index_copy_(1, index_, x);
  if (!cp || cp->size() <= 1 || pass_.empty()) return b;
  std::vector<at::Tensor> ends;  // every CP rank's, as tokens of the image
  std::vector<int64_t> lengths;
  at::Tensor mine;
  for (int r = 0; r < cp->size(); ++r) {
    const at::Tensor at_run = run_ends(pass_[r], cols);
    if (r == cp->rank()) mine = x.index_select(1, at_run).contiguous();
    ends.push_back(pass_[r].index_select(0, at_run));
    lengths.push_back(at_run.size(0));
  }
  b.index_copy_(1, at::cat(ends), cp->all_gather_uneven(mine, 1, lengths));
  return b;
}

PatchKvCache::Buffer& PatchKvCache::buffer(std::size_t call, const at::Tensor& like, int64_t tokens) {
  if (buffers_.size() <= call) buffers_.resize(call + 1);
  Buffer& b = buffers_[call];
  const std::vector<int64_t> shape = {like.size(0), like.size(1), tokens, like.size(3)};
  // Zeros until written: only read before a write when the run has no warm-up step (W = 0).
  if (!b.k.defined() || b.k.sizes() != at::IntArrayRef(shape)) {
    b.k = at::zeros(shape, like.options());
    b.v = at::zeros(shape, like.options());
  }
  return b;
}

void PatchKvCache::write(at::Tensor& buffer, const at::Tensor& x, int64_t front) const {
  if (front > 0) buffer.narrow(2, 0, front).copy_(x.narrow(2, 0, front));
  buffer.narrow(2, front, image_tokens_).index_copy_(2, index_, x.narrow(2, front, x.size(2) - front));
}

void PatchKvCache::set_cp_layout(std::vector<at::Tensor> owned, std::vector<int64_t> text_split) {
  owned_ = std::move(owned);
  text_split_ = std::move(text_split);
}

at::Tensor PatchKvCache::key_ids(const std::vector<at::Tensor>& image, int first, int count, bool text) const {
  const int64_t text_total = std::accumulate(text_split_.begin(), text_split_.end(), int64_t{0});
  const at::TensorOptions opts = image[first].options();
  std::vector<at::Tensor> ids;
  for (int r = first; r < first + count; ++r) {
    if (text) {
      const int64_t from = std::accumulate(text_split_.begin(), text_split_.begin() + r, int64_t{0});
      ids.push_back(at::arange(from, from + text_split_[r], opts));
    }
    ids.push_back(image[r] + text_total);
  }
  return at::cat(ids);
}

std::pair<at::Tensor, at::Tensor> PatchKvCache::cached(const at::Tensor& k, const at::Tensor& v, int first,
                                                      int count) {
  int64_t image = 0, text = 0;
  for (int r = first; r < first + count; ++r) {
    image += pass_[r].size(0);
    if (!text_split_.empty()) text += text_split_[r];
  }
  const bool with_text = k.size(2) != image;  // an image-only attention (SD3.5-medium's second) has none
  TORCH_CHECK(!with_text || k.size(2) == image + text, "PipeFusion: cached keys of ", k.size(2), " tokens for ",
              image, " image and ", text, " text tokens");
  const at::Tensor owned = key_ids(owned_, first, count, with_text);
  const int64_t text_total = std::accumulate(text_split_.begin(), text_split_.end(), int64_t{0});
  const int64_t ids = text_total + image_tokens_;
  // slot[id]: the id's place among the owned keys.
  const at::Tensor slot = at::full({ids}, -1, owned.options());
  slot.index_copy_(0, owned, at::arange(owned.size(0), owned.options()));
  const at::Tensor where = slot.index_select(0, key_ids(pass_, first, count, with_text));
  Buffer& b = buffer(next_++, k, owned.size(0));
  b.k.index_copy_(2, where, k);
  b.v.index_copy_(2, where, v);
  return {b.k, b.v};
}

at::Tensor PatchKvCache::attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool linear) {
  const int64_t patch = index_.size(0);
  const bool joint = text_ > 0 && q.size(2) == text_ + patch;
  TORCH_CHECK(joint || q.size(2) == patch, "PipeFusion: an attention over ", q.size(2), " tokens for a patch of ",
              patch, " image tokens and ", text_, " text tokens");
  const int64_t front = joint ? text_ : 0;  // an image-only attention (SD3.5-medium's second) has no text
  Buffer& b = buffer(next_++, k, front + image_tokens_);
  write(b.k, k, front);
  write(b.v, v, front);
  if (linear) return apply_linear_attention(q, linear_attention_state(b.k, b.v));
  at::Tensor valid;
  if (joint && text_valid_.defined())
    valid = at::cat({text_valid_, at::ones({text_valid_.size(0), image_tokens_}, text_valid_.options())}, 1);
  return attention_local(q, b.k, b.v, valid);
}

namespace {

// A patch of the latent: its image tokens, ascending indices into the whole image sequence.
struct Patch {
  at::Tensor index;
  int64_t tokens = 0;
};

// xDiT's patches (core/pipefusion's xdit_patch_split, no sequence parallelism inside a stage):
// whole latent rows, the same rows of every latent frame (tokens lie frame, row, column). One
// patch of every row is the whole image.
std::vector<Patch> cut_patches(const ModelProfile& m, int64_t frames, int64_t rows, int64_t cols, int patches,
                               const at::Device& device) {
  std::vector<Patch> out;
  int64_t first = 0;
  for (const int64_t n : patch_rows(xdit_patch_split(rows * m.patch_spatial, m.patch_spatial, 1, patches))) {
    std::vector<at::Tensor> parts;
    for (int64_t f = 0; f < frames; ++f)
      parts.push_back(at::arange((f * rows + first) * cols, (f * rows + first + n) * cols, at::kLong));
    const at::Tensor index = at::cat(parts).to(device);
    out.push_back({index, index.size(0)});
    first += n;
  }
  return out;
}

// The blocks of this rank's stage: xDiT's split of the model's blocks (core/pipefusion).
BlockRange stage_blocks(const ModelProfile& m, int stage, int stages) {
  const std::vector<int> split = pipefusion_stage_blocks(m.total_blocks(), stages);
  return {std::accumulate(split.begin(), split.begin() + stage, 0), split[stage]};
}

// The long skips (HunyuanDiT) that cross into a stage whose first block is `first`: the outputs of
// blocks j < first whose consumer, block L - 1 - j of the last K (the skip blocks, last in first
// out; core/pipefusion.h), lies at or beyond it.
int64_t skips_into(const ModelProfile& m, int first) {
  int skips = 0;
  for (const BlockGroup& g : m.blocks)
    if (g.skip) skips += g.count;
  const int last = m.total_blocks() - 1;
  int64_t out = 0;
  for (int j = 0; j < std::min(skips, first); ++j)
    if (last - j >= first) ++out;
  return out;
}

// One stage of one pipeline (its CFG branch and data-parallel replica) over the steps.
class PipeFusionStage {
 public:
  PipeFusionStage(const RunSpec& spec, Mesh& mesh, const DitModel& model, const SequenceShard& shard,
                  const Conditioning& in);

  // This replica's share of the batch (dimension 0).
  at::Tensor mine(const at::Tensor& t) const {
    return t.defined() ? t.narrow(0, mesh_.coords().dp * per_replica_, per_replica_) : t;
  }
  // One pass of every patch (`whole`: the whole sequence as one patch) from `sigma`; stage 0 then
  // moves `x` (its latents) to `next` with the velocity, unless `update` is false (warm-up passes).
  void step(at::Tensor& x, double sigma, double next, bool whole, bool update);
  // The transformer the next passes run (a two-transformer pipeline switches at its boundary).
  void use(const DitModel& model) { model_ = &model; }

 private:
  ForwardInputs inputs(const Patch& p, const at::Tensor& x, double sigma) const;
  // The stage's blocks on patch `p`: its hidden states from stage s - 1 (stage 0 embeds them), to
  // stage s + 1; the last stage sends the patch's velocity to stage 0. The joint text's states
  // travel with the patch only `with_text` (a whole-sequence pass, or patch 0 of a pipelined
  // step): xDiT sends them once per step, and a stage runs the other patches with those it got.
  // `patch`: p's number in the step, -1 for a whole-sequence pass.
  void pass(const Patch& p, int patch, const ForwardInputs& in, int tag, bool with_text);
  // Patch p's hidden states from stage s - 1: [text; image], the text received with patch 0 when
  // it did not come along.
  at::Tensor receive(const Patch& p, int tag, bool with_text);
  // The velocity of the flow from this pipeline's prediction (fp32): under true CFG both passes
  // combined with the guidance scale (one all-gather over the CFG group, or the batched halves).
  at::Tensor guided(const at::Tensor& v);
  // Under CP, on stage 0: the step's predictions of this rank's tokens (its patches in step order)
  // all-gathered over the CP group once per step (as the plain loop gathers its output), guided,
  // and every token of `x` moved by dt times the velocity unless `update` is false.
  void update_all(at::Tensor& x, const std::vector<at::Tensor>& velocity, double dt, bool update);

  const RunSpec& spec_;
  Mesh& mesh_;
  const DitModel* model_;
  const SequenceShard& shard_;
  PatchKvCache kv_;
  int64_t per_replica_ = 0, samples_ = 0, joint_text_ = 0;
  int64_t skips_in_ = 0;  // long skips that arrive with the hidden states from stage s - 1
  bool true_cfg_ = false, batched_cfg_ = false;
  at::Tensor text_, text_valid_;
  at::Tensor text_states_;  // the joint text's hidden states received with this step's patch 0
  at::Tensor image_rope_;   // of the whole image
  // This rank's patches and its whole-sequence pass (under CP: its run of each patch, and their
  // union), and under CP every CP rank's (cp_patches_[c][i], cp_whole_[c]).
  std::vector<Patch> patches_, whole_;
  std::vector<std::vector<Patch>> cp_patches_;
  std::vector<Patch> cp_whole_;
  AttentionContext attention_;  // the shard's, with the split keys' masks over the owned tokens
};

// Context parallelism inside a stage: each of xDiT's patches cut into `cp` equal runs (the rule:
// each patch's tokens split evenly over r x u), CP rank c holding run c; `whole[c]`: the union of
// c's runs, its share of a whole-sequence pass.
std::vector<std::vector<Patch>> split_patches(const std::vector<Patch>& patches, int cp, std::vector<Patch>& whole) {
  std::vector<std::vector<Patch>> out(cp);
  whole.assign(cp, Patch{});
  for (int c = 0; c < cp; ++c) {
    std::vector<at::Tensor> runs;
    for (const Patch& p : patches) {
      const std::vector<int64_t> lengths = split_lengths(p.tokens, cp);
      const int64_t first = std::accumulate(lengths.begin(), lengths.begin() + c, int64_t{0});
      const at::Tensor run = p.index.narrow(0, first, lengths[c]);
      out[c].push_back({run, lengths[c]});
      runs.push_back(run);
    }
    const at::Tensor index = at::cat(runs);
    whole[c] = {index, index.size(0)};
  }
  return out;
}

PipeFusionStage::PipeFusionStage(const RunSpec& spec, Mesh& mesh, const DitModel& model, const SequenceShard& shard,
                                 const Conditioning& in)
    : spec_(spec), mesh_(mesh), model_(&model), shard_(shard), per_replica_(spec.batch / spec.config.dp_degree) {
  const ModelProfile& m = *spec.model;
  true_cfg_ = m.guidance == Guidance::kTrueCfg;
  batched_cfg_ = true_cfg_ && spec.config.cfg_degree == 1;
  samples_ = per_replica_ * (batched_cfg_ ? 2 : 1);
  joint_text_ = m.text_handling == TextHandling::kJoint ? shard.txt_len[shard.me] : 0;
  skips_in_ = skips_into(m, stage_blocks(m, mesh.coords().pp, spec.config.pp()).first);
  // The prompt this pipeline runs: its CFG branch, or both batched (as the runner's Denoiser).
  const bool uncond = true_cfg_ && spec.config.cfg_degree == 2 && mesh.coords().cfg == 1;
  text_ = batched_cfg_ ? at::cat({mine(in.cond), mine(in.uncond)}) : mine(uncond ? in.uncond : in.cond);
  if (shard.split_text)
    text_ = text_.narrow(1, std::accumulate(shard.txt_len.begin(), shard.txt_len.begin() + shard.me, int64_t{0}),
                         shard.txt_len[shard.me]);
  if (in.cond_valid.defined())
    text_valid_ = batched_cfg_ ? at::cat({mine(in.cond_valid), mine(in.uncond_valid)})
                               : mine(uncond ? in.uncond_valid : in.cond_valid);
  const int64_t g = m.pixel_granularity();
  const int64_t rows = spec.resolution.height / g, cols = spec.resolution.width / g;
  const int64_t frames = shard.image_tokens / (rows * cols);
  patches_ = cut_patches(m, frames, rows, cols, spec.config.pipefusion.patches, spec.device.device);
  whole_ = cut_patches(m, frames, rows, cols, 1, spec.device.device);
  image_rope_ = image_rope_angles(frames, rows, cols, m.head_dim).to(spec.device.device);
  attention_ = shard.attention;
  const int cp = mesh.coords().cp_size;
  if (cp == 1) return;
  cp_patches_ = split_patches(patches_, cp, cp_whole_);
  patches_ = cp_patches_[shard.me];
  whole_ = {cp_whole_[shard.me]};
  std::vector<at::Tensor> owned;
  for (const Patch& w : cp_whole_) owned.push_back(w.index);
  kv_.set_cp_layout(std::move(owned), shard.text_split());
  // The keys the ops attend: each rank's owned tokens, its text share and its image runs.
  for (int c = 0; c < cp; ++c) {
    attention_.image_lengths[c] = cp_whole_[c].tokens;
    attention_.cp_lengths[c] = cp_whole_[c].tokens + (shard.split_text ? shard.txt_len[c] : 0);
  }
  if (text_valid_.defined()) mask_keys(attention_, text_valid_, shard.text_split(), attention_.image_lengths);
}

ForwardInputs PipeFusionStage::inputs(const Patch& p, const at::Tensor& x, double sigma) const {
  const DeviceSpec& dev = spec_.device;
  ForwardInputs in;
  if (mesh_.coords().pp == 0) {
    const at::Tensor latents = x.index_select(1, p.index).to(dev.dtype);
    in.latents = batched_cfg_ ? at::cat({latents, latents}) : latents;
  }
  in.text = text_;
  in.timestep = at::full({samples_}, sigma, at::TensorOptions(at::kFloat).device(dev.device));
  in.image_rope = image_rope_.index_select(0, p.index);
  in.text_rope = shard_.text_rope;
  return in;
}

at::Tensor PipeFusionStage::receive(const Patch& p, int tag, bool with_text) {
  Comm& pp = mesh_.pp();
  const int64_t text = with_text ? joint_text_ : 0;
  const int64_t width = spec_.model->hidden() * (1 + skips_in_);
  at::Tensor h = at::empty({samples_, text + p.tokens, width}, spec_.device.options());
  Comm::Pending arriving = pp.recv(h, pp.rank() - 1, tag);
  pp.wait(arriving);
  if (joint_text_ == 0) return h;
  if (with_text) {
    text_states_ = h.narrow(1, 0, joint_text_).clone();
    return h;
  }
  return at::cat({text_states_, h}, 1);
}

void PipeFusionStage::pass(const Patch& p, int patch, const ForwardInputs& in, int tag, bool with_text) {
  Comm& pp = mesh_.pp();
  const int stage = pp.rank(), last = pp.size() - 1;
  at::Tensor h = stage == 0 ? model_->embed(in) : receive(p, tag, with_text);
  kv_.begin_forward(p.index, shard_.image_tokens, joint_text_, text_valid_);
  if (kv_.cp()) {
    std::vector<at::Tensor> pass;  // every CP rank's run of this patch, or its whole share
    for (std::size_t c = 0; c < cp_patches_.size(); ++c)
      pass.push_back(patch < 0 ? cp_whole_[c].index : cp_patches_[c][patch].index);
    kv_.begin_cp_forward(std::move(pass));
  }
  AttentionContext ctx = attention_;
  ctx.patch_kv = &kv_;
  h = model_->run_blocks(h, in, ctx);
  if (stage == last) pp.send(model_->project_out(h, in).contiguous(), 0, tag);
  else if (with_text || joint_text_ == 0) pp.send(h, stage + 1, tag);
  else pp.send(h.narrow(1, joint_text_, p.tokens).contiguous(), stage + 1, tag);
}

at::Tensor PipeFusionStage::guided(const at::Tensor& v) {
  if (!true_cfg_) return v;
  at::Tensor vc, vu;
  if (batched_cfg_) {
    const auto two = v.chunk(2);
    vc = two[0];
    vu = two[1];
  } else {
    const at::Tensor both = mesh_.cfg().all_gather_cat(v.unsqueeze(0), 0);
    vc = both[0];
    vu = both[1];
  }
  return vu + spec_.guidance_scale * (vc - vu);
}

void PipeFusionStage::step(at::Tensor& x, double sigma, double next, bool whole, bool update) {
  Comm& pp = mesh_.pp();
  const bool first = pp.rank() == 0;
  const std::vector<Patch>& patches = whole ? whole_ : patches_;
  std::vector<at::Tensor> velocity;
  std::vector<Comm::Pending> arriving;
  for (std::size_t i = 0; i < patches.size(); ++i) {
    const int tag = static_cast<int>(i);
    pass(patches[i], whole ? -1 : tag, inputs(patches[i], x, sigma), tag, whole || i == 0);
    if (!first) continue;
    // Posted right after the patch leaves: the last stage's send of it can never wait for
    // stage 0, which goes on with the next patch (no deadlock with blocking sends).
    velocity.push_back(at::empty({samples_, patches[i].tokens, spec_.model->in_channels}, spec_.device.options()));
    arriving.push_back(pp.recv(velocity.back(), pp.size() - 1, tag));
  }
  if (!first) return;
  for (std::size_t i = 0; i < arriving.size(); ++i) pp.wait(arriving[i]);
  if (!cp_whole_.empty()) {
    update_all(x, velocity, next - sigma, update);
    return;
  }
  for (std::size_t i = 0; i < arriving.size(); ++i) {
    const at::Tensor v = guided(velocity[i].to(at::kFloat));
    const at::Tensor& index = patches[i].index;
    if (update) x.index_copy_(1, index, x.index_select(1, index) + (next - sigma) * v);
  }
}

void PipeFusionStage::update_all(at::Tensor& x, const std::vector<at::Tensor>& velocity, double dt, bool update) {
  std::vector<at::Tensor> owned;
  std::vector<int64_t> lengths;
  for (const Patch& w : cp_whole_) {
    owned.push_back(w.index);
    lengths.push_back(w.tokens);
  }
  // This rank's patches in step order are its owned tokens (cp_whole_'s order).
  const at::Tensor mine = at::cat(velocity, 1).contiguous();
  const at::Tensor v = guided(mesh_.cp().all_gather_uneven(mine, 1, lengths).to(at::kFloat));
  const at::Tensor index = at::cat(owned);
  if (update) x.index_copy_(1, index, x.index_select(1, index) + dt * v);
}

// The runner's loop (denoise in runner.cpp) over the stage: the warm-up passes, then the timed
// Euler steps, the first W of them on the whole sequence.
StepTimes denoise_pipefusion(const RunSpec& spec, Mesh& mesh, PipeFusionStage& stage, const Transformers& models,
                             at::Tensor& x, int rank) {
  for (int i = 0; i < spec.warmup; ++i) stage.step(x, 1.0, 1.0, true, false);
  const int synchronous = spec.config.pipefusion.warmup_steps;
  return timed_steps(spec, mesh, rank, [&](int i, double sigma, double next) {
    stage.use(*models[transformer_at(i, spec.steps, static_cast<int>(models.size()))]);
    stage.step(x, sigma, next, i < synchronous, true);
  });
}

}  // namespace

RunFigures run_pipefusion_rank(const RunSpec& spec, Mesh& mesh, int rank, int world) {
  const ParallelConfig& pc = spec.config;
  if (pc.tp() > 1) throw std::runtime_error("PipeFusion: the executor runs no tensor parallelism inside its stages");
  const BlockRange held = stage_blocks(*spec.model, mesh.coords().pp, pc.pp());
  const LoadPhase loading(spec.device.device);
  Transformers models;  // transformer t's stage weights drawn from seed + t
  for (int t = 0; t < spec.model->transformers; ++t)
    models.push_back(build_model(*spec.model, spec.seed + t, mesh.tp(), spec.device, attention_op(classify(pc.context_parallel_config)), held,
                                 spec.weight_draws.get()));
  LoadFigures load = loading.end();
  load.param_bytes = parameter_bytes(models);
  const SequenceShard shard = shard_sequence(spec, mesh, models[0]->cp_plan().split_text);
  const Conditioning inputs = draw_inputs(spec, shard.image_tokens, shard.text_tokens);
  PipeFusionStage stage(spec, mesh, *models[0], shard, inputs);
  // Every stage keeps a copy of the replica's noise; only stage 0's moves (it owns the latents).
  at::Tensor x = stage.mine(inputs.latents).clone();
  StepTimes times = denoise_pipefusion(spec, mesh, stage, models, x, rank);
  times.load = load;
  return gather_figures(spec, mesh, times, x, rank, world);
}

}  // namespace cpplan::executor
