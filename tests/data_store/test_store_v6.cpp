// Schema v6 of the store on real files: the nodes a collective sample's ranks sat on. The
// committed v5 database (`cpplan import-nccl-tests tests/data/nccl-tests/all_reduce_perf-h100x8.txt`,
// recorded by the cpplan of schema v5 on a host named node-a) migrated in place, its 18 samples
// within one node; a two-node sample round-tripping; merges from v5 and v6 files.
#include <catch2/catch.hpp>

#include <string>

#include "data/store.h"
#include "tests/data_store/store_test_support.h"

using cpplan::costmodel::Collective;
using cpplan::costmodel::CollectiveSample;
using cpplan::costmodel::MeasurementSet;
using namespace cpplan::test::store;  // the fixtures these tests share (store_test_support.h)

namespace {

std::string committed_v5() { return std::string(CPPLAN_TEST_PROFILES) + "/../tests/data/store-v5.db"; }
constexpr const char* kV5Machine = "a55eabc42e48fe39";  // its import's fingerprint (H100, host node-a)

// One all_to_all row of 16 ranks on 2 nodes (nccl-tests' 256 MiB row of a 2 x 8 H100 cluster).
MeasurementSet two_node_set() {
  CollectiveSample s;
  s.kind = Collective::kAllToAll;
  s.ranks = 16;
  s.nodes = 2;
  s.bytes = 268435456;
  s.time_us = 61220;
  s.algbw_gbps = 4.38;
  s.busbw_gbps = 4.11;
  MeasurementSet set;
  set.collectives.push_back(s);
  return set;
}

MeasurementSet measurements_of(const Store& store, const std::string& key) {
  auto m = store.measurements(key);
  INFO((m ? std::string() : m.error().message));
  REQUIRE(m.ok());
  return std::move(m).value();
}

}  // namespace

TEST_CASE("the committed v5 database migrates in place to v6: its samples sat on one node",
          "[data][store][migration]") {
  const std::string original = committed_v5();
  REQUIRE(fs::is_regular_file(original));
  const std::string original_bytes = read_bytes(original);
  CHECK(original_bytes.substr(60, 4) == std::string("\0\0\0\5", 4));  // user_version 5 (big-endian)

  TempDir dir;
  const std::string path = dir.file("store-v5.db");
  fs::copy_file(original, path);
  {
    Store store = open_store(path);
    CHECK(store.schema_version() == kCurrentSchema);
    const MeasurementSet m = measurements_of(store, kV5Machine);
    REQUIRE(m.collectives.size() == 18);
    for (const CollectiveSample& s : m.collectives) {
      CHECK(s.kind == Collective::kAllReduce);
      CHECK(s.ranks == 8);
      CHECK(s.nodes == 1);
    }
    auto check = store.integrity_check();
    REQUIRE(check.ok());
    CHECK(*check == "ok");
  }
  CHECK(raw_integer(path, "PRAGMA user_version") == kCurrentSchema);
  CHECK(raw_text(path, "SELECT group_concat(DISTINCT nodes) FROM collective_samples") == "1");
  CHECK(read_bytes(original) == original_bytes);
}

TEST_CASE("a sample of ranks on two nodes round-trips, a node count beyond the ranks is refused", "[data][store]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  {
    Store store = open_store(path);
    REQUIRE(store.record_measurements(h200_node(), two_node_set(), "nccl-tests").ok());
    MeasurementSet wrong = two_node_set();
    wrong.collectives[0].nodes = 17;
    auto refused = store.record_measurements(h200_node(), wrong, "nccl-tests");
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.error().message, Catch::Contains("collectives[0].nodes = 17: must be from 1 to its ranks (16)"));
  }
  Store store = open_store(path);
  const MeasurementSet m = measurements_of(store, h200_node().key());
  REQUIRE(m.collectives.size() == 1);
  CHECK(m.collectives[0].nodes == 2);
  CHECK(m.collectives[0].ranks == 16);
  CHECK(m.collectives[0].time_us == 61220);
}

TEST_CASE("merges copy the nodes of v6 samples and give v5 samples one node, once", "[data][store][merge][migration]") {
  TempDir dir;
  fs::create_directories(dir.path() / "old");
  const std::string v5_path = (dir.path() / "old" / "store-v5.db").string();
  fs::copy_file(committed_v5(), v5_path);
  const auto before = snapshot(dir.path() / "old");
  const std::string v6_path = dir.file("cluster.db");
  {
    Store cluster = open_store(v6_path);
    REQUIRE(cluster.record_measurements(h200_node(), two_node_set(), "nccl-tests").ok());
  }

  Store into = open_store(dir.file("into.db"));
  for (int pass = 0; pass < 2; ++pass) {
    auto from_v5 = into.merge_from(v5_path);
    INFO((from_v5 ? std::string() : from_v5.error().message));
    REQUIRE(from_v5.ok());
    CHECK(from_v5->samples_added == (pass == 0 ? 18 : 0));
    auto from_v6 = into.merge_from(v6_path);
    REQUIRE(from_v6.ok());
    CHECK(from_v6->samples_added == (pass == 0 ? 1 : 0));
  }
  const MeasurementSet cluster = measurements_of(into, h200_node().key());
  REQUIRE(cluster.collectives.size() == 1);
  CHECK(cluster.collectives[0].nodes == 2);
  const MeasurementSet node = measurements_of(into, kV5Machine);
  REQUIRE(node.collectives.size() == 18);
  CHECK(node.collectives[0].nodes == 1);
  CHECK(snapshot(dir.path() / "old") == before);
  CHECK(raw_integer(v5_path, "PRAGMA user_version") == 5);
}
