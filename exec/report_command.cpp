#include "exec/commands.h"

#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include "cli/app.h"
#include "data/store.h"
#include "report/report.h"

namespace cpplan::exec {

using namespace cli;

int report_command(const ReportArgs& r, std::ostream& out, std::ostream& err) {
  constexpr std::string_view kName = "cpplan report";
  const std::string path = r.db.empty() ? data::Store::default_path() : r.db;
  // A report reads: a missing database is a mistyped path (or nothing recorded yet), not one to create.
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    fmt::print(err, "{}: --db {}: no such file (cpplan run, sweep and probe record into it)\n", kName, path);
    return kExitInvalid;
  }
  auto store = data::Store::open(path);
  if (!store) {
    fmt::print(err, "{}: {}\n", kName, store.error().message);
    return kExitInvalid;
  }
  auto ready = report::prepare_output_dir(r.out);
  if (!ready) {
    fmt::print(err, "{}: {}\n", kName, ready.error().message);
    return kExitInvalid;
  }
  auto figures = report::gather(store.value());
  if (!figures) {
    fmt::print(err, "{}: {}: {}\n", kName, path, figures.error().message);
    return kExitRuntime;
  }
  auto written = report::write_report(figures.value(), r.out);
  if (!written) {
    fmt::print(err, "{}: {}\n", kName, written.error().message);
    return kExitRuntime;
  }

  const report::Figures& f = figures.value();
  fmt::print(out, "{}: {} runs ({} compared with their prediction), {} machines\n", written->markdown_path,
             f.runs_total, f.points.size(), f.machines.size());
  if (f.overall)
    fmt::print(out, "  MAPE {:.1f}% over {} runs{}\n", f.overall->mape * 100, f.overall->runs,
               f.overall->spearman ? fmt::format(", Spearman {:.2f}", *f.overall->spearman) : "");
  for (const report::Plot& p : written->plots) {
    if (p.skipped.empty()) fmt::print(out, "  {}\n", (std::filesystem::path(r.out) / p.file).string());
    else fmt::print(out, "  {} skipped: {}\n", p.title, p.skipped);
  }
  return kExitOk;
}

}  // namespace cpplan::exec
