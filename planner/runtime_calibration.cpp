#include "planner/runtime_calibration.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <numeric>

#include "core/text.h"
#include "costmodel/cost_model.h"
#include "costmodel/runtime_fit.h"
#include "planner/planner.h"
#include "planner/topology/placement.h"
#include "planner/validate.h"

namespace cpplan::planner {

namespace {

using costmodel::FitBlock;
using costmodel::FitObservation;
using costmodel::FitParameter;
using costmodel::Terms;
using costmodel::TimingRow;

// A fitted GEMM, attention or convolution efficiency stays below this fraction of the peak
// (core/fit.cpp caps at it too).
constexpr double kPeakCap = 0.95;
// Measurements this far apart must come out in the same order.
constexpr double kOrderGap = 0.05;
// A row the fit and the fits that did not see it both miss by more than this, on the same side, is
// reported as not reconciled with the others.
constexpr double kUnreconciled = 0.25;

// One row resolved against a catalog: the query (pointing into `catalog`) and its plan.
struct Resolved {
  Query query;
  Plan plan;
  bool per_image = false;
  double measured_ms = 0;
};

Error row_error(const TimingRow& row, std::string_view field, const std::string& value, const std::string& rule) {
  return Error{printable(fmt::format("{}: {} = {}: {}", row.where, field, value, rule))};
}

template <class P>
Result<const P*> named(const TimingRow& row, std::string_view field, const std::string& name, const P* found,
                       const std::vector<std::string>& known) {
  if (found) return found;
  const auto near = closest_names(name, known);
  return row_error(row, field, name,
                   near.empty() ? fmt::format("unknown profile; known: {}", join_or(known))
                                : fmt::format("unknown profile; did you mean {}?", join_or(near)));
}

Result<const HardwareProfile*> hardware_of(const ProfileCatalog& c, const TimingRow& row) {
  if (row.hardware.empty() || row.hardware == "gpu:")
    return row_error(row, "hardware", "(missing)", "names no hardware profile and no GPU (record it with hardware=NAME)");
  if (row.hardware.rfind("gpu:", 0) == 0) {
    const std::string gpu = row.hardware.substr(4);
    if (const HardwareProfile* h = c.match_gpu(gpu, 0)) return h;
    return row_error(row, "gpu_name", gpu, "matches no hardware profile (give \"hardware\")");
  }
  return named(row, "hardware", row.hardware, c.find_hardware(row.hardware), c.hardware_names());
}

Result<Resolved> resolve(const ProfileCatalog& c, const TimingRow& row) {
  auto model = named(row, "model", row.model, c.find_model(row.model), c.model_names());
  if (!model) return model.error();
  auto hw = hardware_of(c, row);
  if (!hw) return hw.error();
  auto rt = named(row, "runtime", row.runtime, c.find_runtime(row.runtime), c.runtime_names());
  if (!rt) return Error{rt.error().message + fmt::format(" (map a source with --runtime-for {}=RUNTIME)", row.source)};
  const ModelProfile& m = **model;
  Resolved r;
  Query& q = r.query;
  if (!row.topology.empty()) {
    auto topo = named(row, "topology", row.topology, c.find_topology(row.topology), c.topology_names());
    if (!topo) return topo.error();
    if ((*topo)->gpus < row.gpus)
      return row_error(row, "gpus", std::to_string(row.gpus), fmt::format("more than topology {}'s {} GPUs", row.topology, (*topo)->gpus));
    q.topology = *topo;
  }
  q.model = &m;
  q.hardware = *hw;
  q.runtime = *rt;
  q.gpus = row.gpus;
  q.resolution = {row.width, row.height};
  q.frames = m.video ? row.frames : 1;
  q.steps = row.steps > 0 ? row.steps : m.default_steps;
  q.batch = row.batch;
  q.backend = row.backend;
  q.text_encoder = row.text_encoder.value_or(TextEncoderPlacement::kReplicated);
  q.vae = row.vae.value_or(VaePlacement::kSingle);
  auto seq = compute_sequence(m, q.resolution, q.frames, row.text_tokens > 0 ? row.text_tokens : m.text_tokens);
  if (!seq) return Error{fmt::format("{}: {}", row.where, seq.error().message)};
  q.sequence = *seq;
  r.plan = make_plan(q, row.config);  // an invalid plan is the caller's to report (usable_rows)
  r.per_image = !row.step_ms.has_value();
  r.measured_ms = r.per_image ? row.image_ms.value_or(0) : *row.step_ms;
  return r;
}

// The rows the fit and the check use, resolved against `c`: oom rows are counted and skipped (no
// timing), rows whose plan the planner rejects are skipped and listed with the rules they break.
// A row naming no profile of `c` is the error.
Result<bool> usable_rows(const ProfileCatalog& c, const std::vector<TimingRow>& all, std::vector<TimingRow>& rows,
                         std::vector<Resolved>& resolved, RuntimeCalibration& out) {
  for (const TimingRow& row : all) {
    if (row.oom) {
      ++out.oom_skipped;
      continue;
    }
    auto r = resolve(c, row);
    if (!r) return r.error();
    if (!r->plan.valid()) {
      out.rejected.push_back(printable(fmt::format("{}: {} {} on {} x {}: plan {} ({}) is invalid: {}", row.where,
                                                   row.source, row.model, row.gpus, r->query.hardware->name,
                                                   plan_label(row.config), display_name(r->plan.variant),
                                                   fmt::join(r->plan.reasons(), "; "))));
      continue;
    }
    rows.push_back(row);
    resolved.push_back(std::move(r).value());
  }
  return true;
}

// A row's prediction, and the share of its collectives' time that is an all-to-all bound by the
// link between sockets (HardwareProfile::all_to_all_across_sockets prices it).
struct Priced {
  costmodel::Prediction predicted;
  double socket_all_to_all_share = 0;
};

// The row's prediction: on its box's topology (else its hardware's usual node, for a PCIe GPU),
// the frameworks' default rank order priced by the links its groups use.
Priced predict(const Resolved& r) {
  const costmodel::DatasheetModel hw(*r.query.hardware);
  const costmodel::CostModel cost(hw);
  Priced out;
  if (const auto placer = placer_for(r.query, cost)) {
    const topology::PlacementResult placed = placer->evaluate(r.plan, topology::kDefaultAxisOrder);
    out.predicted = placed.predicted;
    const auto& axes = out.predicted.axis_comm_ms;
    const double total = std::accumulate(axes.begin(), axes.end(), 0.0);
    const auto ulysses = static_cast<std::size_t>(costmodel::CommAxis::kUlysses);
    if (placed.placement.links[ulysses].across_sockets && total > 0) out.socket_all_to_all_share = axes[ulysses] / total;
    return out;
  }
  out.predicted = cost.predict(r.query, r.plan.config, r.plan.variant);
  return out;
}

// The fit's parameters, created as observations name them.
class Parameters {
 public:
  int operator()(const std::string& name, double lower = 0, double upper = std::numeric_limits<double>::infinity()) {
    auto [it, added] = index_.try_emplace(name, static_cast<int>(list_.size()));
    if (added) list_.push_back({name, lower, upper});
    else list_[static_cast<std::size_t>(it->second)].lower = std::max(list_[static_cast<std::size_t>(it->second)].lower, lower);
    return it->second;
  }
  const std::vector<FitParameter>& list() const { return list_; }
  double theta(const std::vector<double>& t, const std::string& name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? 1.0 : t[static_cast<std::size_t>(it->second)];
  }
  bool has(const std::string& name) const { return index_.count(name) > 0; }
  // An efficiency's divisor theta: its multiplier 1 / theta stays within what a fit file may hold
  // (core/fit.h), and theta at or above `lower` (an efficiency cannot pass the peak).
  int efficiency(const std::string& name, double lower) {
    return (*this)(name, std::max(lower, 1.0 / kMaxFitMultiplier), kMaxFitMultiplier);
  }

 private:
  std::vector<FitParameter> list_;
  std::map<std::string, int> index_;
};

double sum(const Terms& terms) {
  double s = 0;
  for (const auto& [j, v] : terms) s += v;
  return s;
}

void scale(Terms& terms, double k) {
  for (auto& [j, v] : terms) v *= k;
}

// PipeFusion's denoising as the fit sees it (costmodel/pipefusion_cost.h): the pacing stage's
// patch slot, max(host, GPU) with its terms in the proportions of the step's blocks (o.blocks,
// the warm-up and patch passes blended), once per slot of the pipelined phase and of its fill and
// drain; the synchronous warm-up in the same proportions; the rest (the slot's excess when the
// link or the round trip paces it, the GPU work outside the blocks) as it is. `unit`: 1 for a
// figure per image, 1 / steps per step. Replaces o.blocks; o.steps becomes 1.
void pipefusion_observation(const costmodel::PipeFusionCost& pf, double unit, FitObservation& o) {
  FitBlock stage;
  stage.overlapped = o.blocks.empty() || o.blocks.front().overlapped;
  for (const FitBlock& b : o.blocks) {
    stage.host.insert(stage.host.end(), b.host.begin(), b.host.end());
    stage.device.insert(stage.device.end(), b.device.begin(), b.device.end());
    stage.sync.insert(stage.sync.end(), b.sync.begin(), b.sync.end());
  }
  const double host = sum(stage.host), device = sum(stage.device), sync = sum(stage.sync);
  const double slots = pf.pipelined_slots + (pf.slot_ms > 0 ? pf.fill_drain_ms / pf.slot_ms : 0);
  FitBlock slot = stage, warmup = stage;
  scale(slot.host, host > 0 ? unit * slots * pf.stage_patch_host_ms / host : 0);
  scale(slot.device, device > 0 ? unit * slots * pf.stage_patch_gpu_ms / device : 0);
  const double waits = pf.stage_patch_ms - (stage.overlapped ? std::max(pf.stage_patch_host_ms, pf.stage_patch_gpu_ms)
                                                             : pf.stage_patch_host_ms + pf.stage_patch_gpu_ms);
  scale(slot.sync, sync > 0 ? unit * slots * std::max(0.0, waits) / sync : 0);
  const double bound = std::max(host, device) + sync;
  for (Terms* t : {&warmup.host, &warmup.device, &warmup.sync}) scale(*t, bound > 0 ? unit * pf.warmup_ms / bound : 0);
  o.blocks = {slot, warmup};
  o.steps = 1;
  const double excess = std::max(0.0, pf.slot_ms - pf.stage_patch_ms) * slots;
  o.once.push_back({costmodel::kFixed, unit * (excess + pf.pipelined_rest_ms)});
}

// The prediction's terms, each under the parameter that scales it.
FitObservation observe(const Resolved& r, const Priced& priced, Parameters& params) {
  const costmodel::Prediction& p = priced.predicted;
  const HardwareProfile& hw = *r.query.hardware;
  const RuntimeProfile& rt = *r.query.runtime;
  const std::string run = "runtime." + rt.name + ".";
  const std::string arch = hw.architecture.empty() ? "" : "architecture." + hw.architecture + ".";
  auto device = [&](const std::string& what, double lower) {
    return arch.empty() ? costmodel::kFixed : params.efficiency(arch + what, lower);
  };
  const double peak_eff = *std::max_element(std::begin(hw.attention_efficiency), std::end(hw.attention_efficiency));
  const int gemm = device("gemm", hw.gemm_efficiency / kPeakCap);
  const int attention = device("attention", peak_eff / kPeakCap);
  const int memory = device("memory", 0);
  const int conv = device("conv", hw.conv_efficiency / kPeakCap);
  // The links the groups use: an NVLink GPU in a PCIe-only box communicates as PCIe, and any GPU
  // in a box that stages peer traffic through host memory as staged PCIe (pcie_host).
  const bool staged = r.query.topology && topology::stages_peer_traffic(*r.query.topology);
  const bool on_pcie = r.query.topology && topology::nvlink_gpu_on_pcie(*r.query.topology, hw);
  const int comm = staged    ? params.efficiency("link.pcie_host.comm", hw.staged_pcie_efficiency)
                   : on_pcie ? params.efficiency("link.pcie.comm", hw.pcie_efficiency)
                           : params.efficiency("link." + std::string(to_string(hw.link_kind)) + ".comm", hw.intra_node.efficiency);
  const double share = priced.socket_all_to_all_share;
  const int sockets = share > 0 ? params.efficiency("link.socket_all_to_all.comm", hw.all_to_all_across_sockets) : comm;
  const double us = rt.us_per_op * 1e-3, coll = rt.collective_us * 1e-3;
  FitObservation o;
  auto block = [&](const costmodel::BlockCost& b, bool rest) {
    FitBlock fb;
    fb.overlapped = b.overlapped;
    fb.host = {{rest ? params(run + "step") : params("dispatch." + rt.dispatch + ".host", 0.05), b.ops * us},
               {params(run + "ulysses"), b.ulysses_ops * us},
               {params(run + "ring"), b.ring_ops * us},
               {params(run + "ring_iteration"), b.ring_iteration_ops * us},
               {params(run + "collective"), b.collective_calls * coll}};
    // A GEMM bound by its memory traffic speeds up with the memory efficiency, not the GEMM one
    // (the roofline's side, as the GPU at hand has it): a fit on a GPU rich in compute carries to
    // one of the same architecture that is not through the terms each really spends.
    fb.device = {{gemm, b.gemm_ms - b.gemm_traffic_ms},
                 {memory, b.memory_ms + b.gemm_traffic_ms},
                 {attention, b.attention_ms},
                 {comm, b.comm_ms * (1 - share)},
                 {sockets, b.comm_ms * share}};
    fb.sync = {{params(run + "sync"), b.sync_ms}};
    o.blocks.push_back(std::move(fb));
  };
  for (int i = 0; i < p.block_count; ++i) block(p.blocks[i], false);
  block(p.step_rest, true);
  o.steps = r.per_image ? r.query.steps : 1;
  if (p.pipefusion.active()) pipefusion_observation(p.pipefusion, r.per_image ? 1.0 : 1.0 / r.query.steps, o);
  if (r.per_image)
    o.once.insert(o.once.end(),
                  {{gemm, p.text_encode_ms}, {conv, p.vae_decode_ms}, {params(run + "image"), p.pipeline.host_ms}});
  o.measured_ms = r.measured_ms;
  return o;
}

// theta -> the fit file: runtimes' values, architectures' and links' efficiency multipliers.
RuntimeFit fit_of(const Parameters& params, const std::vector<double>& t, const ProfileCatalog& priors) {
  RuntimeFit f;
  for (const RuntimeProfile& rt : priors.runtimes()) {
    const std::string run = "runtime." + rt.name + ".", dispatch = "dispatch." + rt.dispatch + ".host";
    RuntimeFitValues v;
    // The host cost per op carries to every runtime of the same dispatch, measured or not; the
    // eager parts of a compiled pipeline are Python's.
    if (params.has(dispatch)) v.us_per_op = rt.us_per_op * params.theta(t, dispatch);
    if (rt.eager_us_per_op > 0 && rt.dispatch != "python" && params.has("dispatch.python.host"))
      v.eager_us_per_op = rt.eager_us_per_op * params.theta(t, "dispatch.python.host");
    if (params.has(run + "ulysses")) {  // the runtime's own timings
      auto th = [&](const char* what) { return params.theta(t, run + what); };
      const double host = std::max(params.theta(t, dispatch), 1e-3);
      v.ulysses = rt.ops.ulysses * th("ulysses") / host;
      v.ring = rt.ops.ring * th("ring") / host;
      v.ring_iteration = rt.ops.ring_iteration * th("ring_iteration") / host;
      v.collective_us = rt.collective_us * th("collective");
      v.sync_us = rt.sync_us * th("sync");
      v.step = rt.ops.step * th("step") / host;
      v.image_ms = rt.image_ms * th("image");
    }
    if (v.us_per_op || v.eager_us_per_op) f.runtimes[rt.name] = v;
  }
  for (const FitParameter& p : params.list()) {
    const auto dot = p.name.rfind('.');
    const std::string prefix = p.name.substr(0, dot), what = p.name.substr(dot + 1);
    const double scale = 1.0 / std::max(params.theta(t, p.name), 1e-6);
    if (prefix.rfind("architecture.", 0) == 0) {
      ArchitectureFitValues& a = f.architectures[prefix.substr(13)];
      (what == "gemm" ? a.gemm : what == "attention" ? a.attention : what == "memory" ? a.memory : a.conv) = scale;
    } else if (prefix.rfind("link.", 0) == 0) {
      f.links[prefix.substr(5)] = scale;
    }
  }
  return f;
}

double mape(const std::vector<CalibratedRow>& rows, double CalibratedRow::*field) {
  double e = 0;
  for (const auto& r : rows) e += std::abs(r.*field - r.measured_ms) / r.measured_ms;
  return rows.empty() ? 0 : e / static_cast<double>(rows.size());
}

std::string row_label(const CalibratedRow& r) {
  const TimingRow& t = r.row;
  return fmt::format("{} {}{} {}x{} {} GPUs {}", t.source, r.hardware, t.box.empty() ? "" : " (" + t.box + ")", t.width,
                     t.height, t.gpus, plan_label(t.config));
}

// Two rows of one source, GPU kind, size, steps and unit.
bool same_measure(const CalibratedRow& a, const CalibratedRow& b) {
  return a.row.source == b.row.source && a.hardware == b.hardware && a.row.width == b.row.width &&
         a.row.height == b.row.height && a.per_image == b.per_image && a.row.steps == b.row.steps;
}

// ... and of one box: their order is comparable.
bool comparable(const CalibratedRow& a, const CalibratedRow& b) { return same_measure(a, b) && a.row.box == b.row.box; }

// ... and of one configuration: the same model, runtime and plan, on one box (or one GPU anywhere).
bool same_configuration(const CalibratedRow& a, const CalibratedRow& b) {
  return same_measure(a, b) && a.row.model == b.row.model && a.row.runtime == b.row.runtime &&
         a.row.config == b.row.config && (a.row.box == b.row.box || a.row.gpus == 1);
}

// Pairs of the same source, box, GPU kind, resolution and unit whose measurements differ by over 5%.
void check_order(RuntimeCalibration& c) {
  for (std::size_t i = 0; i < c.rows.size(); ++i)
    for (std::size_t j = i + 1; j < c.rows.size(); ++j) {
      const CalibratedRow &a = c.rows[i], &b = c.rows[j];
      if (!comparable(a, b)) continue;
      if (std::abs(a.measured_ms - b.measured_ms) <= kOrderGap * std::min(a.measured_ms, b.measured_ms)) continue;
      ++c.pairs;
      if ((a.measured_ms < b.measured_ms) == (a.fitted_ms < b.fitted_ms)) ++c.pairs_ordered;
      else c.misordered.push_back(fmt::format("{} vs {}", row_label(a), row_label(b)));
    }
}

// What the published points cannot settle. Two timings of one configuration (same source, model,
// GPU kind, runtime, size, steps and plan: a single GPU on two boxes, say) more than twice the
// reading error apart; and rows that both the fit and the fits that did not see them miss by over
// kUnreconciled: no setting of the model's terms reconciles them with the other rows.
void check_agreement(RuntimeCalibration& c, double reading_error) {
  for (std::size_t i = 0; i < c.rows.size(); ++i)
    for (std::size_t j = i + 1; j < c.rows.size(); ++j) {
      const CalibratedRow &a = c.rows[i], &b = c.rows[j];
      const double gap = std::max(a.measured_ms, b.measured_ms) / std::min(a.measured_ms, b.measured_ms) - 1;
      if (same_configuration(a, b) && gap > 2 * reading_error)
        c.disagreements.push_back(fmt::format("{} and {}: one configuration measured {:.0f}% apart", row_label(a),
                                              row_label(b), 100 * gap));
    }
  for (CalibratedRow& r : c.rows) {
    const double fitted = r.fitted_ms / r.measured_ms - 1, held = r.held_out_ms / r.measured_ms - 1;
    r.unreconciled = std::abs(fitted) > kUnreconciled && std::abs(held) > kUnreconciled && (fitted > 0) == (held > 0);
    if (r.unreconciled)
      c.disagreements.push_back(fmt::format("{}: measured {:.3g} {}, fitted {:+.0f}%, held out {:+.0f}%: not reconciled "
                                            "with the other rows", row_label(r), r.measured_ms * (r.per_image ? 1e-3 : 1),
                                            r.per_image ? "s" : "ms", 100 * fitted, 100 * held));
  }
}

// Copies of the priors with one fit applied, made once per profile: what a query would see.
class FittedProfiles {
 public:
  explicit FittedProfiles(const RuntimeFit& fit) : fit_(fit) {}
  costmodel::Prediction predict(const Resolved& r) {
    Resolved fitted = r;
    auto [h, new_h] = hardware_.try_emplace(r.query.hardware->name, *r.query.hardware);
    if (new_h) apply_fit(fit_, h->second);
    auto [rt, new_rt] = runtimes_.try_emplace(r.query.runtime->name, *r.query.runtime);
    if (new_rt) apply_fit(fit_, rt->second);
    fitted.query.hardware = &h->second;
    fitted.query.runtime = &rt->second;
    return cpplan::planner::predict(fitted).predicted;
  }

 private:
  const RuntimeFit& fit_;
  std::map<std::string, HardwareProfile> hardware_;
  std::map<std::string, RuntimeProfile> runtimes_;
};

double time_of(const Resolved& r, const costmodel::Prediction& p) { return r.per_image ? p.image_ms : p.step_ms; }

// Each held-out fit through the real cost model: the nested folds' rows into held_out_ms and
// held_out_error (means over the repeats), and each left-out group's MAPE.
void predict_held_out(const std::vector<Resolved>& resolved, const costmodel::RuntimeFitResult& r,
                      const Parameters& params, const ProfileCatalog& priors, RuntimeCalibration& out) {
  for (const costmodel::HeldOutFit& h : r.held_out) {
    const RuntimeFit fit = fit_of(params, h.theta, priors);
    FittedProfiles fitted(fit);
    double error = 0;
    for (std::size_t i : h.test) {
      const double ms = time_of(resolved[i], fitted.predict(resolved[i]));
      const double e = std::abs(ms / resolved[i].measured_ms - 1);
      if (h.group.empty()) {
        out.rows[i].held_out_ms += ms / r.repeats;
        out.rows[i].held_out_error += e / r.repeats;
      } else {
        out.rows[i].left_out_ms[h.group.substr(0, h.group.find('='))] = ms;
      }
      error += e;
    }
    if (!h.group.empty()) out.held_out.emplace_back(h.group, error / static_cast<double>(h.test.size()));
  }
}

// The fitted predictions' peak memory against the rows that measured theirs.
void check_memory(const std::vector<TimingRow>& rows, std::size_t i, const costmodel::Prediction& p,
                  RuntimeCalibration& out) {
  if (!rows[i].peak_mem_bytes) return;
  CalibratedRow& c = out.rows[i];
  c.predicted_mem_bytes = p.peak_mem_bytes;
  ++out.memory_rows;
  const double error = std::abs(p.peak_mem_bytes / *rows[i].peak_mem_bytes - 1);
  out.memory_mape += error;
  if (error <= 0.10) ++out.memory_within_10;
  else
    out.memory_outside_10.push_back(fmt::format("{}: measured {:.2f} GiB, predicted {:.2f} GiB", row_label(c),
                                                *rows[i].peak_mem_bytes / kGiB, p.peak_mem_bytes / kGiB));
}

// The group keys each left out in turn (groups_of), and those the ridge is chosen by leaving out
// with --shrinkage-by groups: the GPU kinds, sources and checkpoints issue 55 reports.
const std::vector<std::string> kLeftOutKeys = {"hardware", "source", "model", "box", "resolution"};
const std::vector<std::string> kRidgeGroupKeys = {"hardware", "source", "model"};

// The groups a row is left out with: its GPU kind, its source, its checkpoint (a model profile, or
// the one derived from its diffusers config), its box (when named) and its size.
std::vector<std::string> groups_of(const Resolved& r, const TimingRow& row) {
  std::vector<std::string> g = {"hardware=" + r.query.hardware->name, "source=" + row.source,
                                "model=" + r.query.model->name, fmt::format("resolution={}x{}", row.width, row.height)};
  if (!row.box.empty()) g.push_back("box=" + row.box);
  return g;
}

void fill_provenance(const RuntimeCalibration& out, const costmodel::RuntimeFitResult& r, const RuntimeCalibrationOptions& o,
                     std::size_t rows, FitProvenance& pv) {
  pv.source = o.source;
  pv.rows = static_cast<int>(rows);
  pv.fitted_at = now_utc();
  pv.mape = out.fitted_mape;
  pv.cv_mape = out.cv_mape;
  pv.folds = r.folds;
  pv.repeats = r.repeats;
  pv.shrinkage = r.lambda;
  pv.shrinkage_by_groups = o.shrinkage_by_groups;
  for (const auto& [group, e] : out.held_out) pv.held_out[group] = e;
}

}  // namespace

Result<RuntimeCalibration> check_timings(const ProfileCatalog& shipped, const std::vector<TimingRow>& all_rows) {
  RuntimeCalibration out;
  std::vector<TimingRow> rows;
  std::vector<Resolved> resolved;
  if (auto u = usable_rows(shipped, all_rows, rows, resolved, out); !u) return u.error();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const TimingRow& row = rows[i];
    const Resolved& r = resolved[i];
    const costmodel::Prediction p = predict(r).predicted;
    CalibratedRow c;
    c.row = row;
    c.hardware = r.query.hardware->name;
    c.per_image = r.per_image;
    c.measured_ms = r.measured_ms;
    c.prior_ms = c.fitted_ms = time_of(r, p);
    c.fitted_text_encode_ms = p.text_encode_ms;
    c.fitted_vae_decode_ms = p.vae_decode_ms;
    out.rows.push_back(std::move(c));
    check_memory(rows, out.rows.size() - 1, p, out);
  }
  if (out.memory_rows > 0) out.memory_mape /= out.memory_rows;
  out.prior_mape = out.fitted_mape = mape(out.rows, &CalibratedRow::fitted_ms);
  check_order(out);
  return out;
}

Result<RuntimeCalibration> calibrate_runtimes(const ProfileCatalog& priors, const std::vector<TimingRow>& all_rows,
                                              const RuntimeCalibrationOptions& options) {
  RuntimeCalibration out;
  std::vector<TimingRow> rows;
  std::vector<Resolved> resolved;
  if (auto u = usable_rows(priors, all_rows, rows, resolved, out); !u) return u.error();
  if (rows.size() < 2)
    return Error{fmt::format("{}: {} rows a fit can use ({} oom, {} with a plan cpplan rejects); a fit needs at least 2",
                             options.source, rows.size(), out.oom_skipped, out.rejected.size())};
  Parameters params;
  std::vector<FitObservation> observations;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Priced priced = predict(resolved[i]);
    const costmodel::Prediction& p = priced.predicted;
    FitObservation o = observe(resolved[i], priced, params);
    o.groups = groups_of(resolved[i], rows[i]);
    observations.push_back(std::move(o));
    CalibratedRow c;
    c.row = rows[i];
    c.hardware = resolved[i].query.hardware->name;
    c.per_image = resolved[i].per_image;
    c.measured_ms = resolved[i].measured_ms;
    c.prior_ms = time_of(resolved[i], p);
    out.rows.push_back(std::move(c));
  }
  const costmodel::RuntimeFitResult r =
      costmodel::fit_runtime_parameters(observations, params.list(), options.folds, kLeftOutKeys, options.repeats,
                                        options.shrinkage_by_groups ? kRidgeGroupKeys : std::vector<std::string>{});
  out.fit = fit_of(params, r.theta, priors);
  out.fit.name = options.name;
  out.fit.description = options.description;

  // The fit applied to copies of the priors, through the real cost model: what ships.
  FittedProfiles fitted(out.fit);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const costmodel::Prediction p = fitted.predict(resolved[i]);
    out.rows[i].fitted_ms = time_of(resolved[i], p);
    out.rows[i].fitted_text_encode_ms = p.text_encode_ms;
    out.rows[i].fitted_vae_decode_ms = p.vae_decode_ms;
    check_memory(rows, i, p, out);
  }
  if (out.memory_rows > 0) out.memory_mape /= out.memory_rows;
  predict_held_out(resolved, r, params, priors, out);
  out.prior_mape = mape(out.rows, &CalibratedRow::prior_ms);
  out.fitted_mape = mape(out.rows, &CalibratedRow::fitted_ms);
  out.cv_mape = 0;
  for (const CalibratedRow& c : out.rows) out.cv_mape += c.held_out_error / static_cast<double>(out.rows.size());
  check_order(out);
  check_agreement(out, options.reading_error);
  fill_provenance(out, r, options, rows.size(), out.fit.provenance);
  return out;
}

}  // namespace cpplan::planner
