#pragma once
// `cpplan report [--db FILE] [--out DIR]`: REPORT.md and PNG plots of how far the cost model's
// predictions are from the runs measured (report/). Built with the GUI's Qt (CPPLAN_GUI); it runs
// in cpplan-exec (exec/report_command.cpp), so that the planning binary loads no Qt.

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>

namespace cpplan::cli {

struct ReportArgs {
  std::string db;                    // "" = data::Store::default_path()
  std::string out = "cpplan-report";  // created if missing
};

// Adds the subcommand to `app` and returns it.
CLI::App* add_report_command(CLI::App& app, ReportArgs& r);

}  // namespace cpplan::cli
