#pragma once
// `cpplan calibrate --import FILE [-o FIT.toml]`: fits the runtime profiles' host costs and
// per-collective overheads, and the GPU architectures' and links' efficiencies, to end-to-end
// timings of real pipelines (planner/runtime_calibration.h), reports how well the fit predicts
// (in sample, nested cross-validation, each GPU kind and each source left out, plan order,
// memory) and writes the fit as a profile file with its provenance.

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>
#include <vector>

#include "cli/args.h"
#include "session/engine/calibration.h"  // the timing rows and the fit it reports

namespace cpplan::cli {

struct CalibrateArgs {
  std::vector<std::string> import;       // --import FILE (.json, .csv or .jsonl); repeatable: one fit of all
  std::string output;                    // -o FILE.toml
  std::string name;                      // --name (default: the output's stem, else "fit")
  std::string runtime;                   // --runtime: for rows without one
  std::vector<std::string> runtime_for;  // --runtime-for SOURCE=RUNTIME
  std::vector<std::string> model_for;    // --model-for SOURCE=MODEL
  std::vector<std::string> topology_for; // --topology-for BOX=TOPOLOGY
  std::vector<std::string> warmup_for;   // --warmup-for SOURCE=W
  std::string folds = "5";
  std::string repeats = "5";
  std::string shrinkage_by = "rows";     // --shrinkage-by rows|groups
  bool json = false;
  bool check = false;                    // --check: predict the rows with the shipped profiles, fit nothing
  bool pipeline_runs = false;            // --pipeline-runs: the database's runs of source "pipeline"
};

void add_calibrate_import_options(CLI::App& calibrate, CalibrateArgs& c);
// Exit 0, or 3 with one line on bad input (file, row, field, value, rule).
int calibrate_import_command(const CalibrateArgs& c, const Args& a, const std::string& exe, std::ostream& out);
// The fit of `rows` (read from `source`, a file or a database), its report and the -o file: what
// --import and --pipeline-runs share.
int fit_runtimes_command(const std::vector<costmodel::TimingRow>& rows, const std::string& source, const CalibrateArgs& c,
                         const Args& a, const std::string& exe, std::ostream& out);

}  // namespace cpplan::cli
