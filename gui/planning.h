#pragma once
// What the GUI asks the planner, as plain values (no widgets), and the two computations that run
// off the UI thread: ranking every plan of one query, and the best plan over a grid of
// resolutions x GPU counts (the heatmap).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/profiles.h"
#include "core/result.h"
#include "session/engine/engine.h"
#include "session/query/query.h"

namespace cpplan::gui {


// The query panel's state. 0 in width/height/frames/steps means the model's default. With a
// topology, "" hardware and 0 GPUs mean the topology's (its hardware, nodes x its GPUs), as the
// CLI's defaults when --hardware / --gpus are left out.
struct QueryInput {
  std::string model = "flux.1-dev";
  // cpplan --model-config: a diffusers transformer config.json or pipeline folder whose profile
  // replaces `model` ("": none). resolve_model_config turns it into a catalog model.
  std::string model_config;
  std::string hardware = session::kFallbackHardware;
  int gpus = 4;
  int batch = 1;         // images per prompt (cpplan --batch); dp_degree must divide it
  std::string topology;  // cpplan --topology; "" none
  int nodes = 0;         // cpplan --nodes; 0: not given (1 node)
  int width = 0, height = 0;  // pixels
  int frames = 0;
  int steps = 0;
  std::optional<AttentionBackend> backend;  // unset: the framework's pick on the GPU (--attention-backend left out)
  // cpplan --dtype: the DiT linears' number format ("bf16", "fp8", ...), "any" (every format the GPU
  // runs that a framework offers) or formats separated by commas; "" is bf16.
  std::string dtype;
  // cpplan --cache: a step cache policy ("fbcache", ...), "any" (none and every cache a framework
  // ships) or policies separated by commas; "" is none. Its parameters (--cache-fn, --cache-bn,
  // --cache-warmup, --cache-every, --cache-hit-rate, --cache-max-cached); unset: the policy's.
  std::string cache;
  std::optional<int> cache_fn, cache_bn, cache_warmup, cache_every, cache_max_cached;
  std::optional<double> cache_hit_rate;
  bool allow_anything = true;          // enumerate Ulysses Anything and Ring Anything
  // PipeFusion plans (cpplan --num-pipeline-patch, --pipefusion-warmup-steps): their patches (0:
  // P, 2P and 4P) and warm-up steps.
  int pipeline_patches = 0;
  int pipefusion_warmup_steps = kXditWarmupSteps;
  std::string runtime;                 // runtime profile (cpplan --runtime); "": the framework's, else diffusers
  // cpplan --framework: rank only the valid plans this framework runs (diffusers, xdit,
  // cache-dit); "any" ranks them all.
  std::string framework = "any";
  // cpplan --framework-version: framework files other than the defaults (e.g. "xdit-2025"): which
  // plans that framework is said to run, and its launch line.
  std::vector<std::string> framework_versions;
  // cpplan --all: also the fully-sharded twins (fs_degree > 1) of every valid plan, not only of
  // those that do not fit, and data-parallel plans of a one-image query.
  bool all_plans = false;
  // Forced placements (cpplan --text-encoder, --vae); unset: the planner picks, per plan, the
  // fastest that fits.
  std::optional<TextEncoderPlacement> text_encoder;
  std::optional<VaePlacement> vae;
  // cpplan --offload-idle-transformer: a two-transformer pipeline keeps the idle one in host memory.
  bool offload_idle_transformer = false;
  // cpplan --host-mem: host memory of one node, GiB, that every rank of it loads into first; 0: the
  // hardware profile's (this machine's for "local").
  double host_mem_gib = 0;
  // hardware "local": this machine's probes and latest calibration in this store (cpplan --db;
  // the default path when empty), as cpplan --hardware local plans; `cluster`: the collectives of
  // that cluster's nccl-tests imports there (cpplan --cluster).
  std::string db;
  std::string cluster;

  bool operator==(const QueryInput&) const = default;
};

using CatalogPtr = std::shared_ptr<const ProfileCatalog>;

// `in` as the functions below plan it. With a model config: a copy of `catalog` holding the
// config's profile, added by the CLI's code (session::build_query, as cpplan --model-config), and
// `in` naming that profile with model_config cleared; without one, both as given. A config that
// cannot be read or mapped is the CLI's one-line error (it names the path).
struct CatalogInput {
  CatalogPtr catalog;
  QueryInput input;
};
Result<CatalogInput> resolve_model_config(const CatalogPtr& catalog, QueryInput in);

// The planner's Query for `in`, parsed by the CLI's own parser (session::resolve_query) from the
// same options; an error names the field, its value and the rule. The Query borrows profiles (and
// the topology) from `catalog`; with hardware "local" its hardware is left null (compute_plans
// fills it from this machine's measured model). Precondition: in.model_config is resolved
// (resolve_model_config); an unresolved one is an error.
Result<Query> make_query(const ProfileCatalog& catalog, const QueryInput& in);

// The panel's values as the CLI's options (session::Options): the one conversion; the Engine
// resolves and prices them (session::Engine::resolve), as cpplan's.
session::Options options_of(const QueryInput& in);

// `in` resolved by the Engine on `catalog`: its query and the cost model it is priced with, or the
// CLI's one line (a store without this machine's probe or the cluster's imports included).
Result<session::Resolved> resolve(const CatalogPtr& catalog, const QueryInput& in);

// With hardware "local" or a cluster: throws session::InvalidInput, with the CLI's one line, when
// in.db holds no probe of this machine or no import of the cluster (or is missing); nothing otherwise.
void check_cost_model(const CatalogPtr& catalog, const QueryInput& in);

// One line of model facts at the chosen size: heads, blocks, sequence length (or the size error).
// Precondition as make_query's.
std::string model_facts(const ProfileCatalog& catalog, const QueryInput& in);

// Every plan of one query (its model config resolved here), as session::recommend answers it
// (restricted to in.framework's plans: report.framework and report.hidden_count say so), or the
// reason there is none. The recommendation owns the catalog, query and cost model; the fields
// below share it.
struct PlanResult {
  std::uint64_t generation = 0;  // the request it answers; older ones are discarded
  CatalogPtr catalog;            // keeps the profiles `query` points into alive (a model config's too)
  QueryInput input;              // as asked (model_config kept)
  std::optional<Query> query;    // empty when `error` is set
  // The answer, which owns the catalog, query and cost model the fields above point into (the
  // resolved request the Fleet tab asks the Engine about).
  std::shared_ptr<const session::Recommendation> recommendation;  // null when `error` is set
  std::string error;
  planner::PlanReport report;    // a copy of the recommendation's (the plans table takes its plans)
  double elapsed_ms = 0;
};
PlanResult compute_plans(CatalogPtr catalog, const QueryInput& in, std::uint64_t generation);

using session::HeatCell;
using session::heatmap_gpu_counts;
using session::heatmap_resolutions;

struct HeatmapResult : session::Heatmap {
  std::uint64_t generation = 0;
  std::string model, hardware;
};

// `in` resolved by the Engine, at every resolution x GPU count (session::Engine::heatmap); no
// resolutions: heatmap_resolutions of its model.
HeatmapResult compute_heatmap(CatalogPtr catalog, const QueryInput& in, const std::vector<Resolution>& resolutions,
                              const std::vector<int>& gpu_counts, std::uint64_t generation);

}  // namespace cpplan::gui
