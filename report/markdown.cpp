// REPORT.md: what the store holds, how far the predicted step time is from the measured one (per
// machine and per plan kind), the predicted transformer peak against the measured peak, the
// latest calibrations, and the measured collective bandwidth.
#include <cmath>
#include <fmt/format.h>

#include "core/text.h"
#include "report/detail.h"
#include "report/report.h"

namespace cpplan::report {

namespace {

// A table cell: '|' would end it and a newline would end the table.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

std::string percent(double fraction) { return fmt::format("{:.1f}%", fraction * 100); }
std::string signed_percent(double fraction) { return fmt::format("{:+.1f}%", fraction * 100); }

std::string worst_run(const RunPoint& p) {
  return fmt::format("#{} {} {}: {} ({:.3g} vs {:.3g} ms)", p.run_id, cell(p.model), cell(p.plan),
                     signed_percent(p.error()), p.predicted_ms, p.measured_ms);
}

void accuracy_table(std::string& md, const std::string& heading, const std::vector<Accuracy>& rows,
                    const std::optional<Accuracy>& overall) {
  md += fmt::format("| {} | runs | MAPE | Spearman | worst run (predicted vs measured) |\n|---|---:|---:|---:|---|\n",
                    heading);
  auto row = [&](const Accuracy& a, bool bold) {
    const std::string name = bold ? "**" + cell(a.group) + "**" : cell(a.group);
    md += fmt::format("| {} | {} | {} | {} | {} |\n", name, a.runs, percent(a.mape),
                      a.spearman ? fmt::format("{:.2f}", *a.spearman) : "-", worst_run(a.worst));
  };
  for (const Accuracy& a : rows) row(a, false);
  if (overall && rows.size() > 1) row(*overall, true);
  md += '\n';
}

void holdings(std::string& md, const Figures& f) {
  md += "## What the database holds\n\n";
  if (f.runs_total == 0 && f.machines.empty()) {
    md += "The database is empty: no runs, samples or calibrations. Record some with `cpplan run`, "
          "`cpplan sweep`, `cpplan probe` or `cpplan import-nccl-tests`.\n\n";
    return;
  }
  md += fmt::format("- runs: {} ({} ok, {} failed, {} cancelled)\n", f.runs_total, f.runs_ok, f.runs_failed,
                    f.runs_cancelled);
  md += fmt::format("- compared with their prediction (ok, measured and predicted step time): {}\n", f.points.size());
  if (f.runs_without_prediction > 0)
    md += fmt::format("- ok and measured, but recorded without a prediction: {}\n", f.runs_without_prediction);
  if (f.runs_unmeasured > 0) md += fmt::format("- ok but without a measured step time: {}\n", f.runs_unmeasured);
  md += '\n';
  md += "| machine | fingerprint | device | versions | runs ok / failed / cancelled | compared | "
        "collective samples | kernel samples | calibration |\n|---|---|---|---|---|---:|---:|---:|---|\n";
  for (const Machine& m : f.machines) {
    const data::HardwareFingerprint& h = m.hardware;
    std::string versions;
    for (const auto& [name, value] : {std::pair<const char*, const std::string&>{"driver", h.driver},
                                      {"CUDA", h.cuda}, {"NCCL", h.nccl}, {"torch", h.torch}})
      if (!value.empty()) versions += fmt::format("{}{} {}", versions.empty() ? "" : ", ", name, value);
    md += fmt::format("| {} | `{}` | {} | {} | {} / {} / {} | {} | {} | {} | {} |\n", cell(m.label), m.key,
                      cell(h.device_kind), versions.empty() ? "-" : cell(versions), m.runs_ok, m.runs_failed,
                      m.runs_cancelled, m.runs_compared, m.collective_samples, m.kernel_samples,
                      m.calibration ? fmt::format("v{}", m.calibration->version) : "none");
  }
  md += '\n';
}

void accuracy(std::string& md, const Figures& f, const std::vector<Plot>& plots) {
  md += "## How far to trust the model\n\n";
  if (f.points.empty()) {
    md += "No run has both a measured and a predicted step time, so there is nothing to compare";
    if (f.runs_without_prediction > 0)
      md += fmt::format(" ({} measured runs were recorded without a prediction)", f.runs_without_prediction);
    md += ". `cpplan run` and `cpplan sweep` record the prediction beside each measurement.\n\n";
  } else {
    md += "Error = (predicted - measured) / measured median step time, both as recorded with the run "
          "(the prediction is the one cpplan made when it ran: datasheet, measured model, or calibrated). "
          "MAPE = mean |error|. Spearman = rank correlation of predicted and measured step time over the "
          "group (1: the model orders the runs as measured; from 3 runs).\n\n";
    accuracy_table(md, "machine", f.by_machine, f.overall);
    accuracy_table(md, "plan kind", f.by_kind, f.overall);
    accuracy_table(md, "predicted with", f.by_source, f.overall);
  }
  for (const Plot& p : plots) {
    if (p.section != Plot::Section::kAccuracy) continue;
    if (p.skipped.empty()) md += fmt::format("![{}]({})\n\n", p.title, p.file);
    else md += fmt::format("Plot \"{}\" skipped: {}\n\n", p.title, p.skipped);
  }
}

std::string mib(Bytes b) { return fmt::format("{:.0f} MiB", b / kMiB); }

void memory(std::string& md, const Figures& f) {
  md += "## Peak memory\n\n";
  const std::string unpredicted =
      f.memory_unpredicted == 0
          ? std::string()
          : fmt::format("{} executor runs with a measured peak have no predicted transformer peak: recorded before "
                        "schema v4 (or without a prediction), they hold only the whole pipeline's predicted peak, "
                        "which adds text encoders and the VAE the executor does not run, so they are not compared.",
                        f.memory_unpredicted);
  if (f.memory_points.empty()) {
    md += "No executor run has both a measured peak memory and a predicted transformer peak, so there is nothing "
          "to compare.";
    md += unpredicted.empty() ? "\n\n" : " " + unpredicted + "\n\n";
    return;
  }
  md += "Measured: the largest rank's peak of bytes in tensors over the transformer's denoising loop, from building "
        "the model on (the caching allocator's on a GPU, the counted CPU allocator's on a CPU). Predicted: the same "
        "quantity, the transformer's weights per rank and its activations (not the whole pipeline's peak). "
        "Error = (predicted - measured) / measured.";
  md += unpredicted.empty() ? "\n\n" : " " + unpredicted + "\n\n";
  md += "| machine | runs | MAPE | worst run (predicted vs measured) |\n|---|---:|---:|---|\n";
  auto row = [&](const MemoryAccuracy& a, bool bold) {
    const MemoryPoint& w = a.worst;
    md += fmt::format("| {} | {} | {} | #{} {} {}: {} ({} vs {}) |\n", bold ? "**" + cell(a.group) + "**" : cell(a.group),
                      a.runs, percent(a.mape), w.run_id, cell(w.model), cell(w.plan), signed_percent(w.error()),
                      mib(w.predicted_bytes), mib(w.measured_bytes));
  };
  for (const MemoryAccuracy& a : f.memory_by_machine) row(a, false);
  if (f.memory_overall && f.memory_by_machine.size() > 1) row(*f.memory_overall, true);
  md += '\n';
  if (!f.load_overall) return;
  md += "Load phase: the bytes in tensors the transformers hold once built (the largest rank's), against the "
        "predicted transformer weights per rank. The executor runs no text "
        "encoder and no VAE, so the encode and decode phases are not measured.\n\n"
        "| machine | runs | MAPE | worst run (predicted vs measured) |\n|---|---:|---:|---|\n";
  row(*f.load_overall, false);
  md += '\n';
}

void calibrations(std::string& md, const Figures& f) {
  md += "## Latest calibration\n\n";
  bool any = false;
  for (const Machine& m : f.machines) any = any || m.calibration.has_value();
  if (!any) {
    md += "No calibration is stored: `cpplan calibrate` fits one per machine from its measured runs.\n\n";
    return;
  }
  md += "Held-out figures under k-fold cross-validation, as `cpplan calibrate` stored them (every run "
        "predicted by a fit that did not see it): before = the uncalibrated model, after = calibrated.\n\n";
  md += "| machine | version | fitted at | runs | folds | MAPE before | MAPE after | Spearman before | "
        "Spearman after |\n|---|---:|---|---:|---:|---:|---:|---:|---:|\n";
  for (const Machine& m : f.machines) {
    if (!m.calibration) continue;
    const costmodel::Calibration& c = *m.calibration;
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {:.2f} | {:.2f} |\n", cell(m.label), c.version,
                      cell(c.fitted_at), c.runs, c.folds, percent(c.mape_before), percent(c.mape_after),
                      c.rank_corr_before, c.rank_corr_after);
  }
  md += '\n';
}

void bandwidth(std::string& md, const Figures& f, const std::vector<Plot>& plots) {
  md += "## Collective bandwidth\n\n";
  if (f.busbw.empty()) {
    md += "No collective samples: `cpplan probe` measures this machine's, `cpplan import-nccl-tests` reads a "
          "cluster's.\n\n";
  } else {
    md += "Bus bandwidth in GB/s (nccl-tests' busbw: algbw x the collective's bus factor), median over the "
          "samples of each size; between measured sizes interpolated log-log, \"-\" outside the measured "
          "range.\n\n";
    md += "| machine | collective | ranks |";
    std::string align = "|---|---|---:|";
    for (Bytes b : busbw_table_sizes()) {
      md += fmt::format(" {} |", human_bytes(b));
      align += "---:|";
    }
    md += " peak |\n" + align + "---|\n";
    for (const BusbwCurve& c : f.busbw) {
      md += fmt::format("| {} | {} | {} |", cell(c.machine), c.collective_name(), c.ranks);
      for (Bytes b : busbw_table_sizes()) {
        const auto v = c.busbw_at(b);
        md += v ? fmt::format(" {:.2f} |", *v) : std::string(" - |");
      }
      const auto* peak = &c.points.front();
      for (const auto& p : c.points)
        if (p.second > peak->second) peak = &p;
      md += fmt::format(" {:.2f} at {} |\n", peak->second, human_bytes(peak->first));
    }
    md += '\n';
  }
  for (const Plot& p : plots) {
    if (p.section != Plot::Section::kBandwidth) continue;
    if (p.skipped.empty()) md += fmt::format("![{}]({})\n\n", p.title, p.file);
    else md += fmt::format("Plot \"{}\" skipped: {}\n\n", p.title, p.skipped);
  }
}

}  // namespace

std::string markdown(const Figures& f, const std::vector<Plot>& plots) {
  std::string md = "# cpplan report\n\n";
  md += fmt::format("Database `{}` (schema v{}).\n\n", f.db_path, f.schema_version);
  holdings(md, f);
  accuracy(md, f, plots);
  memory(md, f);
  calibrations(md, f);
  bandwidth(md, f, plots);
  return md;
}

}  // namespace cpplan::report
