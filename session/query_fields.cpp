#include "session/query_fields.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

#include "session/query_flags.h"

namespace cpplan::session {

namespace {

constexpr double kMaxFrames = 100000, kMaxSteps = 100000, kMaxBatch = 65536, kMaxTextTokens = 1 << 20;
constexpr double kMaxSide = 16384;      // pixels (core/sequence.cpp's parse_resolution)
constexpr double kMaxHostMemGib = 1e7;  // GiB of one node

constexpr unsigned kNotGui = kCliFront | kPythonFront | kRunFront;

std::vector<QueryField> make_fields() {
  using K = FieldKind;
  const double max_gpus = kMaxGpus;
  return {
      {"--gpus", "gpus", K::kInt, 1, max_gpus, {}, "",
       fmt::format("number of GPUs to spread one job over (default: the topology's; else cpplan: the GPUs nvidia-smi "
                   "lists, cpplan-gui: {})",
                   kGuiGpus),
       kEveryFront, &Options::gpus},
      {"--res", "res", K::kResolution, 1, kMaxSide, {}, "", "WIDTHxHEIGHT in pixels (default: the model's)", kEveryFront,
       &Options::res},
      {"--frames", "frames", K::kInt, 1, kMaxFrames, {}, "", "frames, video models (default: the model's)", kEveryFront,
       &Options::frames},
      {"--model", "model", K::kText, 0, 0, {}, "flux.1-dev", "model profile (cpplan list models; default flux.1-dev)",
       kEveryFront, &Options::model},
      {"--model-config", "model_config", K::kText, 0, 0, {}, "",
       "a diffusers transformer config.json or pipeline folder, instead of --model's profile", kEveryFront,
       &Options::model_config},
      {"--hardware", "hardware", K::kText, 0, 0, {}, "",
       fmt::format("hardware profile, or local: this machine as probed (default: the topology's; else cpplan: the "
                   "local GPU's, else h100-sxm; cpplan-gui: {})",
                   kGuiHardware),
       kEveryFront, &Options::hardware},
      {"--steps", "steps", K::kInt, 1, kMaxSteps, {}, "", "denoising steps (default: the model's)", kEveryFront,
       &Options::steps},
      {"--attention-backend", "attention_backend", K::kChoice, 0, 0, {"flash", "cudnn", "sage", "native"}, "flash",
       "flash | cudnn | sage | native (default flash)", kEveryFront, &Options::backend},
      {"--batch", "batch", K::kInt, 1, kMaxBatch, {}, "1", "images generated together (split over dp replicas; default 1)",
       kEveryFront, &Options::batch},
      {"--text-tokens", "text_tokens", K::kInt, 1, kMaxTextTokens, {}, "", "text tokens (default: the model's)", kNotGui,
       &Options::text_tokens},
      {"--runtime", "runtime", K::kText, 0, 0, {}, "",
       "how the framework runs it: diffusers | xdit | compiled | cpplan (default: --framework's, xdit for xdit; else "
       "diffusers; cpplan run: cpplan)",
       kEveryFront, &Options::runtime},
      {"--text-encoder", "text_encoder", K::kChoice, 0, 0,
       {"replicated", "offloaded", "sequential", "sharded", "fully-sharded", "fully-sharded-host"}, "",
       "replicated | offloaded | sequential | sharded | fully-sharded | fully-sharded-host (default: the fastest that "
       "fits, per plan and framework)",
       kEveryFront, &Options::text_encoder},
      {"--vae", "vae", K::kChoice, 0, 0, {"single", "parallel", "tiled", "sliced"}, "",
       "single | parallel | tiled | sliced (default: single or parallel, the fastest that fits, per plan)", kEveryFront,
       &Options::vae},
      {"--offload-text-encoders", "offload_text_encoders", K::kFlag, 0, 0, {}, "",
       "the same as --text-encoder offloaded", kEveryFront, &Options::offload},
      {"--offload-idle-transformer", "offload_idle_transformer", K::kFlag, 0, 0, {}, "",
       "two-transformer pipelines (Wan2.2 A14B): keep the one not denoising in host memory, loading each per image",
       kEveryFront, &Options::offload_idle_transformer},
      {"--host-mem", "host_mem", K::kNumber, 1, kMaxHostMemGib, {}, "",
       "host memory of one node, GiB: every rank of a node loads its own copy of the pipeline there first (default: "
       "this machine's for --hardware local, else the hardware profile's typical node)",
       kEveryFront, &Options::host_mem},
      {"--profiles", "profiles", K::kList, 0, 0, {}, "",
       "extra profile directory (models/, hardware/, topologies/); repeatable", kEveryFront, &Options::profiles},
      {"--framework", "framework", K::kChoice, 0, 0,
       {"diffusers", "xdit", "cache-dit", "sglang", "vllm-omni", "any", "cpplan"}, "any",
       "rank only the plans this framework runs: diffusers | xdit | cache-dit | sglang | vllm-omni | any (default any: "
       "plans some framework runs first) | cpplan (every plan by its time: cpplan run executes them)",
       kEveryFront, &Options::framework},
      {"--framework-version", "framework_version", K::kList, 0, 0, {}, "",
       "a framework's older layout (cpplan list frameworks), e.g. xdit-2025; repeatable", kEveryFront,
       &Options::framework_versions},
      {"--topology", "topology", K::kText, 0, 0, {}, "", "place plans on a topology (cpplan list topologies)",
       kEveryFront, &Options::topology},
      {"--topology-file", "topology_file", K::kText, 0, 0, {}, "",
       "place plans on the topology of a TOML file (docs/topology.md)", kNotGui, &Options::topology_file},
      {"--nodes", "nodes", K::kInt, 1, max_gpus, {}, "",
       "nodes of the topology (or of a PCIe GPU's [node]), joined by its network (default 1)", kEveryFront,
       &Options::nodes},
      {"--num-pipeline-patch", "num_pipeline_patch", K::kInt, 1, max_gpus, {}, "",
       "PipeFusion patches M (default: check and run P; recommend and cpplan-gui P, 2P and 4P)", kEveryFront,
       &Options::pipeline_patches},
      {"--pipefusion-warmup-steps", "pipefusion_warmup_steps", K::kInt, 0, kMaxSteps, {}, "",
       "PipeFusion steps run synchronously before the patch pipeline (default 1, as xDiT)", kEveryFront,
       &Options::pipefusion_warmup},
      {"--all", "all", K::kFlag, 0, 0, {}, "",
       "every plan: the invalid ones with their reasons, the fully-sharded twins of every valid plan, data parallel "
       "for one image",
       kEveryFront, &Options::all},
  };
}

}  // namespace

const std::vector<QueryField>& query_fields() {
  static const std::vector<QueryField> fields = make_fields();
  return fields;
}

const QueryField* find_query_field(std::string_view flag_or_key) {
  for (const QueryField& f : query_fields())
    if (f.flag == flag_or_key || f.key == flag_or_key) return &f;
  return nullptr;
}

const QueryField& query_field(std::string_view flag) {
  const QueryField* f = find_query_field(flag);
  if (!f) throw std::logic_error(fmt::format("no query field {}", flag));
  return *f;
}

int parse_int_field(std::string_view flag, const std::string& text) {
  const QueryField& f = query_field(flag);
  return parse_int(std::string(flag), text, static_cast<int>(f.lo), static_cast<int>(f.hi));
}

double parse_number_field(std::string_view flag, const std::string& text) {
  const QueryField& f = query_field(flag);
  return parse_number(std::string(flag), text, f.lo, f.hi);
}

bool field_set(const Options& o, const QueryField& f) {
  static const Options defaults;
  return std::visit([&](auto member) { return o.*member != defaults.*member; }, f.member);
}

std::string field_text(const Options& o, const QueryField& f) {
  if (auto* s = std::get_if<std::string Options::*>(&f.member)) return o.**s;
  if (auto* list = std::get_if<std::vector<std::string> Options::*>(&f.member)) return fmt::format("{}", fmt::join(o.**list, ","));
  return o.*std::get<bool Options::*>(f.member) ? "true" : "false";
}

void set_field(Options& o, const QueryField& f, const std::string& text) {
  if (auto* s = std::get_if<std::string Options::*>(&f.member)) {
    o.**s = text;
  } else if (auto* list = std::get_if<std::vector<std::string> Options::*>(&f.member)) {
    (o.**list).push_back(text);
  } else {
    if (text != "true" && text != "false") throw InvalidInput{fmt::format("{} = {}: must be true or false", f.flag, text)};
    o.*std::get<bool Options::*>(f.member) = text == "true";
  }
}

std::vector<std::string> to_argv(const Options& o) {
  std::vector<std::string> argv;
  for (const QueryField& f : query_fields()) {
    if (!field_set(o, f)) continue;
    if (auto* s = std::get_if<std::string Options::*>(&f.member)) {
      argv.insert(argv.end(), {std::string(f.flag), o.**s});
    } else if (auto* list = std::get_if<std::vector<std::string> Options::*>(&f.member)) {
      for (const std::string& v : o.**list) argv.insert(argv.end(), {std::string(f.flag), v});
    } else {
      argv.emplace_back(f.flag);  // a flag set differs from its default, false
    }
  }
  return argv;
}

}  // namespace cpplan::session
