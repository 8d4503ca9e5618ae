#include "planner/framework_scripts.h"

#include <fmt/format.h>

#include "planner/frameworks.h"

namespace cpplan::planner {

namespace {
constexpr std::string_view kPrompt = "a photo of a cat";

std::string repo_of(const ModelProfile& m) { return m.hf_repo.empty() ? "<path to " + m.name + ">" : m.hf_repo; }

// GPUs of one data-parallel replica: the group one launch of cache-dit's script spans.
int replica_gpus(const ParallelConfig& c) { return c.ring() * c.ulysses() * c.tp() * c.pp() * c.cfg_degree; }

// The text encoder cache-dit shards over the CP x TP world: its TE-P covers T5, UMT5, Llama, Gemma,
// Mistral, Qwen and GLM encoders, not CLIP (frameworks.md), so where a pipeline also has CLIP
// encoders it is the other one, by the diffusers pipeline's attribute names.
std::string_view sharded_encoder(const ModelProfile& m) {
  if (m.pipeline_class == "FluxPipeline") return "pipe.text_encoder_2";  // T5; text_encoder is CLIP-L
  if (m.pipeline_class == "StableDiffusion3Pipeline") return "pipe.text_encoder_3";  // T5; 1 and 2 are CLIP
  return "pipe.text_encoder";  // HunyuanVideo's Llama (text_encoder_2 is CLIP), or the only encoder
}

// "# <title>, unconfirmed: <why>" from the framework file and the model's entry; empty when neither
// marks anything unconfirmed.
std::string unconfirmed_of(const Query& q, Framework f) {
  const FrameworkProfile* fw = q.frameworks[static_cast<int>(f)];
  if (!fw) return {};
  std::vector<std::string> why;
  if (!fw->unconfirmed.empty()) why.push_back(fw->unconfirmed);
  if (const FrameworkModel* entry = q.model ? fw->model_for(*q.model) : nullptr; entry && !entry->unconfirmed.empty())
    why.push_back(entry->unconfirmed);
  return fmt::format("{}", fmt::join(why, "; "));
}

void add(std::vector<std::string>& a, std::string_view flag, int value) {
  a.emplace_back(flag);
  a.push_back(std::to_string(value));
}
}  // namespace

std::string cache_dit_parallelism_config(const Query& q, const Plan& p, const PipelinePlacement& where) {
  const ParallelConfig& c = p.config;
  const ContextParallelConfig& cp = c.context_parallel_config;
  if (cp.degree() <= 1 && c.tp() <= 1) return {};
  std::vector<std::string> args;
  if (c.ulysses() > 1) args.push_back(fmt::format("ulysses_size={}", c.ulysses()));
  if (c.ring() > 1) args.push_back(fmt::format("ring_size={}", c.ring()));
  if (c.tp() > 1) args.push_back(fmt::format("tp_size={}", c.tp()));
  if (cp.ulysses_anything) args.emplace_back("ulysses_anything=True");
  if (c.ring() > 1)
    args.push_back(fmt::format("ring_rotate_method=\"{}\"", cp.rotate_method == RotateMethod::kP2P ? "p2p" : "allgather"));
  std::vector<std::string> extra;
  if (where.text_encoder == TextEncoderPlacement::kSharded) extra.emplace_back(sharded_encoder(*q.model));
  if (where.vae == VaePlacement::kParallel) extra.emplace_back("pipe.vae");
  if (!extra.empty()) args.push_back(fmt::format("extra_parallel_modules=[{}]", fmt::join(extra, ", ")));
  return fmt::format("ParallelismConfig({})", fmt::join(args, ", "));
}

std::string cache_dit_script(const Query& q, const Plan& p, const PipelinePlacement& where) {
  const ModelProfile& m = *q.model;
  const ParallelConfig& c = p.config;
  const std::string pipeline = m.pipeline_class.empty() ? "DiffusionPipeline" : m.pipeline_class;
  const std::string config = cache_dit_parallelism_config(q, p, where);
  const int group = replica_gpus(c);
  std::string s = fmt::format("# torchrun --nproc_per_node={} run.py\n", group);
  if (c.dp_degree > 1)
    s += fmt::format("# data parallel {0}: {0} such launches, each on its own {1} GPUs (CUDA_VISIBLE_DEVICES) and "
                     "--master_port, each on its own images\n",
                     c.dp_degree, group);
  s += "import torch\nimport torch.distributed as dist\nimport cache_dit\n";
  if (!config.empty()) s += "from cache_dit import ParallelismConfig\n";
  s += fmt::format("from diffusers import {}\n", pipeline);
  if (m.video) s += "from diffusers.utils import export_to_video\n";
  s += "\ndist.init_process_group(\"nccl\")\nrank = dist.get_rank()\ntorch.cuda.set_device(rank)\n";
  // Tensor parallelism shards the weights as they move: enable_cache first, on the weights in host
  // memory, then the transformer to the GPU (as diffusers_snippet; cpplan's load phase).
  const bool shard_first = c.tp() > 1 && !config.empty();
  s += placement_lines(m, pipeline, repo_of(m), where.text_encoder, "cuda", !shard_first);
  s += vae_lines(where.vae);
  s += fmt::format("pipe.transformer.set_attention_backend(\"{}\")\n", diffusers_backend(q.backend));
  if (c.context_parallel_config.ring_anything)
    s += "# Ring Anything: cpplan's reference names no cache-dit argument for uneven Ring splits\n";
  const FrameworkQuantization* fq = quantization_of(q, Framework::kCacheDit);
  const FrameworkCache* fc = cache_of(q, Framework::kCacheDit);
  if (fq) s += fq->import + "\n";
  if (fc) s += fc->import + "\n";
  if (!config.empty() || fq || fc)
    s += fmt::format("{}cache_dit.enable_cache(pipe{}{}{})\n",
                     fc ? ""
                        : fmt::format("# {} without caching: no cache config, so every step is computed\n",
                                      fq && !config.empty() ? "parallelism and quantization"
                                      : fq                  ? "quantization"
                                                            : "parallelism"),
                     fc ? ", " + cache_flag(q, *fc) : "", config.empty() ? "" : ", parallelism_config=" + config,
                     fq ? ", " + fq->flag : "");
  if (shard_first)
    s += "# sharded before moving to the GPU: each tensor-parallel weight reaches this GPU as its shard, so the\n"
         "# whole transformer never sits on one GPU (cpplan's predicted load peak holds)\n"
         "pipe.transformer.to(\"cuda\")\n";
  return s + generate_lines(q, where.text_encoder);
}

std::vector<std::string> sglang_parallel_args(const Plan& p, const PipelinePlacement& where) {
  const ParallelConfig& c = p.config;
  const int gpus = static_cast<int>(c.world_size());
  std::vector<std::string> a;
  add(a, "--num-gpus", gpus);
  add(a, "--ulysses-degree", c.ulysses());
  add(a, "--ring-degree", c.ring());
  if (c.tp() > 1) add(a, "--tp-size", c.tp());
  if (c.cfg_degree == 2) add(a, "--cfg-parallel-size", 2);
  if (c.dp_degree > 1) add(a, "--dp-size", c.dp_degree);
  if (c.fs() > 1) {
    a.emplace_back("--use-fsdp-inference");
    // weights sharded over groups of F ranks, replicated over N / F of them
    if (c.fs() < gpus) {
      add(a, "--hsdp-shard-dim", c.fs());
      add(a, "--hsdp-replicate-dim", gpus / c.fs());
    }
  }
  if (where.vae == VaePlacement::kParallel) {
    a.emplace_back("--vae-tiling");  // --vae-sp needs it
    a.emplace_back("--vae-sp");
  }
  if (where.vae == VaePlacement::kTiled) a.emplace_back("--vae-tiling");
  return a;
}

std::string sglang_command(const Query& q, const Plan& p, const PipelinePlacement& where) {
  const ModelProfile& m = *q.model;
  const ParallelConfig& c = p.config;
  std::vector<std::string> notes;
  if (const std::string why = unconfirmed_of(q, Framework::kSglang); !why.empty()) notes.push_back(why);
  notes.emplace_back("the size, frame, step and prompt flags are not in cpplan's reference");
  if (c.fs() > 1 && c.fs() < c.world_size())
    notes.emplace_back("--hsdp-shard-dim and --hsdp-replicate-dim read as F ranks per weight shard, N / F copies");
  if (c.ring() > 1) notes.emplace_back("its Ring needs the fa or sage attention backend");
  std::string s = fmt::format("# SGLang Diffusion, unconfirmed: {}\n", fmt::join(notes, "; "));
  s += fmt::format("sglang generate --model-path {} {}", repo_of(m), fmt::join(sglang_parallel_args(p, where), " "));
  s += fmt::format(" --height {} --width {}", q.resolution.height, q.resolution.width);
  if (m.video) s += fmt::format(" --num-frames {}", q.frames);
  s += fmt::format(" --num-inference-steps {} --prompt \"{}\"", q.steps, kPrompt);
  if (const FrameworkQuantization* fq = quantization_of(q, Framework::kSglang)) s += " " + fq->flag;
  // SGLang Diffusion's Cache-DiT reads its settings from the environment (frameworks-runtime.md §1.5).
  if (const FrameworkCache* fc = cache_of(q, Framework::kSglang)) {
    const auto line = s.find("sglang generate");
    s.insert(line, cache_flag(q, *fc) + " ");
  }
  return s;
}

std::vector<std::string> vllm_omni_parallel_args(const Plan& p, const PipelinePlacement& where) {
  const ParallelConfig& c = p.config;
  std::vector<std::string> a;
  add(a, "--usp", c.ulysses());
  add(a, "--ring", c.ring());
  add(a, "--cfg-parallel-size", c.cfg_degree);
  add(a, "--tensor-parallel-size", c.tp());
  if (c.fs() > 1) {
    a.emplace_back("--use-hsdp");
    add(a, "--hsdp-shard-size", c.fs());
  }
  if (where.vae == VaePlacement::kParallel) {
    // patch-parallel decode over one replica's GPUs, tiled ("VAE patch parallel needs tiling")
    add(a, "--vae-patch-parallel-size", replica_gpus(c));
    a.emplace_back("--vae-parallel-mode");
    a.emplace_back("tile");
  }
  return a;
}

// The server form: the reference names every flag of `vllm serve`, while the offline form's
// DiffusionParallelConfig(...) and omni.generate(...) arguments are not all in it.
std::string vllm_omni_command(const Query& q, const Plan& p, const PipelinePlacement& where) {
  const ModelProfile& m = *q.model;
  const std::string why = unconfirmed_of(q, Framework::kVllmOmni);
  std::string s = fmt::format("# vLLM-Omni serves the model; each request asks for {}x{}{}, {} steps (the request's "
                              "fields are not in cpplan's reference){}\n",
                              q.resolution.width, q.resolution.height,
                              m.video ? fmt::format(", {} frames", q.frames) : "", q.steps,
                              why.empty() ? "" : "; unconfirmed: " + why);
  s += fmt::format("vllm serve {} --omni {}", repo_of(m), fmt::join(vllm_omni_parallel_args(p, where), " "));
  if (const FrameworkQuantization* fq = quantization_of(q, Framework::kVllmOmni)) s += " " + fq->flag;
  if (const FrameworkCache* fc = cache_of(q, Framework::kVllmOmni)) s += " " + cache_flag(q, *fc);
  return s;
}

}  // namespace cpplan::planner
