// Schema v5 of the store on real files: the committed v4 database (one `cpplan run --model
// flux-tiny --res 128x128 --ulysses 2`, recorded by the cpplan of schema v4) migrated in place, its
// run without PipeFusion (1, 1, 0); a PipeFusion run round-tripping; a v4 file merged into v5.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "data/store.h"
#include "tests/data_store/store_test_support.h"

using cpplan::data::StoredRun;
using namespace cpplan::test::store;  // the fixtures these tests share (store_test_support.h)

namespace {

std::string committed_v4() { return std::string(CPPLAN_TEST_PROFILES) + "/../tests/data/store-v4.db"; }

// `cpplan run --pipefusion 2 --num-pipeline-patch 4 --pipefusion-warmup-steps 1` as v5 records it.
RunRecord pipefusion_run() {
  RunRecord r;
  r.run_key = "flux-tiny|128x128x1|4|fp32|r1u1t1c1d1|ua0ra0|allgather|b1|s0|pf2m4w1";
  r.model = "flux-tiny";
  r.width = r.height = 128;
  r.steps = 4;
  r.warmup = 1;
  r.dtype = "fp32";
  r.pipefusion = 2;
  r.pipeline_patches = 4;
  r.pipefusion_warmup_steps = 1;
  r.world_size = 2;
  r.status = "ok";
  r.started_at = "2026-12-01T10:00:00Z";
  r.finished_at = "2026-12-01T10:00:02Z";
  r.cpplan_version = "test";
  r.step_ms = 12.5;
  return r;
}

}  // namespace

TEST_CASE("the committed v4 database migrates in place to v5: its run ran without PipeFusion",
          "[data][store][migration]") {
  const std::string original = committed_v4();
  REQUIRE(fs::is_regular_file(original));
  const std::string original_bytes = read_bytes(original);
  CHECK(original_bytes.substr(60, 4) == std::string("\0\0\0\4", 4));  // user_version 4 (big-endian)

  TempDir dir;
  const std::string path = dir.file("store-v4.db");
  fs::copy_file(original, path);
  {
    Store store = open_store(path);
    CHECK(store.schema_version() == kCurrentSchema);
    const std::vector<StoredRun> runs = runs_of(store);
    REQUIRE(runs.size() == 1);
    const RunRecord& r = runs[0].run;
    CHECK(r.model == "flux-tiny");
    CHECK(r.ulysses == 2);
    CHECK(r.world_size == 2);
    CHECK(r.pipefusion == 1);
    CHECK(r.pipeline_patches == 1);
    CHECK(r.pipefusion_warmup_steps == 0);
    CHECK(cpplan::data::parallel_config(r).pp() == 1);
    REQUIRE(store.record_run(laptop(), pipefusion_run()).ok());
    auto check = store.integrity_check();
    REQUIRE(check.ok());
    CHECK(*check == "ok");
  }
  CHECK(raw_integer(path, "PRAGMA user_version") == kCurrentSchema);
  CHECK(raw_text(path, "SELECT group_concat(id || ':' || pipefusion_degree || ':' || num_pipeline_patch || ':' || "
                       "pipefusion_warmup_steps, ' ') FROM runs") == "1:1:1:0 2:2:4:1");
  CHECK(read_bytes(original) == original_bytes);
}

TEST_CASE("a PipeFusion run round-trips through a v5 file, its plan whole", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  {
    Store store = open_store(path);
    REQUIRE(store.record_run(laptop(), pipefusion_run()).ok());
  }
  Store store = open_store(path);
  const auto runs = runs_of(store);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].run == pipefusion_run());
  const cpplan::ParallelConfig c = cpplan::data::parallel_config(runs[0].run);
  CHECK(c.pipefusion == cpplan::PipeFusionConfig{2, 4, 1});
  CHECK(c.world_size() == 2);
}

TEST_CASE("a v4 database merges into a v5 one, once, and stays untouched", "[data][store][merge][migration]") {
  TempDir dir;
  fs::create_directories(dir.path() / "old");
  const std::string old_path = (dir.path() / "old" / "store-v4.db").string();
  fs::copy_file(committed_v4(), old_path);
  const auto before = snapshot(dir.path() / "old");

  Store into = open_store(dir.file("new.db"));
  REQUIRE(into.record_run(laptop(), pipefusion_run()).ok());
  auto first = into.merge_from(old_path);
  INFO((first ? std::string() : first.error().message));
  REQUIRE(first.ok());
  CHECK(first->runs_added == 1);
  auto again = into.merge_from(old_path);
  REQUIRE(again.ok());
  CHECK(again->runs_added == 0);
  CHECK(again->runs_skipped == 1);
  const auto runs = runs_of(into);
  REQUIRE(runs.size() == 2);
  int with_pipefusion = 0;
  for (const StoredRun& r : runs) with_pipefusion += r.run.pipefusion > 1;
  CHECK(with_pipefusion == 1);
  CHECK(snapshot(dir.path() / "old") == before);
  CHECK(raw_integer(old_path, "PRAGMA user_version") == 4);
}
