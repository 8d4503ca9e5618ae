#pragma once
// The calibration loop on the command line: `cpplan probe` measures this machine (cpplan-exec,
// exec/probe_command.cpp), `cpplan calibrate` fits the cost model to the runs recorded on it
// (session/engine/calibration.h). Options and printing only.

#include <iosfwd>

#include "cli/args.h"
#include "cli/calibrate_import.h"

namespace cpplan::cli {

struct ProbeArgs {
  std::string nproc = "2", db, device, worker;  // device: empty = this machine's (local_is_cuda)
  std::vector<std::string> models = {"flux-tiny", "wan-tiny"};
  bool quick = false;
  std::string folds = "5";
};

void add_probe_options(CLI::App& probe, ProbeArgs& p);
void add_calibrate_options(CLI::App& calibrate, ProbeArgs& p);
int calibrate_command(const ProbeArgs& p, const Args& a, const std::string& exe, std::ostream& out, std::ostream& err);
// `cpplan calibrate --pipeline-runs [--db F]`: the runtime fit of the database's pipeline runs.
int calibrate_pipeline_runs_command(const ProbeArgs& p, const CalibrateArgs& c, const Args& a, const std::string& exe,
                                    std::ostream& out);

}  // namespace cpplan::cli
