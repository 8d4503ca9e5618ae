#pragma once
// The `cpplan` command: parses arguments into a request, calls the library, prints.

#include <iosfwd>

namespace cpplan::cli {

// Exit codes: 0 ok, 2 usage, 3 invalid input or invalid plan, 4 runtime failure.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInvalid = 3;
inline constexpr int kExitRuntime = 4;

// The help of every command's --db.
inline constexpr const char* kDbHelp =
    "SQLite database (default $XDG_DATA_HOME/cpplan/cpplan.db, whose folder is created; elsewhere the folder must exist)";

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace cpplan::cli
