#include "cli/report_command.h"

#include "cli/app.h"

namespace cpplan::cli {

CLI::App* add_report_command(CLI::App& app, ReportArgs& r) {
  CLI::App* cmd = app.add_subcommand("report", "markdown summary and PNG plots of the cost model's accuracy");
  session::add_field_option(*cmd, "db", r.db);
  cmd->add_option("--out", r.out, "output directory, created if missing (default ./cpplan-report)");
  return cmd;
}

}  // namespace cpplan::cli
