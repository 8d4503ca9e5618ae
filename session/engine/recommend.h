#pragma once
// One query, answered once: the request parsed and validated (parse_request), then the whole
// recommendation as typed data (recommend, check). The CLI (text and JSON), the GUI and the
// Python module render a Recommendation; none of them computes a prediction, a ranking, a
// framework choice or a rejection group of its own.

#include <array>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/pipefusion.h"
#include "core/plan.h"
#include "core/profiles.h"
#include "core/result.h"
#include "core/violation.h"
#include "planner/fleet.h"
#include "planner/frameworks.h"
#include "planner/planner.h"
#include "planner/snippets.h"
#include "session/engine/explain.h"
#include "session/query/machine.h"
#include "session/engine/internal/planning.h"
#include "session/engine/internal/tune_hit_rate.h"
#include "session/query/query.h"

namespace cpplan::session {

// A request whose every option has been parsed and checked: what recommend() and check() need
// besides the catalog. Built only by parse_request.
struct Request {
  Options options;           // as the user wrote them (the query's fields are parsed with the catalog)
  int top = 10;              // ranked rows a front shows (--top)
  bool all = false;          // every plan: each form, the invalid ones with their rules (--all)
  bool explain = false;      // the top plan's per-group bandwidths and cost terms (--explain)
  bool throughput = false;   // --objective throughput: replicas (planner/fleet.h)
  std::optional<double> slo_ms;
  planner::PlannerOptions planner;
  std::optional<planner::Framework> framework;  // --framework; none for any and cpplan
  // --framework cpplan: every valid plan ranked by its time, those only `cpplan run` executes
  // among them (by default they follow the plans some framework runs).
  bool cpplan_plans = false;
  CostModelChoice cost;
  // Each listed plan's PlanScripts (Recommendation::scripts, fleet_scripts), which the JSON forms
  // print (report_json, fleet_json). The text and the GUI leave it off: they show only the
  // frameworks' choices, which hold their scripts, and the GUI asks plan_snippets for the plan
  // it details.
  bool with_scripts = false;
};

// Every option of a ranking request checked (field, value and rule in one line on error);
// `keep_invalid`: the report keeps the invalid plans (planner.keep_invalid; JSON without --all drops them).
Result<Request> parse_request(const Options& o, bool keep_invalid = true);

// What the machine running a query is, when --hardware local asks for it (the executor's probe).
using MachineSource = std::function<Machine()>;

// The query as planned: its catalog (the query points into it), the cost model (which may point
// the query at this machine), the notes made while resolving it (the GPU nvidia-smi lists, the
// hardware guessed), and the query's own facts. Copies share the catalog and the cost model.
struct PlannedQuery {
  std::shared_ptr<const Context> context;
  std::shared_ptr<const QueryCostModel> model;
  std::vector<std::string> notes;  // one line each, for the user's error stream
  double forward_flops = 0;        // one forward pass of the transformer at this sequence
  std::vector<MeasuredHitRate> hit_rates;  // the caches priced with a tune's measured hit rate

  const Query& query() const { return context->query; }
  const ProfileCatalog& catalog() const { return *context->catalog; }
  const std::shared_ptr<const ProfileCatalog>& shared_catalog() const { return context->catalog; }
};

// What a front will render of an answer, so that the Engine computes only that: the invalid plans
// (their rejection groups; `cpplan --json` without --all drops them) and each listed plan's scripts
// (the JSON forms print them; the text and the GUI show only the frameworks' choices).
struct Rendering {
  bool keep_invalid = true;
  bool with_scripts = false;
};

// A request resolved once (session::Engine::resolve): its options parsed and checked, its query
// and the cost model it is priced with. Every answer of the Engine is computed from one; copies
// share what they point into.
struct Resolved : PlannedQuery {
  Request request;
};

// A table row: one computation (a plan, and its other forms over an even split, e.g. Ulysses and
// Ulysses Anything), in rank order.
struct Row {
  const planner::RankedPlan* plan = nullptr;
  std::vector<const planner::RankedPlan*> same;  // the other forms (empty with --all: each form is a row)
  planner::FrameworkSet frameworks;               // those that run it in any of its forms
  std::string variant;                            // "Ulysses Anything", or "Ulysses/Anything" for both forms
  // Per framework (by Framework), how it runs the row: the run of the first form it runs.
  std::array<planner::FrameworkRun, planner::kFrameworkCount> runs{};
  // Whether a framework's placement or cache schedule differs from the row's own (plan->predicted's),
  // so that its image time and memory are its own.
  bool differs(Framework f) const;
  bool cpplan_only() const { return frameworks.bits == 0; }  // only `cpplan run` executes it
};

// The plans a throughput fleet's replicas come from, as --framework asks (planner::ReplicaPlans).
planner::ReplicaPlans replica_plans(const Request& r);

// A framework's own placement and figures: "offloaded/single 9.84 s 41.2 GiB" (" 14 steps cached"
// after the placement with a step cache, " every step computed" where the plan's own schedule,
// `plan_cached_steps`, caches some and the framework's none, " NO fit" when the pipeline does not
// fit with it).
std::string own_run_text(const planner::FrameworkRun& r, int plan_cached_steps);
// A row's frameworks as every front shows them: the names, with a framework's own placement and
// figures where they differ from the row's ("xdit (replicated/single 9.84 s 41.2 GiB)"); "cpplan
// run only" for a row no framework runs.
std::string frameworks_text(const Row& row);

// The invalid plans that break one rule first, with the user's lever and the clearest example.
struct Rejection {
  RuleId id;         // Violation::id of the rule (to_string: "even-split-image-tokens")
  std::string rule;  // Violation::rule, e.g. "must divide image tokens = 3969"
  Lever lever = Lever::kNone;
  int count = 0;
  const planner::RankedPlan* example = nullptr;
  int more_rules = 0;  // the example's other broken rules
};

// A framework's script for a plan as lines: a Python script (diffusers, cache-dit) or a command
// line (xDiT, SGLang Diffusion, vLLM-Omni; kNote: a one-line note, which no framework gives now).
struct Script {
  enum class Kind { kScript, kCommand, kNote };
  Framework framework = Framework::kDiffusers;
  Kind kind = Kind::kScript;
  PipelinePlacement placement;     // where the text encoders and the VAE run in it
  std::vector<std::string> lines;  // without line ends
};

// One framework's answer: the top plan's script, or why it cannot run the top plan and its own
// fastest plan with the gap, or nothing it can run.
struct FrameworkChoice {
  Framework framework = Framework::kDiffusers;
  std::string title;                             // "diffusers", "xDiT", "cache-dit", "SGLang Diffusion", "vLLM-Omni"
  const planner::RankedPlan* plan = nullptr;     // null: it runs no valid plan of this query
  planner::FrameworkRun run;                     // how it runs `plan`: its placement, image time, memory
  bool own_placement = false;                    // run's placement or cache schedule differs from the plan's ranked one
  double gap = 0;                                // plan's step time over the top plan's, minus one
  std::string top_unavailable;                   // empty when it runs the top plan
  std::optional<Script> script;                  // set with plan
  bool shown = true;                             // false when --framework names another one
};

// What a plan's JSON shows of each framework (render/plan_json.h), computed with the answer so that
// the renderers compute nothing: diffusers' parallel config, the parallel flags of xDiT, SGLang
// Diffusion and vLLM-Omni (each unset when that framework cannot run the plan), and each
// framework's script or why it cannot run it. Empty for an invalid plan.
struct DiffusersConfig {
  std::string cls;                                 // "ContextParallelConfig", "TensorParallelConfig"; "" on one GPU
  std::vector<planner::ConfigArgument> kwargs;     // in the order the script writes them
  std::string expression;                          // "ContextParallelConfig(ulysses_degree=4)"; "" on one GPU
};
struct PlanScripts {
  bool valid = false;  // the plan is valid and predicted: the fields below are set
  std::optional<DiffusersConfig> diffusers;
  std::optional<std::vector<std::string>> xdit_args, sglang_args, vllm_omni_args;
  std::array<planner::FrameworkSnippet, planner::kFrameworkCount> snippets{};
  std::vector<std::string> run_args;  // what follows `cpplan run` to execute it (session::run_argv)
};
// The scripts of plan `p` of query `q`.
PlanScripts plan_scripts(const Query& q, const planner::RankedPlan& p);

// The mean step of predicted plan `p` of `q` over its denoising, computed and cached steps
// together: the time the ranking orders by (planner::ranking_ms), for the fronts that plot it.
Milliseconds mean_step_ms(const Query& q, const planner::RankedPlan& p);

// A static-shape runtime's warm-up before the first timed image (XLA on TPU and Neuron).
struct Warmup {
  double compile_ms = 0;
  double warmup_ms = 0;          // the compile plus one image
  double images_to_amortize = 0; // images at this size until the warm-up is under 10% per image
};

struct Recommendation : Resolved {
  planner::PlanReport report;              // every plan, ranked (the invalid ones per request.planner.keep_invalid)
  std::vector<Row> rows;                   // the valid plans as rows, in rank order
  int fitting = 0;                         // valid plans that fit in memory
  std::vector<Rejection> rejections;       // the invalid plans, grouped, those a user can move first
  std::vector<FrameworkChoice> frameworks; // one per framework, for a report whose top plan is valid
  std::string prediction_source;           // "datasheet figures", "measured figures, ..."
  std::optional<Warmup> warmup;            // of the top plan
  std::optional<PlacementView> placement;  // the top plan's, with a topology
  std::optional<Explain> explain;          // the top plan's, with request.explain
  std::optional<planner::FleetReport> fleet;  // --objective throughput (rows and report then empty)
  std::vector<PlanScripts> scripts;        // with request.with_scripts: of report.plans, in its order
  std::vector<PlanScripts> fleet_scripts;  // with request.with_scripts: of fleet->rows' replicas, in their order

  const planner::RankedPlan* top() const { return planner::best_plan(report); }  // the one choice
};

// The ranked plans of query `q` priced by `cost` as request `r` asks (its planner options, its
// --framework): the ranking every front's rows, best plan and heatmap cells come from.
planner::PlanReport ranking(const Query& q, const costmodel::CostModel& cost, const Request& r);

// Request `o` parsed and its query resolved on `catalog`, priced as its options say; `machine`
// is asked only for --hardware local. session::Engine::resolve is the fronts' door to it.
Result<Resolved> resolve(const Options& o, const Rendering& how, std::shared_ptr<const ProfileCatalog> catalog,
                         const MachineSource& machine);
// The same of a parsed request (a tune turns its last calibration off first).
Result<Resolved> resolve(Request request, std::shared_ptr<const ProfileCatalog> catalog, const MachineSource& machine);
// The ranking of a resolved request.
Result<std::unique_ptr<Recommendation>> recommend(const Resolved& r);

// A PipeFusion plan's split as `cpplan check` shows it: each stage's blocks, and the latent rows
// and image tokens of a patch (the smallest and the largest when uneven), as xDiT splits them.
struct PipeFusionSplit {
  std::vector<int> stage_blocks;
  int blocks = 0;
  int patches = 0;
  PatchSpan rows, tokens;
  int warmup_steps = 0, steps = 0;
};

// `cpplan check`: one plan's verdict and prediction.
struct CheckResult : Resolved {
  planner::RankedPlan plan;
  std::optional<Warmup> warmup;
  std::optional<PlacementView> placement;  // with a topology
  std::optional<Explain> explain;          // with --explain, for a valid plan
  // With --framework F that cannot run the valid plan: "<F's title> cannot run it: <reason>" (the
  // plan is then priced with the cost model's own placement).
  std::string framework_refusal;
  PlanScripts scripts;  // of plan
  std::optional<PipeFusionSplit> pipefusion;  // a valid plan with PipeFusion stages
  // The formats x caches the plan was priced with (--dtype any, --cache a,b: several); `plan` is
  // the fastest of them, with its own (RankedPlan::precision, ::cache).
  int priced_with = 1;
};
// The plan of the request's plan flags, checked and priced (with each format and cache the query
// ranks: the fastest).
Result<std::unique_ptr<CheckResult>> check(const Resolved& r);

// Every framework's answer for one valid plan, as the GUI's plan detail shows it: "# <title>\n
// <script or command>" or "# <title>: cannot run this plan: <reason>"; with `framework`, only its
// part; empty for an invalid plan.
// With the ranking `report` the plan belongs to, a framework that cannot run it names its own fastest
// plan there, with the gap and that plan's script (as the CLI's answers for the top plan).
std::string plan_snippets(const Query& q, const planner::RankedPlan& p, std::optional<Framework> framework = std::nullopt,
                          const planner::PlanReport* report = nullptr);

// What priced a group's collective, in words: the query's cost model's HardwareModel::collective_source.
CollectiveSource collective_source(const PlannedQuery& pq);

// The warm-up of a prediction, when its runtime has one.
std::optional<Warmup> warmup_of(const costmodel::Prediction& p);

}  // namespace cpplan::session
