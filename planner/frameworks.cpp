#include "planner/frameworks.h"

#include <algorithm>
#include <utility>
#include <fmt/format.h>

namespace cpplan::planner {

std::vector<std::string> FrameworkSet::names() const {
  std::vector<std::string> out;
  for (int i = 0; i < kFrameworkCount; ++i)
    if (has(static_cast<Framework>(i))) out.emplace_back(to_string(static_cast<Framework>(i)));
  return out;
}

namespace {
// The feature each text-encoder placement other than replicated uses.
constexpr std::pair<TextEncoderPlacement, Feature> kEncoderFeatures[] = {
    {TextEncoderPlacement::kSharded, Feature::kShardedTextEncoder},
    {TextEncoderPlacement::kOffloaded, Feature::kOffloadedTextEncoder},
    {TextEncoderPlacement::kSequential, Feature::kSequentialTextEncoder},
    {TextEncoderPlacement::kFullySharded, Feature::kFullyShardedTextEncoder},
    {TextEncoderPlacement::kFullyShardedHost, Feature::kFullyShardedHostTextEncoder}};

// The placement that uses feature `f` (replicated when none does).
TextEncoderPlacement encoder_placement_of(Feature f) {
  for (const auto& [placement, feature] : kEncoderFeatures)
    if (feature == f) return placement;
  return TextEncoderPlacement::kReplicated;
}
}  // namespace

FeatureSet features_of(const Plan& p, const PipelinePlacement& where) {
  const ParallelConfig& c = p.config;
  const ContextParallelConfig& cp = c.context_parallel_config;
  FeatureSet s;
  const auto use = [&s](bool used, Feature f) {
    if (used) s.add(f);
  };
  use(c.ulysses() > 1, Feature::kUlysses);
  use(c.ring() > 1, Feature::kRing);
  use(cp.ulysses_anything, Feature::kUlyssesAnything);
  use(cp.ring_anything, Feature::kRingAnything);
  use(c.ring() > 1 && cp.rotate_method == RotateMethod::kP2P, Feature::kRingP2p);
  use(c.tp() > 1, Feature::kTp);
  use(c.cfg_degree > 1, Feature::kCfg);
  use(c.pp() > 1, Feature::kPipeFusion);
  use(c.fs() > 1, Feature::kFullyShard);
  use(c.dp_degree > 1, Feature::kDataParallel);
  use(where.vae == VaePlacement::kParallel, Feature::kParallelVae);
  use(where.vae == VaePlacement::kTiled, Feature::kTiledVae);
  use(where.vae == VaePlacement::kSliced, Feature::kSlicedVae);
  for (const auto& [placement, feature] : kEncoderFeatures) use(where.text_encoder == placement, feature);
  return s;
}

namespace {
// The framework's verdict on the query's device family: "" when the family runs the features used.
std::string_view family_reason(const FrameworkProfile& fw, const Query& q, FeatureSet used) {
  const DeviceFamily family = q.hardware ? q.hardware->family : DeviceFamily::kCuda;
  for (const FamilySupport& s : fw.families)
    if (s.family == family) return s.only && (used.bits & ~s.only->bits) != 0 ? std::string_view(s.reason) : "";
  return fw.family_reason;
}
}  // namespace

FrameworkOffers::FrameworkOffers(const Query& q) {
  for (int i = 0; i < kFrameworkCount; ++i) {
    Offer& o = offers_[i];
    o.fw = q.frameworks[i];
    const FrameworkCache* c = cache_of(q, static_cast<Framework>(i));
    const CacheSpec runs = c ? c->runs_on(q.cache, q.steps, q.model) : q.cache;
    o.cached_steps = cpplan::cached_steps(runs, q.steps);
    o.stores_cache = runs.hooked;
    if (!o.fw || !q.model) continue;
    o.entry = o.fw->model_for(*q.model);
    o.listed = o.entry != nullptr;
    o.features = o.fw->features_for(*q.model);
  }
}

namespace {
// The plan's degree of a feature that has one (0 for the others).
int degree_of(Feature f, const ParallelConfig& c) {
  switch (f) {
    case Feature::kUlysses: return c.ulysses();
    case Feature::kRing: return c.ring();
    case Feature::kTp: return c.tp();
    case Feature::kCfg: return c.cfg_degree;
    case Feature::kPipeFusion: return c.pp();
    case Feature::kFullyShard: return c.fs();
    case Feature::kDataParallel: return c.dp_degree;
    default: return 0;
  }
}
}  // namespace

namespace {
// Why `fw` cannot run the query's --cache with a plan using `used`: no such cache, a parallelism
// its cache refuses, a model its cache does not adapt to; empty when it runs it (or no cache).
std::string_view cache_refusal(const FrameworkProfile& fw, const Query& q, FeatureSet used) {
  if (!q.cache.active()) return {};
  const FrameworkCache* c = fw.cache_for(q.cache.policy);
  if (!c) return fw.cache_reason;
  const bool sp = used.has(Feature::kUlysses) || used.has(Feature::kRing) || used.has(Feature::kUlyssesAnything) ||
                  used.has(Feature::kRingAnything);
  if (sp && !c->with_sp) return c->sp_reason;
  if (used.has(Feature::kTp) && !c->with_tp) return c->tp_reason;
  if (used.has(Feature::kCfg) && !c->with_cfg) return c->cfg_reason;
  if (q.model && !c->adapts_to(*q.model)) return c->class_reason;
  return {};
}

// The attention kernel `fw` runs a plan of `q` with: the one --attention-backend asked for, else its
// own pick on the query's GPU (its [[kernels]]), else the query's.
AttentionBackend backend_of(const FrameworkProfile& fw, const Query& q) {
  if (q.backend_asked || !q.hardware) return q.backend;
  const FrameworkKernels* k = fw.kernels_for(*q.hardware);
  return k ? k->attention : q.backend;
}
}  // namespace

std::string_view FrameworkOffers::limit_reason(const Offer& o, const Query& q, const Plan& p, FeatureSet used) const {
  if (o.entry)
    for (const DegreeLimit& l : o.entry->max_degrees)
      if (degree_of(l.feature, p.config) > l.max) return l.reason;
  const AttentionBackend backend = backend_of(*o.fw, q);
  for (const BackendRule& r : o.fw->backend_rules)
    if (used.has(r.feature) && std::find(r.backends.begin(), r.backends.end(), backend) == r.backends.end())
      return r.reason;
  return {};
}

PipelinePlacement FrameworkOffers::unasked_placement(const Offer& o, const Query& q, const Plan& p) const {
  const bool sharded_with = o.entry && o.entry->with_fully_shard && p.config.fs() > 1;
  const TextEncoderPlacement te =
      sharded_with ? encoder_placement_of(*o.entry->with_fully_shard) : TextEncoderPlacement::kReplicated;
  return {q.text_encoder.value_or(te), q.vae.value_or(VaePlacement::kSingle)};
}

std::string_view FrameworkOffers::unsupported_reason(Framework f, const Query& q, const Plan& p,
                                                     std::optional<PipelinePlacement> where) const {
  if (!p.valid()) return "the plan is invalid";
  const Offer& o = offers_[static_cast<int>(f)];
  if (!o.fw) return "no framework file is loaded for it";
  return refusal(o, q, p, features_of(p, where ? *where : unasked_placement(o, q, p)));
}

std::string_view FrameworkOffers::refusal(const Offer& o, const Query& q, const Plan& p, FeatureSet used) const {
  if (auto why = family_reason(*o.fw, q, used); !why.empty()) return why;
  if (!o.fw->unlisted.empty() && !o.listed) return o.fw->unlisted;
  if (const unsigned lacking = used.bits & ~o.features.bits; lacking != 0)
    for (int i = 0; i < kFeatureCount; ++i)
      if (lacking & (1u << i)) return o.fw->missing[i];
  if (auto why = limit_reason(o, q, p, used); !why.empty()) return why;
  if (q.precision.quantized()) {
    if (!q.hardware && !o.fw->quantization_for(q.precision)) return o.fw->quantization_reason;
    if (q.hardware)
      if (auto why = o.fw->quantization_refusal(q.precision, *q.hardware); !why.empty()) return why;
    if (o.entry)
      if (auto why = o.entry->dtype_refusal(q.precision); !why.empty()) return why;
  }
  if (auto why = cache_refusal(*o.fw, q, used); !why.empty()) return why;
  // A framework that shards a text encoder with the transformer's weights (with_fully_shard) does so
  // whenever, and only when, the plan shards fully; a model without text encoders has none to shard.
  if (o.entry && o.entry->with_fully_shard && q.model && !q.model->text_encoders.empty() &&
      used.has(Feature::kFullyShard) != used.has(*o.entry->with_fully_shard))
    return o.fw->with_fully_shard_reason;
  for (const FeatureConflict& c : o.fw->conflicts)
    if (used.has(c.a) && used.has(c.b)) return c.reason;
  return {};
}

costmodel::PipelineOptionMask FrameworkOffers::options_run(Framework f, const Query& q, const Plan& p,
                                                           const costmodel::Prediction& pr) const {
  const Offer& o = offers_[static_cast<int>(f)];
  costmodel::PipelineOptionMask mask = 0;
  if (!o.fw || !p.valid()) return mask;
  for (int i = 0; i < pr.pipeline_option_count; ++i)
    if (refusal(o, q, p, features_of(p, pr.pipeline_options[i].cost.placement())).empty()) mask |= 1u << i;
  return mask;
}

FrameworkSet FrameworkOffers::frameworks_for(const Query& q, const Plan& p, std::optional<PipelinePlacement> where) const {
  FrameworkSet s;
  for (int i = 0; i < kFrameworkCount; ++i)
    if (unsupported_reason(static_cast<Framework>(i), q, p, where).empty()) s.add(static_cast<Framework>(i));
  return s;
}

std::string_view unsupported_reason(Framework f, const Query& q, const Plan& p, std::optional<PipelinePlacement> where) {
  return FrameworkOffers(q).unsupported_reason(f, q, p, where);
}

FrameworkSet frameworks_for(const Query& q, const Plan& p, std::optional<PipelinePlacement> where) {
  return FrameworkOffers(q).frameworks_for(q, p, where);
}

std::vector<ConfigArgument> context_parallel_arguments(const ParallelConfig& c) {
  const ContextParallelConfig& cp = c.context_parallel_config;
  std::vector<ConfigArgument> args;
  if (cp.degree() <= 1) return args;
  if (cp.ring_degree > 1) args.push_back({"ring_degree", cp.ring_degree, false});
  if (cp.ulysses_degree > 1) args.push_back({"ulysses_degree", cp.ulysses_degree, false});
  if (cp.ulysses_anything) args.push_back({"ulysses_anything", 1, true});
  if (cp.ring_anything) args.push_back({"ring_anything", 1, true});
  if (!cp.convert_to_fp32) args.push_back({"convert_to_fp32", 0, true});
  return args;
}

std::vector<ConfigArgument> tensor_parallel_arguments(const ParallelConfig& c) {
  if (c.tp() <= 1) return {};
  return {{"tp_degree", c.tp(), false}};
}

std::string python_arguments(const std::vector<ConfigArgument>& args) {
  std::vector<std::string> parts;
  for (const ConfigArgument& a : args)
    parts.push_back(fmt::format("{}={}", a.name, a.boolean ? (a.value ? "True" : "False") : std::to_string(a.value)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string_view diffusers_backend(AttentionBackend b) {
  // attention_dispatch.py's names (frameworks-runtime.md 4.1): FA3 and FA4 through their hub
  // kernels (the context-parallel-capable FA3 is _flash_3_hub), AITER's FA2 hub kernel, XLA's SDPA.
  constexpr std::string_view n[kAttentionBackendCount] = {"flash", "_native_cudnn", "sage", "native", "_flash_3_hub",
                                                          "flash_4_hub", "aiter_fa2_hub", "_native_xla"};
  return n[static_cast<int>(b)];
}

namespace {

std::string config_expression(const Plan& p) {
  const ParallelConfig& c = p.config;
  const std::string cp_expr = fmt::format("ContextParallelConfig({})", python_arguments(context_parallel_arguments(c)));
  const std::string tp_expr = fmt::format("TensorParallelConfig({})", python_arguments(tensor_parallel_arguments(c)));
  const bool has_cp = c.context_parallel_config.degree() > 1, has_tp = c.tp() > 1;
  if (has_cp && has_tp)
    return fmt::format("ParallelConfig(context_parallel_config={}, tensor_parallel_config={})", cp_expr, tp_expr);
  if (has_tp) return tp_expr;
  if (has_cp) return cp_expr;
  return {};
}

std::string imports(const Plan& p) {
  const ParallelConfig& c = p.config;
  std::vector<std::string> names;
  const bool has_cp = c.context_parallel_config.degree() > 1, has_tp = c.tp() > 1;
  if (has_cp && has_tp) names.emplace_back("ParallelConfig");
  if (has_cp) names.emplace_back("ContextParallelConfig");
  if (has_tp) names.emplace_back("TensorParallelConfig");
  return names.empty() ? std::string() : ", " + fmt::format("{}", fmt::join(names, ", "));
}
}  // namespace

// The lines that place the text encoders on `device` ("cuda", "neuron", "tpu") before the
// pipeline runs (empty when replicated).
std::string text_encoder_lines(const ModelProfile& m, TextEncoderPlacement te, std::string_view device,
                               bool move_transformer) {
  const std::string_view chip = device == "cuda" ? "the GPU" : "the chip";
  if (te == TextEncoderPlacement::kOffloaded)
    return fmt::format(
        "# the text encoders stay in CPU memory and stream to {} block by block while encoding\n"
        "from diffusers.hooks import apply_group_offloading\n"
        "for encoder in (pipe.text_encoder, getattr(pipe, \"text_encoder_2\", None)):\n"
        "    if encoder is not None:\n"
        "        apply_group_offloading(encoder, onload_device=torch.device(\"{}\"), offload_type=\"block_level\",\n"
        "                               num_blocks_per_group=1, use_stream=True)\n",
        chip, device);
  if (te == TextEncoderPlacement::kSequential && m.pipeline_class == "FluxPipeline")
    return fmt::format(
        "# encode first on {0}, then free the text encoders before the transformer is loaded\n"
        "pipe.text_encoder.to(\"{1}\"); pipe.text_encoder_2.to(\"{1}\")\n"
        "prompt_embeds, pooled_prompt_embeds, _ = pipe.encode_prompt(\"a photo of a cat\", prompt_2=None)\n"
        "pipe.text_encoder = pipe.text_encoder_2 = None\n"
        "{2}{3}",
        chip, device, device == "cuda" ? "torch.cuda.empty_cache()\n" : "",
        move_transformer ? fmt::format("pipe.transformer.to(\"{}\")\n", device) : "");
  if (te == TextEncoderPlacement::kSequential)
    return fmt::format(
        "# encode first on {0} with pipe.encode_prompt(...), then set the text encoders to None and\n"
        "# torch.cuda.empty_cache() before moving the transformer to {0}; pass the embeddings to\n"
        "# pipe(...) ({1}.encode_prompt's outputs are its prompt_embeds arguments)\n",
        chip, m.pipeline_class.empty() ? "the pipeline" : m.pipeline_class);
  return {};
}

// The prompt arguments of the pipeline call: the embeddings when the text encoders were freed.
std::string prompt_arguments(const ModelProfile& m, TextEncoderPlacement te) {
  if (te == TextEncoderPlacement::kSequential && m.pipeline_class == "FluxPipeline")
    return "prompt_embeds=prompt_embeds, pooled_prompt_embeds=pooled_prompt_embeds";
  return "\"a photo of a cat\"";
}

namespace {
// The torch device of the family: PyTorch on ROCm (HIP) keeps the "cuda" device name.
std::string_view device_name(const Query& q) {
  const DeviceFamily family = q.hardware ? q.hardware->family : DeviceFamily::kCuda;
  switch (family) {
    case DeviceFamily::kNeuron: return "neuron";
    case DeviceFamily::kCuda:
    case DeviceFamily::kRocm:
    case DeviceFamily::kTpu: break;
  }
  return "cuda";
}
}  // namespace

std::string placement_lines(const ModelProfile& m, const std::string& pipeline, const std::string& repo,
                            TextEncoderPlacement te, std::string_view device, bool move_transformer) {
  std::string s;
  if (te == TextEncoderPlacement::kReplicated && move_transformer)
    return fmt::format("pipe = {}.from_pretrained(\"{}\", torch_dtype=torch.bfloat16).to(\"{}\")\n", pipeline, repo,
                       device);
  s += fmt::format("pipe = {}.from_pretrained(\"{}\", torch_dtype=torch.bfloat16)\n", pipeline, repo);
  if (te == TextEncoderPlacement::kReplicated)
    return s + fmt::format("for name, component in pipe.components.items():  # all but the transformers, sharded first\n"
                           "    if isinstance(component, torch.nn.Module) and not name.startswith(\"transformer\"):\n"
                           "        component.to(\"{}\")\n",
                           device);
  if (te == TextEncoderPlacement::kSequential || !move_transformer) s += fmt::format("pipe.vae.to(\"{}\")\n", device);
  else s += fmt::format("pipe.transformer.to(\"{0}\")\npipe.vae.to(\"{0}\")\n", device);
  return s + text_encoder_lines(m, te, device, move_transformer);
}

std::string vae_lines(VaePlacement vae) {
  if (vae == VaePlacement::kTiled)
    return "pipe.vae.enable_tiling()  # decode in overlapping tiles: one tile's activations live, not the image's\n";
  if (vae == VaePlacement::kSliced) return "pipe.vae.enable_slicing()  # decode the batch's images one at a time\n";
  return {};
}

std::string output_lines(const ModelProfile& m, std::string_view indent) {
  return m.video ? fmt::format("{}export_to_video(out.frames[0], \"output.mp4\", fps=16)\n", indent)
                 : fmt::format("{}out.images[0].save(\"output.png\")\n", indent);
}

namespace {

// diffusers on a TPU (seed document 000): one chip, the pipeline compiled by XLA, warmed up at the
// query's sizes (the compile), then the timed call.
std::string tpu_snippet(const Query& q, const PipelinePlacement& where) {
  const ModelProfile& m = *q.model;
  const std::string pipeline = m.pipeline_class.empty() ? "DiffusionPipeline" : m.pipeline_class;
  const std::string repo = m.hf_repo.empty() ? "<path to " + m.name + ">" : m.hf_repo;
  const std::string frames = m.video ? fmt::format(", num_frames={}", q.frames) : "";
  const std::string prompt = prompt_arguments(m, where.text_encoder);
  std::string s = "# python run.py (one TPU chip)\nimport time\nimport torch\nimport torch_tpu\n";
  s += fmt::format("from diffusers import {}\n", pipeline);
  if (m.video) s += "from diffusers.utils import export_to_video\n";
  s += "\n" + placement_lines(m, pipeline, repo, where.text_encoder, "tpu");
  s += "pipe.enable_tpu_compile()\n";
  s += fmt::format("# compiles for this size: every new height, width{} or batch compiles again\n",
                   m.video ? ", num_frames" : "");
  s += fmt::format("pipe.tpu_warmup({}, height={}, width={}{}, num_inference_steps={})\n",
                   prompt == "\"a photo of a cat\"" ? "prompt=" + prompt : prompt, q.resolution.height, q.resolution.width,
                   frames, q.steps);
  s += "start = time.perf_counter()\n";
  s += fmt::format("out = pipe({}, height={}, width={}{}, num_inference_steps={},\n"
                   "           generator=torch.Generator().manual_seed(0))\n",
                   prompt, q.resolution.height, q.resolution.width, frames, q.steps);
  s += "print(f\"{time.perf_counter() - start:.2f} s\")\n";
  return s + output_lines(m, "");
}
}  // namespace

std::string diffusers_snippet(const Query& q, const Plan& p, const PipelinePlacement& where) {
  if (q.hardware && q.hardware->family == DeviceFamily::kTpu) return tpu_snippet(q, where);
  const ModelProfile& m = *q.model;
  const std::string pipeline = m.pipeline_class.empty() ? "DiffusionPipeline" : m.pipeline_class;
  const std::string repo = m.hf_repo.empty() ? "<path to " + m.name + ">" : m.hf_repo;
  const std::string config = config_expression(p);
  const std::string_view device = device_name(q);
  const int group = p.config.ring() * p.config.ulysses() * p.config.tp();
  std::string s;
  s += fmt::format("# torchrun --nproc-per-node {} run.py\n", group);
  s += "import torch\nimport torch.distributed as dist\n";
  if (device == "neuron") s += "import torch_neuronx  # the \"neuron\" device and its process-group backend\n";
  s += fmt::format("from diffusers import {}{}\n", pipeline, imports(p));
  if (m.video) s += "from diffusers.utils import export_to_video\n";
  s += device == "cuda" ? "\ndist.init_process_group(\"nccl\")\nrank = dist.get_rank()\ntorch.cuda.set_device(rank)\n"
                        : "\ndist.init_process_group()\nrank = dist.get_rank()\n";
  // Tensor parallelism shards the weights: enable_parallelism first, on the weights in host memory,
  // puts each sharded weight on this GPU as its shard, and the rest follows; moving the transformer
  // first would hold it whole on every GPU (cpplan's load phase, MemoryBreakdown::load_weights).
  const bool shard_first = p.config.tp() > 1;
  s += placement_lines(m, pipeline, repo, where.text_encoder, device, !shard_first);
  s += vae_lines(where.vae);
  if (const FrameworkQuantization* fq = quantization_of(q, Framework::kDiffusers))
    s += fmt::format("# --dtype {}: the transformer's linears quantized by torchao ({})\n{}\n{}\n",
                     to_string(q.precision), fq->source, fq->import, fq->flag);
  if (const FrameworkCache* fc = cache_of(q, Framework::kDiffusers))
    s += fmt::format("# --cache {}: a step cache hook ({})\n{}\n{}\n", to_string(q.cache.policy), fc->source,
                     fc->import, cache_flag(q, *fc));
  // A pipeline of two transformers (Wan2.2 A14B: transformer and transformer_2) sets up both.
  for (const std::string_view t : {"transformer", "transformer_2"}) {
    if (t == "transformer_2" && m.transformers < 2) break;
    if (device == "cuda") s += fmt::format("pipe.{}.set_attention_backend(\"{}\")\n", t, diffusers_backend(q.backend));
    if (shard_first)
      s += fmt::format("# shard before moving to the GPU: each tensor-parallel weight reaches this GPU as its shard, so\n"
                       "# the whole transformer never sits on one GPU (cpplan's predicted load peak holds)\n"
                       "pipe.{0}.enable_parallelism(config={1})\npipe.{0}.to(\"{2}\")\n",
                       t, config, device);
    else if (!config.empty()) s += fmt::format("pipe.{}.enable_parallelism(config={})\n", t, config);
  }
  return s + generate_lines(q, where.text_encoder);
}

std::string generate_lines(const Query& q, TextEncoderPlacement te) {
  const ModelProfile& m = *q.model;
  const std::string frames = m.video ? fmt::format(", num_frames={}", q.frames) : "";
  std::string s = fmt::format(
      "out = pipe({}, height={}, width={}{}, num_inference_steps={},\n"
      "           generator=torch.Generator().manual_seed(0))  # same seed on every rank\n",
      prompt_arguments(m, te), q.resolution.height, q.resolution.width, frames, q.steps);
  s += "if rank == 0:\n" + output_lines(m, "    ");
  return s + "dist.destroy_process_group()\n";
}

std::vector<std::string> xdit_parallel_args(const Plan& p, const PipelinePlacement& where) {
  const ParallelConfig& c = p.config;
  std::vector<std::string> a{"--ulysses_degree", std::to_string(c.ulysses()), "--ring_degree", std::to_string(c.ring())};
  auto add = [&a](std::string_view flag, int value) {
    a.emplace_back(flag);
    a.push_back(std::to_string(value));
  };
  if (c.pp() > 1) {
    add("--pipefusion_parallel_degree", c.pp());
    add("--num_pipeline_patch", c.pipefusion.patches);
    add("--warmup_steps", c.pipefusion.warmup_steps);
  }
  if (c.cfg_degree == 2) a.emplace_back("--use_cfg_parallel");
  if (c.dp_degree > 1) add("--data_parallel_degree", c.dp_degree);
  if (c.fs() > 1) add("--fully_shard_degree", c.fs());
  if (where.vae == VaePlacement::kParallel) a.emplace_back("--use_parallel_vae");
  return a;
}

namespace {
// What xDiT's --fully_shard_degree does to the text encoder, as a comment line above the command
// (empty unless the placement shards one).
std::string fully_sharded_encoder_note(const ModelProfile& m, const Plan& p, TextEncoderPlacement te) {
  const Component* e = m.largest_text_encoder();
  if (!fully_sharded(te) || !e) return {};
  return fmt::format("# --fully_shard_degree {} shards {} with the transformer (the runner's fsdp_strategy): 1/{} of its "
                     "weights per GPU, each layer gathered to run{}\n",
                     p.config.fs(), e->name, p.config.fs(),
                     te == TextEncoderPlacement::kFullyShardedHost ? ", the shards in host memory between uses" : "");
}
}  // namespace

const FrameworkQuantization* quantization_of(const Query& q, Framework f) {
  const FrameworkProfile* fw = q.frameworks[static_cast<int>(f)];
  return q.precision.quantized() && fw ? fw->quantization_for(q.precision) : nullptr;
}

const FrameworkCache* cache_of(const Query& q, Framework f) {
  const FrameworkProfile* fw = q.frameworks[static_cast<int>(f)];
  return q.cache.active() && fw ? fw->cache_for(q.cache.policy) : nullptr;
}

std::string cache_flag(const Query& q, const FrameworkCache& c) { return c.flag_for(c.schedule(q.cache, q.steps), q.steps); }


std::string xdit_command(const Query& q, const Plan& p, const PipelinePlacement& where) {
  const ModelProfile& m = *q.model;
  // The entry matched by profile name or by transformer class (a model from a config): the runner
  // names its models; an example script takes the checkpoint (a hub id or the user's folder, as the
  // diffusers script does) and its process count.
  const FrameworkModel* entry = q.frameworks[static_cast<int>(Framework::kXdit)]->model_for(m);
  const std::string checkpoint = m.hf_repo.empty() ? "<path to " + m.name + ">" : m.hf_repo;
  std::string s = entry && !entry->runner_name.empty()
                      ? fmt::format("xdit --model {}", entry->runner_name)
                      : fmt::format("torchrun --nproc_per_node={} {} --model {}", q.gpus,
                                    entry && !entry->script.empty() ? entry->script
                                                                    : "<xDiT example for " + m.name + ">",
                                    checkpoint);
  s += fmt::format(" --height {} --width {}", q.resolution.height, q.resolution.width);
  if (m.video) s += fmt::format(" --num_frames {}", q.frames);
  s += fmt::format(" --num_inference_steps {} {}", q.steps, fmt::join(xdit_parallel_args(p, where), " "));
  if (const FrameworkQuantization* fq = quantization_of(q, Framework::kXdit)) s += " " + fq->flag;
  if (const FrameworkCache* fc = cache_of(q, Framework::kXdit)) s += " " + cache_flag(q, *fc);
  s += " --prompt \"a photo of a cat\"";
  return fully_sharded_encoder_note(m, p, where.text_encoder) + s;
}

}  // namespace cpplan::planner
