#pragma once
// The store's schema: its versions, the migrations between them, and the check that a file is a
// cpplan database before anything writes to it. Internal to data/.

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "data/sqlite_handle.h"

namespace cpplan::data::schema {

// PRAGMA application_id of every cpplan database: "CPLN" in ASCII.
inline constexpr std::int32_t kApplicationId = 0x43504C4E;

// One step of the schema's history: a constant script that takes version `to_version - 1` to
// `to_version`. Scripts never change once released; a new version is one more entry.
struct Migration {
  int to_version;
  std::string_view summary;
  std::string_view sql;
};

// Oldest first; entry i takes version i to version i + 1.
const std::vector<Migration>& migrations();
// The version this code writes (PRAGMA user_version).
int current_version();

// What probe() found at a path, having written nothing.
struct Probe {
  bool fresh = false;    // missing, 0 bytes, or an SQLite file with no schema: initialize it
  int user_version = 0;  // schema version of an existing cpplan database
};

// Decides, reading only, whether `path` may be opened for writing: a missing or empty file, an
// empty SQLite database, or a cpplan database no newer than current_version(). Anything else is
// an error that names the path, and the file (and its -wal/-shm neighbours) stay as they were.
Result<Probe> probe(const std::string& path);

// Inside one write transaction on a read-write connection: claims an empty database (sets the
// application_id), re-checks that it is cpplan's and not newer (another process may have won a
// race since probe()), and applies the missing migrations. Returns the resulting version.
Result<int> migrate(sqlite3* db, const std::string& path);

// A read-only connection to another cpplan database (the source of a merge), and its version.
struct ReadOnly {
  sql::Connection db;
  int version = 0;
};

// Opens `path` for reading only, after the checks of probe(): a missing file, an empty one, a
// file that is not a cpplan database or one newer than this code is an error naming the path,
// and the file (and its -wal/-shm neighbours) stay as they were. Without a -wal or -journal
// beside it the file is read as immutable, so that no -shm is created next to it.
Result<ReadOnly> open_read_only(const std::string& path);

}  // namespace cpplan::data::schema
