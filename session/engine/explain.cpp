#include "session/engine/explain.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>
#include <ostream>
#include <sstream>

#include "core/pipefusion.h"

namespace cpplan::session {

using costmodel::CommAxis;
using planner::RankedPlan;
using planner::topology::MeshAxis;
using planner::topology::Placement;

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

// What the groups' bandwidths come from: the query's topology, the hardware's usual node (its
// profile's [node]), or the hardware profile's two links.
std::string groups_on(const Query& q, const RankedPlan& rp) {
  const HardwareProfile& hw = *q.hardware;
  if (!rp.placement) return fmt::format("groups on {}'s links (no --topology)", hw.name);
  if (q.topology)
    return fmt::format("groups placed on {}{}", q.topology->name, q.nodes > 1 ? fmt::format(" x {} nodes", q.nodes) : "");
  const int nodes = (q.gpus + hw.gpus_per_node - 1) / hw.gpus_per_node;
  const NodeLayout& n = *hw.node;
  return fmt::format("groups in the default layout on {}'s usual node{} ({} GPUs, {} socket{}, {}; the profile's [node], "
                     "no --topology)",
                     hw.name, nodes > 1 ? fmt::format(" x {}", std::max(nodes, q.nodes)) : "", hw.gpus_per_node,
                     n.sockets, n.sockets == 1 ? "" : "s",
                     n.gpus_per_switch > 1 ? fmt::format("{} per PCIe switch", n.gpus_per_switch) : "root ports");
}

std::string comma_list(const std::vector<int>& v) { return fmt::format("{}", fmt::join(v, ",")); }

// Mesh dimensions outermost first, as torch's init_device_mesh lays ranks out (last = contiguous).
std::vector<MeshAxis> outermost_first(const Placement& p) { return {p.axis_order.rbegin(), p.axis_order.rend()}; }

}  // namespace

namespace {
// The GEMMs' kernel in words: the vendor's BF16 GEMM, or the quantized format's (--dtype).
std::string gemm_kernel(const Precision& p) {
  if (!p.quantized()) return "vendor BF16 GEMM (cuBLAS / hipBLASLt)";
  return describe(p) + (p.low_precision_math()
                            ? fmt::format(", on the {} tensor peak; each input quantized in {} memory-bound pass{}",
                                          p.weights == WeightFormat::kFp8    ? "FP8"
                                          : p.weights == WeightFormat::kInt8 ? "INT8"
                                                                             : "FP4",
                                          p.activations == ActivationScaling::kDynamicTensor ? "two" : "one",
                                          p.activations == ActivationScaling::kDynamicTensor ? "es" : "")
                            : ", on the BF16 tensor peak");
}

// Where the GEMMs' pricing comes from: the profile's fraction, and the framework's source for a
// quantized format.
std::string gemm_source(const Query& q, const HardwareProfile& hw) {
  const std::string fraction = fmt::format("profiles/hardware/{}.toml [efficiency] gemm", hw.name);
  const FrameworkQuantization* fq =
      q.precision.quantized() && q.kernels_framework ? q.kernels_framework->quantization_for(q.precision) : nullptr;
  return fq ? fmt::format("{}: {}; {}", fq->flag, fq->source, fraction) : fraction;
}

// The step's kernels by kind: attention's binding resource from the roofline on one call of the
// plan's shape; the GEMMs' from their terms (HBM where the memory side set most of their time).
void explain_kernels(const Query& q, Explain& e) {
  const HardwareProfile& hw = *q.hardware;
  const KernelTable& t = hw.kernels;
  const FrameworkKernels* k = q.kernels;
  const std::string who = q.kernels_framework ? q.kernels_framework->title : std::string("the runtime");
  e.kernels_of = fmt::format("{} on {} ({})", who, hw.name,
                             hw.peaks.compute_capability > 0
                                 ? describe(DeviceRange{hw.family, hw.peaks.compute_capability, hw.peaks.compute_capability})
                                 : std::string(to_string(hw.family)));
  const costmodel::DatasheetModel roofline(hw);
  const double tokens = std::max<double>(1, q.sequence.total()), d = q.model->head_dim;
  const costmodel::Timed a = roofline.attention(4.0 * tokens * tokens * d, tokens, tokens, d, q.backend);
  const AttentionKernel& ak = t.kernel(q.backend);
  const std::string priced = profiled(q.backend)
                                 ? ""
                                 : fmt::format(", priced as {}'s flash fraction x its roofline over FA2's", hw.name);
  e.kernels.push_back({"attention", ak.title + (ak.overlapped ? " (softmax overlapped)" : " (softmax between the matmuls)") + priced,
                       std::string(to_string(a.binding)), e.attention_ms,
                       k && k->attention == q.backend ? k->attention_source : "--attention-backend; " + ak.source});
  Milliseconds traffic = 0;
  for (int i = 0; i < e.prediction.block_count; ++i) traffic += e.prediction.blocks[i].gemm_traffic_ms;
  e.kernels.push_back({"GEMMs", gemm_kernel(q.precision),
                       std::string(to_string(traffic > e.gemm_ms / 2 ? Resource::kHbm : Resource::kTensor)), e.gemm_ms,
                       gemm_source(q, hw)});
  const bool fused = k && k->fused.bits != 0;
  const bool compiled = k && k->compile;
  e.kernels.push_back({"norms, modulation, RoPE, residuals",
                       compiled ? "fused by torch.compile (Inductor)"
                       : fused  ? fmt::format("fused ({}'s kernels)", who)
                                : "eager PyTorch, one kernel per op",
                       std::string(to_string(Resource::kHbm)), e.memory_ms,
                       compiled ? k->compile_source : fused ? k->fused_source : "profiles/kernels.toml [elementwise]"});
}
}  // namespace

std::optional<Explain> explain(const Query& query, const RankedPlan& rp, const CollectiveSource& source) {
  if (!rp.predicted) return std::nullopt;
  const Query q = planner::priced_query(query, rp);  // the plan's format and cache, of those ranked
  Explain e;
  e.format_cache = planner::format_cache_label(query, rp);
  const costmodel::Prediction& pr = *rp.predicted;
  const HardwareProfile& hw = *q.hardware;
  const costmodel::CommLayout layout =
      rp.placement ? rp.placement->layout : costmodel::default_layout(rp.plan.config, hw);
  e.plan = plan_label(rp.plan.config);
  e.variant = std::string(display_name(rp.plan.variant));
  e.groups_on = groups_on(q, rp);
  // Which inputs a fit of end-to-end timings changed (profiles/fits/).
  const std::string hw_fit = hw.fitted_by.empty() ? "as in its profile" : "scaled by the fit " + hw.fitted_by;
  const std::string rt_fit = !q.runtime                    ? ""
                             : q.runtime->fitted_by.empty() ? fmt::format("; runtime {}: as in its profile", q.runtime->name)
                                                            : fmt::format("; runtime {}: host costs from the fit {}",
                                                                          q.runtime->name, q.runtime->fitted_by);
  e.inputs = fmt::format("{} efficiencies {}{}", hw.name, hw_fit, rt_fit);
  for (int i = 0; i < costmodel::kCommAxisCount; ++i) {
    const CommAxis axis = static_cast<CommAxis>(i);
    const int degree = planner::topology::axis_degree(rp.plan.config, axis);
    if (degree <= 1) continue;
    const costmodel::CommGroup& g = layout[axis];
    ExplainRow row;
    row.axis = axis;
    row.ranks = degree;
    row.groups = q.gpus / degree;
    row.collective = std::string(planner::topology::collective_name(rp.plan, axis));
    if (rp.placement) {
      const auto& l = rp.placement->links[i];
      row.raw_gbps = l.raw_gbps, row.busbw_gbps = g.busbw_gbps, row.latency_us = g.latency_us;
      row.nodes = l.span_nodes, row.span = l.span, row.bottleneck = l.bottleneck;
      row.efficiency = row.raw_gbps > 0 ? row.busbw_gbps / row.raw_gbps : 0;
    } else {
      const Link& link = g.crosses_nodes() ? hw.network : hw.intra_node;
      row.raw_gbps = link.bandwidth_gbps, row.efficiency = link.efficiency;
      row.busbw_gbps = row.raw_gbps * row.efficiency, row.latency_us = link.latency_us;
      row.nodes = g.nodes, row.nodes_at_least = true;
      row.bottleneck = g.crosses_nodes() ? "the network link per GPU" : "the node's link per GPU";
    }
    row.ms_per_step = pr.axis_comm_ms[i];
    if (source) row.priced_by = source(costmodel::main_collective(axis, rp.plan.config, rp.plan.variant), g);
    e.groups.push_back(std::move(row));
  }
  for (int i = 0; i < pr.block_count; ++i)
    e.gemm_ms += pr.blocks[i].gemm_ms, e.attention_ms += pr.blocks[i].attention_ms, e.memory_ms += pr.blocks[i].memory_ms;
  e.prediction = pr;
  e.steps = q.steps;
  e.gpu_bytes = q.hardware ? q.hardware->memory_bytes() : 0.0;
  e.host_memory_gib = q.host_memory_gib;
  e.text_encoders = q.model->text_encoders;
  e.vae = q.model->vae;
  e.conv_efficiency = hw.conv_efficiency;
  explain_kernels(q, e);
  if (pr.pipefusion.active()) {
    const costmodel::PipeFusionCost& c = pr.pipefusion;
    ExplainPipeFusion pf;
    pf.cost = c;
    pf.largest_patch_tokens = patch_token_span(q, c.patches, rp.plan.config.ring() * rp.plan.config.ulysses()).largest;
    pf.joint_text_tokens = q.model->text_handling == TextHandling::kJoint ? q.sequence.text_tokens : 0;
    pf.stage_split = stage_split_text(pipefusion_stage_blocks(q.model->total_blocks(), c.stages));
    pf.configured_warmup_steps = rp.plan.config.pipefusion.warmup_steps;
    e.pipefusion = std::move(pf);
  }
  return e;
}

void print_explain_groups(std::ostream& out, const Explain& e) {
  fmt::print(out, "  {:<8} {:>6} {:>7}  {:<11} {:<10} {:>9} {:>5} {:>11} {:>9} {:>10}\n", "group", "ranks", "groups",
             "collective", "spans", "raw GB/s", "eff", "busbw GB/s", "alpha us", "ms/step");
  for (const ExplainRow& r : e.groups) {
    const std::string nodes =
        r.nodes > 1 ? fmt::format("{}{} nodes", r.nodes_at_least ? ">=" : "", r.nodes) : std::string("1 node");
    fmt::print(out, "  {:<8} {:>6} {:>7}  {:<11} {:<10} {:>9.1f} {:>5.2f} {:>11.1f} {:>9.1f} {:>10.3f}\n",
               costmodel::to_string(r.axis), r.ranks, r.groups, r.collective, r.span.empty() ? nodes : r.span,
               r.raw_gbps, r.efficiency, r.busbw_gbps, r.latency_us, r.ms_per_step);
    if (!r.bottleneck.empty()) fmt::print(out, "           bottleneck: {}\n", r.bottleneck);
    if (!r.priced_by.empty()) fmt::print(out, "           priced by: {}\n", r.priced_by);
  }
}

namespace {

// PipeFusion's terms: the stages and patches, the warm-up, the per-patch host work, the patch
// slot, the pipelined phase with its fill and drain once per image, and the point-to-point sends
// (docs/cost-model.md, "PipeFusion").
void print_pipefusion(std::ostream& out, const ExplainPipeFusion& pf, int steps) {
  const costmodel::PipeFusionCost& c = pf.cost;
  const int pipelined = steps - c.warmup_steps;
  fmt::print(out, "pipefusion: {} stages (blocks {}; the pace set by a stage of {} blocks), {} patches of up to {} image "
                  "tokens{}, {} warm-up step{} of {}\n",
             c.stages, pf.stage_split, c.stage_blocks, c.patches, pf.largest_patch_tokens,
             pf.joint_text_tokens > 0 ? fmt::format(" + {} text", pf.joint_text_tokens) : "", c.warmup_steps,
             c.warmup_steps == 1 ? "" : "s", steps);
  fmt::print(out, "  warm-up: {} x {:.2f} ms = {:.2f} ms per image, the full sequence through the {} stages in turn with "
                  "{} x {:.3f} ms sends\n",
             c.warmup_steps, c.warmup_step_ms, c.warmup_ms, c.stages, c.stages - 1, c.p2p_full_ms);
  fmt::print(out, "  per-patch host: {:.3f} ms to issue a patch on the pacing stage ({:.3f} of it outside the blocks: the "
                  "forward's other ops and the sends) against {:.3f} ms on its GPU: {}-bound; {:.1f} ms per image\n",
             c.stage_patch_host_ms, c.patch_host_extra_ms, c.stage_patch_gpu_ms, c.host_bound_patch() ? "host" : "GPU",
             c.patch_host_ms);
  fmt::print(out, "  patch slot {:.3f} ms = max(stage {:.3f}, link {:.3f}, round trip to stage 0 {:.3f} / {} patches)\n",
             c.slot_ms, c.stage_patch_ms, c.p2p_patch_ms + (c.patches > 0 ? c.p2p_text_ms / c.patches : 0.0),
             c.round_trip_ms, c.patches);
  fmt::print(out, "  pipelined: {} steps x {} patches = {:.0f} slots x {:.3f} ms + fill/drain {:.2f} ms (once per image) + "
                  "rest {:.2f} ms = {:.2f} ms per image ({:.2f} ms per step)\n",
             pipelined, c.patches, c.pipelined_slots, c.slot_ms, c.fill_drain_ms, c.pipelined_rest_ms, c.pipelined_ms,
             c.pipelined_step_ms);
  fmt::print(out, "  point-to-point: {:.3f} ms per patch{}, {:.1f} MiB sent per step by a stage; {:.1f} ms per image\n",
             c.p2p_patch_ms,
             c.p2p_text_ms > 0 ? fmt::format(" + the text {:.3f} ms once per step (with patch 0)", c.p2p_text_ms) : "",
             c.p2p_bytes / kMiB, c.p2p_ms);
  fmt::print(out, "  step = (warm-up {:.2f} + pipelined {:.2f}) / {} = {:.2f} ms{}\n", c.warmup_ms, c.pipelined_ms, steps,
             steps > 0 ? (c.warmup_ms + c.pipelined_ms) / steps : 0.0,
             pf.configured_warmup_steps < steps ? "; the pipelined steps attend to stale K/V (an approximation)" : "");
}

}  // namespace

std::string memory_phases_text(const costmodel::MemoryBreakdown& m) {
  std::vector<std::string> parts;
  for (int i = 0; i < costmodel::kMemoryPhaseCount; ++i) {
    const auto phase = static_cast<costmodel::MemoryPhase>(i);
    parts.push_back(fmt::format("{} {:.1f}", to_string(phase), m.phase(phase) / kGiB));
  }
  return fmt::format("{} GiB", fmt::join(parts, ", "));
}

bool peak_phase_named(const costmodel::Prediction& pr, Bytes gpu_bytes) {
  constexpr double kPhaseMargin = 1.15;  // costmodel's kFragmentation: the model's own slack
  const Bytes denoise = pr.memory.phase(costmodel::MemoryPhase::kDenoise);
  if (pr.peak_phase == costmodel::MemoryPhase::kDenoise) return false;
  return pr.peak_mem_bytes > kPhaseMargin * denoise || (pr.peak_mem_bytes > gpu_bytes && denoise <= gpu_bytes);
}

std::string_view peak_phase_suffix(const costmodel::Prediction& pr, Bytes gpu_bytes) {
  if (!peak_phase_named(pr, gpu_bytes)) return "";
  switch (pr.peak_phase) {
    case costmodel::MemoryPhase::kLoad: return " load";
    case costmodel::MemoryPhase::kEncode: return " enc";
    case costmodel::MemoryPhase::kDenoise: return "";
    case costmodel::MemoryPhase::kDecode: return " dec";
  }
  return "";
}

std::string host_load_text(const costmodel::Prediction& pr, double host_memory_gib) {
  const double per_rank = pr.memory.host_load_per_rank / kGiB;
  std::string out = fmt::format("host memory while loading: {} rank{} x {:.1f} GiB = {:.1f} GiB per node", pr.ranks_per_node,
                                pr.ranks_per_node == 1 ? "" : "s", per_rank, pr.host_load_bytes / kGiB);
  switch (pr.host_load) {
    case costmodel::HostLoad::kFits: return out + fmt::format(" of {:.1f} (fits)", host_memory_gib);
    case costmodel::HostLoad::kStaggered:
      return out + fmt::format(" of {:.1f}: fits only when the ranks of a node load in turn, each moving its weights "
                               "to its GPU before the next reads them",
                               host_memory_gib);
    case costmodel::HostLoad::kTooLarge:
      return out + fmt::format(" of {:.1f}: does NOT fit, not even one rank's copy", host_memory_gib);
    case costmodel::HostLoad::kUnknown: break;
  }
  return out + " (host memory unknown: --host-mem)";
}

// What of the text encoding waits on the placement's transfers: the host link (offloaded, and the
// shards kept in host memory), the sharded encoder's all-reduces, the fully-sharded one's gathers.
std::string text_encoder_waits(const costmodel::PipelineCost& pc) {
  std::string out;
  if (pc.text_transfer_ms > 0) out += fmt::format(", {:.1f} ms of it waiting on the host link", pc.text_transfer_ms);
  if (pc.text_comm_ms > 0)
    out += fmt::format(", {:.1f} ms of it {}", pc.text_comm_ms,
                       fully_sharded(pc.text_encoder) ? "gathering layers" : "all-reduces");
  return out;
}

namespace {

// One text encoder's line under "per image:": its shape, the tokens it reads, its terms.
void print_text_encoder(std::ostream& out, const costmodel::TextEncodeTerms& t, const std::vector<Component>& encoders) {
  const Component* c = t.encoder >= 0 && t.encoder < static_cast<int>(encoders.size()) ? &encoders[t.encoder] : nullptr;
  const std::string shape = c && c->layers > 0 ? fmt::format("{} layers x {} hidden", c->layers, c->hidden)
                                               : std::string("no layers known: the GEMM roofline alone");
  fmt::print(out,
             "  text encoder {}: {}, {:g} tokens x {:g} prompt{}: GEMM {:.2f}, attention {:.2f}, memory-bound {:.2f}, "
             "communication {:.2f}, host link {:.2f} ms; host {:.2f} ms -> {:.2f} ms\n",
             c ? c->name : "?", shape, t.tokens, t.prompts, t.prompts == 1 ? "" : "s", t.gemm_ms, t.attention_ms,
             t.memory_ms, t.comm_ms, t.transfer_ms, t.host_ms, t.ms);
}

// Where the VAE's per-pixel costs come from: its class and structure read from a config, or the
// profile's numbers.
std::string vae_origin(const VaeProfile& v) {
  if (v.class_name.empty()) return fmt::format("{}: per-pixel costs given in the profile", v.weights.name);
  return fmt::format("{} {}{} ({}){}", v.weights.name, v.class_name,
                     v.config.empty() ? " from its vae/config.json" : " from " + v.config, v.structure,
                     v.encode_gflop_per_pixel > 0
                         ? fmt::format("; its encoder {:.2f} MFLOP per pixel per frame", v.encode_gflop_per_pixel * 1e3)
                         : "");
}

// The VAE decode's lines under "per image:": the derivation, then the terms.
void print_vae_decode(std::ostream& out, const costmodel::VaeDecodeTerms& d, const VaeProfile& v, double e_conv) {
  fmt::print(out, "  VAE decode: {}\n", vae_origin(v));
  const bool datasheet = d.conv_source != costmodel::Source::kMeasured;
  fmt::print(out,
             "    {:.2f} MFLOP and {:.1f} KB memory-bound per pixel per frame x {:.0f} pixels x {:g} frame{} x {:g} "
             "image{} ({:g} tile{}, {:g} chunk{}) on {} GPU{}: conv {:.2f} ms [{}]{}, memory-bound {:.2f} ms, host {:.2f} ms, "
             "communication {:.2f} ms\n",
             d.gflop_per_pixel * 1e3, d.traffic_bytes_per_pixel / 1e3, d.frame_pixels, d.frames,
             d.frames == 1 ? "" : "s", d.images, d.images == 1 ? "" : "s", d.tiles, d.tiles == 1 ? "" : "s", d.chunks,
             d.chunks == 1 ? "" : "s", d.gpus, d.gpus == 1 ? "" : "s", d.conv_ms, costmodel::to_string(d.conv_source),
             datasheet ? fmt::format(" at e_conv {:.2f}", e_conv) : "", d.memory_ms, d.host_ms, d.comm_ms);
}

}  // namespace

bool host_load_worth_telling(const costmodel::Prediction& pr, double host_memory_gib) {
  if (pr.host_load == costmodel::HostLoad::kStaggered || pr.host_load == costmodel::HostLoad::kTooLarge) return true;
  return pr.host_load == costmodel::HostLoad::kFits && pr.host_load_bytes > 0.5 * host_memory_gib * kGiB;
}

std::string kernels_text(const Explain& e) {
  std::string s = fmt::format("kernels ({}):\n", e.kernels_of);
  for (const ExplainKernel& k : e.kernels)
    s += fmt::format("  {}: {}, bound by the {}, {:.2f} ms per step\n    source: {}\n", k.kind, k.kernel, k.binding, k.ms,
                     k.source);
  return s;
}

void print_explain(std::ostream& out, const Explain& e) {
  const costmodel::Prediction& pr = e.prediction;
  fmt::print(out, "\nexplain: {} ({}{}), {}\n", e.plan, e.variant, e.format_cache.empty() ? "" : ", " + e.format_cache,
             e.groups_on);
  fmt::print(out, "inputs: {}\n", e.inputs);
  print_explain_groups(out, e);
  out << kernels_text(e);
  fmt::print(out,
             "cost terms per step ({}): GPU {:.2f} ms (GEMM {:.2f}, attention {:.2f}, memory-bound {:.2f}; "
             "communication {:.2f}), host {:.2f} ms, waiting for the slowest rank {:.2f} ms -> {:.2f} ms{}\n",
             pr.runtime.empty() ? "kernel launches" : "runtime " + pr.runtime, pr.compute_ms + pr.comm_ms, e.gemm_ms,
             e.attention_ms, e.memory_ms, pr.comm_ms, pr.host_ms, pr.sync_ms,
             pr.calibrated ? pr.uncalibrated_step_ms : pr.step_ms,
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
  if (e.pipefusion) print_pipefusion(out, *e.pipefusion, e.steps);
  const costmodel::PipelineCost& pc = pr.pipeline;
  fmt::print(out,
             "per image: text encoding {:.1f} ms (text encoder {}{}) + {} steps x {:.2f} ms{} + VAE decode {:.1f} ms "
             "(VAE {}{}) + pipeline {:.1f} ms = {:.2f} s\n",
             pr.text_encode_ms, to_string(pc.text_encoder), text_encoder_waits(pc), e.steps - pr.cached_steps,
             pr.step_ms,
             pr.cached_steps > 0 ? fmt::format(" + {} cached steps x {:.2f} ms", pr.cached_steps, pr.cached_step_ms) : "",
             pr.vae_decode_ms, to_string(pc.vae),
             pc.vae_comm_ms > 0 ? fmt::format(", {:.1f} ms of it communication", pc.vae_comm_ms) : "", pc.host_ms,
             pr.image_ms / 1e3);
  for (int i = 0; i < pc.encoder_count; ++i) print_text_encoder(out, pc.encoders[i], e.text_encoders);
  print_vae_decode(out, pc.decode, e.vae, e.conv_efficiency);
  fmt::print(out, "memory per GPU by phase: {} of {:.1f}; the peak is the {}\n", memory_phases_text(pr.memory),
             e.gpu_bytes / kGiB, to_string(pr.peak_phase));
  fmt::print(out, "  load, if the whole pipeline moved to the GPU before its transformer is sharded: {:.1f} GiB{}\n",
             (pr.memory.runtime_reserved + pr.memory.load_weights_moved_first) / kGiB,
             pr.memory.runtime_reserved + pr.memory.load_weights_moved_first > e.gpu_bytes ? " (does NOT fit)" : "");
  fmt::print(out, "{}\n", host_load_text(pr, e.host_memory_gib));
}

std::optional<PlacementView> placement_view(const Query& q, const RankedPlan& rp) {
  if (!rp.placement || !q.topology) return std::nullopt;
  const Placement& p = *rp.placement;
  const Topology& t = *q.topology;
  PlacementView v;
  v.topology = t.name;
  v.nodes = q.nodes;
  v.gpus = q.gpus;
  v.gpus_per_node = p.gpus_per_node;
  v.topology_gpus = t.gpus;
  v.device_order = p.device_order;
  v.planning_only = t.planning_only;
  for (MeshAxis a : p.axis_order)
    if (p.degree[static_cast<int>(a)] > 1) v.axes.push_back(fmt::format("{} {}", to_string(a), p.degree[static_cast<int>(a)]));
  const auto link_of = [&](CommAxis axis) {
    const auto& g = p.layout[axis];
    return fmt::format("{} at {:.1f} GB/s busbw, alpha {:g} us", planner::topology::collective_name(rp.plan, axis),
                       g.busbw_gbps, g.latency_us);
  };
  const auto group = [&](std::string_view name, int degree, const std::vector<std::vector<int>>& groups,
                         std::string link) {
    PlacementGroup g;
    g.name = std::string(name);
    g.degree = degree;
    g.nodes = planner::topology::nodes_spanned(p, groups);
    for (std::size_t i = 0; i < groups.size() && i < 3; ++i) g.first.push_back(planner::topology::ranks_text(groups[i]));
    g.count = groups.size();
    g.link = std::move(link);
    v.groups.push_back(std::move(g));
  };
  for (MeshAxis a : p.axis_order) {
    const int degree = p.degree[static_cast<int>(a)];
    if (degree <= 1) continue;
    const auto axis = comm_axis(a);
    group(to_string(a), degree, p.groups(a), axis ? link_of(*axis) : "no collective");
  }
  // The fully-sharded group: consecutive ranks over the axes above, not an axis of its own.
  if (p.fs_degree > 1) group("fs", p.fs_degree, p.fs_groups(), link_of(CommAxis::kFs));
  for (MeshAxis a : outermost_first(p)) {
    v.mesh.emplace_back(std::string(to_string(a)), p.degree[static_cast<int>(a)]);
    if (a == MeshAxis::kRing || a == MeshAxis::kUlysses) v.cp_mesh.emplace_back(to_string(a));
  }
  const ParallelConfig& c = rp.plan.config;
  if (c.context_parallel_config.degree() <= 1) v.cp_mesh.clear();
  v.tp = c.tp();
  return v;
}

void print_placement_layout(std::ostream& out, const PlacementView& v) {
  fmt::print(out, "placement on {}{} ({} GPUs), axes innermost first: {}\n", v.topology,
             v.nodes > 1 ? fmt::format(" x {} nodes", v.nodes) : "", v.gpus,
             v.axes.empty() ? std::string("(single GPU)") : fmt::format("{}", fmt::join(v.axes, ", ")));
  for (const PlacementGroup& g : v.groups) {
    std::string shown;
    for (const std::string& ranks : g.first) shown += fmt::format("[{}] ", ranks);
    if (g.count > 3) shown += fmt::format("... ({} groups)", g.count);
    fmt::print(out, "  {:<8} {:>4}  {:<16} {:<34} {}\n", g.name, g.degree,
               g.nodes > 1 ? fmt::format("across {} nodes", g.nodes) : std::string("within a node"), shown, g.link);
  }
  fmt::print(out, "  node n runs ranks n x {} + i on GPU device_order[i]; device_order = {}\n", v.gpus_per_node,
             comma_list(v.device_order));
}

void print_placement(std::ostream& out, const PlacementView& v) {
  out << '\n';
  print_placement_layout(out, v);
  const std::string visible = "CUDA_VISIBLE_DEVICES=" + comma_list(v.device_order);
  if (v.planning_only) {
    std::vector<std::string> dims;
    for (const auto& [name, degree] : v.mesh) dims.push_back(fmt::format("{}={}", name, degree));
    fmt::print(out, "  planning only: {} is not a CUDA machine (cpplan's executor runs on CUDA and CPU); "
                    "its device mesh, outermost first: {}\n", v.topology, fmt::join(dims, ", "));
    return;
  }
  fmt::print(out, "  {} (every node; local rank i runs on the i-th listed GPU)\n", visible);
  fmt::print(out, "launch:\n");
  if (v.nodes == 1) {
    fmt::print(out, "  {} torchrun --nproc-per-node {} run.py\n", visible, v.gpus_per_node);
  } else {
    fmt::print(out,
               "  {} torchrun --nnodes {} --nproc-per-node {} --node-rank <0..{}> --rdzv-backend c10d "
               "--rdzv-endpoint <node0>:29500 run.py\n",
               visible, v.nodes, v.gpus_per_node, v.nodes - 1);
    fmt::print(out,
               "  srun -N {} --ntasks-per-node {} --gpus-per-node {} bash -c '{} RANK=$SLURM_PROCID "
               "LOCAL_RANK=$SLURM_LOCALID WORLD_SIZE=$SLURM_NTASKS MASTER_ADDR=<node0> MASTER_PORT=29500 python run.py'\n",
               v.nodes, v.gpus_per_node, v.topology_gpus, visible);
  }
  std::vector<std::string> shape, names;
  for (const auto& [name, degree] : v.mesh) {
    shape.push_back(std::to_string(degree));
    names.push_back(fmt::format("\"{}\"", name));
  }
  fmt::print(out, "DeviceMesh (torch lays the last dimension out contiguously):\n");
  fmt::print(out, "  import os, torch\n  from torch.distributed.device_mesh import init_device_mesh\n");
  fmt::print(out, "  torch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"]))\n");
  fmt::print(out, "  mesh = init_device_mesh(\"cuda\", ({}), mesh_dim_names=({}))\n", fmt::join(shape, ", "),
             fmt::join(names, ", "));
  if (!v.cp_mesh.empty()) {
    std::vector<std::string> cp;  // in mesh order, as DeviceMesh slicing wants
    for (const std::string& a : v.cp_mesh) cp.push_back(fmt::format("\"{}\"", a));
    fmt::print(out, "  cp_mesh = mesh[{}]  # ContextParallelConfig(..., mesh=cp_mesh)\n", fmt::join(cp, ", "));
  }
  if (v.tp > 1) fmt::print(out, "  tp_mesh = mesh[\"tp\"]  # TensorParallelConfig(tp_degree={}, mesh=tp_mesh)\n", v.tp);
}

std::string placement_text(const Query& q, const RankedPlan& p, const CollectiveSource& source) {
  const auto view = placement_view(q, p);
  const auto e = explain(q, p, source);
  if (!view || !e) return {};
  std::ostringstream out;
  print_placement_layout(out, *view);
  out << '\n';
  print_explain_groups(out, *e);
  return out.str();
}

}  // namespace cpplan::session
