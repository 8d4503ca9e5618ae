#include "data/store.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <type_traits>

#include "data/schema.h"
#include "data/sqlite_handle.h"
#include "data/store_detail.h"

namespace cpplan::data {

ParallelConfig parallel_config(const RunRecord& r) {
  ParallelConfig c;
  ContextParallelConfig& cp = c.context_parallel_config;
  cp.ring_degree = r.ring;
  cp.ulysses_degree = r.ulysses;
  cp.ulysses_anything = r.ulysses_anything;
  cp.ring_anything = r.ring_anything;
  cp.convert_to_fp32 = r.convert_to_fp32;
  if (auto rm = rotate_method_from_string(r.rotate_method)) cp.rotate_method = *rm;
  c.tensor_parallel_config.tp_degree = r.tp;
  c.cfg_degree = r.cfg;
  c.dp_degree = r.dp;
  c.pipefusion = {r.pipefusion, r.pipeline_patches, r.pipefusion_warmup_steps};
  c.fs_degree = r.fs;
  return c;
}

void set_plan(RunRecord& r, const ParallelConfig& c) {
  const ContextParallelConfig& cp = c.context_parallel_config;
  r.ring = cp.ring_degree;
  r.ulysses = cp.ulysses_degree;
  r.tp = c.tp();
  r.cfg = c.cfg_degree;
  r.dp = c.dp_degree;
  r.pipefusion = c.pp();
  r.pipeline_patches = c.pipefusion.patches;
  r.pipefusion_warmup_steps = c.pipefusion.warmup_steps;
  r.fs = c.fs();
  r.ulysses_anything = cp.ulysses_anything;
  r.ring_anything = cp.ring_anything;
  r.rotate_method = std::string(to_string(cp.rotate_method));
  r.convert_to_fp32 = cp.convert_to_fp32;
  r.world_size = static_cast<int>(c.world_size());
}

namespace fs = std::filesystem;
using namespace detail;  // the helpers data/'s sources share (store_detail.h)

namespace {

// Why `hw`/`run` cannot be stored, or "".
std::string invalid(const HardwareFingerprint& hw, const RunRecord& run) {
  if (std::string why = invalid_hardware(hw); !why.empty()) return why;
  if (run.model.empty()) return "model = '': must name the model";
  if (run.status != "ok" && run.status != "failed" && run.status != "cancelled" && run.status != "oom") {
    return fmt::format("status = '{}': must be ok, failed, oom or cancelled", run.status);
  }
  if (run.source != "executor" && run.source != "pipeline") {
    return fmt::format("source = '{}': must be executor or pipeline", run.source);
  }
  // SQLite stores NaN as NULL, which would read back as "not measured".
  std::string why;
  run_fields(run, [&](std::string_view name, const auto& field) {
    if constexpr (std::is_same_v<std::decay_t<decltype(field)>, std::optional<double>>) {
      if (why.empty() && field && std::isnan(*field)) why = fmt::format("{} = nan: must be a number", name);
    }
  });
  if (!why.empty()) return why;
  for (std::size_t i = 0; i < run.step_times_ms.size(); ++i) {
    if (std::isnan(run.step_times_ms[i])) return fmt::format("step_times_ms[{}] = nan: must be a number", i);
  }
  for (std::size_t i = 0; i < run.metrics.size(); ++i) {
    const auto& [name, value] = run.metrics[i];
    if (name.empty()) return fmt::format("metrics[{}].name = '': must not be empty", i);
    if (std::isnan(value)) return fmt::format("metrics[{}] '{}' = nan: must be a number", i, name);
  }
  return "";
}

}  // namespace

namespace detail {

std::string invalid_hardware(const HardwareFingerprint& hw) {
  if (hw.device_kind != "cpu" && hw.device_kind != "cuda") {
    return fmt::format("device_kind = '{}': must be cpu or cuda", hw.device_kind);
  }
  return "";
}

Result<long long> hardware_row(sqlite3* db, const std::string& path, const HardwareFingerprint& hw) {
  const std::string key = hw.key();
  auto insert_hw = sql::Statement::prepare(
      db,
      fmt::format("INSERT INTO hardware (key, {}) VALUES (?, {}) ON CONFLICT (key) DO NOTHING",
                  column_list(kAllHardware, ""), placeholders(kAllHardware)),
      path);
  if (!insert_hw) return insert_hw.error();
  insert_hw.value().bind(key);
  hardware_fields(hw, [&](std::string_view, const auto& field) { insert_hw.value().bind(field); });
  if (auto done = insert_hw.value().run("cannot add the hardware row"); !done) return done.error();
  auto found = find_hardware(db, path, key);
  if (!found) return found.error();
  if (!*found) return Error{fmt::format("{}: the hardware row {} vanished after it was added", path, key)};
  return **found;
}

Result<std::optional<long long>> find_hardware(sqlite3* db, const std::string& path, const std::string& key) {
  auto find_hw = sql::Statement::prepare(db, "SELECT id FROM hardware WHERE key = ?", path);
  if (!find_hw) return find_hw.error();
  const int rc = find_hw.value().bind(key).step();
  if (rc == SQLITE_DONE) return std::optional<long long>();
  if (rc != SQLITE_ROW) return find_hw->error("cannot find the hardware row");
  return std::optional<long long>(find_hw->integer(0));
}

}  // namespace detail

std::string HardwareFingerprint::key() const {
  // FNV-1a 64 (http://www.isthe.com/chongo/tech/comp/fnv/): each field's text (numbers in
  // decimal), then a 0x1f unit separator. Changing the fields or their order changes every key.
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  auto feed = [&hash](std::string_view bytes) {
    for (unsigned char c : bytes) {
      hash ^= c;
      hash *= 0x100000001b3ULL;
    }
    hash ^= 0x1f;
    hash *= 0x100000001b3ULL;
  };
  hardware_fields(*this, [&](std::string_view, const auto& field) {
    if constexpr (std::is_same_v<std::decay_t<decltype(field)>, std::string>) feed(field);
    else feed(std::to_string(field));
  });
  return fmt::format("{:016x}", hash);
}

void Store::Closer::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

Result<Store> Store::open(const std::string& path) {
  if (path.empty()) return Error{"cpplan store: the database path is empty"};
  auto probe = schema::probe(path);
  if (!probe) return probe.error();
  if (probe->fresh) {
    // Only the default location's folder is created (as XDG tools do); elsewhere a missing folder
    // is refused, as sqlite3 and every other tool refuse it: nothing is created there.
    const fs::path parent = fs::path(path).parent_path();
    const bool is_default = fs::path(path).lexically_normal() == fs::path(default_path()).lexically_normal();
    std::error_code ec;
    if (!parent.empty() && !fs::is_directory(parent, ec)) {
      if (!is_default) return Error{fmt::format("{}: the folder {} does not exist (only the default location's folder is created)", path, parent.string())};
      fs::create_directories(parent, ec);
    }
    if (ec) return Error{fmt::format("{}: cannot create the directory {}: {}", path, parent.string(), ec.message())};
  }
  const int flags = SQLITE_OPEN_READWRITE | (probe->fresh ? SQLITE_OPEN_CREATE : 0);
  auto opened = sql::open(path, flags, path);
  if (!opened) return opened.error();
  std::unique_ptr<sqlite3, Closer> db(opened.value().release());

  auto fk = sql::exec(db.get(), "PRAGMA foreign_keys = ON", path, "cannot enable foreign keys");
  if (!fk) return fk.error();
  // Migrate before WAL: a new file gets its application_id in the main file, where probe() reads it.
  auto version = schema::migrate(db.get(), path);
  if (!version) return version.error();
  // Switching to WAL needs a moment without other readers; busy_timeout waits, this retries.
  Result<std::string> mode = std::string();
  for (int attempt = 0; attempt < sql::kMaxTransactionAttempts; ++attempt) {
    mode = sql::query_text(db.get(), "PRAGMA journal_mode = WAL", path);
    if (mode || !sql::busy(db.get())) break;
    sql::backoff(attempt);
  }
  if (!mode) return mode.error();
  if (*mode != "wal") return Error{fmt::format("{}: cannot switch to WAL (journal_mode stays {})", path, *mode)};
  auto sync = sql::exec(db.get(), "PRAGMA synchronous = NORMAL", path, "cannot set synchronous");
  if (!sync) return sync.error();
  return Store(std::move(db), path, *version);
}

namespace {

// Inside a write transaction: the run (its machine added when new) and its metrics. Returns the
// run's id. The caller validated both.
Result<long long> insert_run(sqlite3* db, const std::string& path, const HardwareFingerprint& hw, const RunRecord& run) {
  auto hw_row = hardware_row(db, path, hw);
  if (!hw_row) return hw_row.error();
  const long long hardware_id = *hw_row;

  auto insert_run = sql::Statement::prepare(
      db, fmt::format("INSERT INTO runs (hardware_id, {}) VALUES (?, {})", column_list(kAllRun, ""), placeholders(kAllRun)),
      path);
  if (!insert_run) return insert_run.error();
  insert_run.value().bind(hardware_id);
  run_fields(run, [&](std::string_view, const auto& field) { insert_run.value().bind(field); });
  if (auto done = insert_run.value().run("cannot add the run"); !done) return done.error();
  const long long run_id = sqlite3_last_insert_rowid(db);

  auto insert_metric =
      sql::Statement::prepare(db, "INSERT INTO run_metrics (run_id, name, step, value) VALUES (?, ?, ?, ?)", path);
  if (!insert_metric) return insert_metric.error();
  sql::Statement& m = insert_metric.value();
  for (std::size_t i = 0; i < run.step_times_ms.size(); ++i) {
    m.reset();
    m.bind(run_id).bind(std::string("step_ms")).bind(static_cast<long long>(i)).bind(run.step_times_ms[i]);
    if (auto done = m.run("cannot add a step time"); !done) return done.error();
  }
  for (const auto& [name, value] : run.metrics) {
    m.reset();
    m.bind(run_id).bind(name).bind_null().bind(value);
    if (auto done = m.run("cannot add a metric"); !done) return done.error();
  }
  return run_id;
}

}  // namespace

Result<long long> Store::record_run(const HardwareFingerprint& hw, const RunRecord& run) {
  if (!db_) return closed();
  if (const std::string why = invalid(hw, run); !why.empty()) {
    return Error{fmt::format("{}: cannot record run '{}': {}", path_, run.run_key, why)};
  }
  sqlite3* db = db_.get();
  return sql::write_transaction<long long>(db, path_, "cannot record a run",
                                           [&]() -> Result<long long> { return insert_run(db, path_, hw, run); });
}

Result<RecordSummary> Store::record_runs(const std::vector<std::pair<HardwareFingerprint, RunRecord>>& runs) {
  if (!db_) return closed();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (const std::string why = invalid(runs[i].first, runs[i].second); !why.empty()) {
      return Error{fmt::format("{}: cannot record run {} '{}': {}", path_, i, runs[i].second.run_key, why)};
    }
  }
  sqlite3* db = db_.get();
  return sql::write_transaction<RecordSummary>(db, path_, "cannot record runs", [&]() -> Result<RecordSummary> {
    // merge_from's rule for "the same run" (keyed runs): run_key, machine and started_at.
    auto same = sql::Statement::prepare(
        db, "SELECT count(*) FROM runs r JOIN hardware h ON h.id = r.hardware_id "
            "WHERE r.run_key = ? AND h.key = ? AND r.started_at = ?", path_);
    if (!same) return same.error();
    RecordSummary summary;
    for (const auto& [hw, run] : runs) {
      if (!run.run_key.empty()) {
        sql::Statement& s = same.value();
        s.reset();
        s.bind(run.run_key).bind(hw.key()).bind(run.started_at);
        if (s.step() != SQLITE_ROW) return s.error("cannot look for the run");
        if (s.integer(0) > 0) {
          ++summary.skipped;
          continue;
        }
      }
      auto id = insert_run(db, path_, hw, run);
      if (!id) return id.error();
      ++summary.added;
    }
    return summary;
  });
}

Result<std::vector<StoredRun>> Store::runs(const std::string& model_filter) const {
  if (!db_) return closed();
  sqlite3* db = db_.get();
  ReadTransaction tx(db, path_);
  if (!tx.begun()) return tx.begun().error();

  auto select = sql::Statement::prepare(
      db,
      fmt::format("SELECT r.id, {}, {} FROM runs r JOIN hardware h ON h.id = r.hardware_id "
                  "WHERE ?1 = '' OR r.model = ?1 ORDER BY r.id DESC",
                  column_list(kAllRun, "r."), column_list(kAllHardware, "h.")),
      path_);
  if (!select) return select.error();
  auto metrics = sql::Statement::prepare(
      db, "SELECT name, step, value FROM run_metrics WHERE run_id = ? ORDER BY rowid", path_);
  if (!metrics) return metrics.error();

  std::vector<StoredRun> out;
  sql::Statement& s = select.value();
  s.bind(model_filter);
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    StoredRun stored;
    stored.id = s.integer(0);
    ColumnReader reader{s, 1};
    run_fields(stored.run, reader);
    hardware_fields(stored.hardware, reader);

    sql::Statement& m = metrics.value();
    m.reset();
    m.bind(stored.id);
    int mrc;
    while ((mrc = m.step()) == SQLITE_ROW) {
      // Step times are 'step_ms' rows with their index; named metrics have no step (schema v1).
      if (!m.is_null(1) && m.text(0) == "step_ms") stored.run.step_times_ms.push_back(m.real(2));
      else stored.run.metrics.emplace_back(m.text(0), m.real(2));
    }
    if (mrc != SQLITE_DONE) return m.error("cannot read run metrics");
    out.push_back(std::move(stored));
  }
  if (rc != SQLITE_DONE) return s.error("cannot read runs");
  return out;
}

Result<std::string> Store::integrity_check() const {
  if (!db_) return closed();
  auto check = sql::Statement::prepare(db_.get(), "PRAGMA integrity_check", path_);
  if (!check) return check.error();
  std::string report;
  int rc;
  while ((rc = check.value().step()) == SQLITE_ROW) {
    if (!report.empty()) report += '\n';
    report += check->text(0);
  }
  if (rc != SQLITE_DONE) return check->error("cannot check integrity");
  return report;
}

std::string Store::default_path() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  // The XDG base-directory spec says to ignore a relative XDG_DATA_HOME.
  if (xdg != nullptr && xdg[0] == '/') return (fs::path(xdg) / "cpplan" / "cpplan.db").string();
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return (fs::path(home) / ".local" / "share" / "cpplan" / "cpplan.db").string();
  return "cpplan.db";
}

}  // namespace cpplan::data
