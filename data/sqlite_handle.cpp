#include "data/sqlite_handle.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <thread>

namespace cpplan::data::sql {

Error error(sqlite3* db, const std::string& path, std::string_view what) {
  if (db == nullptr) return Error{fmt::format("{}: {}: out of memory", path, what)};
  return Error{fmt::format("{}: {}: {} (sqlite code {})", path, what, sqlite3_errmsg(db), sqlite3_extended_errcode(db))};
}

Result<Connection> open(const std::string& filename, int flags, const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(filename.c_str(), &raw, flags, nullptr);
  Connection db(raw);  // sqlite hands back a handle even on failure; it must still be closed
  if (rc != SQLITE_OK) return error(db.get(), path, "cannot open");
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
  return db;
}

bool busy(sqlite3* db) {
  const int code = sqlite3_errcode(db);
  return code == SQLITE_BUSY || code == SQLITE_LOCKED;
}

void backoff(int attempt) {
  const int base_ms = 5 << std::min(attempt, 6);
  const int jitter_ms = static_cast<int>(::getpid() % 7) * (attempt + 1);  // processes drift apart
  std::this_thread::sleep_for(std::chrono::milliseconds(base_ms + jitter_ms));
}

Result<Statement> Statement::prepare(sqlite3* db, std::string_view text, const std::string& path,
                                     std::string_view* tail) {
  sqlite3_stmt* raw = nullptr;
  const char* rest = nullptr;
  const int rc = sqlite3_prepare_v2(db, text.data(), static_cast<int>(text.size()), &raw, &rest);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(raw);
    return sql::error(db, path, fmt::format("cannot prepare '{}'", text.substr(0, text.find('\n'))));
  }
  if (tail != nullptr) *tail = rest != nullptr ? text.substr(static_cast<std::size_t>(rest - text.data())) : "";
  return Statement(db, raw, path);
}

Statement& Statement::bind(const std::string& value) {
  const int rc = sqlite3_bind_text(stmt_.get(), next_++, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Statement& Statement::bind(long long value) {
  const int rc = sqlite3_bind_int64(stmt_.get(), next_++, value);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Statement& Statement::bind(double value) {
  const int rc = sqlite3_bind_double(stmt_.get(), next_++, value);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Statement& Statement::bind(const std::optional<double>& value) {
  return value ? bind(*value) : bind_null();
}

Statement& Statement::bind_null() {
  const int rc = sqlite3_bind_null(stmt_.get(), next_++);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Statement& Statement::bind_column(const Statement& from, int column) {
  const int rc = sqlite3_bind_value(stmt_.get(), next_++, sqlite3_column_value(from.stmt_.get(), column));
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

int Statement::step() {
  if (bind_rc_ != SQLITE_OK) return bind_rc_;
  return sqlite3_step(stmt_.get());
}

Result<bool> Statement::run(std::string_view what) {
  const int rc = step();
  if (rc == SQLITE_DONE || rc == SQLITE_ROW) return true;
  return error(what);
}

void Statement::reset() {
  sqlite3_reset(stmt_.get());
  sqlite3_clear_bindings(stmt_.get());
  next_ = 1;
  bind_rc_ = SQLITE_OK;
}

Error Statement::error(std::string_view what) const {
  if (bind_rc_ != SQLITE_OK) {
    return Error{fmt::format("{}: {}: cannot bind a parameter: {}", path_, what, sqlite3_errstr(bind_rc_))};
  }
  return sql::error(db_, path_, what);
}

std::string Statement::text(int column) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_.get(), column));
  return p != nullptr ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_.get(), column))) : "";
}

long long Statement::integer(int column) const { return sqlite3_column_int64(stmt_.get(), column); }
double Statement::real(int column) const { return sqlite3_column_double(stmt_.get(), column); }
bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_.get(), column) == SQLITE_NULL; }

std::optional<double> Statement::optional_real(int column) const {
  if (is_null(column)) return std::nullopt;
  return real(column);
}

Result<bool> exec(sqlite3* db, std::string_view script, const std::string& path, std::string_view what) {
  while (!script.empty()) {
    std::string_view tail;
    auto stmt = Statement::prepare(db, script, path, &tail);
    if (!stmt) return stmt.error();
    if (!stmt->empty()) {
      int rc;
      while ((rc = stmt.value().step()) == SQLITE_ROW) {
      }
      if (rc != SQLITE_DONE) return stmt->error(what);
    }
    script = tail;
  }
  return true;
}

Result<long long> query_integer(sqlite3* db, std::string_view text, const std::string& path) {
  auto stmt = Statement::prepare(db, text, path);
  if (!stmt) return stmt.error();
  if (stmt.value().step() != SQLITE_ROW) return stmt->error(fmt::format("cannot read '{}'", text));
  return stmt->integer(0);
}

Result<std::string> query_text(sqlite3* db, std::string_view text, const std::string& path) {
  auto stmt = Statement::prepare(db, text, path);
  if (!stmt) return stmt.error();
  if (stmt.value().step() != SQLITE_ROW) return stmt->error(fmt::format("cannot read '{}'", text));
  return stmt->text(0);
}

}  // namespace cpplan::data::sql
