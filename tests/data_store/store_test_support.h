#pragma once
// Fixtures of the store tests (test_store.cpp, test_store_v2.cpp): temporary directories, files
// read and written byte for byte, SQL run on a file with sqlite directly (what the Store must not
// create itself), and a few machines and runs.
#include <catch2/catch.hpp>

#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "data/store.h"

namespace cpplan::test::store {

namespace fs = std::filesystem;

// The schema this cpplan writes (data/schema.cpp's migrations), stated here, not read from it.
constexpr int kCurrentSchema = 7;
using data::HardwareFingerprint;
using data::RunRecord;
using data::Store;

// Temp directories named cpplan-store-XXXXXX.
struct TempDir : cpplan::test::TempDir {
  TempDir() : cpplan::test::TempDir("cpplan-store-") {}
};

inline std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// Every file of `dir` with its contents: equal snapshots mean nothing was changed, created or
// deleted (no -wal, -shm or -journal either).
inline std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files[entry.path().string()] = read_bytes(entry.path());
  }
  return files;
}

// Runs constant SQL on `path` through sqlite directly (fixtures the Store must not create).
inline void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  const std::string error = message ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  INFO(sql << ": " << error);
  REQUIRE(rc == SQLITE_OK);
}

// The first column of the first row of `sql`, read with sqlite directly.
inline std::string raw_text(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  const std::string value = text ? text : "";
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

inline long long raw_integer(const std::string& path, const std::string& sql) { return std::stoll(raw_text(path, sql)); }

inline Store open_store(const std::string& path) {
  auto store = Store::open(path);
  INFO(path << ": " << (store ? std::string() : store.error().message));
  REQUIRE(store.ok());
  return std::move(store).value();
}

// Every run of `store`, oldest first; a failed read fails the test with its message.
inline std::vector<data::StoredRun> runs_of(const Store& store) {
  auto runs = store.runs();
  INFO((runs ? std::string() : runs.error().message));
  REQUIRE(runs.ok());
  return std::move(runs).value();
}

inline HardwareFingerprint h200_node() {
  HardwareFingerprint hw;
  hw.device_kind = "cuda";
  hw.gpu_name = "NVIDIA H200";
  hw.gpu_count = 8;
  hw.cpu_name = "AMD EPYC 9654";
  hw.cpu_count = 192;
  hw.driver = "560.35.03";
  hw.cuda = "12.6";
  hw.nccl = "2.21.5";
  hw.torch = "2.5.1";
  hw.host = "node-17";
  return hw;
}

inline HardwareFingerprint laptop() {
  HardwareFingerprint hw;
  hw.device_kind = "cpu";
  hw.cpu_name = "Intel Core i7-1185G7";
  hw.cpu_count = 8;
  hw.host = "laptop";
  return hw;
}

// Only what a run needs: every optional absent, no steps, no metrics.
inline RunRecord minimal_run(const std::string& run_key, const std::string& model = "flux-dev") {
  RunRecord r;
  r.run_key = run_key;
  r.model = model;
  r.status = "ok";
  return r;
}

}  // namespace cpplan::test::store
