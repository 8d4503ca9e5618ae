// The store's machines, measured samples and calibrations (schema v2).
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/text.h"
#include "data/store.h"
#include "data/store_detail.h"

namespace cpplan::data {

using namespace detail;  // the helpers data/'s sources share (store_detail.h)

namespace {

// "" when `value` is a finite number >= 0, else why not.
std::string bad_amount(std::string_view where, std::string_view field, double value) {
  if (std::isfinite(value) && value >= 0) return "";
  return fmt::format("{}.{} = {}: must be a finite number >= 0", where, field, value);
}

std::string invalid(const costmodel::MeasurementSet& set, const std::string& source) {
  if (source != "probe" && source != "nccl-tests") {
    return fmt::format("source = '{}': must be probe or nccl-tests", source);
  }
  for (std::size_t i = 0; i < set.collectives.size(); ++i) {
    const costmodel::CollectiveSample& c = set.collectives[i];
    const std::string where = fmt::format("collectives[{}]", i);
    if (c.ranks < 1) return fmt::format("{}.ranks = {}: must be at least 1", where, c.ranks);
    if (c.nodes < 1 || c.nodes > c.ranks)
      return fmt::format("{}.nodes = {}: must be from 1 to its ranks ({})", where, c.nodes, c.ranks);
    for (const auto& [field, value] : {std::pair<std::string_view, double>{"bytes", c.bytes},
                                       {"time_us", c.time_us},
                                       {"algbw_gbps", c.algbw_gbps},
                                       {"busbw_gbps", c.busbw_gbps}}) {
      if (std::string why = bad_amount(where, field, value); !why.empty()) return why;
    }
  }
  for (std::size_t i = 0; i < set.kernels.size(); ++i) {
    const costmodel::KernelSample& k = set.kernels[i];
    const std::string where = fmt::format("kernels[{}]", i);
    if (k.concurrent_ranks < 1) {
      return fmt::format("{}.concurrent_ranks = {}: must be at least 1", where, k.concurrent_ranks);
    }
    for (const auto& [field, value] : {std::pair<std::string_view, double>{"flops", k.flops},
                                       {"bytes", k.bytes},
                                       {"rows", k.rows},
                                       {"time_us", k.time_us}}) {
      if (std::string why = bad_amount(where, field, value); !why.empty()) return why;
    }
  }
  return "";
}

std::string invalid(const HardwareFingerprint& hw, const costmodel::Calibration& c) {
  if (!c.fingerprint.empty() && c.fingerprint != hw.key()) {
    return fmt::format("fingerprint = '{}': must be '' or the machine's key {}", c.fingerprint, hw.key());
  }
  if (c.features.size() != c.coefficients.size()) {
    return fmt::format("features: {} names for {} coefficients: must be as many", c.features.size(),
                       c.coefficients.size());
  }
  for (std::size_t i = 0; i < c.features.size(); ++i) {
    if (c.features[i].empty()) return fmt::format("features[{}] = '': must name the term", i);
    if (!std::isfinite(c.coefficients[i])) {
      return fmt::format("coefficients[{}] ({}) = {}: must be a finite number", i, c.features[i], c.coefficients[i]);
    }
  }
  if (c.runs < 0) return fmt::format("runs = {}: must be at least 0", c.runs);
  if (c.folds < 0) return fmt::format("folds = {}: must be at least 0", c.folds);
  for (const auto& [field, value] : {std::pair<std::string_view, double>{"mape_before", c.mape_before},
                                     {"mape_after", c.mape_after},
                                     {"rank_corr_before", c.rank_corr_before},
                                     {"rank_corr_after", c.rank_corr_after}}) {
    if (!std::isfinite(value)) return fmt::format("{} = {}: must be a finite number", field, value);
  }
  return "";
}

// Error for a stored value this code cannot read back.
Error unreadable(const std::string& path, std::string_view table, long long id, std::string_view field,
                 const std::string& value, std::string_view rule) {
  return Error{fmt::format("{}: {} row {}: {} = '{}': {}", path, table, id, field, value, rule)};
}

}  // namespace

Result<std::vector<HardwareFingerprint>> Store::hardware() const {
  if (!db_) return closed();
  auto select = sql::Statement::prepare(
      db_.get(), fmt::format("SELECT {} FROM hardware ORDER BY id", column_list(kAllHardware, "")), path_);
  if (!select) return select.error();
  std::vector<HardwareFingerprint> out;
  int rc;
  while ((rc = select.value().step()) == SQLITE_ROW) {
    HardwareFingerprint hw;
    hardware_fields(hw, ColumnReader{select.value(), 0});
    out.push_back(std::move(hw));
  }
  if (rc != SQLITE_DONE) return select->error("cannot read the machines");
  return out;
}

Result<long long> Store::record_measurements(const HardwareFingerprint& hw, const costmodel::MeasurementSet& set,
                                             const std::string& source) {
  if (!db_) return closed();
  std::string why = invalid_hardware(hw);
  if (why.empty()) why = invalid(set, source);
  if (!why.empty()) return Error{fmt::format("{}: cannot record measurements: {}", path_, why)};
  sqlite3* db = db_.get();
  const std::string recorded_at = now_utc();
  return sql::write_transaction<long long>(db, path_, "cannot record measurements", [&]() -> Result<long long> {
    auto hardware_id = hardware_row(db, path_, hw);
    if (!hardware_id) return hardware_id.error();
    auto insert_collective = sql::Statement::prepare(
        db,
        "INSERT INTO collective_samples (hardware_id, kind, ranks, uneven, bytes, time_us, algbw_gbps, busbw_gbps, "
        "source, recorded_at, nodes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        path_);
    if (!insert_collective) return insert_collective.error();
    sql::Statement& c = insert_collective.value();
    for (const costmodel::CollectiveSample& sample : set.collectives) {
      c.reset();
      c.bind(*hardware_id).bind(std::string(costmodel::to_string(sample.kind))).bind(sample.ranks).bind(sample.uneven);
      c.bind(sample.bytes).bind(sample.time_us).bind(sample.algbw_gbps).bind(sample.busbw_gbps);
      c.bind(source).bind(recorded_at).bind(sample.nodes);
      if (auto done = c.run("cannot add a collective sample"); !done) return done.error();
    }
    auto insert_kernel = sql::Statement::prepare(
        db,
        "INSERT INTO kernel_samples (hardware_id, kind, shape, flops, bytes, rows, concurrent_ranks, time_us, "
        "recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        path_);
    if (!insert_kernel) return insert_kernel.error();
    sql::Statement& k = insert_kernel.value();
    for (const costmodel::KernelSample& sample : set.kernels) {
      k.reset();
      k.bind(*hardware_id).bind(std::string(costmodel::to_string(sample.kind))).bind(sample.shape);
      k.bind(sample.flops).bind(sample.bytes).bind(sample.rows).bind(sample.concurrent_ranks).bind(sample.time_us);
      k.bind(recorded_at);
      if (auto done = k.run("cannot add a kernel sample"); !done) return done.error();
    }
    return static_cast<long long>(set.collectives.size() + set.kernels.size());
  });
}

Result<costmodel::MeasurementSet> Store::measurements(const std::string& hardware_key) const {
  if (!db_) return closed();
  sqlite3* db = db_.get();
  ReadTransaction tx(db, path_);
  if (!tx.begun()) return tx.begun().error();
  auto hardware_id = find_hardware(db, path_, hardware_key);
  if (!hardware_id) return hardware_id.error();
  costmodel::MeasurementSet set;
  if (!*hardware_id) return set;

  auto collectives = sql::Statement::prepare(
      db,
      "SELECT id, kind, ranks, uneven, bytes, time_us, algbw_gbps, busbw_gbps, nodes FROM collective_samples "
      "WHERE hardware_id = ? ORDER BY id",
      path_);
  if (!collectives) return collectives.error();
  sql::Statement& c = collectives.value();
  c.bind(**hardware_id);
  int rc;
  while ((rc = c.step()) == SQLITE_ROW) {
    const auto kind = costmodel::collective_from_string(c.text(1));
    if (!kind) {
      return unreadable(path_, "collective_samples", c.integer(0), "kind", c.text(1),
                        "not a collective (all_gather, all_to_all, all_reduce, reduce_scatter, send_recv)");
    }
    costmodel::CollectiveSample sample;
    sample.kind = *kind;
    sample.ranks = static_cast<int>(c.integer(2));
    sample.uneven = c.integer(3) != 0;
    sample.bytes = c.real(4);
    sample.time_us = c.real(5);
    sample.algbw_gbps = c.real(6);
    sample.busbw_gbps = c.real(7);
    sample.nodes = static_cast<int>(c.integer(8));
    set.collectives.push_back(sample);
  }
  if (rc != SQLITE_DONE) return c.error("cannot read collective samples");

  auto kernels = sql::Statement::prepare(
      db,
      "SELECT id, kind, shape, flops, bytes, rows, concurrent_ranks, time_us FROM kernel_samples "
      "WHERE hardware_id = ? ORDER BY id",
      path_);
  if (!kernels) return kernels.error();
  sql::Statement& k = kernels.value();
  k.bind(**hardware_id);
  while ((rc = k.step()) == SQLITE_ROW) {
    const auto kind = costmodel::kernel_kind_from_string(k.text(1));
    if (!kind) {
      return unreadable(path_, "kernel_samples", k.integer(0), "kind", k.text(1),
                        "not a kernel kind (gemm, attention, memory, conv)");
    }
    costmodel::KernelSample sample;
    sample.kind = *kind;
    sample.shape = k.text(2);
    sample.flops = k.real(3);
    sample.bytes = k.real(4);
    sample.rows = k.real(5);
    sample.concurrent_ranks = static_cast<int>(k.integer(6));
    sample.time_us = k.real(7);
    set.kernels.push_back(std::move(sample));
  }
  if (rc != SQLITE_DONE) return k.error("cannot read kernel samples");
  return set;
}

Result<int> Store::record_calibration(const HardwareFingerprint& hw, costmodel::Calibration calibration) {
  if (!db_) return closed();
  std::string why = invalid_hardware(hw);
  if (why.empty()) why = invalid(hw, calibration);
  if (!why.empty()) return Error{fmt::format("{}: cannot record a calibration: {}", path_, why)};
  // JSON arrays; nlohmann writes the shortest text that reads back to the same double.
  const std::string features = nlohmann::json(calibration.features).dump();
  const std::string coefficients = nlohmann::json(calibration.coefficients).dump();
  sqlite3* db = db_.get();
  return sql::write_transaction<int>(db, path_, "cannot record a calibration", [&]() -> Result<int> {
    auto hardware_id = hardware_row(db, path_, hw);
    if (!hardware_id) return hardware_id.error();
    // Inside the write lock, so two processes never pick the same version.
    auto next = sql::Statement::prepare(
        db, "SELECT coalesce(max(version), 0) + 1 FROM calibrations WHERE hardware_id = ?", path_);
    if (!next) return next.error();
    if (next.value().bind(*hardware_id).step() != SQLITE_ROW) return next->error("cannot find the next version");
    const int version = static_cast<int>(next->integer(0));
    auto insert = sql::Statement::prepare(
        db,
        "INSERT INTO calibrations (hardware_id, version, fitted_at, features, coefficients, runs, folds, "
        "mape_before, mape_after, rank_corr_before, rank_corr_after) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        path_);
    if (!insert) return insert.error();
    sql::Statement& s = insert.value();
    s.bind(*hardware_id).bind(version).bind(calibration.fitted_at).bind(features).bind(coefficients);
    s.bind(calibration.runs).bind(calibration.folds).bind(calibration.mape_before).bind(calibration.mape_after);
    s.bind(calibration.rank_corr_before).bind(calibration.rank_corr_after);
    if (auto done = s.run("cannot add the calibration"); !done) return done.error();
    return version;
  });
}

Result<std::optional<costmodel::Calibration>> Store::latest_calibration(const std::string& hardware_key) const {
  if (!db_) return closed();
  auto select = sql::Statement::prepare(
      db_.get(),
      "SELECT c.id, c.version, c.fitted_at, c.features, c.coefficients, c.runs, c.folds, c.mape_before, "
      "c.mape_after, c.rank_corr_before, c.rank_corr_after FROM calibrations c JOIN hardware h ON h.id = "
      "c.hardware_id WHERE h.key = ? ORDER BY c.version DESC LIMIT 1",
      path_);
  if (!select) return select.error();
  sql::Statement& s = select.value();
  s.bind(hardware_key);
  const int rc = s.step();
  if (rc == SQLITE_DONE) return std::optional<costmodel::Calibration>();
  if (rc != SQLITE_ROW) return s.error("cannot read the latest calibration");

  const long long id = s.integer(0);
  costmodel::Calibration c;
  c.fingerprint = hardware_key;
  c.version = static_cast<int>(s.integer(1));
  c.fitted_at = s.text(2);
  const std::string features = s.text(3);
  const std::string coefficients = s.text(4);
  const auto parsed_features = nlohmann::json::parse(features, nullptr, false);
  if (!parsed_features.is_array() ||
      !std::all_of(parsed_features.begin(), parsed_features.end(), [](const auto& f) { return f.is_string(); })) {
    return unreadable(path_, "calibrations", id, "features", features, "not a JSON array of names");
  }
  const auto parsed_coefficients = nlohmann::json::parse(coefficients, nullptr, false);
  if (!parsed_coefficients.is_array() ||
      !std::all_of(parsed_coefficients.begin(), parsed_coefficients.end(), [](const auto& x) { return x.is_number(); })) {
    return unreadable(path_, "calibrations", id, "coefficients", coefficients, "not a JSON array of numbers");
  }
  if (parsed_features.size() != parsed_coefficients.size()) {
    return unreadable(path_, "calibrations", id, "coefficients", coefficients,
                      fmt::format("{} coefficients for {} features", parsed_coefficients.size(), parsed_features.size()));
  }
  c.features = parsed_features.get<std::vector<std::string>>();
  c.coefficients = parsed_coefficients.get<std::vector<double>>();
  c.runs = static_cast<int>(s.integer(5));
  c.folds = static_cast<int>(s.integer(6));
  c.mape_before = s.real(7);
  c.mape_after = s.real(8);
  c.rank_corr_before = s.real(9);
  c.rank_corr_after = s.real(10);
  return std::optional<costmodel::Calibration>(std::move(c));
}

}  // namespace cpplan::data
