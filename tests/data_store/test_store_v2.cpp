// Schema v2 of the store on real files: the committed v1 database migrated in place, measured
// samples and versioned calibrations read back exactly, and merging databases without
// duplicates while refusing (and not touching) files that are not cpplan's.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <regex>
#include <set>
#include <string>

#include <fmt/format.h>

#include "data/store.h"
#include "tests/data_store/store_test_support.h"
#include "tests/data_store/v1_fixture.h"

using cpplan::costmodel::Calibration;
using cpplan::costmodel::Collective;
using cpplan::costmodel::CollectiveSample;
using cpplan::costmodel::KernelKind;
using cpplan::costmodel::KernelSample;
using cpplan::costmodel::MeasurementSet;
using cpplan::data::MergeSummary;
using cpplan::data::StoredRun;
using namespace cpplan::test::store;  // the fixtures these tests share (store_test_support.h)
namespace v1 = cpplan::test::v1_fixture;

namespace {

std::string committed_v1() { return std::string(CPPLAN_TEST_PROFILES) + "/../tests/data/store-v1.db"; }

CollectiveSample collective(Collective kind, int ranks, double bytes, double time_us, double busbw_factor,
                            bool uneven = false) {
  CollectiveSample s;
  s.kind = kind;
  s.ranks = ranks;
  s.uneven = uneven;
  s.bytes = bytes;
  s.time_us = time_us;
  s.algbw_gbps = bytes / time_us / 1e3;
  s.busbw_gbps = s.algbw_gbps * busbw_factor;
  return s;
}

KernelSample kernel(KernelKind kind, std::string shape, double flops, double bytes, double rows, int concurrent,
                    double time_us) {
  KernelSample k;
  k.kind = kind;
  k.shape = std::move(shape);
  k.flops = flops;
  k.bytes = bytes;
  k.rows = rows;
  k.concurrent_ranks = concurrent;
  k.time_us = time_us;
  return k;
}

// Every collective and kernel kind, numbers that test exactness (1/3, 0.1 + 0.2, 1e-300, 2^53).
MeasurementSet probe_set() {
  MeasurementSet m;
  m.collectives = {
      collective(Collective::kAllGather, 2, 1024, 12.5, 0.5),
      collective(Collective::kAllToAll, 4, 1048576, 1.0 / 3.0, 0.75, true),
      collective(Collective::kAllReduce, 8, 268435456, 1234.5678, 1.75),
      collective(Collective::kReduceScatter, 8, 9007199254740992.0, 0.1 + 0.2, 0.875),
      collective(Collective::kSendRecv, 2, 0, 3.25, 1.0),
  };
  m.kernels = {
      kernel(KernelKind::kGemm, "m=4096 n=3072 k=3072", 2.0 * 4096 * 3072 * 3072, 75497472, 4096, 1, 98.75),
      kernel(KernelKind::kAttention, "q=4608 kv=4608 h=24 d=128", 2.6e11, 1e-300, 4608, 2, 1.0 / 3.0),
      kernel(KernelKind::kMemory, "it's \"rms_norm\"; DROP TABLE runs;--", 0, 50331648, 0, 4, 21.0),
      kernel(KernelKind::kConv, "", 1.5e12, 0, 0, 1, 0.1 + 0.2),
  };
  return m;
}

void check_same(const CollectiveSample& a, const CollectiveSample& b) {
  CHECK(a.kind == b.kind);
  CHECK(a.ranks == b.ranks);
  CHECK(a.uneven == b.uneven);
  CHECK(a.bytes == b.bytes);
  CHECK(a.time_us == b.time_us);
  CHECK(a.algbw_gbps == b.algbw_gbps);
  CHECK(a.busbw_gbps == b.busbw_gbps);
}

void check_same(const KernelSample& a, const KernelSample& b) {
  CHECK(a.kind == b.kind);
  CHECK(a.shape == b.shape);
  CHECK(a.flops == b.flops);
  CHECK(a.bytes == b.bytes);
  CHECK(a.rows == b.rows);
  CHECK(a.concurrent_ranks == b.concurrent_ranks);
  CHECK(a.time_us == b.time_us);
}

void check_same(const MeasurementSet& a, const MeasurementSet& b) {
  REQUIRE(a.collectives.size() == b.collectives.size());
  REQUIRE(a.kernels.size() == b.kernels.size());
  for (std::size_t i = 0; i < a.collectives.size(); ++i) check_same(a.collectives[i], b.collectives[i]);
  for (std::size_t i = 0; i < a.kernels.size(); ++i) check_same(a.kernels[i], b.kernels[i]);
}

Calibration calibration(const std::string& fitted_at, double scale = 1.0) {
  Calibration c;
  c.fitted_at = fitted_at;
  c.features = {"gemm_ms", "attention_ms", "comm_ms", "per_step_ms"};
  c.coefficients = {scale * (0.1 + 0.2), 1.0 / 3.0, 1e-300, -2.5};
  c.runs = 18;
  c.folds = 6;
  c.mape_before = 0.4125;
  c.mape_after = 0.0731;
  c.rank_corr_before = 0.61;
  c.rank_corr_after = 0.97;
  return c;
}

MeasurementSet measurements_of(const Store& store, const HardwareFingerprint& hw) {
  auto m = store.measurements(hw.key());
  INFO((m ? std::string() : m.error().message));
  REQUIRE(m.ok());
  return std::move(m).value();
}

MergeSummary merge(Store& into, const std::string& from) {
  auto summary = into.merge_from(from);
  INFO(from << ": " << (summary ? std::string() : summary.error().message));
  REQUIRE(summary.ok());
  return summary.value();
}

void check_summary(const MergeSummary& s, long long runs_added, long long runs_skipped, long long samples_added,
                   long long calibrations_added) {
  CHECK(s.runs_added == runs_added);
  CHECK(s.runs_skipped == runs_skipped);
  CHECK(s.samples_added == samples_added);
  CHECK(s.calibrations_added == calibrations_added);
}

RunRecord timed_run(const std::string& key, const std::string& started_at, double step_ms) {
  RunRecord r = minimal_run(key);
  r.started_at = started_at;
  r.step_ms = step_ms;
  r.step_times_ms = {step_ms, step_ms + 1};
  r.metrics = {{"rank1.peak_mem_bytes", 1e9}};
  return r;
}

}  // namespace

TEST_CASE("the committed v1 database migrates in place to the current schema with both runs intact", "[data][store][migration]") {
  const std::string original = committed_v1();
  REQUIRE(fs::is_regular_file(original));
  // Read as bytes only: an sqlite connection to it could leave -wal/-shm files in the source tree.
  const std::string original_bytes = read_bytes(original);
  REQUIRE(original_bytes.size() > 100);
  CHECK(original_bytes.substr(60, 4) == std::string("\0\0\0\1", 4));  // user_version 1 (big-endian)

  TempDir dir;
  const std::string path = dir.file("store-v1.db");
  fs::copy_file(original, path);
  {
    Store store = open_store(path);
    CHECK(store.schema_version() == kCurrentSchema);
    const std::vector<StoredRun> runs = runs_of(store);
    REQUIRE(runs.size() == 2);
    // Newest first: ids 2 and 1 as the v1 code recorded them, every field as it wrote it.
    CHECK(runs[0].id == 2);
    CHECK(runs[0].run == v1::cpu_run());
    CHECK(runs[0].hardware == v1::cpu_box());
    CHECK(runs[1].id == 1);
    CHECK(runs[1].run == v1::gpu_run());
    CHECK(runs[1].hardware == v1::gpu_node());
    CHECK(*runs[1].run.step_ms == 0.1 + 0.2);
    CHECK(runs[1].run.step_times_ms == std::vector<double>{255.5, 254.25, 1.0 / 3.0});

    auto machines = store.hardware();
    REQUIRE(machines.ok());
    CHECK(*machines == std::vector<HardwareFingerprint>{v1::gpu_node(), v1::cpu_box()});
    // The new tables exist, empty, and take rows.
    CHECK(measurements_of(store, v1::gpu_node()).collectives.empty());
    auto latest = store.latest_calibration(v1::gpu_node().key());
    REQUIRE(latest.ok());
    CHECK_FALSE(latest->has_value());
  }
  CHECK(raw_integer(path, "PRAGMA user_version") == kCurrentSchema);
  CHECK(raw_integer(path, "PRAGMA application_id") == 0x43504C4E);
  for (const char* table : {"collective_samples", "kernel_samples", "calibrations"}) {
    INFO(table);
    CHECK(raw_integer(path, std::string("SELECT count(*) FROM ") + table) == 0);
  }
  CHECK(raw_integer(path, "SELECT count(*) FROM run_metrics") == 5);
  {
    Store store = open_store(path);
    auto rows = store.record_measurements(v1::gpu_node(), probe_set(), "probe");
    REQUIRE(rows.ok());
    CHECK(*rows == 9);
    check_same(measurements_of(store, v1::gpu_node()), probe_set());
    auto version = store.record_calibration(v1::gpu_node(), calibration("2025-10-04T09:00:00Z"));
    REQUIRE(version.ok());
    CHECK(*version == 1);
    CHECK(store.record_run(v1::cpu_box(), minimal_run("after-migration")).value() == 3);
    auto check = store.integrity_check();
    REQUIRE(check.ok());
    CHECK(*check == "ok");
  }
  // The test read the committed file only through copies: byte for byte as committed, no -wal/-shm.
  CHECK(read_bytes(original) == original_bytes);
  CHECK_FALSE(fs::exists(original + "-wal"));
  CHECK_FALSE(fs::exists(original + "-shm"));
}

TEST_CASE("a new database is created at the current schema with every table and index", "[data][store][migration]") {
  TempDir dir;
  const std::string path = dir.file("new.db");
  { Store store = open_store(path); }
  CHECK(raw_integer(path, "PRAGMA user_version") == kCurrentSchema);
  CHECK(raw_integer(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('hardware', 'runs', "
                          "'run_metrics', 'collective_samples', 'kernel_samples', 'calibrations')") == 6);
  CHECK(raw_integer(path, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN "
                          "('collective_samples_lookup', 'kernel_samples_lookup')") == 2);
}

TEST_CASE("measurements read back exactly, per machine, in the order recorded", "[data][store][measurements]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  Store store = open_store(path);
  auto first = store.record_measurements(h200_node(), probe_set(), "probe");
  REQUIRE(first.ok());
  CHECK(*first == 9);

  MeasurementSet imported;
  imported.collectives = {collective(Collective::kAllReduce, 8, 134217728, 667.7, 1.75)};
  auto second = store.record_measurements(h200_node(), imported, "nccl-tests");
  REQUIRE(second.ok());
  CHECK(*second == 1);
  auto other = store.record_measurements(laptop(), imported, "probe");
  REQUIRE(other.ok());

  MeasurementSet expected = probe_set();
  expected.collectives.push_back(imported.collectives[0]);
  check_same(measurements_of(store, h200_node()), expected);
  check_same(measurements_of(store, laptop()), imported);
  HardwareFingerprint elsewhere = laptop();
  elsewhere.host = "elsewhere";
  const MeasurementSet unknown = measurements_of(store, elsewhere);
  CHECK(unknown.collectives.empty());
  CHECK(unknown.kernels.empty());

  CHECK(raw_integer(path, "SELECT count(*) FROM collective_samples WHERE source = 'nccl-tests'") == 1);
  CHECK(raw_integer(path, "SELECT count(*) FROM collective_samples WHERE source = 'probe'") == 6);
  CHECK(raw_text(path, "SELECT kind FROM collective_samples ORDER BY id LIMIT 1") == "all_gather");
  CHECK(raw_text(path, "SELECT kind FROM kernel_samples ORDER BY id LIMIT 1") == "gemm");
  const std::string recorded_at = raw_text(path, "SELECT recorded_at FROM kernel_samples LIMIT 1");
  CHECK(std::regex_match(recorded_at, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  CHECK(raw_integer(path, "SELECT count(*) FROM hardware") == 2);
}

TEST_CASE("invalid measurements are refused with the field named and nothing written", "[data][store][measurements]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  Store store = open_store(path);
  auto refused = [&](const HardwareFingerprint& hw, const MeasurementSet& m, const std::string& source) {
    auto rows = store.record_measurements(hw, m, source);
    REQUIRE_FALSE(rows.ok());
    CHECK_THAT(rows.error().message, Catch::StartsWith(path + ": cannot record measurements: "));
    return rows.error().message.substr(path.size() + 30);
  };
  CHECK(refused(h200_node(), probe_set(), "guess") == "source = 'guess': must be probe or nccl-tests");
  HardwareFingerprint tpu = laptop();
  tpu.device_kind = "tpu";
  CHECK(refused(tpu, probe_set(), "probe") == "device_kind = 'tpu': must be cpu or cuda");

  MeasurementSet m = probe_set();
  m.collectives[1].ranks = 0;
  CHECK(refused(h200_node(), m, "probe") == "collectives[1].ranks = 0: must be at least 1");
  m = probe_set();
  m.collectives[2].time_us = std::nan("");
  CHECK(refused(h200_node(), m, "probe") == "collectives[2].time_us = nan: must be a finite number >= 0");
  m = probe_set();
  m.collectives[0].busbw_gbps = std::numeric_limits<double>::infinity();
  CHECK(refused(h200_node(), m, "probe") == "collectives[0].busbw_gbps = inf: must be a finite number >= 0");
  m = probe_set();
  m.kernels[3].bytes = -1;
  CHECK(refused(h200_node(), m, "probe") == "kernels[3].bytes = -1: must be a finite number >= 0");
  m = probe_set();
  m.kernels[0].concurrent_ranks = 0;
  CHECK(refused(h200_node(), m, "probe") == "kernels[0].concurrent_ranks = 0: must be at least 1");

  for (const char* table : {"hardware", "collective_samples", "kernel_samples"}) {
    INFO(table);
    CHECK(raw_integer(path, std::string("SELECT count(*) FROM ") + table) == 0);
  }
}

TEST_CASE("hardware() lists every machine in the order first recorded", "[data][store]") {
  TempDir dir;
  Store store = open_store(dir.file("cpplan.db"));
  auto none = store.hardware();
  REQUIRE(none.ok());
  CHECK(none->empty());
  REQUIRE(store.record_run(laptop(), minimal_run("a")).ok());
  REQUIRE(store.record_measurements(h200_node(), probe_set(), "probe").ok());
  REQUIRE(store.record_run(h200_node(), minimal_run("b")).ok());
  auto machines = store.hardware();
  REQUIRE(machines.ok());
  CHECK(*machines == std::vector<HardwareFingerprint>{laptop(), h200_node()});
}

TEST_CASE("calibrations get increasing versions per machine and read back exactly", "[data][store][calibration]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  Store store = open_store(path);
  auto none = store.latest_calibration(h200_node().key());
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());

  CHECK(store.record_calibration(h200_node(), calibration("2025-11-01T10:00:00Z")).value() == 1);
  Calibration second = calibration("2025-11-02T10:00:00Z", 2.0);
  second.version = 41;                      // ignored: the store assigns versions
  second.fingerprint = h200_node().key();   // allowed: the machine's own key
  CHECK(store.record_calibration(h200_node(), second).value() == 2);
  CHECK(store.record_calibration(laptop(), calibration("2025-11-03T10:00:00Z")).value() == 1);

  auto latest = store.latest_calibration(h200_node().key());
  REQUIRE(latest.ok());
  REQUIRE(latest->has_value());
  const Calibration& c = **latest;
  CHECK(c.version == 2);
  CHECK(c.fingerprint == h200_node().key());
  CHECK(c.fitted_at == "2025-11-02T10:00:00Z");
  CHECK(c.features == std::vector<std::string>{"gemm_ms", "attention_ms", "comm_ms", "per_step_ms"});
  CHECK(c.coefficients == std::vector<double>{2.0 * (0.1 + 0.2), 1.0 / 3.0, 1e-300, -2.5});
  CHECK(c.runs == 18);
  CHECK(c.folds == 6);
  CHECK(c.mape_before == 0.4125);
  CHECK(c.mape_after == 0.0731);
  CHECK(c.rank_corr_before == 0.61);
  CHECK(c.rank_corr_after == 0.97);
  CHECK(raw_text(path, "SELECT features FROM calibrations WHERE version = 2") ==
        R"(["gemm_ms","attention_ms","comm_ms","per_step_ms"])");
  CHECK(store.latest_calibration(laptop().key()).value()->version == 1);
}

TEST_CASE("an invalid calibration is refused with the field named and no version used", "[data][store][calibration]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  Store store = open_store(path);
  auto refused = [&](const Calibration& c) {
    auto version = store.record_calibration(h200_node(), c);
    REQUIRE_FALSE(version.ok());
    CHECK_THAT(version.error().message, Catch::StartsWith(path + ": cannot record a calibration: "));
    return version.error().message.substr(path.size() + 31);
  };
  Calibration c = calibration("t");
  c.coefficients.pop_back();
  CHECK(refused(c) == "features: 4 names for 3 coefficients: must be as many");
  c = calibration("t");
  c.coefficients[1] = std::nan("");
  CHECK(refused(c) == "coefficients[1] (attention_ms) = nan: must be a finite number");
  c = calibration("t");
  c.features[2] = "";
  CHECK(refused(c) == "features[2] = '': must name the term");
  c = calibration("t");
  c.fingerprint = laptop().key();
  CHECK(refused(c) == "fingerprint = '" + laptop().key() + "': must be '' or the machine's key " + h200_node().key());
  c = calibration("t");
  c.mape_after = std::numeric_limits<double>::infinity();
  CHECK(refused(c) == "mape_after = inf: must be a finite number");
  c = calibration("t");
  c.folds = -1;
  CHECK(refused(c) == "folds = -1: must be at least 0");
  CHECK(raw_integer(path, "SELECT count(*) FROM calibrations") == 0);
  CHECK(store.record_calibration(h200_node(), calibration("t")).value() == 1);
}

TEST_CASE("four processes fitting at once get versions 1 to 20, none twice", "[data][store][calibration]") {
  TempDir dir;
  const std::string path = dir.file("cpplan.db");
  { Store store = open_store(path); }
  constexpr int kChildren = 4;
  constexpr int kEach = 5;
  std::vector<pid_t> children;
  for (int c = 0; c < kChildren; ++c) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int code = 0;
      {
        auto store = Store::open(path);
        for (int i = 0; store && code == 0 && i < kEach; ++i) {
          auto version = store.value().record_calibration(
              h200_node(), calibration("child" + std::to_string(c) + "-" + std::to_string(i)));
          if (!version) {
            std::fprintf(stderr, "child %d: %s\n", c, version.error().message.c_str());
            code = 2;
          }
        }
        if (!store) code = 1;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  CHECK(raw_integer(path, "SELECT count(DISTINCT version) FROM calibrations") == kChildren * kEach);
  CHECK(raw_integer(path, "SELECT min(version) FROM calibrations") == 1);
  CHECK(raw_integer(path, "SELECT max(version) FROM calibrations") == kChildren * kEach);
}

TEST_CASE("merging copies runs, metrics, machines, samples and calibrations without duplicates",
          "[data][store][merge]") {
  TempDir dir;
  const std::string a_path = dir.file("a.db");
  const std::string b_path = dir.file("b.db");
  {
    Store a = open_store(a_path);
    REQUIRE(a.record_run(h200_node(), timed_run("flux|r2", "2025-11-01T10:00:00Z", 100)).ok());
    REQUIRE(a.record_run(h200_node(), timed_run("flux|u2", "2025-11-01T10:05:00Z", 90)).ok());
    REQUIRE(a.record_measurements(h200_node(), probe_set(), "probe").ok());
    REQUIRE(a.record_calibration(h200_node(), calibration("2025-11-01T12:00:00Z")).ok());
  }
  {
    Store b = open_store(b_path);
    // The same run as in A (key, machine, started_at), even with another measurement: skipped.
    REQUIRE(b.record_run(h200_node(), timed_run("flux|r2", "2025-11-01T10:00:00Z", 101)).ok());
    // The same key started at another time, or on another machine: other runs.
    REQUIRE(b.record_run(h200_node(), timed_run("flux|r2", "2025-11-02T09:00:00Z", 99)).ok());
    REQUIRE(b.record_run(laptop(), timed_run("flux|r2", "2025-11-01T10:00:00Z", 900)).ok());
    // Runs without a key are the same only when every column is.
    REQUIRE(b.record_run(laptop(), minimal_run("")).ok());
    RunRecord unkeyed = minimal_run("");
    unkeyed.steps = 4;
    REQUIRE(b.record_run(laptop(), unkeyed).ok());
    REQUIRE(b.record_run(laptop(), minimal_run("")).ok());  // the first again: skipped within the merge
    REQUIRE(b.record_measurements(laptop(), probe_set(), "probe").ok());
    REQUIRE(b.record_calibration(h200_node(), calibration("2025-11-01T12:00:00Z")).ok());  // A has it
    REQUIRE(b.record_calibration(h200_node(), calibration("2025-11-02T12:00:00Z", 3.0)).ok());
  }
  // A's samples were recorded in another second than B's would be: copy them into B by SQL so
  // that both files hold the identical probe of the H200 (same recorded_at).
  raw_exec(b_path, "ATTACH '" + a_path + "' AS a; "
                   "INSERT INTO collective_samples (hardware_id, kind, ranks, uneven, bytes, time_us, algbw_gbps, "
                   "busbw_gbps, source, recorded_at) SELECT (SELECT id FROM hardware WHERE key = '" +
                       h200_node().key() +
                       "'), kind, ranks, uneven, bytes, time_us, algbw_gbps, busbw_gbps, source, recorded_at "
                       "FROM a.collective_samples;");
  const auto b_before = snapshot(dir.path())[b_path];

  Store a = open_store(a_path);
  const MergeSummary first = merge(a, b_path);
  // Runs: 2 keyed + 2 unkeyed added; the same r2 and the repeated unkeyed run skipped. Samples:
  // the laptop's 9; the H200's 5 collectives are in A already. Calibrations: the 11-02 one.
  check_summary(first, 4, 2, 9, 1);
  CHECK(snapshot(dir.path())[b_path] == b_before);  // the source is only read

  const std::vector<StoredRun> runs = runs_of(a);
  REQUIRE(runs.size() == 6);
  std::multiset<std::string> identities;
  for (const StoredRun& r : runs) identities.insert(r.run.run_key + "@" + r.hardware.host + "@" + r.run.started_at);
  CHECK(identities.count("flux|r2@node-17@2025-11-01T10:00:00Z") == 1);
  CHECK(identities.count("flux|r2@node-17@2025-11-02T09:00:00Z") == 1);
  CHECK(identities.count("flux|r2@laptop@2025-11-01T10:00:00Z") == 1);
  CHECK(identities.count("@laptop@") == 2);
  // The kept r2 is A's own (step 100), and a copied run carries its step times and metrics.
  for (const StoredRun& r : runs) {
    if (r.run.run_key == "flux|r2" && r.hardware == h200_node() && r.run.started_at == "2025-11-01T10:00:00Z") {
      CHECK(*r.run.step_ms == 100);
    }
    if (r.hardware == laptop() && r.run.run_key == "flux|r2") CHECK(r.run == timed_run("flux|r2", "2025-11-01T10:00:00Z", 900));
  }
  check_same(measurements_of(a, laptop()), probe_set());
  check_same(measurements_of(a, h200_node()), probe_set());
  auto latest = a.latest_calibration(h200_node().key());
  REQUIRE(latest.ok());
  REQUIRE(latest->has_value());
  CHECK((*latest)->version == 2);
  CHECK((*latest)->fitted_at == "2025-11-02T12:00:00Z");
  CHECK((*latest)->coefficients[0] == 3.0 * (0.1 + 0.2));

  SECTION("merging the same file again adds nothing") {
    check_summary(merge(a, b_path), 0, 6, 0, 0);
    CHECK(runs_of(a).size() == 6);
    CHECK(raw_integer(a_path, "SELECT count(*) FROM collective_samples") == 10);
    CHECK(raw_integer(a_path, "SELECT count(*) FROM calibrations") == 2);
    CHECK(raw_integer(a_path, "SELECT count(*) FROM hardware") == 2);
  }
  SECTION("merging the result back into the source completes it, then both agree") {
    Store b = open_store(b_path);
    check_summary(merge(b, a_path), 1, 5, 4, 0);  // A's flux|u2 and the H200's kernel samples
    check_summary(merge(a, b_path), 0, 7, 0, 0);
    CHECK(runs_of(b).size() == 7);
    check_same(measurements_of(b, h200_node()), probe_set());
  }
  auto check = a.integrity_check();
  REQUIRE(check.ok());
  CHECK(*check == "ok");
}

TEST_CASE("merging into an empty database copies the other exactly", "[data][store][merge]") {
  TempDir dir;
  const std::string from = dir.file("job-17.db");
  {
    Store s = open_store(from);
    REQUIRE(s.record_run(h200_node(), timed_run("k1", "2025-11-01T10:00:00Z", 12.5)).ok());
    RunRecord with_metrics = timed_run("k2", "2025-11-01T10:01:00Z", 1.0 / 3.0);
    with_metrics.metrics.emplace_back("step_ms", -1.0);  // a named metric called step_ms stays a metric
    REQUIRE(s.record_run(h200_node(), with_metrics).ok());
    REQUIRE(s.record_measurements(h200_node(), probe_set(), "nccl-tests").ok());
    MeasurementSet twice;  // identical samples are kept as many times as measured
    twice.collectives = {probe_set().collectives[0], probe_set().collectives[0]};
    REQUIRE(s.record_measurements(h200_node(), twice, "probe").ok());
    REQUIRE(s.record_calibration(h200_node(), calibration("2025-11-01T12:00:00Z")).ok());
  }
  Store source = open_store(from);
  fs::create_directories(dir.file("merged"));
  Store into = open_store(dir.file("merged/all.db"));
  check_summary(merge(into, from), 2, 0, 11, 1);
  check_summary(merge(into, from), 0, 2, 0, 0);

  const auto a = runs_of(source);
  const auto b = runs_of(into);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].run == b[i].run);
    CHECK(a[i].hardware == b[i].hardware);
  }
  check_same(measurements_of(into, h200_node()), measurements_of(source, h200_node()));
  CHECK(into.latest_calibration(h200_node().key()).value()->coefficients ==
        source.latest_calibration(h200_node().key()).value()->coefficients);
}

TEST_CASE("a v1 database merges its runs into a current one and stays untouched", "[data][store][merge][migration]") {
  TempDir dir;
  fs::create_directories(dir.path() / "old");
  const std::string old_path = (dir.path() / "old" / "store-v1.db").string();
  fs::copy_file(committed_v1(), old_path);
  const auto before = snapshot(dir.path() / "old");

  Store into = open_store(dir.file("new.db"));
  check_summary(merge(into, old_path), 2, 0, 0, 0);
  const auto runs = runs_of(into);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].run == v1::cpu_run());
  CHECK(runs[1].run == v1::gpu_run());
  CHECK(runs[1].hardware == v1::gpu_node());
  CHECK(snapshot(dir.path() / "old") == before);  // still v1, no -wal/-shm beside it
  CHECK(raw_integer(old_path, "PRAGMA user_version") == 1);
}

TEST_CASE("merging a file that is not a cpplan database is refused and touches nothing", "[data][store][merge]") {
  TempDir dir;
  fs::create_directories(dir.path() / "other");
  const std::string into_path = dir.file("cpplan.db");
  Store into = open_store(into_path);
  REQUIRE(into.record_run(laptop(), minimal_run("mine")).ok());

  std::string path;
  std::string expected;
  SECTION("a text file") {
    path = (dir.path() / "other" / "notes.db").string();
    write_bytes(path, "not a database\n");
    expected = "not an SQLite database";
  }
  SECTION("another program's SQLite database") {
    path = (dir.path() / "other" / "foreign.db").string();
    raw_exec(path, "PRAGMA journal_mode = WAL; CREATE TABLE runs (x INTEGER); INSERT INTO runs VALUES (1);");
    expected = "not a cpplan database";
  }
  SECTION("a database of a newer cpplan") {
    path = (dir.path() / "other" / "newer.db").string();
    { Store newer = open_store(path); }
    raw_exec(path, fmt::format("PRAGMA user_version = {};", kCurrentSchema + 1));
    expected = fmt::format("schema version {} is newer than this cpplan knows ({})", kCurrentSchema + 1, kCurrentSchema);
  }
  SECTION("an empty file") {
    path = (dir.path() / "other" / "empty.db").string();
    write_bytes(path, "");
    expected = "not a cpplan database (empty, no schema)";
  }
  SECTION("a missing file") {
    path = (dir.path() / "other" / "missing.db").string();
    expected = "no such file";
  }
  SECTION("the database itself") {
    path = into_path;
    expected = "is the database being merged into";
  }
  const auto before = snapshot(dir.path() / "other");
  auto summary = into.merge_from(path);
  REQUIRE_FALSE(summary.ok());
  INFO(summary.error().message);
  CHECK_THAT(summary.error().message, Catch::StartsWith(path + ": "));
  CHECK_THAT(summary.error().message, Catch::Contains(expected));
  CHECK(snapshot(dir.path() / "other") == before);
  CHECK(runs_of(into).size() == 1);
}

TEST_CASE("a moved-from store refuses the v2 calls with an error", "[data][store]") {
  TempDir dir;
  Store store = open_store(dir.file("cpplan.db"));
  Store moved = std::move(store);
  // NOLINTBEGIN(bugprone-use-after-move): the point of the test
  CHECK_FALSE(store.hardware().ok());
  CHECK_FALSE(store.record_measurements(laptop(), probe_set(), "probe").ok());
  CHECK_FALSE(store.measurements(laptop().key()).ok());
  CHECK_FALSE(store.record_calibration(laptop(), calibration("t")).ok());
  CHECK_FALSE(store.latest_calibration(laptop().key()).ok());
  CHECK_FALSE(store.merge_from(dir.file("other.db")).ok());
  // NOLINTEND(bugprone-use-after-move)
  CHECK(moved.hardware().ok());
}
