// Schema v3 of the store on real files: the committed v2 database migrated in place (its runs
// become executor runs of one image), pipeline runs round-tripping with their new fields, and
// merges from v2 and v3 files.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "data/store.h"
#include "tests/data_store/store_test_support.h"
#include "tests/data_store/v1_fixture.h"
#include "tests/data_store/v2_fixture.h"

using cpplan::data::MergeSummary;
using cpplan::data::StoredRun;
using namespace cpplan::test::store;  // the fixtures these tests share (store_test_support.h)
namespace v1 = cpplan::test::v1_fixture;
namespace v2 = cpplan::test::v2_fixture;

namespace {

std::string committed_v2() { return std::string(CPPLAN_TEST_PROFILES) + "/../tests/data/store-v2.db"; }

MergeSummary merge(Store& into, const std::string& from) {
  auto summary = into.merge_from(from);
  INFO(from << ": " << (summary ? std::string() : summary.error().message));
  REQUIRE(summary.ok());
  return summary.value();
}

// A run timed in a user's diffusers pipeline (python/cpplan_record.py), as import-runs stores it.
RunRecord pipeline_run() {
  RunRecord r;
  r.run_key = "pipeline-0123456789abcdef";
  r.model = "flux.1-dev";
  r.width = 1024;
  r.height = 1024;
  r.steps = 3;
  r.dtype = "bf16";
  r.ulysses = 4;
  r.ulysses_anything = true;
  r.world_size = 4;
  r.status = "ok";
  r.started_at = "2025-12-01T09:00:00Z";
  r.finished_at = "2025-12-01T09:00:02Z";
  r.cpplan_version = "0.1.0";
  r.step_ms = 250.5;
  r.step_ms_p10 = 250.0;
  r.step_ms_p90 = 251.0;
  r.steps_per_sec = 1000.0 / 250.5;
  r.peak_mem_bytes = 3.5e10;
  r.source = "pipeline";
  r.runtime = "diffusers";
  r.text_encoder = "offloaded";
  r.vae = "single";
  r.batch = 2;
  r.image_ms = 0.1 + 0.2;
  r.text_encode_ms = 1.0 / 3.0;
  r.vae_decode_ms = 61.25;
  r.step_times_ms = {251.0, 250.5, 250.0};
  return r;
}

}  // namespace

TEST_CASE("the committed v2 database migrates in place to the current schema, its runs becoming executor runs of one image",
          "[data][store][migration]") {
  const std::string original = committed_v2();
  REQUIRE(fs::is_regular_file(original));
  const std::string original_bytes = read_bytes(original);
  REQUIRE(original_bytes.size() > 100);
  CHECK(original_bytes.substr(60, 4) == std::string("\0\0\0\2", 4));  // user_version 2 (big-endian)

  TempDir dir;
  const std::string path = dir.file("store-v2.db");
  fs::copy_file(original, path);
  {
    Store store = open_store(path);
    CHECK(store.schema_version() == kCurrentSchema);
    const std::vector<StoredRun> runs = runs_of(store);
    REQUIRE(runs.size() == 2);
    // The v2 code recorded v1_fixture's runs; a default RunRecord's new fields are what v3 fills in.
    CHECK(runs[0].id == 2);
    CHECK(runs[0].run == v1::cpu_run());
    CHECK(runs[1].id == 1);
    CHECK(runs[1].run == v1::gpu_run());
    CHECK(runs[1].hardware == v1::gpu_node());
    for (const StoredRun& r : runs) {
      CHECK(r.run.source == "executor");
      CHECK(r.run.runtime.empty());
      CHECK(r.run.batch == 1);
      CHECK_FALSE(r.run.image_ms.has_value());
    }
    auto samples = store.measurements(v1::gpu_node().key());
    REQUIRE(samples.ok());
    REQUIRE(samples->collectives.size() == 1);
    REQUIRE(samples->kernels.size() == 1);
    CHECK(samples->collectives[0].time_us == 1.0 / 3.0);
    CHECK(samples->kernels[0].shape == "m=4096 n=3072 k=3072");
    auto latest = store.latest_calibration(v1::gpu_node().key());
    REQUIRE(latest.ok());
    REQUIRE(latest->has_value());
    CHECK((*latest)->version == 1);
    CHECK((*latest)->coefficients == v2::calibration().coefficients);

    auto id = store.record_run(v1::gpu_node(), pipeline_run());
    INFO((id ? std::string() : id.error().message));
    REQUIRE(id.ok());
    CHECK(*id == 3);
    CHECK(runs_of(store).front().run == pipeline_run());
    auto check = store.integrity_check();
    REQUIRE(check.ok());
    CHECK(*check == "ok");
  }
  CHECK(raw_integer(path, "PRAGMA user_version") == kCurrentSchema);
  // The columns' own defaults, read with sqlite directly.
  CHECK(raw_text(path, "SELECT source || '|' || runtime || '|' || text_encoder || '|' || vae || '|' || batch || '|' || "
                       "(image_ms IS NULL) || (text_encode_ms IS NULL) || (vae_decode_ms IS NULL) FROM runs WHERE id = 1") ==
        "executor||||1|111");
  CHECK(raw_text(path, "SELECT source || '|' || runtime || '|' || batch FROM runs WHERE id = 3") == "pipeline|diffusers|2");
  CHECK(read_bytes(original) == original_bytes);
  CHECK_FALSE(fs::exists(original + "-wal"));
  CHECK_FALSE(fs::exists(original + "-shm"));
}

TEST_CASE("a v2 database merges into a v3 one as executor runs, once, and stays untouched",
          "[data][store][merge][migration]") {
  TempDir dir;
  fs::create_directories(dir.path() / "old");
  const std::string old_path = (dir.path() / "old" / "store-v2.db").string();
  fs::copy_file(committed_v2(), old_path);
  const auto before = snapshot(dir.path() / "old");

  Store into = open_store(dir.file("new.db"));
  REQUIRE(into.record_run(laptop(), pipeline_run()).ok());
  const MergeSummary first = merge(into, old_path);
  CHECK(first.runs_added == 2);
  CHECK(first.runs_skipped == 0);
  CHECK(first.samples_added == 2);
  CHECK(first.calibrations_added == 1);
  const MergeSummary again = merge(into, old_path);
  CHECK(again.runs_added == 0);
  CHECK(again.runs_skipped == 2);
  CHECK(again.samples_added == 0);
  CHECK(again.calibrations_added == 0);

  const auto runs = runs_of(into);
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].run == v1::cpu_run());
  CHECK(runs[1].run == v1::gpu_run());
  CHECK(runs[2].run == pipeline_run());
  CHECK(snapshot(dir.path() / "old") == before);
  CHECK(raw_integer(old_path, "PRAGMA user_version") == 2);
}

TEST_CASE("pipeline runs merge between v3 databases with every new field", "[data][store][merge]") {
  TempDir dir;
  const std::string a_path = dir.file("a.db");
  {
    Store a = open_store(a_path);
    REQUIRE(a.record_run(h200_node(), pipeline_run()).ok());
    RunRecord unkeyed = pipeline_run();
    unkeyed.run_key = "";
    unkeyed.vae = "parallel";
    REQUIRE(a.record_run(h200_node(), unkeyed).ok());
  }
  Store b = open_store(dir.file("b.db"));
  const MergeSummary first = merge(b, a_path);
  CHECK(first.runs_added == 2);
  CHECK(merge(b, a_path).runs_skipped == 2);
  const auto runs = runs_of(b);
  REQUIRE(runs.size() == 2);
  CHECK(runs[1].run == pipeline_run());
  CHECK(runs[0].run.vae == "parallel");
  CHECK(runs[0].run.image_ms == pipeline_run().image_ms);
  CHECK(runs[0].hardware == h200_node());
}

TEST_CASE("record_runs adds runs in one transaction and skips those already there", "[data][store]") {
  TempDir dir;
  Store store = open_store(dir.file("cpplan.db"));
  RunRecord later = pipeline_run();
  later.started_at = "2025-12-01T09:05:00Z";  // same key, another start: another run
  RunRecord unkeyed = pipeline_run();
  unkeyed.run_key = "";  // never skipped
  auto first = store.record_runs({{h200_node(), pipeline_run()}, {h200_node(), pipeline_run()}, {h200_node(), later}});
  INFO((first ? std::string() : first.error().message));
  REQUIRE(first.ok());
  CHECK(first->added == 2);
  CHECK(first->skipped == 1);  // the second copy of the first run
  auto again = store.record_runs({{h200_node(), pipeline_run()}, {laptop(), pipeline_run()}, {h200_node(), unkeyed}});
  REQUIRE(again.ok());
  CHECK(again->added == 2);  // the laptop is another machine; the unkeyed run is new
  CHECK(again->skipped == 1);
  CHECK(runs_of(store).size() == 4);
  CHECK(runs_of(store)[3].run == pipeline_run());
}

TEST_CASE("record_runs with one invalid run writes nothing and names it", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  Store store = open_store(path);
  RunRecord bad = pipeline_run();
  bad.source = "notebook";
  auto r = store.record_runs({{h200_node(), pipeline_run()}, {h200_node(), bad}});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("run 1 'pipeline-0123456789abcdef': source = 'notebook'"));
  CHECK(runs_of(store).empty());
  CHECK(raw_integer(path, "SELECT count(*) FROM hardware") == 0);
}
