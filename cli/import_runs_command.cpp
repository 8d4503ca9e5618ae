#include "cli/import_runs_command.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "cli/app.h"
#include "cli/args.h"
#include "core/text.h"

namespace cpplan::cli {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;
constexpr std::string_view kName = "cpplan import-runs";
}  // namespace

CLI::App* add_import_runs_command(CLI::App& app, StoreArgs& s) {
  CLI::App* cmd = app.add_subcommand("import-runs", "record the runs python/cpplan_record.py timed in your own pipeline");
  cmd->add_option("file", s.runs_file, "JSONL file of the recorder (one run per line)")->required();
  session::add_field_option(*cmd, "db", s.db);
  cmd->add_flag("--json", s.json, "machine-readable output");
  return cmd;
}

int import_runs_command(const StoreArgs& s, std::ostream& out, std::ostream& err) {
  std::ifstream in(s.runs_file, std::ios::binary);
  if (!in) {
    fmt::print(err, "{}: {}: cannot read: {}\n", kName, printable(s.runs_file), std::strerror(errno));
    return kExitInvalid;
  }
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) {
    fmt::print(err, "{}: {}: cannot read\n", kName, printable(s.runs_file));
    return kExitInvalid;
  }
  auto runs = parse_recorder_runs(text, s.runs_file);
  if (!runs) {
    fmt::print(err, "{}: {}\n", kName, runs.error().message);
    return kExitInvalid;
  }

  // Every line is valid: only now is the database opened (and created when new). A --db whose
  // directory is missing is more likely a typo than a wish for new directories.
  const std::string path = s.db.empty() ? data::Store::default_path() : s.db;
  if (!s.db.empty()) {
    const fs::path parent = fs::path(s.db).parent_path();
    std::error_code ec;
    if (!parent.empty() && !fs::is_directory(parent, ec)) {
      fmt::print(err, "{}: --db {}: the directory {} does not exist\n", kName, printable(s.db), printable(parent.string()));
      return kExitInvalid;
    }
  }
  auto store = data::Store::open(path);
  if (!store) {
    fmt::print(err, "{}: {}\n", kName, store.error().message);
    return kExitInvalid;
  }
  auto summary = store.value().record_runs(*runs);
  if (!summary) {
    fmt::print(err, "{}: {}\n", kName, summary.error().message);
    return kExitRuntime;
  }
  if (s.json) {
    out << json{{"added", summary->added}, {"skipped", summary->skipped}, {"db", path}}.dump(2) << '\n';
  } else {
    fmt::print(out, "imported {} runs from {} into {} ({} already there)\n", summary->added, s.runs_file, path,
               summary->skipped);
  }
  return kExitOk;
}

}  // namespace cpplan::cli
