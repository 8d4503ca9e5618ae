#include "session/query_flags.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace cpplan::session {

void add_query_flags(CLI::App& app, Options& o) {
  app.add_option("--gpus", o.gpus,
                 fmt::format("number of GPUs to spread one job over (default: the topology's; else cpplan: the GPUs "
                             "nvidia-smi lists, cpplan-gui: {})",
                             kGuiGpus));
  app.add_option("--res", o.res, "WIDTHxHEIGHT in pixels (default: the model's)");
  app.add_option("--frames", o.frames, "frames, video models (default: the model's)");
  auto* model = app.add_option("--model", o.model, "model profile (cpplan list models; default flux.1-dev)");
  app.add_option("--model-config", o.model_config,
                 "a diffusers transformer config.json or pipeline folder, instead of --model's profile")
      ->excludes(model);
  app.add_option("--hardware", o.hardware,
                 fmt::format("hardware profile, or local: this machine as probed (default: the topology's; else "
                             "cpplan: the local GPU's, else h100-sxm; cpplan-gui: {})",
                             kGuiHardware));
  app.add_option("--steps", o.steps, "denoising steps (default: the model's)");
  app.add_option("--attention-backend", o.backend, "flash | cudnn | sage | native (default flash)");
  app.add_option("--batch", o.batch, "images generated together (split over dp replicas; default 1)");
  app.add_option("--text-tokens", o.text_tokens, "text tokens (default: the model's)");
  app.add_option("--runtime", o.runtime,
                 "how the framework runs it: diffusers | xdit | compiled | cpplan (default: --framework's, xdit for xdit; else "
                 "diffusers; cpplan run: cpplan)");
  app.add_option("--text-encoder", o.text_encoder,
                 "replicated | offloaded | sequential | sharded | fully-sharded | fully-sharded-host (default: the fastest "
                 "that fits, per plan and framework)");
  app.add_option("--vae", o.vae,
                 "single | parallel | tiled | sliced (default: single or parallel, the fastest that fits, per plan)");
  app.add_flag("--offload-text-encoders", o.offload, "the same as --text-encoder offloaded");
  app.add_flag("--offload-idle-transformer", o.offload_idle_transformer,
               "two-transformer pipelines (Wan2.2 A14B): keep the one not denoising in host memory, loading each per image");
  app.add_option("--host-mem", o.host_mem,
                 "host memory of one node, GiB: every rank of a node loads its own copy of the pipeline there first "
                 "(default: this machine's for --hardware local, else the hardware profile's typical node)");
  app.add_option("--profiles", o.profiles, "extra profile directory (models/, hardware/, topologies/); repeatable");
  app.add_option("--framework", o.framework,
                 "rank only the plans this framework runs: diffusers | xdit | cache-dit | sglang | vllm-omni | any "
                 "(default any: plans some framework runs first) | cpplan (every plan by its time: cpplan run executes them)");
  app.add_option("--framework-version", o.framework_versions,
                 "a framework's older layout (cpplan list frameworks), e.g. xdit-2025; repeatable");
  app.add_option("--topology", o.topology, "place plans on a topology (cpplan list topologies)");
  app.add_option("--topology-file", o.topology_file, "place plans on the topology of a TOML file (docs/topology.md)");
  app.add_option("--nodes", o.nodes, "nodes of the topology (or of a PCIe GPU's [node]), joined by its network (default 1)");
  app.add_option("--num-pipeline-patch", o.pipeline_patches,
                 "PipeFusion patches M (default: check and run P; recommend and cpplan-gui P, 2P and 4P)");
  app.add_option("--pipefusion-warmup-steps", o.pipefusion_warmup,
                 "PipeFusion steps run synchronously before the patch pipeline (default 1, as xDiT)");
  app.add_flag("--all", o.all,
               "every plan: the invalid ones with their reasons, the fully-sharded twins of every valid plan, data "
               "parallel for one image");
}

const std::vector<std::string>& query_flag_names() {
  static const std::vector<std::string> names = [] {
    CLI::App app;
    Options o;
    add_query_flags(app, o);
    std::vector<std::string> out;
    for (const CLI::Option* opt : app.get_options())
      if (!opt->get_lnames().empty() && opt->get_lnames().front() != "help")
        out.push_back("--" + opt->get_lnames().front());
    return out;
  }();
  return names;
}

void apply_gui_defaults(Options& o) {
  if (!o.topology.empty() || !o.topology_file.empty()) return;
  if (o.gpus.empty()) o.gpus = std::to_string(kGuiGpus);
  if (o.hardware.empty()) o.hardware = kGuiHardware;
}

}  // namespace cpplan::session
