#pragma once
// What a framework (diffusers, xDiT, cache-dit) runs, as data: profiles/frameworks/*.toml, one
// file per framework and version (schema: docs/profiles.md, "Framework profile"). The planner's
// frameworks column, its "cannot run" verdicts and the launch lines come from these files.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cache.h"
#include "core/hardware.h"
#include "core/model.h"
#include "core/parallel_config.h"
#include "core/precision.h"
#include "core/result.h"

namespace cpplan {

enum class Framework { kDiffusers, kXdit, kCacheDit, kSglang, kVllmOmni };
inline constexpr int kFrameworkCount = 5;
std::string_view to_string(Framework f);  // "diffusers", "xdit", "cache-dit", "sglang", "vllm-omni"
std::optional<Framework> framework_from_string(std::string_view name);
// The framework's name as people write it, in titles and headings: "xDiT", "SGLang Diffusion",
// "vLLM-Omni", to_string's name otherwise. Every front's "# xDiT" heading comes from here.
std::string_view framework_title(Framework f);

// A parallel feature a plan uses (planner/frameworks.cpp says which) and a framework offers.
enum class Feature {
  kUlysses, kRing, kUlyssesAnything, kRingAnything, kRingP2p, kTp, kCfg, kPipeFusion, kFullyShard,
  kDataParallel, kParallelVae, kShardedTextEncoder, kOffloadedTextEncoder, kSequentialTextEncoder,
  kTiledVae, kSlicedVae, kFullyShardedTextEncoder, kFullyShardedHostTextEncoder
};
inline constexpr int kFeatureCount = 18;
std::string_view to_string(Feature f);  // "ulysses", "ring", "ulysses_anything", ... as the files name them
std::optional<Feature> feature_from_string(std::string_view name);

struct FeatureSet {
  unsigned bits = 0;
  bool has(Feature f) const { return bits & (1u << static_cast<int>(f)); }
  void add(Feature f) { bits |= 1u << static_cast<int>(f); }
};

// A feature a framework runs for a model only up to some degree, and the refusal above it.
struct DegreeLimit {
  Feature feature = Feature::kTp;
  int max = 0;
  std::string reason;  // "vLLM-Omni runs tp only up to degree 2 for this model"
};

// One model as a framework serves it: the profiles it covers, the diffusers transformer classes it
// covers (a model planned from a config or a folder matches by its class), how it is launched (the
// runner's model name, or an example script) and the features it offers.
struct FrameworkModel {
  std::vector<std::string> profiles;
  std::vector<std::string> classes;  // e.g. "CogVideoXTransformer3DModel"
  std::string runner_name;  // xDiT's runner: `xdit --model NAME`
  std::string script;       // a script that serves it instead, e.g. "examples/pixartsigma_example.py"
  FeatureSet features;
  std::string unconfirmed;  // non-empty: the reference marks this entry unconfirmed, and why
  // The largest degrees of features it runs for this model (vLLM-Omni's Z-Image: TP 2 only); only
  // the features with a degree (ulysses, ring, tp, cfg, pipefusion, fully_shard, data_parallel).
  std::vector<DegreeLimit> max_degrees;
  // The quantized --dtype values the framework runs for this model where its source decides per
  // model (xDiT's runner: each model's ModelCapabilities use_fp8_gemms, use_fp4_gemms,
  // use_int8_gemms); nullopt: every format of the file's [[quantization]] entries; empty: bf16
  // only. `dtypes_reason` refuses any other (made once the file is read).
  std::optional<std::vector<Precision>> dtypes;
  std::string dtypes_source, dtypes_reason;
  // The text-encoder feature the framework uses whenever, and only when, the plan shards the
  // transformer fully (xDiT's fsdp_strategy shards the largest text encoder with it): one of the
  // fully-sharded text encoder features, offered by this entry.
  std::optional<Feature> with_fully_shard;

  // Why it does not run quantized `p` (dtypes_reason); "" when it does, when `dtypes` is unset, and for BF16.
  std::string_view dtype_refusal(const Precision& p) const;
};

// A feature the framework runs only with some attention backends (SGLang Diffusion's Ring: fa or
// sage).
struct BackendRule {
  Feature feature = Feature::kRing;
  std::vector<AttentionBackend> backends;
  std::string reason;
};

// What the framework launches on a range of accelerators, by default (frameworks-runtime.md, with
// the framework's source): its attention kernel, the others --attention-backend may pick there,
// the elementwise kinds it runs as fused kernels, and whether it compiles the transformer's blocks.
// The step time is these kernels' times on the GPU's resources (costmodel), no per-framework factor.
struct FrameworkKernels {
  std::vector<DeviceRange> on;
  AttentionBackend attention = AttentionBackend::kNative;
  std::vector<AttentionBackend> offers;  // the default included
  std::string attention_source;          // the framework's source line for the default
  FusedSet fused;
  std::string fused_source;
  bool compile = false;                  // torch.compile of the blocks by default (the compiled runtime)
  std::string compile_source;
  bool offers_kernel(AttentionBackend b) const;
};

// Number formats the framework runs the DiT's linear layers in (frameworks-runtime.md), and how a
// user asks for them: the flag or call its launch text carries, and the framework's source. Where
// a format runs is the format's rule (precision_refusal, core/precision.h).
struct FrameworkQuantization {
  std::vector<Precision> dtypes;
  std::string flag;    // "--use_fp8_gemms"; cache-dit's keyword argument, diffusers' torchao call
  std::string import;  // the Python import the flag needs (cache-dit, diffusers); "" for a command line
  std::string source;  // the framework's file or doc
  // The devices the framework runs these formats on, narrower than the formats' own rule (vLLM-Omni's
  // INT8 W8A8 from sm89); empty: wherever the format runs.
  std::vector<DeviceRange> on;
  std::string on_reason;  // why a GPU outside `on` cannot run them (made once the file is read)
};

// Step caches the framework ships (frameworks-runtime.md) and how a user turns one on: the launch
// text's addition, a template whose {F}, {B}, {W}, {MC}, {N} stand for the plan's first and last
// blocks, warm-up steps, cap on consecutive cached steps and interval; whether the cache runs under
// context or tensor parallelism (its decision all-reduced over the group), with CFG parallelism,
// and for which transformer classes ("" : every model the framework runs).
struct FrameworkCache {
  std::vector<CachePolicy> policies;
  std::string flag;
  std::string import;            // the Python import the flag needs; "" for a command line
  bool with_sp = true;           // runs with Ulysses or Ring (its decision reduced over the group)
  bool with_tp = true;           // runs with tensor parallelism
  bool with_cfg = true;          // runs with CFG parallelism
  std::vector<std::string> classes;
  // The transformer classes whose modules the hook's own identifiers attach to (diffusers'
  // TaylorSeer: the modules named ^transformer_blocks.*attn, ^single_transformer_blocks.*attn,
  // ^blocks.*attn, ^temporal_transformer_blocks.*attn); on another class the framework runs the
  // flag, the hook attaches to nothing and every step is computed. Empty: every class.
  std::vector<std::string> hooked_classes;
  std::string source;
  // The schedule the framework's hook runs whatever the query asks, where its flag takes no such
  // parameter (diffusers' FirstBlockCacheConfig: no warm-up, no cap): the warm-up steps, or the
  // share of the steps computed first (MagCache's retention_ratio: int(share x steps + 0.5)), and
  // the cap on cached steps in a row (-1: none). Unset: the query's.
  std::optional<int> warmup;
  std::optional<double> warmup_share;
  std::optional<int> max_cached;
  // Why a plan breaking one of the above cannot run it (made once the file is read); the schedule
  // it fixes, as a phrase ("runs --cache fbcache with no warm-up and no cap on cached steps in a row").
  std::string sp_reason, tp_reason, cfg_reason, class_reason, schedule_reason, hooked_reason;

  // Whether it adapts to model `m`'s transformer class (classes), and whether its hook attaches to
  // `m`'s modules (hooked_classes).
  bool adapts_to(const ModelProfile& m) const;
  bool hooks(const ModelProfile& m) const;

  // The query's cache `s` as the framework runs it over `steps` steps: its fixed warm-up and cap
  // in place of the query's.
  CacheSpec schedule(const CacheSpec& s, int steps) const;
  // The schedule it runs on model `m`: schedule(), unhooked (every step computed, nothing stored)
  // where its hook attaches to none of `m`'s modules (diffusers' TaylorSeer on Wan); schedule()
  // alone when there is no model (null).
  CacheSpec runs_on(const CacheSpec& s, int steps, const ModelProfile* m) const;
  // `flag` with the cache's parameters put in ({F} first and {B} last blocks, {W} warm-up steps,
  // {MC} most cached in a row, {N} every N-th step) and {S}, the denoising's `steps`.
  std::string flag_for(const CacheSpec& s, int steps) const;
};

// Features used together that the framework refuses, and why.
struct FeatureConflict {
  Feature a = Feature::kTp, b = Feature::kUlysses;
  std::string reason;
};

// A device family the framework runs on, with the features it offers there (all when unset).
struct FamilySupport {
  DeviceFamily family = DeviceFamily::kCuda;
  std::optional<FeatureSet> only;
  std::string reason;  // why a plan using another feature cannot run there
};

struct FrameworkProfile {
  std::string name;          // file stem, e.g. "xdit" or "xdit-2025"
  Framework framework = Framework::kDiffusers;
  std::string title;         // "xDiT"
  std::string version;       // e.g. "main (175e0bf, 2026)"
  std::string description;
  std::string source;        // file it was loaded from
  std::vector<FamilySupport> families;
  std::string family_reason;               // on a family not listed
  std::vector<std::string> entry_points;   // commands and scripts that exist in this version
  std::string launcher;                    // "runner": `xdit` ...; "script": a Python script; "command": a CLI; "note"
  std::string runtime;                     // the runtime profile its plans run under, when --runtime is not given
  std::string unconfirmed;                 // non-empty: what of this file the reference marks unconfirmed
  std::vector<FeatureConflict> conflicts;
  std::vector<BackendRule> backend_rules;
  std::vector<FrameworkKernels> kernels;   // in file order; the first whose `on` matches applies
  std::vector<FrameworkQuantization> quantization;  // [[quantization]]; none: BF16 only
  std::vector<FrameworkCache> caches;      // [[cache]]; none: no step cache
  std::string cache_reason;                // "xDiT offers --cache fbcache, teacache only"
  std::string quantization_reason;         // "xDiT runs the DiT's linears in bf16, fp8, nvfp4 or mxfp4 only"
  std::string with_fully_shard_reason;     // why a plan breaks an entry's with_fully_shard
  std::string missing[kFeatureCount];      // why a model without a feature cannot run a plan using it
  std::string unlisted;                    // why a model without an entry runs nothing ("" : `common` only)
  FeatureSet common;                       // offered for every model, listed or not
  std::vector<FrameworkModel> models;

  // The entry of `m`, in file order: the first listing its name; else the first listing the built-in
  // profile it derives from (ModelProfile::base) and, when `m` has one, its transformer class; else
  // the first listing its transformer class (ModelProfile::transformer_class). Null when unlisted.
  const FrameworkModel* model_for(const ModelProfile& m) const;
  // The features `m` gets: its entry's and the common ones.
  FeatureSet features_for(const ModelProfile& m) const;
  // What it launches on `hw` (null: the file says nothing for that accelerator).
  const FrameworkKernels* kernels_for(const HardwareProfile& hw) const;
  // The entry that runs `p` (null: the framework does not offer it); BF16 needs none.
  const FrameworkQuantization* quantization_for(const Precision& p) const;
  // Why it cannot run `p` on `hw` in one line (no entry offers it: quantization_reason; `hw` outside
  // the entry's `on`: its on_reason); "" when it runs it, and for BF16.
  std::string_view quantization_refusal(const Precision& p, const HardwareProfile& hw) const;
  // Why it cannot run quantized `p` for model `m`, whose entry lists the formats it runs (the
  // entry's dtypes_reason); "" when it can, when the entry does not say, and for BF16.
  std::string_view model_dtype_refusal(const Precision& p, const ModelProfile& m) const;
  // The entry that runs `p` (null: none).
  const FrameworkCache* cache_for(CachePolicy p) const;
  // The quantized dtypes it offers, by name, in file order ("fp8, nvfp4"; "none" when it offers none).
  std::string quantization_names() const;
};

Result<FrameworkProfile> load_framework_profile(const std::string& path);
Result<FrameworkProfile> parse_framework_profile(std::string_view text, const std::string& path);

}  // namespace cpplan
