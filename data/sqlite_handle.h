#pragma once
// RAII over the sqlite3 C API for data/ only: a connection, a prepared statement that binds
// values by position, and a write transaction that retries when another process holds the lock.
// Every SQL value goes through a bound parameter; SQL text is always a constant of this folder.

#include <sqlite3.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace cpplan::data::sql {

struct ConnectionCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Connection = std::unique_ptr<sqlite3, ConnectionCloser>;

// How long one statement waits for another process's lock before SQLITE_BUSY.
inline constexpr int kBusyTimeoutMs = 10000;

// "<path>: <what>: <sqlite's message> (code N)".
Error error(sqlite3* db, const std::string& path, std::string_view what);

// Opens `filename` (a path, or a file: URI when `flags` has SQLITE_OPEN_URI) and sets the busy
// timeout. `path` is only for messages.
Result<Connection> open(const std::string& filename, int flags, const std::string& path);

// True when the connection's last failure was a lock held by someone else (retrying may help).
bool busy(sqlite3* db);

class Statement {
 public:
  // Compiles the first statement of `text`; `*tail` (if given) receives the rest.
  static Result<Statement> prepare(sqlite3* db, std::string_view text, const std::string& path,
                                   std::string_view* tail = nullptr);

  // Bind the next parameter (1, 2, ...). A failed bind is reported by the next step().
  Statement& bind(const std::string& value);
  Statement& bind(long long value);
  Statement& bind(int value) { return bind(static_cast<long long>(value)); }
  Statement& bind(bool value) { return bind(static_cast<long long>(value ? 1 : 0)); }
  Statement& bind(double value);
  Statement& bind(const std::optional<double>& value);
  Statement& bind_null();
  // Binds column `column` of `from`'s current row as it is stored (type and bits kept): copies
  // rows between two databases without a round trip through C++ types.
  Statement& bind_column(const Statement& from, int column);

  // SQLITE_ROW, SQLITE_DONE or the error code; error() describes a failure.
  int step();
  // step() that must end the statement; the error names `what`.
  Result<bool> run(std::string_view what);
  // Rewinds for another execution with new bindings.
  void reset();
  Error error(std::string_view what) const;

  // Columns of the current row, numbered from 0.
  std::string text(int column) const;
  long long integer(int column) const;
  double real(int column) const;
  std::optional<double> optional_real(int column) const;
  bool is_null(int column) const;

  bool empty() const { return stmt_ == nullptr; }  // `text` held only whitespace or comments

 private:
  struct Finalizer {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  Statement(sqlite3* db, sqlite3_stmt* stmt, std::string path) : db_(db), stmt_(stmt), path_(std::move(path)) {}

  sqlite3* db_ = nullptr;
  std::unique_ptr<sqlite3_stmt, Finalizer> stmt_;
  std::string path_;
  int next_ = 1;             // next parameter index
  int bind_rc_ = SQLITE_OK;  // first failed bind, surfaced by step()
};

// Runs a constant script of several statements (DDL, pragmas), one prepared statement at a time.
Result<bool> exec(sqlite3* db, std::string_view script, const std::string& path, std::string_view what);

// Reads a single-value query (e.g. "PRAGMA user_version").
Result<long long> query_integer(sqlite3* db, std::string_view text, const std::string& path);
Result<std::string> query_text(sqlite3* db, std::string_view text, const std::string& path);

// Runs `body` between BEGIN IMMEDIATE and COMMIT; rolls back when it fails. BEGIN IMMEDIATE takes
// the write lock up front, so a transaction never fails halfway for a lock. busy_timeout waits
// inside sqlite; when it still gives up (heavy contention) the whole transaction is retried a
// bounded number of times with exponential backoff.
template <class T, class F>
Result<T> write_transaction(sqlite3* db, const std::string& path, std::string_view what, F&& body);

// Sleeps before retry `attempt` (0-based): 5 ms doubling to 320 ms, with per-process jitter.
void backoff(int attempt);
inline constexpr int kMaxTransactionAttempts = 8;

template <class T, class F>
Result<T> write_transaction(sqlite3* db, const std::string& path, std::string_view what, F&& body) {
  for (int attempt = 0;; ++attempt) {
    const bool last = attempt + 1 >= kMaxTransactionAttempts;
    auto begin = exec(db, "BEGIN IMMEDIATE", path, what);
    if (!begin) {
      if (busy(db) && !last) {
        backoff(attempt);
        continue;
      }
      return begin.error();
    }
    Result<T> result = body();
    if (result) {
      auto commit = exec(db, "COMMIT", path, what);
      if (commit) return result;
      result = commit.error();
    }
    const bool retry = busy(db) && !last;
    // A failed COMMIT may leave the transaction open; ROLLBACK closes it (or is a no-op).
    if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    if (!retry) return result;
    backoff(attempt);
  }
}

}  // namespace cpplan::data::sql
