#pragma once
// Commands that fill and combine measurement stores:
//   cpplan import-nccl-tests FILE [--ranks N] [--collective TEST] [--hardware-name NAME] [--db FILE]
//     records nccl-tests output (text table or -J JSON) as collective samples of this machine;
//   cpplan db merge A.db B.db ... --into FILE
//     merges cluster jobs' databases into one without duplicates (data::Store::merge_from).

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>
#include <vector>

namespace cpplan::cli {

struct StoreArgs {
  // import-nccl-tests
  std::string nccl_file, ranks, nodes, collective, hardware_name, cluster, db;
  // db merge
  std::vector<std::string> sources;
  std::string into;
  // import-runs (cli/import_runs_command.h)
  std::string runs_file;
  bool json = false;
};

// Adds the subcommand to `app` (import-nccl-tests) or to `db` (merge) and returns it.
CLI::App* add_import_nccl_tests_command(CLI::App& app, StoreArgs& s);
CLI::App* add_db_merge_command(CLI::App& db, StoreArgs& s);

// Exit 0, 3 (bad input: one line naming the file, field, value and rule) or 4 (the store failed).
int import_nccl_tests_command(const StoreArgs& s, std::ostream& out, std::ostream& err);
int db_merge_command(const StoreArgs& s, std::ostream& out, std::ostream& err);

}  // namespace cpplan::cli
