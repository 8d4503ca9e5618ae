#pragma once
// A request to the planner as the fronts receive it: every option as text, parsed here into a
// Query and a ParallelConfig, so that a bad value gets one line naming the option, its value and
// the rule, from the CLI and the GUI alike.

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/profiles.h"
#include "core/text.h"
#include "planner/planner.h"

namespace cpplan::session {

inline constexpr int kMaxGpus = 1 << 17;
// The hardware a query plans for when nothing names one: no --hardware, no topology, and (cpplan)
// no local GPU that nvidia-smi lists; cpplan-gui's first query; `cpplan run`'s predictions on CPU.
inline constexpr const char* kFallbackHardware = "h100-sxm";

// Every option of a request, as the user wrote it (empty: the default).
struct Options {
  // --model-config: a diffusers transformer config.json or pipeline folder, instead of --model's
  // profile; model_config_json: the same config as JSON text (the Python module's dict).
  std::string model_config, model_config_json;
  std::string gpus, res, frames, model = "flux.1-dev", hardware, steps, backend, batch = "1", text_tokens;
  // --dtype of a planning query: the DiT linears' number format; empty: bf16 (core/precision.h).
  // `cpplan run --dtype` is the executor's own (dtype below: fp32 or bf16).
  std::string precision;
  // --cache POLICY and its parameters (core/cache.h); empty: no step cache, or the policy's defaults.
  std::string cache, cache_fn, cache_bn, cache_warmup, cache_every, cache_hit_rate, cache_max_cached;
  std::string runtime;       // empty: the --framework's (its profile's runtime), else diffusers (cpplan run: cpplan)
  std::string text_encoder;  // empty: the planner picks per plan
  std::string vae;           // empty: the planner picks per plan
  bool offload = false;      // --offload-text-encoders: --text-encoder offloaded
  bool offload_idle_transformer = false;  // --offload-idle-transformer (two-transformer pipelines)
  std::string host_mem;      // --host-mem GiB; empty: the hardware profile's node, or this machine's (local)
  std::vector<std::string> profiles;
  // topology-aware placement
  std::string topology, topology_file, nodes;
  bool explain = false;
  // collectives priced from the nccl-tests imports of this cluster in --db (session/engine/cluster_model.h)
  std::string cluster;
  // recommend
  std::string top = "10";
  std::string framework = "any";  // rank only the plans this framework runs (diffusers, xdit, cache-dit)
  std::vector<std::string> framework_versions;  // framework files other than the defaults, e.g. xdit-2025
  bool all = false;
  bool no_anything = false;  // --no-anything: rank without the Ulysses Anything and Ring Anything forms
  bool json = false;
  // recommend: latency (one job on every GPU) | throughput (replicas; planner/fleet.h), and the
  // latency target per image of throughput
  std::string objective = "latency", slo_ms;
  // check and run: the plan
  std::string ring = "1", ulysses = "1", tp = "1", cfg = "1", dp = "1", rotate = "allgather";
  std::string fully_shard = "1";  // fs_degree: ranks sharing one copy of the block weights
  bool ulysses_anything = false, ring_anything = false, no_fp32 = false;
  // PipeFusion: stages (check and run), patches and warm-up steps (every command; empty: xDiT's
  // defaults, M = P and W = 1; recommend: P, 2P and 4P patches)
  std::string pipefusion = "1", pipeline_patches, pipefusion_warmup;
  // run
  std::string nproc, warmup = "1", seed = "0", timeout = "60", device = "cpu", db, save_latents, plan;
  std::string max_memory;  // per rank, e.g. 512MiB; empty: the device's own capacity
  std::string dtype;       // fp32 | bf16; empty: fp32 on cpu, bf16 on cuda
  std::string weights;     // --weights same | int8: the blocks' linear weights; empty: same (the dtype's)
  bool sync_collectives = false;  // NCCL collectives timed between device synchronisations
  bool dry_run = false;           // the plan resolved (--plan best's too) and printed, nothing run
  bool list_unsupported = false;  // the valid plans the executor does not run listed, nothing run
  // list
  std::string what;
  // topo import
  std::string topo_input, topo_name, topo_output, nvlink_gbps = "25", pcie_gbps = "32", nic_gbps = "50",
      socket_gbps = "64";
  bool topo_no_p2p = false;
};

// Bad input: the message names the flag, its value and the rule (exit code 3). It is one line:
// control characters of the values it quotes (an argument can hold a newline) are escaped.
struct InvalidInput {
  explicit InvalidInput(std::string_view text) : message(printable(text)) {}
  std::string message;
};

// An integer option in [lo, hi]; throws InvalidInput.
int parse_int(const std::string& flag, const std::string& text, int lo, int hi);


// The query of `a` on profiles borrowed from `catalog` (the query points into it, and into
// topology_file for --topology-file); throws InvalidInput. Notes (the hardware guessed) go to `err`.
struct ResolvedQuery {
  Query query;
  bool hardware_guessed = false;
  std::shared_ptr<const Topology> topology_file;
  bool local_hardware = false;  // --hardware local: query.hardware is left for the caller
};
ResolvedQuery resolve_query(const Options& a, const ProfileCatalog& catalog, std::ostream& err);

// A query with the catalog it points into (build_query): the catalog is shared, so a context
// moves and copies without the query's pointers dangling. With a model config, its own copy of the
// catalog holds the config's profile.
struct Context : ResolvedQuery {
  std::shared_ptr<const ProfileCatalog> catalog;
};

// The catalog and the query; throws InvalidInput. `exe` locates the installed profiles.
Context build_query(const Options& a, const std::string& exe, std::ostream& err);
// The same on a catalog already loaded (a.profiles is not read again); shared, not copied, unless
// a model config adds a profile to it.
Context build_query(const Options& a, std::shared_ptr<const ProfileCatalog> catalog, std::ostream& err);
Context build_query(const Options& a, ProfileCatalog catalog, std::ostream& err);
// The options that resolve to query `q` again: its model, size, steps, GPUs, hardware, attention
// backend, the frames of a video model and the forced placements. A front's or a job's argv of a
// resolved query is to_argv of these (session/query/query_fields.h).
// Its --dtype and --cache too (a ranked list of either: the names, each cache at its defaults).
Options query_options(const Query& q);
// --dtype of `q`'s format, or its ranked formats' list ("" for BF16 alone).
void set_format_fields(Options& o, const Query& q);
// --cache and every parameter of cache `s` that its policy takes, at its value ("" for none).
void set_cache_fields(Options& o, const CacheSpec& s);
// Whether cpplan's executor holds the DiT's weights in format `p`: its compute dtype's (BF16, or
// FP32 on a CPU), or weight-only int8 (`cpplan run --weights int8`).
bool runs_held_weights(const Precision& p);
// The options of `cpplan run` for query `q` ranked in format `p` with step cache `cache`:
// query_options(q) without the planning --dtype (`cpplan run --dtype` is the executor's fp32 or
// bf16), with --weights int8 for int8-weight-only, and with `cache` where it is the fixed
// schedule the executor runs (session/engine/executor_support.h says why a row's other format or
// cache does not run).
Options run_options(const Query& q, const Precision& p = {}, const CacheSpec& cache = {});
// to_argv(o) (the field table's flags) and the run's own that run_options sets (--weights).
std::vector<std::string> run_options_argv(const Options& o);
// What follows `cpplan run` to execute plan `c` of query `q` ranked in `p` with `cache`:
// run_options' flags, then plan_argv(c). The GUI's Run tab, `cpplan --json` ("run_args") and
// Python show it.
std::vector<std::string> run_argv(const Query& q, const ParallelConfig& c, const Precision& p = {},
                                  const CacheSpec& cache = {});
// The plan flags as a config; throws InvalidInput.
ParallelConfig plan_config(const Options& a);
// The inverse of plan_config: `c`'s degrees and options set in `o`'s plan fields (and its
// PipeFusion patches and warm-up steps when it has stages).
void set_plan_fields(Options& o, const ParallelConfig& c);
// The flags of plan `c` as `cpplan check` and `cpplan run` take them (the fields that differ from
// the defaults, session/query/query_fields.h): every front's and job's argv of a plan.
std::vector<std::string> plan_argv(const ParallelConfig& c);
// The planner's options for a ranking: the PipeFusion flags and whether to keep invalid plans;
// throws InvalidInput.
planner::PlannerOptions planner_options(const Options& a, bool keep_invalid);
// --framework: the framework the ranking is restricted to, none for "any" and for "cpplan" (every
// valid plan, ranked by its time alone: cpplan's executor runs them all); throws InvalidInput.
std::optional<planner::Framework> framework_choice(const Options& a);
// A number flag in (lo, hi]; throws InvalidInput.
double parse_number(const std::string& flag, const std::string& text, double lo, double hi);

}  // namespace cpplan::session
