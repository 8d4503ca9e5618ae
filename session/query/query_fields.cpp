#include "session/query/query_fields.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <stdexcept>

#include "session/query/query_flags.h"

namespace cpplan::session {

namespace {

constexpr double kMaxFrames = 100000, kMaxSteps = 100000, kMaxBatch = 65536, kMaxTextTokens = 1 << 20;
constexpr double kMaxSide = 16384;      // pixels (core/sequence.cpp's parse_resolution)
constexpr double kMaxHostMemGib = 1e7;  // GiB of one node

constexpr unsigned kNotGui = kCliFront | kPythonFront | kRunFront;
constexpr unsigned kPlanFronts = kCliFront | kGuiFront | kRunFront;  // check, run; the GUI's run panel
constexpr unsigned kPlanningFronts = kCliFront | kGuiFront | kPythonFront;  // the planner's, not `cpplan run`'s

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
      {"--attention-backend", "attention_backend", K::kChoice, 0, 0,
       {"flash", "cudnn", "sage", "native", "fa3", "fa4", "aiter", "splash", "fa2", "sdpa"}, "",
       "attention kernel: flash (FA2) | cudnn | sage | native (torch SDPA) | fa3 | fa4 | aiter | splash (default: what "
       "--framework picks on the GPU, diffusers' for any; flash for cpplan)",
       kEveryFront, &Options::backend},
      {"--dtype", "dtype", K::kChoice, 0, 0,
       {"bf16", "fp8", "fp8-row", "fp8-static", "fp8-weight-only", "int8", "int8-weight-only", "nvfp4", "mxfp4", "any"},
       "",
       "the DiT linears' number format: bf16 | fp8 (W8A8, dynamic per tensor) | fp8-row | fp8-static | "
       "fp8-weight-only | int8 (W8A8, dynamic per row) | int8-weight-only | nvfp4 | mxfp4 (default bf16; each "
       "framework offers some: cpplan list frameworks); any: rank every format the GPU runs that a framework "
       "offers; or several, separated by commas",
       kPlanningFronts, &Options::precision},
      {"--cache", "cache", K::kChoice, 0, 0,
       {"none", "fbcache", "dbcache", "teacache", "taylorseer", "magcache", "fixed", "any"}, "",
       "a step cache: fbcache | dbcache (the first --cache-fn and last --cache-bn blocks run every step, the middle "
       "ones reuse their residual) | teacache | magcache (decide on the first block's input) | taylorseer (every "
       "--cache-every-th step computed) | fixed (warm-up, then every --cache-every-th step) | none (default); any: "
       "rank none and every cache a framework ships, at its defaults; or several, separated by commas",
       kPlanningFronts, &Options::cache},
      {"--cache-fn", "cache_fn", K::kInt, 0, 1000, {}, "", "--cache: blocks run on every step from the first (default: the policy's)",
       kPlanningFronts, &Options::cache_fn},
      {"--cache-bn", "cache_bn", K::kInt, 0, 1000, {}, "", "--cache: blocks run on every step from the last (default: the policy's)",
       kPlanningFronts, &Options::cache_bn},
      {"--cache-warmup", "cache_warmup", K::kInt, 0, kMaxSteps, {}, "",
       "--cache: steps computed before any is cached (default: the policy's)", kPlanningFronts,
       &Options::cache_warmup},
      {"--cache-every", "cache_every", K::kInt, 1, kMaxSteps, {}, "",
       "--cache taylorseer or fixed: after the warm-up, every N-th step computed (default: the policy's)",
       kPlanningFronts, &Options::cache_every},
      {"--cache-hit-rate", "cache_hit_rate", K::kNumber, 0, 0.99, {}, "",
       "--cache fbcache, dbcache, teacache, magcache: the share of the steps after the warm-up that the threshold "
       "caches (default 0.5, an assumption: set it from your own runs)",
       kPlanningFronts, &Options::cache_hit_rate},
      {"--cache-max-cached", "cache_max_cached", K::kInt, -1, kMaxSteps, {}, "",
       "--cache: at most this many cached steps in a row (-1: no cap; default: the policy's)", kPlanningFronts,
       &Options::cache_max_cached},
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

// A plan's degree: negative and zero values are parsed, then refused by the plan's rules with the
// rule they break (session::plan_config).
QueryField degree(std::string_view flag, std::string_view key, std::string help, std::string Options::*member) {
  return {flag, key, FieldKind::kInt, -double(kMaxGpus), double(kMaxGpus), {}, "1", std::move(help), kPlanFronts,
          member, FieldGroup::kPlan};
}

QueryField plan_flag(std::string_view flag, std::string_view key, std::string help, bool Options::*member) {
  return {flag, key, FieldKind::kFlag, 0, 0, {}, "", std::move(help), kPlanFronts, member, FieldGroup::kPlan};
}

std::vector<QueryField> make_plan_fields() {
  using K = FieldKind;
  return {
      degree("--ring", "ring", "ring_degree", &Options::ring),
      degree("--ulysses", "ulysses", "ulysses_degree", &Options::ulysses),
      degree("--tp", "tp", "tp_degree", &Options::tp),
      degree("--cfg", "cfg", "cfg_degree", &Options::cfg),
      degree("--dp", "dp", "dp_degree", &Options::dp),
      degree("--fully-shard", "fully_shard",
             "fs_degree: ranks that each hold 1/F of every block's weights, gathered block by block (xDiT "
             "--fully_shard_degree; divides ring x ulysses x cfg x dp, not with --tp)",
             &Options::fully_shard),
      degree("--pipefusion", "pipefusion", "pipefusion_parallel_degree: PipeFusion stages", &Options::pipefusion),
      plan_flag("--ulysses-anything", "ulysses_anything", "ulysses_anything=True", &Options::ulysses_anything),
      plan_flag("--ring-anything", "ring_anything", "ring_anything=True", &Options::ring_anything),
      {"--rotate-method", "rotate_method", K::kChoice, 0, 0, {"allgather", "p2p", "alltoall"}, "allgather",
       "allgather | p2p (alltoall is reserved)", kPlanFronts, &Options::rotate, FieldGroup::kPlan},
      plan_flag("--no-fp32", "no_fp32", "convert_to_fp32=False", &Options::no_fp32),
  };
}

std::vector<QueryField> make_other_fields() {
  using K = FieldKind;
  return {
      {"--top", "top", K::kInt, 1, 1 << 30, {}, "10", "ranked plans to show (default 10)", kCliFront | kPythonFront,
       &Options::top, FieldGroup::kRecommend},
      {"--objective", "objective", K::kChoice, 0, 0, {"latency", "throughput"}, "latency",
       "latency: one job over every GPU (default) | throughput: replicas for the most images per hour", kCliFront,
       &Options::objective, FieldGroup::kRecommend},
      {"--no-anything", "no_anything", K::kFlag, 0, 0, {}, "",
       "rank without the Ulysses Anything and Ring Anything forms (their uneven splits)", kEveryFront,
       &Options::no_anything, FieldGroup::kRecommend},
      {"--slo-ms", "slo_ms", K::kNumber, 0, 1e9, {}, "", "with --objective throughput: latency target per image, ms",
       kCliFront, &Options::slo_ms, FieldGroup::kRecommend},
      {"--db", "db", K::kText, 0, 0, {}, "",
       "SQLite database (default $XDG_DATA_HOME/cpplan/cpplan.db, whose folder is created; elsewhere the folder must "
       "exist); planning reads this machine's probes (--hardware local) and a cluster's imports (--cluster) there",
       kEveryFront, &Options::db, FieldGroup::kStore},
      {"--cluster", "cluster", K::kText, 0, 0, {}, "",
       "price collectives from the nccl-tests logs imported under this cluster name (import-nccl-tests --cluster), "
       "each group from the curve of its node span; kernels from --hardware",
       kEveryFront, &Options::cluster, FieldGroup::kStore},
  };
}

std::vector<QueryField> make_shared_fields() {
  std::vector<QueryField> all = make_fields();
  for (auto* more : {make_plan_fields, make_other_fields})
    for (QueryField& f : more()) all.push_back(std::move(f));
  return all;
}

}  // namespace

const std::vector<QueryField>& shared_fields() {
  static const std::vector<QueryField> fields = make_shared_fields();
  return fields;
}

const std::vector<QueryField>& fields_of(FieldGroup group) {
  static const auto groups = [] {
    std::array<std::vector<QueryField>, 4> out;
    for (const QueryField& f : shared_fields()) out[static_cast<std::size_t>(f.group)].push_back(f);
    return out;
  }();
  return groups[static_cast<std::size_t>(group)];
}

const std::vector<QueryField>& query_fields() { return fields_of(FieldGroup::kQuery); }

const QueryField* find_query_field(std::string_view flag_or_key) {
  for (const QueryField& f : shared_fields())
    if (f.flag == flag_or_key || f.key == flag_or_key) return &f;
  return nullptr;
}

const QueryField& query_field(std::string_view flag_or_key) {
  const QueryField* f = find_query_field(flag_or_key);
  if (!f) throw std::logic_error(fmt::format("no shared field {}", flag_or_key));
  return *f;
}

std::string flag_of(std::string_view key) { return std::string(query_field(key).flag); }

int parse_int_field(std::string_view flag_or_key, const std::string& text) {
  const QueryField& f = query_field(flag_or_key);
  return parse_int(std::string(f.flag), text, static_cast<int>(f.lo), static_cast<int>(f.hi));
}

double parse_number_field(std::string_view flag_or_key, const std::string& text) {
  const QueryField& f = query_field(flag_or_key);
  return parse_number(std::string(f.flag), text, f.lo, f.hi);
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

std::vector<std::string> to_argv(const Options& o) { return to_argv(o, {FieldGroup::kQuery}); }

std::vector<std::string> to_argv(const Options& o, std::initializer_list<FieldGroup> groups) {
  std::vector<std::string> argv;
  for (const QueryField& f : shared_fields()) {
    if (std::find(groups.begin(), groups.end(), f.group) == groups.end() || !field_set(o, f)) continue;
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
