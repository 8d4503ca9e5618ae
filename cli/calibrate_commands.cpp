#include "cli/calibrate_commands.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "cli/app.h"
#include "session/engine/calibration.h"

namespace cpplan::cli {

void add_probe_options(CLI::App& probe, ProbeArgs& p) {
  probe.add_option("--nproc", p.nproc, "ranks: collectives for every group size up to N (default 2)");
  probe.add_option("--device", p.device, "cpu | cuda (default: cuda when this build sees a GPU; one per rank, bf16)");
  session::add_field_option(probe, "db", p.db);
  probe.add_option("--model", p.models, "kernel shapes of these models' blocks (default flux-tiny wan-tiny)");
  probe.add_flag("--quick", p.quick, "messages up to 4 MiB, sequences up to 1024 tokens");
  probe.add_option("--worker", p.worker, "internal")->group("");
}

void add_calibrate_options(CLI::App& calibrate, ProbeArgs& p) {
  session::add_field_option(calibrate, "db", p.db);
}

int calibrate_command(const ProbeArgs& p, const Args& a, const std::string& exe, std::ostream& out, std::ostream&) {
  auto catalog = ProfileCatalog::load(profile_search_path(a.profiles, exe));
  if (!catalog) throw InvalidInput{catalog.error().message};
  const int folds = parse_int("--folds", p.folds, 2, 100);
  const auto fitted = session::calibrate_local(p.db, *catalog, session::this_machine(exe), folds);
  const costmodel::Calibration& c = fitted.calibration;
  fmt::print(out,
             "calibrated on {} runs of this machine ({}), {} configurations (repeats at their median step), {}-fold "
             "cross-validation, stored as version {}:\n",
             c.runs, c.fingerprint, c.configurations, c.folds, fitted.version);
  fmt::print(out, "  held-out MAPE {:.1f}% -> {:.1f}%, Spearman rank correlation {:.3f} -> {:.3f}\n", c.mape_before * 100,
             c.mape_after * 100, c.rank_corr_before, c.rank_corr_after);
  fmt::print(out, "  shrinkage toward the measured model {:.3g} (chosen by cross-validation)\n", c.shrinkage);
  for (std::size_t i = 0; i < c.features.size(); ++i) fmt::print(out, "  {:<16} x {:.4g}\n", c.features[i], c.coefficients[i]);
  return kExitOk;
}

int calibrate_pipeline_runs_command(const ProbeArgs& p, const CalibrateArgs& c, const Args& a, const std::string& exe,
                                    std::ostream& out) {
  std::string store_path;
  const auto rows = session::pipeline_timing_rows(p.db, store_path);
  return fit_runtimes_command(rows, store_path, c, a, exe, out);
}

}  // namespace cpplan::cli
