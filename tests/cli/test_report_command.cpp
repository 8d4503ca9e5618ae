// `cpplan report` in-process on real files: the report of a database written with data::Store,
// the default --out, an empty database, and every refusal as one line with exit code 3 (a
// missing or foreign database left untouched, an --out that cannot be written).
#include <catch2/catch.hpp>

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/support/temp_dir.h"
#include "data/store.h"
#include "exec/commands.h"
#include "tests/cli/run_cli.h"

namespace fs = std::filesystem;
using cpplan::test::run_cli;

namespace {

// Temp directories named cpplan-cli-report-XXXXXX.
struct TempDir : cpplan::test::TempDir {
  TempDir() : cpplan::test::TempDir("cpplan-cli-report-") {}
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

// Names of the files in `dir`, sorted.
std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The working directory for one scope (the default --out is relative to it).
class ChangeDir {
 public:
  explicit ChangeDir(const fs::path& to) : from_(fs::current_path()) { fs::current_path(to); }
  ~ChangeDir() { fs::current_path(from_); }
  ChangeDir(const ChangeDir&) = delete;
  ChangeDir& operator=(const ChangeDir&) = delete;

 private:
  fs::path from_;
};

// The machine every test run was measured on.
cpplan::data::HardwareFingerprint test_cpu() {
  cpplan::data::HardwareFingerprint hw;
  hw.device_kind = "cpu";
  hw.cpu_name = "Test CPU 9000";
  hw.host = "box1";
  return hw;
}

// A finished flux-tiny run at 128x128, 4 steps, over `ulysses` ranks.
cpplan::data::RunRecord tiny_run(int ulysses) {
  cpplan::data::RunRecord r;
  r.model = "flux-tiny";
  r.width = r.height = 128;
  r.steps = 4;
  r.ulysses = ulysses;
  r.world_size = r.ulysses;
  r.status = "ok";
  return r;
}

void fill(const std::string& db) {
  auto store = cpplan::data::Store::open(db);
  REQUIRE(store.ok());
  const cpplan::data::HardwareFingerprint hw = test_cpu();
  const double runs[][3] = {{1, 10, 12}, {2, 20, 15}, {2, 8, 8.8}};  // ulysses, measured, predicted ms
  for (const auto& [ulysses, measured, predicted] : runs) {
    cpplan::data::RunRecord r = tiny_run(static_cast<int>(ulysses));
    r.step_ms = measured;
    r.predicted_step_ms = predicted;
    r.predicted_hardware = "local";
    REQUIRE(store.value().record_run(hw, r).ok());
  }
  cpplan::costmodel::MeasurementSet set;
  for (double bytes = 1024; bytes <= 1048576; bytes *= 4)
    set.collectives.push_back({cpplan::costmodel::Collective::kAllReduce, 2, false, bytes, bytes / 1e3, 1, 1});
  REQUIRE(store.value().record_measurements(hw, set, "probe").ok());
}

}  // namespace

TEST_CASE("cpplan report writes REPORT.md and the plots into --out and lists them", "[cli][report]") {
  TempDir dir;
  const std::string db = dir.file("runs.db");
  fill(db);
  const std::string out = dir.file("report");
  const auto r = run_cli({"report", "--db", db, "--out", out}, &cpplan::exec::commands());
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  // MAPE (2/10 + 5/20 + 0.8/8) / 3 = 18.3%; Spearman of (12, 15, 8.8) vs (10, 20, 8) = 1.
  CHECK_THAT(r.out, Catch::StartsWith(out + "/REPORT.md: 3 runs (3 compared with their prediction), 1 machines\n"
                                            "  MAPE 18.3% over 3 runs, Spearman 1.00\n"));
  CHECK_THAT(r.out, Catch::Contains("  " + out + "/scatter.png\n"));
  CHECK_THAT(r.out, Catch::Contains("  " + out + "/busbw-all_reduce.png\n"));
  CHECK(listing(out) == std::vector<std::string>{"REPORT.md", "busbw-all_reduce.png", "error-by-kind.png", "scatter.png"});
  const std::string md = read_file(out + "/REPORT.md");
  CHECK_THAT(md, Catch::Contains("| **all** | 3 | 18.3% | 1.00 |"));
  CHECK_THAT(md, Catch::Contains("| Test CPU 9000 (box1) | all_reduce | 2 | 1.00 | 1.00 | 1.00 | - | - |"));
}

TEST_CASE("cpplan report compares each executor run's load phase with the predicted transformer weights",
          "[cli][report][memory]") {
  TempDir dir;
  const std::string db = dir.file("runs.db");
  {
    auto store = cpplan::data::Store::open(db);
    REQUIRE(store.ok());
    const cpplan::data::HardwareFingerprint hw = test_cpu();
    constexpr double kMiB = 1024.0 * 1024.0;
    // Load phase measured 10 and 20 MiB (the largest rank's), predicted 11 and 19 MiB:
    // errors +10% and -5%, MAPE 7.5%; the worst is the first, 11 vs 10 MiB.
    const double runs[][3] = {{1, 10, 11}, {2, 20, 19}};  // ulysses, measured MiB, predicted MiB
    for (const auto& [ulysses, measured, predicted] : runs) {
      cpplan::data::RunRecord r = tiny_run(static_cast<int>(ulysses));
      r.source = "executor";
      r.step_ms = 10;
      r.predicted_step_ms = 10;
      r.peak_mem_bytes = 30 * kMiB;
      r.predicted_transformer_peak_bytes = 30 * kMiB;
      r.metrics = {{"rank0.load_phase_bytes", measured * kMiB - 1024},
                   {"rank1.load_phase_bytes", measured * kMiB},
                   {"predicted.load_transformer_bytes", predicted * kMiB}};
      REQUIRE(store.value().record_run(hw, r).ok());
    }
  }
  const std::string out = dir.file("report");
  const auto r = run_cli({"report", "--db", db, "--out", out}, &cpplan::exec::commands());
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string md = read_file(out + "/REPORT.md");
  const auto load = md.find("Load phase:");
  REQUIRE(load != std::string::npos);
  const std::string section = md.substr(load);
  CHECK_THAT(section, Catch::Contains("the encode and decode phases are not measured"));
  CHECK_THAT(section, Catch::Contains("| 2 | 7.5% | #1 flux-tiny"));
  CHECK_THAT(section, Catch::Contains(": +10.0% (11 MiB vs 10 MiB) |"));
}

TEST_CASE("cpplan report writes to ./cpplan-report by default and says when the database is empty",
          "[cli][report]") {
  TempDir dir;
  const std::string db = dir.file("empty.db");
  REQUIRE(cpplan::data::Store::open(db).ok());
  ChangeDir here(dir.path());
  const auto r = run_cli({"report", "--db", db}, &cpplan::exec::commands());
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("cpplan-report/REPORT.md: 0 runs (0 compared with their prediction), 0 machines\n"));
  CHECK_THAT(r.out, Catch::Contains("predicted vs measured step time skipped: no run has both"));
  CHECK_THAT(r.out, Catch::Contains("busbw vs message size skipped: no collective samples"));
  CHECK_THAT(read_file(dir.file("cpplan-report/REPORT.md")), Catch::Contains("The database is empty"));
}

TEST_CASE("cpplan report refuses a foreign file in one line and leaves it byte for byte", "[cli][report]") {
  TempDir dir;
  SECTION("a text file") {
    const std::string path = dir.file("notes.db");
    std::ofstream(path, std::ios::binary) << std::string(4096, 'x') << "\nnot a database\n";
  }
  SECTION("another program's SQLite database") {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(dir.file("notes.db").c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "CREATE TABLE notes(text); INSERT INTO notes VALUES ('keep me');", nullptr, nullptr,
                         nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  const std::string path = dir.file("notes.db");
  const std::string before = read_file(path);
  const auto r = run_cli({"report", "--db", path, "--out", dir.file("out")}, &cpplan::exec::commands());
  CHECK(r.code == 3);
  CHECK(lines(r.err) == 1);
  CHECK_THAT(r.err, Catch::StartsWith("cpplan report: ") && Catch::Contains(path));
  CHECK(read_file(path) == before);
  CHECK(listing(dir.path()) == std::vector<std::string>{"notes.db"});  // no -wal, -shm, nor the --out
}

TEST_CASE("cpplan report refuses a missing database and an --out it cannot write, in one line", "[cli][report]") {
  TempDir dir;
  const auto missing = run_cli({"report", "--db", dir.file("nope.db"), "--out", dir.file("out")}, &cpplan::exec::commands());
  CHECK(missing.code == 3);
  CHECK(missing.err == "cpplan report: --db " + dir.file("nope.db") +
                           ": no such file (cpplan run, sweep and probe record into it)\n");
  CHECK_FALSE(fs::exists(dir.file("nope.db")));

  const std::string db = dir.file("runs.db");
  fill(db);
  std::ofstream(dir.file("a-file")) << "x";
  const auto blocked = run_cli({"report", "--db", db, "--out", dir.file("a-file/report")}, &cpplan::exec::commands());
  CHECK(blocked.code == 3);
  CHECK(lines(blocked.err) == 1);
  CHECK_THAT(blocked.err, Catch::StartsWith("cpplan report: --out " + dir.file("a-file/report") +
                                            ": cannot create the directory: "));
  const auto is_file = run_cli({"report", "--db", db, "--out", dir.file("a-file")}, &cpplan::exec::commands());
  CHECK(is_file.code == 3);
  CHECK(is_file.err == "cpplan report: --out " + dir.file("a-file") + ": is not a directory\n");
  if (geteuid() != 0) {  // root writes anywhere: the permission check needs an ordinary user
    fs::create_directory(dir.file("locked"));
    fs::permissions(dir.file("locked"), fs::perms::owner_read | fs::perms::owner_exec);
    const auto locked = run_cli({"report", "--db", db, "--out", dir.file("locked")}, &cpplan::exec::commands());
    CHECK(locked.code == 3);
    CHECK(locked.err == "cpplan report: --out " + dir.file("locked") +
                            ": cannot write in the directory: Permission denied\n");
    fs::permissions(dir.file("locked"), fs::perms::owner_all);
  }
}
