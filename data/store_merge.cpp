// Store::merge_from: another cpplan database's rows into this one, without duplicates. Rows are
// copied value for value (sqlite3_value, no round trip through C++ types); only the ids that tie
// them together (hardware_id, run_id, calibration version) are rewritten for this file.
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <set>
#include <span>

#include "data/schema.h"
#include "data/store.h"
#include "data/store_detail.h"

namespace cpplan::data {

using namespace detail;  // the helpers data/'s sources share (store_detail.h)

namespace {

namespace fs = std::filesystem;

// The columns that make a sample what it is (everything but its id and machine).
constexpr std::string_view kCollectiveColumns[] = {"kind",       "ranks",      "uneven", "bytes",       "time_us",
                                                   "algbw_gbps", "busbw_gbps", "source", "recorded_at", "nodes"};
constexpr std::string_view kKernelColumns[] = {"kind", "shape",           "flops",   "bytes",
                                               "rows", "concurrent_ranks", "time_us", "recorded_at"};
constexpr std::string_view kCalibrationColumns[] = {"fitted_at",  "features",    "coefficients",     "runs",
                                                    "folds",      "mape_before", "mape_after",       "rank_corr_before",
                                                    "rank_corr_after"};

// `columns` each as fmt `pattern` ({} is the name), joined by `separator`.
std::string each(std::span<const std::string_view> columns, std::string_view pattern, std::string_view separator) {
  std::string out;
  for (std::string_view name : columns) {
    if (!out.empty()) out += separator;
    out += fmt::format(fmt::runtime(pattern), name);
  }
  return out;
}

std::vector<std::string_view> run_columns() {
  std::vector<std::string_view> names;
  kAllRun([&](std::string_view name, const auto&) { names.push_back(name); });
  return names;
}

std::vector<std::string_view> hardware_columns() {
  std::vector<std::string_view> names;
  kAllHardware([&](std::string_view name, const auto&) { names.push_back(name); });
  return names;
}

// Steps a `SELECT count(*)` and returns the count.
Result<long long> count(sql::Statement& stmt, std::string_view what) {
  if (stmt.step() != SQLITE_ROW) return stmt.error(what);
  return stmt.integer(0);
}

// One merge, inside the write transaction on `into` and a read transaction on `from`.
class Merger {
 public:
  Merger(sqlite3* into, const std::string& into_path, sqlite3* from, const std::string& from_path, int from_version)
      : into_(into), into_path_(into_path), from_(from), from_path_(from_path), from_version_(from_version) {}

  Result<MergeSummary> run() {
    if (auto done = hardware(); !done) return done.error();
    if (auto done = runs(); !done) return done.error();
    if (from_version_ >= 2) {  // v1 files have no samples or calibrations
      if (auto done = samples("collective_samples", kCollectiveColumns); !done) return done.error();
      if (auto done = samples("kernel_samples", kKernelColumns); !done) return done.error();
      if (auto done = calibrations(); !done) return done.error();
    }
    return summary_;
  }

 private:
  Result<sql::Statement> here(const std::string& text) { return sql::Statement::prepare(into_, text, into_path_); }
  Result<sql::Statement> there(const std::string& text) { return sql::Statement::prepare(from_, text, from_path_); }

  // This file's hardware id of the other file's machine `key` (added by hardware()).
  Result<long long> id_here(const std::string& key) const {
    const auto it = ids_.find(key);
    if (it == ids_.end()) return Error{fmt::format("{}: machine {} is not in its hardware table", from_path_, key)};
    return it->second;
  }

  Result<bool> hardware() {
    const std::vector<std::string_view> columns = hardware_columns();
    auto select = there(fmt::format("SELECT key, {} FROM hardware ORDER BY id", each(columns, "{}", ", ")));
    if (!select) return select.error();
    auto insert = here(fmt::format("INSERT INTO hardware (key, {}) VALUES (?, {}) ON CONFLICT (key) DO NOTHING",
                                   each(columns, "{}", ", "), each(columns, "?", ", ")));
    if (!insert) return insert.error();
    sql::Statement& s = select.value();
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
      sql::Statement& i = insert.value();
      i.reset();
      for (int c = 0; c <= static_cast<int>(columns.size()); ++c) i.bind_column(s, c);
      if (auto done = i.run("cannot add a machine"); !done) return done.error();
      const std::string key = s.text(0);
      auto id = find_hardware(into_, into_path_, key);
      if (!id) return id.error();
      if (!*id) return Error{fmt::format("{}: machine {} vanished after it was added", into_path_, key)};
      ids_[key] = **id;
    }
    if (rc != SQLITE_DONE) return s.error("cannot read the machines");
    return true;
  }

  Result<bool> runs() {
    const std::vector<std::string_view> columns = run_columns();
    // Source row: id, machine key, then the run's columns.
    constexpr int kFirst = 2;
    int run_key = -1, started_at = -1;
    for (int c = 0; c < static_cast<int>(columns.size()); ++c) {
      if (columns[static_cast<std::size_t>(c)] == "run_key") run_key = kFirst + c;
      if (columns[static_cast<std::size_t>(c)] == "started_at") started_at = kFirst + c;
    }
    auto sources = source_columns("runs", "r", columns);
    if (!sources) return sources.error();
    auto select = there(fmt::format("SELECT r.id, h.key, {} FROM runs r JOIN hardware h ON h.id = r.hardware_id "
                                    "ORDER BY r.id",
                                    fmt::join(*sources, ", ")));
    if (!select) return select.error();
    auto same_keyed = here("SELECT count(*) FROM runs WHERE run_key = ? AND hardware_id = ? AND started_at = ?");
    if (!same_keyed) return same_keyed.error();
    auto same_unkeyed =
        here(fmt::format("SELECT count(*) FROM runs WHERE hardware_id = ? AND {}", each(columns, "{} IS ?", " AND ")));
    if (!same_unkeyed) return same_unkeyed.error();
    auto insert = here(fmt::format("INSERT INTO runs (hardware_id, {}) VALUES (?, {})", each(columns, "{}", ", "),
                                   each(columns, "?", ", ")));
    if (!insert) return insert.error();
    auto metrics = there("SELECT name, step, value FROM run_metrics WHERE run_id = ? ORDER BY rowid");
    if (!metrics) return metrics.error();
    auto insert_metric = here("INSERT INTO run_metrics (run_id, name, step, value) VALUES (?, ?, ?, ?)");
    if (!insert_metric) return insert_metric.error();

    sql::Statement& s = select.value();
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
      auto hardware_id = id_here(s.text(1));
      if (!hardware_id) return hardware_id.error();
      const bool keyed = !s.text(run_key).empty();
      sql::Statement& same = keyed ? same_keyed.value() : same_unkeyed.value();
      same.reset();
      if (keyed) {
        same.bind_column(s, run_key).bind(*hardware_id).bind_column(s, started_at);
      } else {
        same.bind(*hardware_id);
        for (int c = 0; c < static_cast<int>(columns.size()); ++c) same.bind_column(s, kFirst + c);
      }
      auto present = count(same, "cannot look for the run");
      if (!present) return present.error();
      if (*present > 0) {
        ++summary_.runs_skipped;
        continue;
      }

      sql::Statement& i = insert.value();
      i.reset();
      i.bind(*hardware_id);
      for (int c = 0; c < static_cast<int>(columns.size()); ++c) i.bind_column(s, kFirst + c);
      if (auto done = i.run("cannot add a run"); !done) return done.error();
      const long long run_id = sqlite3_last_insert_rowid(into_);

      sql::Statement& m = metrics.value();
      m.reset();
      m.bind(s.integer(0));
      int mrc;
      while ((mrc = m.step()) == SQLITE_ROW) {
        sql::Statement& im = insert_metric.value();
        im.reset();
        im.bind(run_id).bind_column(m, 0).bind_column(m, 1).bind_column(m, 2);
        if (auto done = im.run("cannot add a run metric"); !done) return done.error();
      }
      if (mrc != SQLITE_DONE) return m.error("cannot read run metrics");
      ++summary_.runs_added;
    }
    if (rc != SQLITE_DONE) return s.error("cannot read runs");
    return true;
  }

  // What to select from the other file's `table` (aliased `alias`) for each of `columns`: the
  // column itself, or, for a column an older schema lacks (v3 added runs.source, v6
  // collective_samples.nodes, ...), the default this file's schema gives it, as its own migration
  // would have filled it in.
  Result<std::vector<std::string>> source_columns(std::string_view table, std::string_view alias,
                                                  std::span<const std::string_view> columns) {
    const std::string info = fmt::format("SELECT name, dflt_value FROM pragma_table_info('{}')", table);
    const std::string failed = fmt::format("cannot read the {} table's columns", table);
    auto there_columns = there(info);
    if (!there_columns) return there_columns.error();
    std::set<std::string> present;
    int rc;
    while ((rc = there_columns.value().step()) == SQLITE_ROW) present.insert(there_columns->text(0));
    if (rc != SQLITE_DONE) return there_columns->error(failed);
    auto defaults = here(info);
    if (!defaults) return defaults.error();
    std::map<std::string, std::string> default_of;
    while ((rc = defaults.value().step()) == SQLITE_ROW) {
      default_of[defaults->text(0)] = defaults->is_null(1) ? "NULL" : defaults->text(1);
    }
    if (rc != SQLITE_DONE) return defaults->error(failed);
    std::vector<std::string> out;
    for (std::string_view name : columns) {
      const std::string column(name);
      if (present.count(column)) out.push_back(fmt::format("{}.{}", alias, column));
      else if (auto it = default_of.find(column); it != default_of.end()) out.push_back(it->second);
      else return Error{fmt::format("{}: {} has no column {}", into_path_, table, column)};
    }
    return out;
  }

  // Identical samples are grouped and counted on both sides; the difference is added.
  Result<bool> samples(std::string_view table, std::span<const std::string_view> columns) {
    auto sources = source_columns(table, "s", columns);
    if (!sources) return sources.error();
    // A default is a constant: nothing to group by (and SQLite reads an integer there as a column number).
    std::vector<std::string> grouped;
    for (const std::string& source : *sources)
      if (source.starts_with("s.")) grouped.push_back(source);
    auto select = there(fmt::format("SELECT h.key, {}, count(*) FROM {} s JOIN hardware h ON h.id = s.hardware_id "
                                    "GROUP BY h.key, {} ORDER BY min(s.id)",
                                    fmt::join(*sources, ", "), table, fmt::join(grouped, ", ")));
    if (!select) return select.error();
    auto present = here(
        fmt::format("SELECT count(*) FROM {} WHERE hardware_id = ? AND {}", table, each(columns, "{} IS ?", " AND ")));
    if (!present) return present.error();
    auto insert = here(fmt::format("INSERT INTO {} (hardware_id, {}) VALUES (?, {})", table, each(columns, "{}", ", "),
                                   each(columns, "?", ", ")));
    if (!insert) return insert.error();

    const int n = static_cast<int>(columns.size());
    sql::Statement& s = select.value();
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
      auto hardware_id = id_here(s.text(0));
      if (!hardware_id) return hardware_id.error();
      sql::Statement& p = present.value();
      p.reset();
      p.bind(*hardware_id);
      for (int c = 1; c <= n; ++c) p.bind_column(s, c);
      auto here_count = count(p, fmt::format("cannot look for a {} row", table));
      if (!here_count) return here_count.error();
      for (long long copy = *here_count; copy < s.integer(n + 1); ++copy) {
        sql::Statement& i = insert.value();
        i.reset();
        i.bind(*hardware_id);
        for (int c = 1; c <= n; ++c) i.bind_column(s, c);
        if (auto done = i.run(fmt::format("cannot add a {} row", table)); !done) return done.error();
        ++summary_.samples_added;
      }
    }
    if (rc != SQLITE_DONE) return s.error(fmt::format("cannot read {}", table));
    return true;
  }

  Result<bool> calibrations() {
    auto select = there(fmt::format("SELECT h.key, {} FROM calibrations c JOIN hardware h ON h.id = c.hardware_id "
                                    "ORDER BY c.hardware_id, c.version",
                                    each(kCalibrationColumns, "c.{}", ", ")));
    if (!select) return select.error();
    auto present = here("SELECT count(*) FROM calibrations WHERE hardware_id = ? AND fitted_at = ?");
    if (!present) return present.error();
    auto next = here("SELECT coalesce(max(version), 0) + 1 FROM calibrations WHERE hardware_id = ?");
    if (!next) return next.error();
    auto insert = here(fmt::format("INSERT INTO calibrations (hardware_id, version, {}) VALUES (?, ?, {})",
                                   each(kCalibrationColumns, "{}", ", "), each(kCalibrationColumns, "?", ", ")));
    if (!insert) return insert.error();

    sql::Statement& s = select.value();
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
      auto hardware_id = id_here(s.text(0));
      if (!hardware_id) return hardware_id.error();
      sql::Statement& p = present.value();
      p.reset();
      p.bind(*hardware_id).bind_column(s, 1);  // fitted_at
      auto here_count = count(p, "cannot look for the calibration");
      if (!here_count) return here_count.error();
      if (*here_count > 0) continue;
      sql::Statement& v = next.value();
      v.reset();
      v.bind(*hardware_id);
      auto version = count(v, "cannot find the next calibration version");
      if (!version) return version.error();
      sql::Statement& i = insert.value();
      i.reset();
      i.bind(*hardware_id).bind(*version);
      for (int c = 1; c <= static_cast<int>(std::size(kCalibrationColumns)); ++c) i.bind_column(s, c);
      if (auto done = i.run("cannot add a calibration"); !done) return done.error();
      ++summary_.calibrations_added;
    }
    if (rc != SQLITE_DONE) return s.error("cannot read calibrations");
    return true;
  }

  sqlite3* into_;
  const std::string& into_path_;
  sqlite3* from_;
  const std::string& from_path_;
  int from_version_;
  std::map<std::string, long long> ids_;  // machine key -> hardware id in `into_`
  MergeSummary summary_;
};

}  // namespace

Result<MergeSummary> Store::merge_from(const std::string& other_path) {
  if (!db_) return closed();
  std::error_code ec;
  if (fs::equivalent(other_path, path_, ec)) {
    return Error{fmt::format("{}: is the database being merged into; nothing to merge", other_path)};
  }
  auto other = schema::open_read_only(other_path);
  if (!other) return other.error();
  ReadTransaction snapshot(other->db.get(), other_path);
  if (!snapshot.begun()) return snapshot.begun().error();
  sqlite3* db = db_.get();
  return sql::write_transaction<MergeSummary>(
      db, path_, fmt::format("cannot merge {}", other_path), [&]() -> Result<MergeSummary> {
        return Merger(db, path_, other->db.get(), other_path, other->version).run();
      });
}

}  // namespace cpplan::data
