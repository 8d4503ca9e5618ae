// Schema v4 of the store on real files: the committed v3 database migrated in place (its runs keep
// their batch and gain no transformer-peak prediction), a run's batch and both predicted peaks
// round-tripping, and merges from v3 files.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "data/store.h"
#include "tests/data_store/store_test_support.h"
#include "tests/data_store/v1_fixture.h"
#include "tests/data_store/v3_fixture.h"

using cpplan::data::MergeSummary;
using cpplan::data::StoredRun;
using namespace cpplan::test::store;  // the fixtures these tests share (store_test_support.h)
namespace v1 = cpplan::test::v1_fixture;
namespace v3 = cpplan::test::v3_fixture;

namespace {

std::string committed_v3() { return std::string(CPPLAN_TEST_PROFILES) + "/../tests/data/store-v3.db"; }

// A `cpplan run --batch 2` as v4 records it: the whole pipeline's predicted peak and the
// transformer's beside the measured transformer peak.
RunRecord v4_executor_run() {
  RunRecord r = v3::executor_run();
  r.run_key = "flux-tiny|128x128x1|4|fp32|r1u2t1c1d2|ua0ra0|allgather|b2|s1";
  r.seed = 1;
  r.started_at = "2025-12-11T10:00:00Z";
  r.finished_at = "2025-12-11T10:00:05Z";
  r.predicted_transformer_peak_bytes = 0.1 + 0.2;  // an exact round trip, not a plausible size
  return r;
}

}  // namespace

TEST_CASE("the committed v3 database migrates in place to v4: batches kept, no transformer peak predicted before",
          "[data][store][migration]") {
  const std::string original = committed_v3();
  REQUIRE(fs::is_regular_file(original));
  const std::string original_bytes = read_bytes(original);
  REQUIRE(original_bytes.size() > 100);
  CHECK(original_bytes.substr(60, 4) == std::string("\0\0\0\3", 4));  // user_version 3 (big-endian)

  TempDir dir;
  const std::string path = dir.file("store-v3.db");
  fs::copy_file(original, path);
  {
    Store store = open_store(path);
    CHECK(store.schema_version() == kCurrentSchema);  // v4, then v5 (PipeFusion) and on
    const std::vector<StoredRun> runs = runs_of(store);
    REQUIRE(runs.size() == 3);
    CHECK(runs[0].id == 3);
    CHECK(runs[0].run == v3::executor_run());
    CHECK(runs[0].hardware == v1::cpu_box());
    CHECK(runs[1].run == v1::cpu_run());
    CHECK(runs[2].run == v1::gpu_run());
    CHECK(runs[0].run.batch == 2);  // the v3 run of --batch 2
    CHECK(runs[2].run.batch == 1);
    for (const StoredRun& r : runs) CHECK_FALSE(r.run.predicted_transformer_peak_bytes.has_value());
    CHECK(*runs[0].run.predicted_peak_mem_bytes == 2.5e8);  // the whole pipeline's, as v3 stored it

    auto latest = store.latest_calibration(v1::gpu_node().key());
    REQUIRE(latest.ok());
    REQUIRE(latest->has_value());
    CHECK((*latest)->version == 1);
    CHECK((*latest)->features == v3::calibration().features);
    CHECK((*latest)->coefficients == v3::calibration().coefficients);

    auto id = store.record_run(v1::cpu_box(), v4_executor_run());
    INFO((id ? std::string() : id.error().message));
    REQUIRE(id.ok());
    CHECK(*id == 4);
    CHECK(runs_of(store).front().run == v4_executor_run());
    auto check = store.integrity_check();
    REQUIRE(check.ok());
    CHECK(*check == "ok");
  }
  CHECK(raw_integer(path, "PRAGMA user_version") == kCurrentSchema);
  CHECK(raw_text(path, "SELECT group_concat(id || ':' || batch || ':' || (predicted_transformer_peak_bytes IS NULL), ' ') "
                       "FROM runs") == "1:1:1 2:1:1 3:2:1 4:2:0");
  CHECK(read_bytes(original) == original_bytes);
  CHECK_FALSE(fs::exists(original + "-wal"));
  CHECK_FALSE(fs::exists(original + "-shm"));
}

TEST_CASE("a run's batch and both predicted peaks round-trip through a v4 file", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  {
    Store store = open_store(path);
    REQUIRE(store.record_run(laptop(), v4_executor_run()).ok());
  }
  Store store = open_store(path);
  const auto runs = runs_of(store);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].run == v4_executor_run());
  CHECK(runs[0].run.batch == 2);
  CHECK(*runs[0].run.predicted_transformer_peak_bytes == 0.1 + 0.2);
  CHECK(*runs[0].run.predicted_peak_mem_bytes == 2.5e8);
}

TEST_CASE("a v3 database merges into a v4 one without transformer peaks, once, and stays untouched",
          "[data][store][merge][migration]") {
  TempDir dir;
  fs::create_directories(dir.path() / "old");
  const std::string old_path = (dir.path() / "old" / "store-v3.db").string();
  fs::copy_file(committed_v3(), old_path);
  const auto before = snapshot(dir.path() / "old");

  Store into = open_store(dir.file("new.db"));
  REQUIRE(into.record_run(laptop(), v4_executor_run()).ok());
  auto first = into.merge_from(old_path);
  INFO((first ? std::string() : first.error().message));
  REQUIRE(first.ok());
  CHECK(first->runs_added == 3);
  CHECK(first->calibrations_added == 1);
  auto again = into.merge_from(old_path);
  REQUIRE(again.ok());
  CHECK(again->runs_added == 0);
  CHECK(again->runs_skipped == 3);

  const auto runs = runs_of(into);
  REQUIRE(runs.size() == 4);
  CHECK(runs[0].run == v3::executor_run());
  CHECK(runs[1].run == v1::cpu_run());
  CHECK(runs[2].run == v1::gpu_run());
  CHECK(runs[3].run == v4_executor_run());
  CHECK(snapshot(dir.path() / "old") == before);
  CHECK(raw_integer(old_path, "PRAGMA user_version") == 3);
}
