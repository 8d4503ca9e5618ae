#include "cli/calibrate_import.h"

#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "session/engine/calibration.h"

namespace cpplan::cli {

namespace fs = std::filesystem;
using nlohmann::json;

void add_calibrate_import_options(CLI::App& calibrate, CalibrateArgs& c) {
  calibrate.add_option("--import", c.import,
                       "fit the runtime and hardware defaults to end-to-end timings: JSON, CSV or the recorder's JSON "
                       "lines (docs/calibration.md); repeatable: one fit of every file's rows");
  calibrate.add_option("-o,--output", c.output, "with --import: write the fit as a profile file (profiles/fits/NAME.toml)");
  calibrate.add_option("--name", c.name, "with --import: the fit's name (default: the output file's stem)");
  calibrate.add_option("--runtime", c.runtime, "with --import: the runtime of rows that name none");
  calibrate.add_option("--runtime-for", c.runtime_for, "with --import: SOURCE=RUNTIME, the runtime of a source's rows; repeatable");
  calibrate.add_option("--model-for", c.model_for,
                       "with --import: SOURCE=MODEL, the model profile of a source's rows (over their \"model\"); repeatable");
  calibrate.add_option("--topology-for", c.topology_for,
                       "with --import: BOX=TOPOLOGY, the topology profile of the rows whose \"box\" is BOX; repeatable");
  calibrate.add_option("--warmup-for", c.warmup_for,
                       "with --import: SOURCE=W, the PipeFusion warm-up steps of a source's rows that state none "
                       "(default xDiT's, 1); repeatable");
  calibrate.add_option("--folds", c.folds, "k of the k-fold cross-validation (default 5)");
  calibrate.add_option("--repeats", c.repeats,
                       "with --import: repeats of the cross-validation, each dealing the rows to the folds anew (default 5)");
  calibrate.add_option("--shrinkage-by", c.shrinkage_by,
                       "with --import: choose the pull toward the priors by k-fold over the rows (rows, the default) or "
                       "by leaving out each GPU kind, source and checkpoint in turn (groups: for predicting one the "
                       "timings do not hold; slower)");
  calibrate.add_flag("--pipeline-runs", c.pipeline_runs,
                     "fit the runtime and hardware defaults to the database's runs recorded by python/cpplan_record.py "
                     "(cpplan import-runs)");
  calibrate.add_flag("--check", c.check,
                     "with --import: fit nothing; predict every row with the shipped profiles (their fits applied) and "
                     "report the error and the plan order (scripts/published-order.py compares it with a baseline)");
  calibrate.add_flag("--json", c.json, "machine-readable output");
}

namespace {

json rows_json(const planner::RuntimeCalibration& r) {
  json rows = json::array();
  for (const auto& c : r.rows)
    rows.push_back({{"where", c.row.where},
                    {"source", c.row.source},
                    {"model", c.row.model},
                    {"config", c.row.model_config.empty() ? json(nullptr) : json(c.row.model_config)},
                    {"compiled", c.row.compiled},
                    {"frames", c.row.frames},
                    {"hardware", c.hardware},
                    {"runtime", c.row.runtime},
                    {"gpus", c.row.gpus},
                    {"box", c.row.box.empty() ? json(nullptr) : json(c.row.box)},
                    {"topology", c.row.topology.empty() ? json(nullptr) : json(c.row.topology)},
                    {"pipefusion_degree", c.row.config.pp()},
                    {"pipefusion_warmup_steps", c.row.config.pipefusion.warmup_steps},
                    {"resolution", fmt::format("{}x{}", c.row.width, c.row.height)},
                    {"steps", c.row.steps == 0 ? json(nullptr) : json(c.row.steps)},
                    {"plan", plan_label(c.row.config)},
                    {"per_image", c.per_image},
                    {"measured_ms", c.measured_ms},
                    {"prior_ms", c.prior_ms},
                    {"fitted_ms", c.fitted_ms},
                    {"fitted_text_encode_ms", c.fitted_text_encode_ms},
                    {"fitted_vae_decode_ms", c.fitted_vae_decode_ms},
                    {"held_out_ms", c.held_out_ms},
                    {"held_out_error", c.held_out_error},
                    {"left_out_ms", c.left_out_ms},
                    {"unreconciled", c.unreconciled},
                    {"measured_mem_bytes", c.row.peak_mem_bytes ? json(*c.row.peak_mem_bytes) : json(nullptr)},
                    {"predicted_mem_bytes", c.predicted_mem_bytes ? json(*c.predicted_mem_bytes) : json(nullptr)}});
  return rows;
}

json report_json(const planner::RuntimeCalibration& r, const std::string& output) {
  json held = json::object();
  for (const auto& [g, e] : r.held_out) held[g] = e;
  return {{"rows", rows_json(r)},
          {"prior_mape", r.prior_mape},
          {"fitted_mape", r.fitted_mape},
          {"cv_mape", r.cv_mape},
          {"folds", r.fit.provenance.folds},
          {"repeats", r.fit.provenance.repeats},
          {"shrinkage", r.fit.provenance.shrinkage},
          {"shrinkage_by", r.fit.provenance.shrinkage_by_groups ? "groups" : "rows"},
          {"held_out", held},
          {"pairs", r.pairs},
          {"pairs_ordered", r.pairs_ordered},
          {"misordered", r.misordered},
          {"memory_rows", r.memory_rows},
          {"memory_within_10", r.memory_within_10},
          {"memory_mape", r.memory_mape},
          {"memory_outside_10", r.memory_outside_10},
          {"disagreements", r.disagreements},
          {"oom_skipped", r.oom_skipped},
          {"rejected", r.rejected},
          {"fit", to_toml(r.fit)},
          {"output", output.empty() ? json(nullptr) : json(output)}};
}

double error_pct(double predicted, double measured) { return 100.0 * (predicted / measured - 1); }

// The rows the fit or the check left out: oom runs (no timing) and plans cpplan rejects.
void print_skipped(std::ostream& out, const planner::RuntimeCalibration& r) {
  if (r.oom_skipped > 0) fmt::print(out, "skipped {} rows with oom = true (the run did not fit: no timing)\n", r.oom_skipped);
  if (!r.rejected.empty())
    fmt::print(out, "skipped {} rows whose published plan cpplan rejects (the run ran: a cpplan bug each):\n",
               r.rejected.size());
  for (const auto& m : r.rejected) fmt::print(out, "  rejected: {}\n", m);
}

void print_report(std::ostream& out, const planner::RuntimeCalibration& r, const std::string& file) {
  fmt::print(out, "calibrate --import {}: {} rows\n", file, r.rows.size());
  print_skipped(out, r);
  fmt::print(out, "{:<20} {:<12} {:<9} {:>4} {:<26} {:>11} {:>15} {:>15} {:>15}\n", "source", "hardware", "runtime",
             "GPUs", "plan", "measured", "priors", "fitted", "held out");
  for (const auto& c : r.rows) {
    const double scale = c.per_image ? 1e-3 : 1;
    const char* unit = c.per_image ? "s" : "ms";
    fmt::print(out, "{:<20} {:<12} {:<9} {:>4} {:<26} {:>9.2f}{:<2} {:>8.2f} {:+5.1f}% {:>8.2f} {:+5.1f}% {:>8.2f} {:+5.1f}%\n",
               c.row.source, c.hardware, c.row.runtime, c.row.gpus, plan_label(c.row.config), c.measured_ms * scale, unit,
               c.prior_ms * scale, error_pct(c.prior_ms, c.measured_ms), c.fitted_ms * scale,
               error_pct(c.fitted_ms, c.measured_ms), c.held_out_ms * scale, error_pct(c.held_out_ms, c.measured_ms));
  }
  fmt::print(out, "time MAPE: priors {:.1f}%, fitted {:.1f}% (in sample, the fit applied to the profiles), "
             "nested {}-fold cross-validation {:.1f}% (mean of {} repeats; ridge {:.3g}{})\n",
             100 * r.prior_mape, 100 * r.fitted_mape, r.fit.provenance.folds, 100 * r.cv_mape, r.fit.provenance.repeats,
             r.fit.provenance.shrinkage, r.fit.provenance.shrinkage_by_groups ? ", chosen by leaving groups out" : "");
  for (const auto& [g, e] : r.held_out) fmt::print(out, "  left out {}: MAPE {:.1f}%\n", g, 100 * e);
  fmt::print(out, "plan order: {} of {} pairs (same source, GPU kind and size, over 5% apart) ordered right\n",
             r.pairs_ordered, r.pairs);
  for (const auto& m : r.misordered) fmt::print(out, "  misordered: {}\n", m);
  if (r.memory_rows > 0)
    fmt::print(out, "peak memory: MAPE {:.1f}%; {} of {} within 10%\n", 100 * r.memory_mape, r.memory_within_10,
               r.memory_rows);
  for (const auto& m : r.memory_outside_10) fmt::print(out, "  outside 10%: {}\n", m);
  for (const auto& d : r.disagreements) fmt::print(out, "cannot settle: {}\n", d);
  fmt::print(out, "fitted values:\n");
  for (const auto& [name, v] : r.fit.runtimes)
    if (!v.ulysses)
      fmt::print(out, "  runtime {}: no timings of its own; {}\n", name,
                 v.us_per_op ? fmt::format("{:.2f} us per op, shared by its dispatch", *v.us_per_op)
                             : fmt::format("{:.2f} us per op of its eager parts", v.eager_us_per_op.value_or(0)));
    else
      fmt::print(out, "  runtime {}: {:.2f} us per op, {:.1f} Ulysses ops per layer, {:.1f} Ring set-up ops per layer and "
                 "{:.1f} per K/V block, {:.1f} us per collective, {:.1f} us sync, {:.0f} step ops, {:.0f} ms per image\n",
                 name, v.us_per_op.value_or(0), *v.ulysses, v.ring.value_or(0), v.ring_iteration.value_or(0),
                 v.collective_us.value_or(0), v.sync_us.value_or(0), v.step.value_or(0), v.image_ms.value_or(0));
  for (const auto& [name, a] : r.fit.architectures)
    fmt::print(out, "  architecture {}: efficiencies x GEMM {:.3f}, attention {:.3f}, memory-bound {:.3f}, conv {:.3f}\n",
               name, a.gemm, a.attention, a.memory, a.conv);
  for (const auto& [name, m] : r.fit.links) fmt::print(out, "  link {}: efficiency x {:.3f}\n", name, m);
}

session::RuntimeFitRequest fit_request(const CalibrateArgs& c, const Args& a, const std::string& exe,
                                        const std::string& source) {
  session::RuntimeFitRequest r;
  r.source = source;
  r.name = c.name;
  r.output = c.output;
  r.folds = parse_int("--folds", c.folds, 2, 100);
  r.repeats = parse_int("--repeats", c.repeats, 1, 100);
  if (c.shrinkage_by != "rows" && c.shrinkage_by != "groups")
    throw session::InvalidInput{fmt::format("--shrinkage-by = {}: must be rows or groups", c.shrinkage_by)};
  r.shrinkage_by_groups = c.shrinkage_by == "groups";
  r.profiles = a.profiles;
  r.exe = exe;
  session::complete_fit_request(r);
  return r;
}

// The fit of `rows` from `request`, its report and the -o file: what --import and
// --pipeline-runs share.
int fit_and_report(const std::vector<costmodel::TimingRow>& rows, const session::RuntimeFitRequest& request,
                   const CalibrateArgs& c, std::ostream& out) {
  const std::string& source = request.source;
  const planner::RuntimeCalibration result = session::fit_runtimes(rows, request);
  if (c.json) out << report_json(result, c.output).dump(2) << '\n';
  else {
    print_report(out, result, source);
    if (!c.output.empty()) fmt::print(out, "wrote {}\n", c.output);
  }
  return kExitOk;
}

// --check: the shipped profiles' predictions of the rows, fitting nothing.
int check_and_report(const std::vector<costmodel::TimingRow>& rows, const session::RuntimeFitRequest& request,
                     const CalibrateArgs& c, std::ostream& out) {
  const planner::RuntimeCalibration r = session::check_shipped(rows, request);
  if (c.json) {
    out << json{{"rows", rows_json(r)}, {"mape", r.fitted_mape}, {"pairs", r.pairs}, {"pairs_ordered", r.pairs_ordered},
                {"misordered", r.misordered}, {"oom_skipped", r.oom_skipped}, {"rejected", r.rejected}}
               .dump(2)
        << '\n';
    return kExitOk;
  }
  fmt::print(out, "calibrate --import {} --check: {} rows predicted by the shipped profiles\n", request.source, r.rows.size());
  print_skipped(out, r);
  fmt::print(out, "{:<20} {:<12} {:<9} {:>4} {:<26} {:>11} {:>15}\n", "source", "hardware", "runtime", "GPUs", "plan",
             "measured", "predicted");
  for (const auto& row : r.rows) {
    const double scale = row.per_image ? 1e-3 : 1;
    fmt::print(out, "{:<20} {:<12} {:<9} {:>4} {:<26} {:>9.2f}{:<2} {:>8.2f} {:+5.1f}%\n", row.row.source, row.hardware,
               row.row.runtime, row.row.gpus, plan_label(row.row.config), row.measured_ms * scale,
               row.per_image ? "s" : "ms", row.fitted_ms * scale, error_pct(row.fitted_ms, row.measured_ms));
  }
  fmt::print(out, "time MAPE {:.1f}%; plan order: {} of {} pairs (same source, GPU kind and size, over 5% apart) ordered right\n",
             100 * r.fitted_mape, r.pairs_ordered, r.pairs);
  for (const auto& m : r.misordered) fmt::print(out, "  misordered: {}\n", m);
  return kExitOk;
}

}  // namespace

int calibrate_import_command(const CalibrateArgs& c, const Args& a, const std::string& exe, std::ostream& out) {
  const std::string files = fmt::format("{}", fmt::join(c.import, ", "));
  if (c.check && !c.output.empty())
    throw InvalidInput{fmt::format("-o = {}: --check fits nothing, so there is no fit to write", c.output)};
  const session::RuntimeFitRequest request = fit_request(c, a, exe, files);  // a bad -o or --folds first
  if (c.check && request.shrinkage_by_groups)
    throw InvalidInput{"--shrinkage-by = groups: --check fits nothing, so there is no ridge to choose"};
  const session::TimingMappings mappings{c.runtime, c.runtime_for, c.model_for, c.topology_for, c.warmup_for};
  const auto rows = session::import_timings(c.import, mappings);
  return c.check ? check_and_report(rows, request, c, out) : fit_and_report(rows, request, c, out);
}

int fit_runtimes_command(const std::vector<costmodel::TimingRow>& rows, const std::string& source, const CalibrateArgs& c,
                         const Args& a, const std::string& exe, std::ostream& out) {
  return fit_and_report(rows, fit_request(c, a, exe, source), c, out);
}

}  // namespace cpplan::cli
