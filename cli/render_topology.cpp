// Output of topology-aware placement: the placement in JSON, the layout with its launch lines and
// DeviceMesh, --explain, and `cpplan list topologies`.
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <ostream>

#include "cli/render.h"
#include "core/pipefusion.h"
#include "costmodel/cost_model.h"

namespace cpplan::cli {

using nlohmann::json;
using planner::RankedPlan;
using planner::topology::MeshAxis;
using planner::topology::Placement;
using costmodel::CommAxis;
using planner::topology::axis_degree;
using planner::topology::collective_name;
using planner::topology::ranks_text;

namespace {

std::optional<CommAxis> comm_axis(MeshAxis a) {
  switch (a) {
    case MeshAxis::kTp: return CommAxis::kTp;
    case MeshAxis::kUlysses: return CommAxis::kUlysses;
    case MeshAxis::kRing: return CommAxis::kRing;
    case MeshAxis::kCfg: return CommAxis::kCfg;
    case MeshAxis::kPp: return CommAxis::kPp;
    case MeshAxis::kDp: return std::nullopt;
  }
  return std::nullopt;
}

std::string comma_list(const std::vector<int>& v) { return fmt::format("{}", fmt::join(v, ",")); }

// Mesh dimensions outermost first, as torch's init_device_mesh lays ranks out (last = contiguous).
std::vector<MeshAxis> outermost_first(const Placement& p) { return {p.axis_order.rbegin(), p.axis_order.rend()}; }

}  // namespace

std::string placement_summary(const Placement& p) {
  constexpr std::pair<CommAxis, char> shown[] = {
      {CommAxis::kTp, 't'}, {CommAxis::kUlysses, 'u'}, {CommAxis::kRing, 'r'}, {CommAxis::kPp, 'p'},
      {CommAxis::kCfg, 'c'}};
  std::vector<std::string> parts;
  for (auto [axis, letter] : shown) {
    const auto& g = p.layout[axis];
    if (g.ranks <= 1) continue;
    const int span = p.links[static_cast<int>(axis)].span_nodes;
    parts.push_back(fmt::format("{}:{:.0f}{}", letter, g.busbw_gbps, span > 1 ? fmt::format("@{}n", span) : ""));
  }
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, " "));
}

namespace {
// One row of the placement: a group kind, its degree, where its groups lie, the first three, its link.
void print_group_row(std::ostream& out, const Placement& p, std::string_view name, int degree,
                     const std::vector<std::vector<int>>& groups, const std::string& link) {
  const int span = planner::topology::nodes_spanned(p, groups);
  std::string shown;
  for (std::size_t i = 0; i < groups.size() && i < 3; ++i) shown += fmt::format("[{}] ", ranks_text(groups[i]));
  if (groups.size() > 3) shown += fmt::format("... ({} groups)", groups.size());
  fmt::print(out, "  {:<8} {:>4}  {:<16} {:<34} {}\n", name, degree,
             span > 1 ? fmt::format("across {} nodes", span) : std::string("within a node"), shown, link);
}
}  // namespace

void print_placement(std::ostream& out, const Query& q, const RankedPlan& rp) {
  const Placement& p = *rp.placement;
  const Topology& t = *q.topology;
  std::vector<std::string> order;
  for (MeshAxis a : p.axis_order)
    if (p.degree[static_cast<int>(a)] > 1) order.push_back(fmt::format("{} {}", to_string(a), p.degree[static_cast<int>(a)]));
  fmt::print(out, "\nplacement on {}{} ({} GPUs), axes innermost first: {}\n", t.name,
             q.nodes > 1 ? fmt::format(" x {} nodes", q.nodes) : "", q.gpus,
             order.empty() ? std::string("(single GPU)") : fmt::format("{}", fmt::join(order, ", ")));
  const auto link_of = [&](CommAxis axis) {
    const auto& g = p.layout[axis];
    return fmt::format("{} at {:.1f} GB/s busbw, alpha {:g} us", collective_name(rp.plan, axis), g.busbw_gbps,
                       g.latency_us);
  };
  for (MeshAxis a : p.axis_order) {
    const int degree = p.degree[static_cast<int>(a)];
    if (degree <= 1) continue;
    const auto axis = comm_axis(a);
    print_group_row(out, p, to_string(a), degree, p.groups(a), axis ? link_of(*axis) : "no collective");
  }
  // The fully-sharded group: consecutive ranks over the axes above, not an axis of its own.
  if (p.fs_degree > 1) print_group_row(out, p, "fs", p.fs_degree, p.fs_groups(), link_of(CommAxis::kFs));
  std::vector<int> order_used(p.device_order);
  fmt::print(out, "  node n runs ranks n x {} + i on GPU device_order[i]; device_order = {}\n", p.gpus_per_node,
             comma_list(order_used));
  const std::string visible = "CUDA_VISIBLE_DEVICES=" + comma_list(order_used);
  if (t.planning_only) {
    std::vector<std::string> dims;
    for (MeshAxis a : outermost_first(p)) dims.push_back(fmt::format("{}={}", to_string(a), p.degree[static_cast<int>(a)]));
    fmt::print(out, "  planning only: {} is not a CUDA machine (cpplan's executor runs on CUDA and CPU); "
                    "its device mesh, outermost first: {}\n", t.name, fmt::join(dims, ", "));
    return;
  }
  fmt::print(out, "  {} (every node; local rank i runs on the i-th listed GPU)\n", visible);
  fmt::print(out, "launch:\n");
  if (q.nodes == 1) {
    fmt::print(out, "  {} torchrun --nproc-per-node {} run.py\n", visible, p.gpus_per_node);
  } else {
    fmt::print(out,
               "  {} torchrun --nnodes {} --nproc-per-node {} --node-rank <0..{}> --rdzv-backend c10d "
               "--rdzv-endpoint <node0>:29500 run.py\n",
               visible, q.nodes, p.gpus_per_node, q.nodes - 1);
    fmt::print(out,
               "  srun -N {} --ntasks-per-node {} --gpus-per-node {} bash -c '{} RANK=$SLURM_PROCID "
               "LOCAL_RANK=$SLURM_LOCALID WORLD_SIZE=$SLURM_NTASKS MASTER_ADDR=<node0> MASTER_PORT=29500 python run.py'\n",
               q.nodes, p.gpus_per_node, t.gpus, visible);
  }
  std::vector<std::string> shape, names;
  for (MeshAxis a : outermost_first(p)) {
    shape.push_back(std::to_string(p.degree[static_cast<int>(a)]));
    names.push_back(fmt::format("\"{}\"", to_string(a)));
  }
  fmt::print(out, "DeviceMesh (torch lays the last dimension out contiguously):\n");
  fmt::print(out, "  import os, torch\n  from torch.distributed.device_mesh import init_device_mesh\n");
  fmt::print(out, "  torch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"]))\n");
  fmt::print(out, "  mesh = init_device_mesh(\"cuda\", ({}), mesh_dim_names=({}))\n", fmt::join(shape, ", "),
             fmt::join(names, ", "));
  const ParallelConfig& c = rp.plan.config;
  if (c.context_parallel_config.degree() > 1) {
    std::vector<std::string> cp;  // in mesh order, as DeviceMesh slicing wants
    for (MeshAxis a : outermost_first(p))
      if (a == MeshAxis::kRing || a == MeshAxis::kUlysses) cp.push_back(fmt::format("\"{}\"", to_string(a)));
    fmt::print(out, "  cp_mesh = mesh[{}]  # ContextParallelConfig(..., mesh=cp_mesh)\n", fmt::join(cp, ", "));
  }
  if (c.tp() > 1) fmt::print(out, "  tp_mesh = mesh[\"tp\"]  # TensorParallelConfig(tp_degree={}, mesh=tp_mesh)\n", c.tp());
}

namespace {

// PipeFusion's terms: the stages and patches, the warm-up and the pipelined step with its bubble,
// and the point-to-point sends (docs/cost-model.md, "PipeFusion").
void print_pipefusion(std::ostream& out, const Query& q, const ParallelConfig& config, const costmodel::PipeFusionCost& c) {
  const long long largest = patch_token_span(q, c.patches).largest;
  const bool joint = q.model->text_handling == TextHandling::kJoint;
  const Milliseconds slot = std::max(c.stage_patch_ms, c.p2p_patch_ms);
  const Milliseconds rest = c.pipelined_step_ms - c.stages * c.stage_patch_ms - (c.stages - 1) * c.p2p_patch_ms -
                            (c.patches - 1) * slot;
  fmt::print(out, "pipefusion: {} stages (blocks {}; the pace set by a stage of {} blocks), {} patches of up to {} image "
                  "tokens{}, {} warm-up of {} steps\n",
             c.stages, stage_split_text(pipefusion_stage_blocks(q.model->total_blocks(), c.stages)), c.stage_blocks,
             c.patches, largest, joint ? fmt::format(" + {} text", q.sequence.text_tokens) : "", c.warmup_steps, q.steps);
  fmt::print(out, "  warm-up step {:.2f} ms: the full sequence through the {} stages in turn, {} x {:.3f} ms sends of "
                  "its hidden states\n",
             c.warmup_step_ms, c.stages, c.stages - 1, c.p2p_full_ms);
  fmt::print(out, "  pipelined step {:.2f} ms = {} x stage {:.3f} + {} x p2p {:.3f} + {} x max(stage, p2p) {:.3f} + rest "
                  "{:.3f} (velocity back to stage 0 {:.3f}); bubble {:.2f} ms ({:.0f}%)\n",
             c.pipelined_step_ms, c.stages, c.stage_patch_ms, c.stages - 1, c.p2p_patch_ms, c.patches - 1, slot, rest,
             c.return_ms, c.bubble_ms, c.pipelined_step_ms > 0 ? 100.0 * c.bubble_ms / c.pipelined_step_ms : 0.0);
  fmt::print(out, "  point-to-point: {:.3f} ms per patch, {:.3f} ms per pipelined step ({} patches), {:.1f} MiB sent per "
                  "step by a stage (mean of the steps)\n",
             c.p2p_patch_ms, c.patches * c.p2p_patch_ms, c.patches, c.p2p_bytes / kMiB);
  const int pipelined = q.steps - c.warmup_steps;
  fmt::print(out, "  step = ({} x {:.2f} + {} x {:.2f}) / {} = {:.2f} ms{}\n", c.warmup_steps, c.warmup_step_ms,
             pipelined, c.pipelined_step_ms, q.steps,
             q.steps > 0 ? (c.warmup_steps * c.warmup_step_ms + pipelined * c.pipelined_step_ms) / q.steps : 0.0,
             config.pipefusion.warmup_steps < q.steps ? "; the pipelined steps attend to stale K/V (an approximation)"
                                                       : "");
}

}  // namespace

void print_explain(std::ostream& out, const Query& q, const RankedPlan& rp, const CollectiveSource& source) {
  if (!rp.predicted) return;
  const costmodel::Prediction& pr = *rp.predicted;
  const HardwareProfile& hw = *q.hardware;
  const costmodel::CommLayout layout =
      rp.placement ? rp.placement->layout : costmodel::default_layout(rp.plan.config, hw);
  fmt::print(out, "\nexplain: {} ({}), {}\n", plan_label(rp.plan.config), display_name(rp.plan.variant),
             rp.placement ? fmt::format("groups placed on {}{}", q.topology->name,
                                        q.nodes > 1 ? fmt::format(" x {} nodes", q.nodes) : "")
                          : fmt::format("groups on {}'s links (no --topology)", hw.name));
  // Which inputs a fit of end-to-end timings changed (profiles/fits/).
  const std::string hw_fit = hw.fitted_by.empty() ? "as in its profile" : "scaled by the fit " + hw.fitted_by;
  const std::string rt_fit = !q.runtime                    ? ""
                             : q.runtime->fitted_by.empty() ? fmt::format("; runtime {}: as in its profile", q.runtime->name)
                                                            : fmt::format("; runtime {}: host costs from the fit {}",
                                                                          q.runtime->name, q.runtime->fitted_by);
  fmt::print(out, "inputs: {} efficiencies {}{}\n", hw.name, hw_fit, rt_fit);
  fmt::print(out, "  {:<8} {:>6} {:>7}  {:<11} {:<8} {:>9} {:>5} {:>11} {:>9} {:>10}\n", "group", "ranks", "groups",
             "collective", "spans", "raw GB/s", "eff", "busbw GB/s", "alpha us", "ms/step");
  for (int i = 0; i < costmodel::kCommAxisCount; ++i) {
    const CommAxis axis = static_cast<CommAxis>(i);
    const int degree = axis_degree(rp.plan.config, axis);
    if (degree <= 1) continue;
    const costmodel::CommGroup& g = layout[axis];
    double raw = 0, busbw = 0, alpha = 0, eff = 0;
    int span = 1;
    std::string bottleneck;
    if (rp.placement) {
      const auto& l = rp.placement->links[i];
      raw = l.raw_gbps, busbw = g.busbw_gbps, alpha = g.latency_us, span = l.span_nodes, bottleneck = l.bottleneck;
      eff = raw > 0 ? busbw / raw : 0;
    } else {
      const Link& link = g.crosses_nodes() ? hw.network : hw.intra_node;
      raw = link.bandwidth_gbps, eff = link.efficiency, busbw = raw * eff, alpha = link.latency_us;
      span = g.nodes;
      bottleneck = g.crosses_nodes() ? "the network link per GPU" : "the node's link per GPU";
    }
    fmt::print(out, "  {:<8} {:>6} {:>7}  {:<11} {:<8} {:>9.1f} {:>5.2f} {:>11.1f} {:>9.1f} {:>10.3f}\n", to_string(axis),
               degree, q.gpus / degree, collective_name(rp.plan, axis),
               span > 1 ? fmt::format("{}{} nodes", rp.placement ? "" : ">=", span) : std::string("1 node"), raw, eff,
               busbw, alpha, pr.axis_comm_ms[i]);
    if (!bottleneck.empty()) fmt::print(out, "           bottleneck: {}\n", bottleneck);
    if (source)
      fmt::print(out, "           priced by: {}\n",
                 source(costmodel::main_collective(axis, rp.plan.config, rp.plan.variant), g));
  }
  Milliseconds gemm = 0, attention = 0, memory = 0;
  for (int i = 0; i < pr.block_count; ++i)
    gemm += pr.blocks[i].gemm_ms, attention += pr.blocks[i].attention_ms, memory += pr.blocks[i].memory_ms;
  fmt::print(out,
             "cost terms per step ({}): GPU {:.2f} ms (GEMM {:.2f}, attention {:.2f}, memory-bound {:.2f}; "
             "communication {:.2f}), host {:.2f} ms, waiting for the slowest rank {:.2f} ms -> {:.2f} ms{}\n",
             pr.runtime.empty() ? "kernel launches" : "runtime " + pr.runtime, pr.compute_ms + pr.comm_ms, gemm,
             attention, memory, pr.comm_ms, pr.host_ms, pr.sync_ms, pr.calibrated ? pr.uncalibrated_step_ms : pr.step_ms,
             pr.calibrated                ? fmt::format(" analytic; calibrated: {:.2f} ms", pr.step_ms)
             : pr.pipefusion.active() ? " (the pacing stage's terms; the step is PipeFusion's, below)"
                                      : "");
  // Where each term's inputs came from: measured (probes of this machine), datasheet (the
  // profile), calibrated (fitted to runs); "-" for a term without inputs.
  auto from = [](const std::optional<costmodel::Source>& s) {
    return s ? std::string(costmodel::to_string(*s)) : std::string("-");
  };
  for (int i = 0; i < pr.block_count; ++i) {
    const auto& b = pr.blocks[i];
    fmt::print(out,
               "  {} blocks x{}: GEMM {:.2f} [{}], attention {:.2f} [{}], memory-bound {:.2f} [{}], comm {:.2f} ms [{}]; "
               "host {:.2f} ms; sync {:.2f} ms: {}-bound\n",
               to_string(b.kind), b.count, b.gemm_ms, from(b.sources.gemm), b.attention_ms, from(b.sources.attention),
               b.memory_ms, from(b.sources.memory), b.comm_ms, from(b.sources.comm), b.host_ms, b.sync_ms,
               b.host_bound() ? "host" : "GPU");
  }
  if (pr.step_comm_extra_ms > 0)
    fmt::print(out, "  per step: CP output gather and CFG gather {:.2f} ms [{}]\n", pr.step_comm_extra_ms,
               from(pr.step_comm_extra_source));
  if (pr.pipefusion.active()) print_pipefusion(out, q, rp.plan.config, pr.pipefusion);
  const costmodel::PipelineCost& pc = pr.pipeline;
  fmt::print(out,
             "per image: text encoding {:.1f} ms (text encoder {}{}) + {} steps x {:.2f} ms + VAE decode {:.1f} ms "
             "(VAE {}{}) + pipeline {:.1f} ms = {:.2f} s\n",
             pr.text_encode_ms, to_string(pc.text_encoder),
             pc.text_transfer_ms > 0 ? fmt::format(", {:.1f} ms of it waiting on the host link", pc.text_transfer_ms)
             : pc.text_comm_ms > 0   ? fmt::format(", {:.1f} ms of it all-reduces", pc.text_comm_ms)
                                     : "",
             q.steps, pr.step_ms, pr.vae_decode_ms, to_string(pc.vae),
             pc.vae_comm_ms > 0 ? fmt::format(", {:.1f} ms of it communication", pc.vae_comm_ms) : "", pc.host_ms,
             pr.image_ms / 1e3);
}

void print_topologies(std::ostream& out, const ProfileCatalog& c) {
  fmt::print(out, "{:<16} {:>5} {:<14} {:>5} {:<8}  {}\n", "topology", "GPUs", "hardware", "NICs", "network",
             "description");
  for (const Topology& t : c.topologies())
    fmt::print(out, "{:<16} {:>5} {:<14} {:>5} {:<8}  {}\n", t.name, t.gpus, t.hardware, t.nic_count(),
               t.has_network ? to_string(t.network.kind) : "-", t.description);
}

json topologies_json(const ProfileCatalog& c) {
  json a = json::array();
  for (const Topology& t : c.topologies())
    a.push_back({{"name", t.name},
                 {"description", t.description},
                 {"hardware", t.hardware},
                 {"gpus", t.gpus},
                 {"planning_only", t.planning_only},
                 {"devices", t.devices.size()},
                 {"links", t.links.size()},
                 {"nics", t.nic_count()},
                 {"network", t.has_network ? json(to_string(t.network.kind)) : json(nullptr)}});
  return a;
}

}  // namespace cpplan::cli
