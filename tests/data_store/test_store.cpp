// The measurement store on real SQLite files, each test in its own temporary directory: schema
// and migration, exact round trips, refusing files that are not ours without touching them, and
// several processes writing to one file at once.
#include <catch2/catch.hpp>

#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>

#include "data/store.h"
#include "tests/data_store/store_test_support.h"

namespace fs = std::filesystem;
using cpplan::data::HardwareFingerprint;
using cpplan::data::RunRecord;
using cpplan::data::Store;
using namespace cpplan::test::store;  // the fixtures these tests share (store_test_support.h)

namespace {

constexpr long long kCplnApplicationId = 0x43504C4E;

// Every field away from its default, with values that test exactness and binding.
RunRecord full_run() {
  RunRecord r;
  r.run_key = "wan-2.1|1280x720x81|u4r2";
  r.model = "wan-2.1-14b";
  r.width = 1280;
  r.height = 720;
  r.frames = 81;
  r.steps = 50;
  r.warmup = 3;
  r.dtype = "bf16";
  r.ring = 2;
  r.ulysses = 4;
  r.tp = 1;
  r.cfg = 2;
  r.dp = 1;
  r.ulysses_anything = true;
  r.ring_anything = true;
  r.rotate_method = "p2p";
  r.convert_to_fp32 = false;
  r.attention_backend = "flash-attn-3";
  r.world_size = 16;
  r.seed = LLONG_MIN;
  r.status = "failed";
  r.error = "rank 3: CUDA out of memory; it's \"O'Brien\"; DROP TABLE runs;--";
  r.started_at = "2025-11-29T16:02:00Z";
  r.finished_at = "2025-11-29T16:09:41Z";
  r.cpplan_version = "0.1.0";
  r.step_ms = 0.1 + 0.2;  // 0.30000000000000004: must come back bit for bit
  r.step_ms_p10 = 1e-300;
  r.step_ms_p90 = std::numeric_limits<double>::max();
  r.steps_per_sec = 0.8123;
  r.compute_ms = std::numeric_limits<double>::infinity();
  r.comm_ms = 0.0;
  r.peak_mem_bytes = 141.0e9 + 0.5;
  r.bytes_sent = std::numeric_limits<double>::denorm_min();
  r.predicted_step_ms = 1234.5678901234567;
  r.predicted_steps_per_sec = 0.81;
  r.predicted_peak_mem_bytes = 9.0e15;
  r.predicted_hardware = "h200-sxm";
  r.source = "pipeline";
  r.runtime = "xdit";
  r.text_encoder = "sharded";
  r.vae = "parallel";
  r.batch = 4;
  r.image_ms = 0.1 + 0.7;
  r.text_encode_ms = 1e-300;
  r.vae_decode_ms = 0.0;
  r.step_times_ms = {1201.25, 1199.5, 1.0 / 3.0, 1300.0};
  r.metrics = {{"rank1.peak_mem_bytes", 7.5e10}, {"step_ms", -1.0}, {"rank0.comm_ms", 12.125}, {"z", 0.0}};
  return r;
}

// Open must fail with `expected` in its message and leave the directory exactly as it was.
void require_refused_untouched(const TempDir& dir, const std::string& path, const std::string& expected) {
  const auto before = snapshot(dir.path());
  auto store = Store::open(path);
  REQUIRE_FALSE(store.ok());
  INFO(store.error().message);
  CHECK_THAT(store.error().message, Catch::Contains(path));
  CHECK_THAT(store.error().message, Catch::Contains(expected));
  CHECK(snapshot(dir.path()) == before);
  CHECK_FALSE(fs::exists(path + "-wal"));
  CHECK_FALSE(fs::exists(path + "-shm"));
}

}  // namespace

TEST_CASE("a missing file in a folder that does not exist is refused, and nothing is created", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("a/b/measurements.db");
  require_refused_untouched(dir, path, "the folder " + dir.file("a/b") + " does not exist");
  CHECK_FALSE(fs::exists(dir.file("a")));
}

TEST_CASE("the default location's folders are created, as XDG tools do", "[data][store]") {
  TempDir dir;
  const char* saved = std::getenv("XDG_DATA_HOME");
  const std::string restore = saved ? saved : "";
  ::setenv("XDG_DATA_HOME", dir.file("xdg").c_str(), 1);
  const std::string path = Store::default_path();
  CHECK(path == dir.file("xdg/cpplan/cpplan.db"));
  { (void)open_store(path); }
  if (saved) ::setenv("XDG_DATA_HOME", restore.c_str(), 1);
  else ::unsetenv("XDG_DATA_HOME");
  CHECK(fs::is_regular_file(path));
}

TEST_CASE("opening a missing file creates it at the current schema", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("measurements.db");
  {
    Store store = open_store(path);
    CHECK(store.schema_version() == kCurrentSchema);
    CHECK(store.path() == path);
  }
  REQUIRE(fs::is_regular_file(path));
  CHECK(raw_integer(path, "PRAGMA application_id") == kCplnApplicationId);
  CHECK(raw_integer(path, "PRAGMA user_version") == kCurrentSchema);
  CHECK(raw_text(path, "PRAGMA journal_mode") == "wal");
  CHECK(raw_integer(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                          "('hardware', 'runs', 'run_metrics')") == 3);
  CHECK(raw_integer(path, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN "
                          "('runs_run_key', 'runs_model')") == 2);
}

TEST_CASE("reopening a database keeps its runs", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  long long id = 0;
  {
    Store store = open_store(path);
    auto recorded = store.record_run(h200_node(), full_run());
    REQUIRE(recorded.ok());
    id = *recorded;
  }
  Store again = open_store(path);
  CHECK(again.schema_version() == kCurrentSchema);
  auto runs = again.runs();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  CHECK(runs->front().id == id);
  CHECK(runs->front().run == full_run());
}

TEST_CASE("a recorded run reads back field for field, absent numbers staying absent", "[data][store]") {
  TempDir dir;
  Store store = open_store(dir.file("cpplan.db"));
  auto full_id = store.record_run(h200_node(), full_run());
  INFO((full_id ? std::string() : full_id.error().message));
  REQUIRE(full_id.ok());
  auto bare_id = store.record_run(laptop(), minimal_run("bare"));
  REQUIRE(bare_id.ok());
  CHECK(*bare_id > *full_id);

  auto runs = store.runs();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 2);
  const auto& bare = (*runs)[0];
  const auto& full = (*runs)[1];
  CHECK(bare.id == *bare_id);
  CHECK(full.id == *full_id);

  CHECK(full.run == full_run());
  CHECK(full.hardware == h200_node());
  // Spelled out where == on doubles could hide a difference that matters.
  CHECK(*full.run.step_ms == 0.1 + 0.2);
  CHECK(full.run.seed == LLONG_MIN);
  CHECK(full.run.step_times_ms == std::vector<double>{1201.25, 1199.5, 1.0 / 3.0, 1300.0});
  REQUIRE(full.run.metrics.size() == 4);
  CHECK(full.run.metrics[1] == std::pair<std::string, double>{"step_ms", -1.0});

  CHECK(bare.run == minimal_run("bare"));
  CHECK(bare.hardware == laptop());
  CHECK_FALSE(bare.run.step_ms.has_value());
  CHECK_FALSE(bare.run.predicted_peak_mem_bytes.has_value());
  CHECK(bare.run.step_times_ms.empty());
  CHECK(bare.run.metrics.empty());
  CHECK(bare.run.rotate_method == "allgather");
  CHECK(bare.run.convert_to_fp32);
  CHECK(bare.run.source == "executor");
  CHECK(bare.run.batch == 1);
  CHECK_FALSE(bare.run.image_ms.has_value());
  CHECK(*full.run.image_ms == 0.1 + 0.7);
}

TEST_CASE("step times and named metrics land in run_metrics", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  {
    Store store = open_store(path);
    REQUIRE(store.record_run(h200_node(), full_run()).ok());
  }
  CHECK(raw_integer(path, "SELECT count(*) FROM run_metrics WHERE name = 'step_ms' AND step IS NOT NULL") == 4);
  CHECK(raw_integer(path, "SELECT max(step) FROM run_metrics") == 3);
  CHECK(raw_integer(path, "SELECT count(*) FROM run_metrics WHERE step IS NULL") == 4);
  CHECK(raw_integer(path, "SELECT count(*) FROM runs WHERE step_ms IS NOT NULL AND bytes_sent IS NOT NULL") == 1);
}

TEST_CASE("runs on one machine share a hardware row keyed by the fingerprint", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  HardwareFingerprint other_host = h200_node();
  other_host.host = "node-18";
  {
    Store store = open_store(path);
    REQUIRE(store.record_run(h200_node(), minimal_run("a")).ok());
    REQUIRE(store.record_run(h200_node(), minimal_run("b")).ok());
    REQUIRE(store.record_run(other_host, minimal_run("c")).ok());
  }
  CHECK(raw_integer(path, "SELECT count(*) FROM hardware") == 2);
  CHECK(raw_integer(path, "SELECT count(DISTINCT hardware_id) FROM runs") == 2);

  // FNV-1a 64 over the fields joined by 0x1f, computed by hand (python) for this fingerprint.
  CHECK(h200_node().key() == "6f7c181cb8f58c18");
  CHECK(other_host.key() != h200_node().key());
  CHECK(laptop().key().size() == 16);
}

TEST_CASE("runs come back newest first and filtered by model", "[data][store]") {
  TempDir dir;
  Store store = open_store(dir.file("cpplan.db"));
  REQUIRE(store.record_run(laptop(), minimal_run("1", "flux-dev")).ok());
  REQUIRE(store.record_run(laptop(), minimal_run("2", "wan-2.1-14b")).ok());
  REQUIRE(store.record_run(laptop(), minimal_run("3", "flux-dev")).ok());

  auto all = store.runs();
  REQUIRE(all.ok());
  REQUIRE(all->size() == 3);
  CHECK((*all)[0].run.run_key == "3");
  CHECK((*all)[1].run.run_key == "2");
  CHECK((*all)[2].run.run_key == "1");

  auto flux = store.runs("flux-dev");
  REQUIRE(flux.ok());
  REQUIRE(flux->size() == 2);
  CHECK((*flux)[0].run.run_key == "3");
  CHECK((*flux)[1].run.run_key == "1");

  auto none = store.runs("no-such-model");
  REQUIRE(none.ok());
  CHECK(none->empty());
}

TEST_CASE("an invalid run is refused with the field named and nothing written", "[data][store]") {
  TempDir dir;
  Store store = open_store(dir.file("cpplan.db"));

  RunRecord bad_status = minimal_run("s");
  bad_status.status = "done";
  auto r1 = store.record_run(laptop(), bad_status);
  REQUIRE_FALSE(r1.ok());
  CHECK_THAT(r1.error().message, Catch::Contains("status = 'done': must be ok, failed, oom or cancelled"));

  RunRecord nan_step = minimal_run("n");
  nan_step.step_times_ms = {1.0, std::nan("")};
  auto r2 = store.record_run(laptop(), nan_step);
  REQUIRE_FALSE(r2.ok());
  CHECK_THAT(r2.error().message, Catch::Contains("step_times_ms[1] = nan"));

  RunRecord nan_measure = minimal_run("m");
  nan_measure.comm_ms = std::nan("");
  auto r3 = store.record_run(laptop(), nan_measure);
  REQUIRE_FALSE(r3.ok());
  CHECK_THAT(r3.error().message, Catch::Contains("comm_ms = nan"));

  RunRecord bad_source = minimal_run("o");
  bad_source.source = "recorder";
  auto r5 = store.record_run(laptop(), bad_source);
  REQUIRE_FALSE(r5.ok());
  CHECK_THAT(r5.error().message, Catch::Contains("source = 'recorder': must be executor or pipeline"));

  RunRecord nan_image = minimal_run("i");
  nan_image.image_ms = std::nan("");
  auto r6 = store.record_run(laptop(), nan_image);
  REQUIRE_FALSE(r6.ok());
  CHECK_THAT(r6.error().message, Catch::Contains("image_ms = nan: must be a number"));

  HardwareFingerprint tpu = laptop();
  tpu.device_kind = "tpu";
  auto r4 = store.record_run(tpu, minimal_run("t"));
  REQUIRE_FALSE(r4.ok());
  CHECK_THAT(r4.error().message, Catch::Contains("device_kind = 'tpu'"));

  auto runs = store.runs();
  REQUIRE(runs.ok());
  CHECK(runs->empty());
}

TEST_CASE("a text file is refused and left byte for byte unchanged", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("notes.db");
  write_bytes(path, "these are my notes, not a database\n");
  require_refused_untouched(dir, path, "not an SQLite database");
}

TEST_CASE("a file of random bytes is refused and left byte for byte unchanged", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("random.db");
  std::mt19937 rng(42);
  std::string bytes(8192, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
  write_bytes(path, bytes);
  require_refused_untouched(dir, path, "not an SQLite database");
}

TEST_CASE("a random file that starts with the SQLite header is refused unchanged", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("fake.db");
  std::mt19937 rng(7);
  std::string bytes(8192, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
  bytes.replace(0, 16, std::string("SQLite format 3\0", 16));
  for (int i = 60; i < 72; ++i) bytes[static_cast<std::size_t>(i)] = 0;  // user_version, application_id 0
  write_bytes(path, bytes);
  const auto before = snapshot(dir.path());
  auto store = Store::open(path);
  REQUIRE_FALSE(store.ok());
  INFO(store.error().message);
  CHECK_THAT(store.error().message, Catch::Contains(path));
  CHECK(snapshot(dir.path()) == before);
}

TEST_CASE("a foreign SQLite database is refused and left byte for byte unchanged", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("other.db");
  SECTION("in rollback-journal mode") {
    raw_exec(path, "CREATE TABLE foo (x INTEGER); INSERT INTO foo VALUES (1);");
  }
  SECTION("in WAL mode") {
    raw_exec(path, "PRAGMA journal_mode = WAL; CREATE TABLE foo (x INTEGER); INSERT INTO foo VALUES (1);");
  }
  REQUIRE_FALSE(fs::exists(path + "-wal"));
  require_refused_untouched(dir, path, "not a cpplan database");
}

TEST_CASE("the foreign table is named when application_id is 0", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("other.db");
  raw_exec(path, "CREATE TABLE foo (x INTEGER);");
  require_refused_untouched(dir, path, "not a cpplan database (application_id 0, and it holds foo)");
}

TEST_CASE("an SQLite database with another application_id is refused unchanged", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("other.db");
  raw_exec(path, "PRAGMA application_id = 1234;");
  require_refused_untouched(dir, path, "application_id 0x000004d2, cpplan's is 0x43504c4e");
}

TEST_CASE("a database from a newer cpplan is refused untouched", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  {
    Store store = open_store(path);
    REQUIRE(store.record_run(laptop(), minimal_run("kept")).ok());
  }
  raw_exec(path, "PRAGMA user_version = " + std::to_string(kCurrentSchema + 1) + ";");
  REQUIRE_FALSE(fs::exists(path + "-wal"));
  require_refused_untouched(dir, path,
                            "schema version " + std::to_string(kCurrentSchema + 1) +
                                " is newer than this cpplan knows (" + std::to_string(kCurrentSchema) + ")");
}

TEST_CASE("a newer version still in another connection's WAL is refused too", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  Store holder = open_store(path);  // keeps the WAL alive, so the main file's header is stale
  REQUIRE(holder.record_run(laptop(), minimal_run("kept")).ok());
  raw_exec(path, "PRAGMA user_version = " + std::to_string(kCurrentSchema + 1) + ";");
  REQUIRE(fs::exists(path + "-wal"));
  const std::string main_before = read_bytes(path);
  const std::string wal_before = read_bytes(path + "-wal");
  auto store = Store::open(path);
  REQUIRE_FALSE(store.ok());
  CHECK_THAT(store.error().message, Catch::Contains("is newer than this cpplan knows"));
  CHECK(read_bytes(path) == main_before);
  CHECK(read_bytes(path + "-wal") == wal_before);
}

TEST_CASE("an empty file is migrated from version 0 to the current schema", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("empty.db");
  write_bytes(path, "");
  REQUIRE(fs::file_size(path) == 0);
  {
    Store store = open_store(path);
    CHECK(store.schema_version() == kCurrentSchema);
    REQUIRE(store.record_run(laptop(), minimal_run("first")).ok());
  }
  CHECK(raw_integer(path, "PRAGMA application_id") == kCplnApplicationId);
  CHECK(raw_integer(path, "PRAGMA user_version") == kCurrentSchema);
  CHECK(raw_integer(path, "SELECT count(*) FROM runs") == 1);
}

TEST_CASE("an SQLite database that holds nothing is adopted and migrated", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("blank.db");
  raw_exec(path, "CREATE TABLE scratch (x); DROP TABLE scratch;");  // a real file, schema empty again
  REQUIRE(fs::file_size(path) > 0);
  Store store = open_store(path);
  CHECK(store.schema_version() == kCurrentSchema);
  CHECK(raw_integer(path, "PRAGMA application_id") == kCplnApplicationId);
}

TEST_CASE("a directory is not a database", "[data][store]") {
  TempDir dir;
  auto store = Store::open(dir.path().string());
  REQUIRE_FALSE(store.ok());
  CHECK_THAT(store.error().message, Catch::Contains("is a directory"));
}

// Issue 7: eight writers at once lose nothing, duplicate nothing and never see "database is locked".
TEST_CASE("eight processes recording at once store all 200 runs", "[data][store]") {
  TempDir dir;
  fs::create_directories(dir.file("shared"));
  const std::string path = dir.file("shared/cpplan.db");  // the file created by whichever child wins
  constexpr int kChildren = 8;
  constexpr int kRunsEach = 25;
  constexpr int kLocked = 3;  // a child's exit status when sqlite said "database is locked"
  std::vector<pid_t> children;
  for (int c = 0; c < kChildren; ++c) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Child: its own connection, opened after fork; exit status says how it went.
      int code = 0;
      {
        auto store = Store::open(path);
        if (!store) {
          std::fprintf(stderr, "child %d: %s\n", c, store.error().message.c_str());
          code = 1;
        }
        for (int i = 0; store && i < kRunsEach; ++i) {
          RunRecord run = minimal_run("child" + std::to_string(c) + "-run" + std::to_string(i));
          run.step_times_ms = {1.0 * i, 2.0 * i};
          auto recorded = store.value().record_run(h200_node(), run);
          if (!recorded) {
            std::fprintf(stderr, "child %d: %s\n", c, recorded.error().message.c_str());
            code = recorded.error().message.find("database is locked") != std::string::npos ? kLocked : 2;
            break;
          }
        }
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) != kLocked);
    CHECK(WEXITSTATUS(status) == 0);
  }

  Store store = open_store(path);
  auto runs = store.runs();
  REQUIRE(runs.ok());
  CHECK(runs->size() == kChildren * kRunsEach);
  std::set<std::string> keys;
  for (const auto& r : *runs) {
    keys.insert(r.run.run_key);
    CHECK(r.run.step_times_ms.size() == 2);
  }
  CHECK(keys.size() == kChildren * kRunsEach);
  CHECK(raw_integer(path, "SELECT count(*) FROM hardware") == 1);
  auto check = store.integrity_check();
  REQUIRE(check.ok());
  CHECK(*check == "ok");
}

TEST_CASE("integrity_check reports ok on a healthy database", "[data][store]") {
  TempDir dir;
  Store store = open_store(dir.file("cpplan.db"));
  REQUIRE(store.record_run(h200_node(), full_run()).ok());
  auto check = store.integrity_check();
  REQUIRE(check.ok());
  CHECK(*check == "ok");
}

TEST_CASE("a moved-from store reports an error instead of crashing", "[data][store]") {
  TempDir dir;
  Store store = open_store(dir.file("cpplan.db"));
  Store moved = std::move(store);
  CHECK(moved.runs().ok());
  CHECK_FALSE(store.runs().ok());  // NOLINT(bugprone-use-after-move): the point of the test
  CHECK_FALSE(store.record_run(laptop(), minimal_run("x")).ok());
  CHECK_FALSE(store.integrity_check().ok());
}

TEST_CASE("default_path follows XDG_DATA_HOME, then HOME", "[data][store]") {
  auto saved = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  const auto xdg = saved("XDG_DATA_HOME");
  const auto home = saved("HOME");

  setenv("XDG_DATA_HOME", "/data/xdg", 1);
  setenv("HOME", "/home/someone", 1);
  CHECK(Store::default_path() == "/data/xdg/cpplan/cpplan.db");
  setenv("XDG_DATA_HOME", "relative/ignored", 1);
  CHECK(Store::default_path() == "/home/someone/.local/share/cpplan/cpplan.db");
  unsetenv("XDG_DATA_HOME");
  CHECK(Store::default_path() == "/home/someone/.local/share/cpplan/cpplan.db");

  auto restore = [](const char* name, const std::optional<std::string>& value) {
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  };
  restore("XDG_DATA_HOME", xdg);
  restore("HOME", home);
}
