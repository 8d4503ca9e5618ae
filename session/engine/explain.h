#pragma once
// `cpplan --explain` and a plan's placement on a topology, computed once for both fronts: typed
// values (Explain, PlacementView) and their one text rendering. cli/render_topology.cpp prints
// them; gui/plan_detail.cpp shows the same text in its Placement tab. The fronts compute nothing.

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "costmodel/cost_model.h"
#include "planner/planner.h"

namespace cpplan::session {

// What priced a group's collective, in words (the cost model's HardwareModel::collective_source).
using CollectiveSource = std::function<std::string(costmodel::Collective, const costmodel::CommGroup&)>;

// One communication group of a plan (an axis of degree > 1).
struct ExplainRow {
  costmodel::CommAxis axis = costmodel::CommAxis::kTp;
  int ranks = 0;                 // the axis' degree: ranks in one group
  int groups = 0;                // groups of that axis: GPUs / ranks
  std::string collective;        // its main collective, e.g. "all_to_all"
  int nodes = 1;                 // nodes one group spans
  bool nodes_at_least = false;   // without placement: the fewest it could span (">=2 nodes")
  std::string span;              // placed: "1 switch", "2 sockets", "2 nodes"; "" without placement
  double raw_gbps = 0;           // the link's raw bandwidth per GPU
  double efficiency = 0;         // effective / raw
  double busbw_gbps = 0;         // effective bus bandwidth
  double latency_us = 0;         // alpha
  double ms_per_step = 0;        // the axis' communication per step
  std::string bottleneck;        // the binding link or cut; "" when none is named
  std::string priced_by;         // what priced the collective (CollectiveSource); "" without one
};

// PipeFusion's terms with the query facts they are told with.
struct ExplainPipeFusion {
  costmodel::PipeFusionCost cost;
  long long largest_patch_tokens = 0;  // image tokens of the largest patch
  int joint_text_tokens = 0;           // text tokens every patch attends with (joint attention); 0: none
  std::string stage_split;             // blocks per stage, e.g. "19+19+19+19"
  int configured_warmup_steps = 0;     // the plan's warm-up steps (stale K/V when below the steps)
};

// One kind of kernel a step launches: the kernel that runs it, the resource that binds it on this
// GPU, its time per step, and the framework's source line for the choice.
struct ExplainKernel {
  std::string kind;       // "attention", "GEMMs", "norms, modulation, RoPE, residuals", "VAE convolutions"
  std::string kernel;     // "FlashAttention-3", "cuBLAS/hipBLASLt BF16", "fused (SGLang Diffusion's)", ...
  std::string binding;    // to_string(Resource): "tensor cores", "exp units", "HBM", ...
  Milliseconds ms = 0;    // per step (the VAE's: per image)
  std::string source;     // the framework's source line, or the kernel table's
};

struct Explain {
  std::string plan;       // plan_label
  std::string variant;    // display_name of the CP variant
  std::string format_cache;  // "fp8, fbcache" when the query ranks formats or caches (planner::format_cache_label)
  // "groups placed on dgx-h100 x 2 nodes" | "groups in the default layout on l20's usual node ..." |
  // "groups on h100-sxm's links (no --topology)"
  std::string groups_on;
  std::string inputs;     // which inputs a fit changed: "h100-sxm efficiencies as in its profile; runtime ..."
  std::vector<ExplainRow> groups;
  // Cost terms per step: the block terms summed, and the prediction they come from (its blocks,
  // sources, per-step and per-image terms).
  Milliseconds gemm_ms = 0, attention_ms = 0, memory_ms = 0;
  costmodel::Prediction prediction;
  int steps = 0;
  Bytes gpu_bytes = 0;         // one GPU's memory
  double host_memory_gib = 0;  // one node's host memory (0: unknown)
  std::optional<ExplainPipeFusion> pipefusion;
  // What the per-image terms were priced from: the model's text encoders and VAE (its class and
  // structure when derived from a config), the hardware profile's conv efficiency.
  std::vector<Component> text_encoders;
  VaeProfile vae;
  double conv_efficiency = 0;
  // The kernels the step launches, on whose resources (Query::kernels; the kernel table).
  std::string kernels_of;  // "SGLang Diffusion on h100-sxm (CUDA sm90)"
  std::vector<ExplainKernel> kernels;
};

// The explanation of a predicted plan, with its own format and cache (planner::priced_query); none
// for a plan without prediction (an invalid one). `source` may be empty (no "priced by" lines).
std::optional<Explain> explain(const Query& q, const planner::RankedPlan& p, const CollectiveSource& source = {});
// The step's kernels, one kind per entry with its source line ("kernels (SGLang Diffusion on
// h100-sxm (CUDA sm90)):" and its lines): --explain's section, and the GUI's Kernels tab.
std::string kernels_text(const Explain& e);
// Each phase's bytes per GPU: "load 33.1, encode 35.0, denoise 34.2, decode 197.3 GiB".
std::string memory_phases_text(const costmodel::MemoryBreakdown& m);
// Whether the table and the top plan's line name the peak's phase: when it is not denoising and it
// either holds more than 15% above denoising (the allocator slack the memory model assumes:
// closer phases are within its accuracy) or is what keeps a plan from fitting in `gpu_bytes`.
bool peak_phase_named(const costmodel::Prediction& pr, Bytes gpu_bytes);
// The peak's phase as the table's peak column suffixes it: " load", " enc", " dec"; "" when not named.
std::string_view peak_phase_suffix(const costmodel::Prediction& pr, Bytes gpu_bytes);
// The node's host memory while its ranks load: "host memory while loading: 8 ranks x 104.3 GiB = 834.2
// of 1024.0 GiB per node (fits)"; with the verdict's loading recipe when they must load in turn.
std::string host_load_text(const costmodel::Prediction& pr, double host_memory_gib);
// Whether the recommendation tells the host verdict under its top plan: when the ranks must load in
// turn or cannot load, or when loading takes more than half the node's host memory (the page cache
// holds the weight files being read beside the copies, and the node runs more than the job).
bool host_load_worth_telling(const costmodel::Prediction& pr, double host_memory_gib);
// The text `cpplan --explain` prints (starting with an empty line).
void print_explain(std::ostream& out, const Explain& e);
// The group table alone: its header and one row per group (with bottleneck and priced-by lines).
void print_explain_groups(std::ostream& out, const Explain& e);

// A placed plan's groups: one row per mesh axis of degree > 1 (innermost first), then the
// fully-sharded weight groups.
struct PlacementGroup {
  std::string name;                  // "ulysses", "ring", ..., "fs"
  int degree = 0;
  int nodes = 1;                     // nodes one group spans
  std::vector<std::string> first;    // the first three groups' ranks, e.g. "0-7", "0 8"
  std::size_t count = 0;             // groups in all
  std::string link;                  // "all_to_all at 382.0 GB/s busbw, alpha 3 us" | "no collective"
};

struct PlacementView {
  std::string topology;
  int nodes = 1, gpus = 0, gpus_per_node = 0;
  int topology_gpus = 0;             // GPUs of one node of the topology (srun --gpus-per-node)
  std::vector<std::string> axes;     // "ulysses 8", innermost first (degree > 1)
  std::vector<PlacementGroup> groups;
  std::vector<int> device_order;     // local rank i runs on GPU device_order[i]
  bool planning_only = false;        // not a CUDA machine: no launch lines
  std::vector<std::pair<std::string, int>> mesh;  // DeviceMesh dimensions, outermost first
  std::vector<std::string> cp_mesh;  // ring / ulysses dimensions in mesh order, when CP > 1
  int tp = 1;
};

// The placement of a plan placed on q's topology; none without one (or without a prediction).
std::optional<PlacementView> placement_view(const Query& q, const planner::RankedPlan& p);
// "placement on ...", the groups and the device order (no leading empty line).
void print_placement_layout(std::ostream& out, const PlacementView& v);
// What `cpplan` prints for a placed plan: an empty line, the layout, CUDA_VISIBLE_DEVICES, the
// launch lines and the DeviceMesh.
void print_placement(std::ostream& out, const PlacementView& v);
// cpplan-gui's Placement tab: the layout, an empty line and the group table of print_explain;
// "" for a plan without placement.
std::string placement_text(const Query& q, const planner::RankedPlan& p, const CollectiveSource& source = {});

}  // namespace cpplan::session
