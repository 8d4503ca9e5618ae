#pragma once
// The cpplan-gui command line: the query flags both fronts declare (session/query/query_flags.h), the screenshot
// mode, the database path. Parsed before Qt starts, so that a bad flag is one line on stderr.

#include <string>
#include <vector>

#include "gui/planning.h"

namespace cpplan::gui {

struct GuiOptions {
  QueryInput input;
  std::vector<std::string> profiles;  // --profiles, extra profile directories
  std::string screenshot;             // --screenshot FILE.png: render the window, then exit
  std::string tab = "plans";          // --tab plans|heatmap|...|sweep|fleet: shown first
  std::string db;                     // --db FILE: the run history (default data::Store::default_path())
  std::string cluster;                // --cluster NAME: collectives from that cluster's nccl-tests imports in --db
  std::string sweep_file;             // --sweep-file FILE: the Sweep tab's file (not started)
  int width = 1480, height = 920;     // --size WxH of the window
};

// exit_code < 0: go on with `options` and `catalog`; otherwise exit with it after printing
// `message` (one line; 0 for --help/--version, 2 usage, 3 invalid input, as the CLI).
struct ParsedArgs {
  int exit_code = -1;
  std::string message;
  GuiOptions options;
  CatalogPtr catalog;
};

// `exe` locates the installed profiles (core/profiles.h).
ParsedArgs parse_args(int argc, const char* const* argv, const std::string& exe);

}  // namespace cpplan::gui
