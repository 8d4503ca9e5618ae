// Schema v7 of the store on real files: fully sharded weights (fs_degree). The committed v6
// database (one `cpplan run --model flux-tiny --res 128x128 --ulysses 2 --steps 2`, recorded by the
// cpplan of schema v6) migrated in place, its run with whole weights (fs_degree 1); a run with
// `--fully-shard 2` round-tripping; a v6 file merged into v7 once, left untouched.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "data/store.h"
#include "tests/data_store/store_test_support.h"

using cpplan::data::StoredRun;
using namespace cpplan::test::store;  // the fixtures these tests share (store_test_support.h)

namespace {

std::string committed_v6() { return std::string(CPPLAN_TEST_PROFILES) + "/../tests/data/store-v6.db"; }

// `cpplan run --model flux-tiny --res 128x128 --ulysses 4 --fully-shard 2` as v7 records it.
RunRecord fully_sharded_run() {
  RunRecord r;
  r.run_key = "flux-tiny|128x128x1|4|fp32|r1u4t1c1d1|ua0ra0|allgather|b1|s0|fs2";
  r.model = "flux-tiny";
  r.width = r.height = 128;
  r.steps = 4;
  r.warmup = 1;
  r.dtype = "fp32";
  r.ulysses = 4;
  r.fs = 2;
  r.world_size = 4;
  r.status = "ok";
  r.started_at = "2026-12-02T10:00:00Z";
  r.finished_at = "2026-12-02T10:00:02Z";
  r.cpplan_version = "test";
  r.step_ms = 21.5;
  return r;
}

}  // namespace

TEST_CASE("the committed v6 database migrates in place to v7: its run held whole weights", "[data][store][migration]") {
  const std::string original = committed_v6();
  REQUIRE(fs::is_regular_file(original));
  const std::string original_bytes = read_bytes(original);
  CHECK(original_bytes.substr(60, 4) == std::string("\0\0\0\6", 4));  // user_version 6 (big-endian)

  TempDir dir;
  const std::string path = dir.file("store-v6.db");
  fs::copy_file(original, path);
  {
    Store store = open_store(path);
    CHECK(store.schema_version() == kCurrentSchema);
    const std::vector<StoredRun> runs = runs_of(store);
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].run.model == "flux-tiny");
    CHECK(runs[0].run.ulysses == 2);
    CHECK(runs[0].run.fs == 1);
    CHECK(cpplan::data::parallel_config(runs[0].run).fs() == 1);
    REQUIRE(store.record_run(laptop(), fully_sharded_run()).ok());
  }
  CHECK(raw_integer(path, "PRAGMA user_version") == 7);
  CHECK(raw_text(path, "SELECT group_concat(id || ':' || fs_degree, ' ') FROM runs") == "1:1 2:2");
  CHECK(read_bytes(original) == original_bytes);
}

TEST_CASE("a fully sharded run round-trips with its fs_degree", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  {
    Store store = open_store(path);
    REQUIRE(store.record_run(laptop(), fully_sharded_run()).ok());
  }
  Store store = open_store(path);
  const auto runs = runs_of(store);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].run == fully_sharded_run());
  const cpplan::ParallelConfig c = cpplan::data::parallel_config(runs[0].run);
  CHECK(c.fs() == 2);
  CHECK(c.world_size() == 4);  // the fs group lies over the Ulysses ranks: no GPU added
}

TEST_CASE("a v6 database merges into a v7 one, once, and stays untouched", "[data][store][merge][migration]") {
  TempDir dir;
  fs::create_directories(dir.path() / "old");
  const std::string old_path = (dir.path() / "old" / "store-v6.db").string();
  fs::copy_file(committed_v6(), old_path);
  const auto before = snapshot(dir.path() / "old");

  Store into = open_store(dir.file("new.db"));
  REQUIRE(into.record_run(laptop(), fully_sharded_run()).ok());
  for (int pass = 0; pass < 2; ++pass) {
    auto merged = into.merge_from(old_path);
    INFO((merged ? std::string() : merged.error().message));
    REQUIRE(merged.ok());
    CHECK(merged->runs_added == (pass == 0 ? 1 : 0));
  }
  const auto runs = runs_of(into);
  REQUIRE(runs.size() == 2);
  CHECK(raw_text(dir.file("new.db"), "SELECT group_concat(fs_degree, ' ') FROM (SELECT fs_degree FROM runs ORDER BY id)") ==
        "2 1");
  CHECK(snapshot(dir.path() / "old") == before);
  CHECK(raw_integer(old_path, "PRAGMA user_version") == 6);
}
