#pragma once
// `cpplan db check [--db FILE]`: SQLite's integrity check of the measurement store.

#include <iosfwd>
#include <string>

namespace cpplan::cli {

int db_check_command(const std::string& db, bool json, std::ostream& out, std::ostream& err);

}  // namespace cpplan::cli
