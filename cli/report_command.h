#pragma once
// `cpplan report [--db FILE] [--out DIR]`: REPORT.md and PNG plots of how far the cost model's
// predictions are from the runs measured (report/). Built with the GUI's Qt (CPPLAN_GUI).

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

// Exit 0; 3 when the database is missing or not a cpplan database (left untouched) or --out
// cannot be written (one line naming it and the reason); 4 when reading or rendering fails.
int report_command(const ReportArgs& r, std::ostream& out, std::ostream& err);

}  // namespace cpplan::cli
