// `cpplan import-nccl-tests` and `cpplan db merge` in-process on real files: what they record and
// print, and bad input as one line with exit code 3.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.h"
#include "exec/machine.h"
#include "costmodel/calibration.h"
#include "data/store.h"
#include "tests/cli/run_cli.h"

namespace fs = std::filesystem;
using cpplan::test::run_cli;

namespace {

std::string fixture(const std::string& name) {
  return std::string(CPPLAN_TEST_PROFILES) + "/../tests/data/nccl-tests/" + name;
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

// Temp directories named cpplan-cli-store-XXXXXX.
struct TempDir : cpplan::test::TempDir {
  TempDir() : cpplan::test::TempDir("cpplan-cli-store-") {}
};

cpplan::data::Store open_store(const std::string& path) {
  auto store = cpplan::data::Store::open(path);
  REQUIRE(store.ok());
  return std::move(store).value();
}

}  // namespace

TEST_CASE("import-nccl-tests records every row under the file's GPU and prints the peak", "[cli][store]") {
  TempDir dir;
  const std::string db = dir.file("cpplan.db");
  const auto r = run_cli({"import-nccl-tests", fixture("all_reduce_perf-h100x8.txt"), "--db", db});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("18 rows of all_reduce_perf recorded in " + db));
  CHECK_THAT(r.out, Catch::Contains("(cuda, NVIDIA H100 80GB HBM3, host "));
  CHECK_THAT(r.out, Catch::Contains("all_reduce          8    18  1 KiB .. 128 MiB       351.79 GB/s at 128 MiB"));

  const auto j = run_cli({"import-nccl-tests", fixture("all_gather_perf.json"), "--db", db});
  REQUIRE(j.code == 0);
  CHECK_THAT(j.out, Catch::Contains("all_gather          8     6  1 MiB .. 1 GiB         371.10 GB/s at 1 GiB"));

  auto store = open_store(db);
  auto machines = store.hardware();
  REQUIRE(machines.ok());
  REQUIRE(machines->size() == 1);  // both files: one machine
  CHECK(machines->front().device_kind == "cuda");
  CHECK(machines->front().gpu_name == "NVIDIA H100 80GB HBM3");
  auto m = store.measurements(machines->front().key());
  REQUIRE(m.ok());
  CHECK(m->collectives.size() == 24);
  CHECK(m->collectives.back().busbw_gbps == 371.1);
}

TEST_CASE("import-nccl-tests --json: a two-node MPI log, its hosts, ranks per node and GPU", "[cli][store]") {
  TempDir dir;
  const std::string db = dir.file("cpplan.db");
  const auto r = run_cli({"import-nccl-tests", fixture("all_reduce_perf_mpi-2nodes.txt"), "--db", db, "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["collective"] == "all_reduce_perf_mpi");
  CHECK(j["ranks"] == 2);
  CHECK(j["nodes"] == 2);
  CHECK(j["ranks_per_node"] == 1);
  CHECK(j["hosts"] == nlohmann::json({"test-nccl-efa-worker-0", "test-nccl-efa-worker-1"}));
  CHECK(j["gpu"] == "NVIDIA A100-SXM4-40GB");
  CHECK(j["rows"] == 6);  // 7 rows, the 0-byte one left out
  CHECK(j["peak_busbw_gbps"] == 3.05);
  const auto text = run_cli({"import-nccl-tests", fixture("nccl-old.log"), "--collective", "all_gather_perf", "--db", db});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("ranks on 2 nodes, at most 4 per node: gpu-a01, gpu-a02"));
}

TEST_CASE("import-nccl-tests takes --ranks, --collective and --hardware-name", "[cli][store]") {
  TempDir dir;
  const std::string db = dir.file("cpplan.db");
  const auto r = run_cli({"import-nccl-tests", fixture("broken-ranks.txt"), "--ranks", "8", "--collective",
                          "all_reduce_perf", "--hardware-name", "H100 SXM (cluster A)", "--db", db});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("3 rows of all_reduce_perf"));
  auto store = open_store(db);
  auto machines = store.hardware();
  REQUIRE(machines.ok());
  REQUIRE(machines->size() == 1);
  CHECK(machines->front().gpu_name == "H100 SXM (cluster A)");
  CHECK(store.measurements(machines->front().key()).value().collectives.front().ranks == 8);
}

TEST_CASE("import-nccl-tests refuses bad input in one line with exit 3", "[cli][store]") {
  TempDir dir;
  const std::string db = dir.file("cpplan.db");
  const std::string broken = fixture("broken-time.txt");
  const auto bad_row = run_cli({"import-nccl-tests", broken, "--db", db});
  CHECK(bad_row.code == 3);
  CHECK(bad_row.err == "cpplan import-nccl-tests: " + broken + ":8: column time(us) = 'abc': not a number\n");
  CHECK_FALSE(fs::exists(db));  // nothing parsed, nothing created

  const auto bad_ranks = run_cli({"import-nccl-tests", fixture("alltoall_perf.txt"), "--ranks", "x", "--db", db});
  CHECK(bad_ranks.code == 3);
  CHECK(bad_ranks.err == "cpplan: --ranks = x: must be an integer\n");

  const auto missing = run_cli({"import-nccl-tests", dir.file("nope.txt"), "--db", db});
  CHECK(missing.code == 3);
  CHECK(missing.err == "cpplan import-nccl-tests: " + dir.file("nope.txt") + ": cannot read: No such file or directory\n");

  const std::string foreign = dir.file("notes.db");
  std::ofstream(foreign) << "my notes\n";
  const auto refused = run_cli({"import-nccl-tests", fixture("alltoall_perf.txt"), "--db", foreign});
  CHECK(refused.code == 3);
  CHECK(lines(refused.err) == 1);
  CHECK_THAT(refused.err, Catch::Contains(foreign + ": not an SQLite database"));

  CHECK(run_cli({"import-nccl-tests"}).code == 2);
}

TEST_CASE("db merge combines job databases without duplicates and refuses foreign files", "[cli][store]") {
  TempDir dir;
  const std::string a = dir.file("job-1.db");
  const std::string b = dir.file("job-2.db");
  const std::string all = dir.file("all.db");
  REQUIRE(run_cli({"import-nccl-tests", fixture("all_reduce_perf-h100x8.txt"), "--db", a}).code == 0);
  REQUIRE(run_cli({"import-nccl-tests", fixture("srun-all_reduce.log"), "--db", b}).code == 0);

  const auto first = run_cli({"db", "merge", a, b, "--into", all});
  INFO(first.err);
  REQUIRE(first.code == 0);
  CHECK_THAT(first.out, Catch::Contains(a + ": 0 runs added, 0 already there; 18 samples, 0 calibrations added"));
  CHECK_THAT(first.out, Catch::Contains(b + ": 0 runs added, 0 already there; 12 samples, 0 calibrations added"));
  CHECK_THAT(first.out, Catch::Contains("merged 2 files into " + all + ": 0 runs added, 0 already there; 30 samples"));

  const auto again = run_cli({"db", "merge", a, b, "--into", all});
  REQUIRE(again.code == 0);
  CHECK_THAT(again.out, Catch::Contains("merged 2 files into " + all + ": 0 runs added, 0 already there; 0 samples"));

  const std::string notes = dir.file("notes.db");
  std::ofstream(notes) << "my notes\n";
  const auto refused = run_cli({"db", "merge", a, notes, "--into", all});
  CHECK(refused.code == 3);
  CHECK(lines(refused.err) == 1);
  CHECK_THAT(refused.err, Catch::StartsWith("cpplan db merge: " + notes + ": not an SQLite database"));
  CHECK_THAT(refused.err, Catch::EndsWith("(merged before it: 1 of 2 files)\n"));

  CHECK(run_cli({"db", "merge", a}).code == 2);  // --into is required
}

TEST_CASE("hardware local plans with this machine's probes and calibration, and says so", "[cli][store]") {
  using namespace cpplan::costmodel;
  TempDir dir;
  const std::string db = dir.file("local.db");
  const std::vector<std::string> query{"--hardware", "local", "--db",  db,       "--gpus",
                                       "2",          "--model", "flux-tiny", "--res", "128x128"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = query;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  };

  SECTION("no database: one line, exit 3, and no file created") {
    const auto r = with({});
    CHECK(r.code == 3);
    CHECK(r.err == "cpplan: --hardware = local: no database at " + db + " (run cpplan probe first)\n");
    CHECK_FALSE(fs::exists(db));
  }
  SECTION("a database without probes of this machine: one line, exit 3") {
    { auto store = open_store(db); }
    const auto r = with({});
    CHECK(r.code == 3);
    CHECK(r.err == "cpplan: --hardware = local: " + db + " holds no probe of this machine (run cpplan probe first)\n");
  }
  SECTION("probes: measured terms; a calibration: calibrated step times") {
    MeasurementSet m;  // GEMMs and all-gathers measured; the rest falls back to the local profile
    m.kernels.push_back({KernelKind::kGemm, "small", 1e6, 0, 16, 1, 10});
    m.kernels.push_back({KernelKind::kGemm, "large", 1e10, 0, 4096, 1, 1e4});
    m.collectives.push_back({Collective::kAllGather, 2, false, 1e3, 40, 0.025, 0.0125});
    m.collectives.push_back({Collective::kAllGather, 2, false, 1e8, 1e5, 1, 0.5});
    {
      auto store = open_store(db);
      REQUIRE(store.record_measurements(cpplan::exec::machine(false).fingerprint, m, "probe").ok());
    }
    auto r = with({"--json"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["hardware"] == "local");
    const auto& ring = *std::find_if(j["plans"].begin(), j["plans"].end(),
                                     [](const auto& p) { return p["label"] == "ring 2"; });
    const auto& block = ring["predicted"]["blocks"][0];
    CHECK(block["sources"]["gemm"] == "measured");
    CHECK(block["sources"]["comm"] == "measured");  // the ring's K/V all-gather
    CHECK(ring["predicted"]["calibrated"] == false);
    CHECK(ring["predicted"]["uncalibrated_step_ms"].is_null());
    const double analytic = ring["predicted"]["step_ms"];

    Calibration cal;  // step_ms = 7 ms flat: an easy figure to find again
    cal.features = {"gemm", "attention", "memory", "launch", "comm", "constant", "oversubscribed"};
    cal.coefficients = {0, 0, 0, 0, 0, 7.0, 0};
    cal.runs = 6;
    cal.folds = 3;
    {
      auto store = open_store(db);
      REQUIRE(store.record_calibration(cpplan::exec::machine(false).fingerprint, cal).ok());
    }
    r = with({"--json"});
    REQUIRE(r.code == 0);
    j = nlohmann::json::parse(r.out);
    for (const auto& p : j["plans"]) {
      CHECK(p["predicted"]["calibrated"] == true);
      CHECK(p["predicted"]["step_ms"] == Approx(7.0));
    }
    const auto& again = *std::find_if(j["plans"].begin(), j["plans"].end(),
                                      [](const auto& p) { return p["label"] == "ring 2"; });
    CHECK(again["predicted"]["uncalibrated_step_ms"] == Approx(analytic));

    r = with({"--explain"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("predictions from datasheet figures, step times calibrated to this machine's runs"));
    CHECK_THAT(r.out, Catch::Contains("GEMM "));
    CHECK_THAT(r.out, Catch::Contains(" [measured], attention "));
    CHECK_THAT(r.out, Catch::Contains(" analytic; calibrated: 7.00 ms"));
  }
}

TEST_CASE("cpplan calibrate fits this machine's runs with the feature list that sums to the model's step",
          "[cli][store][calibration]") {
  using namespace cpplan::costmodel;
  TempDir dir;
  const std::string db = dir.file("calibrate.db");
  MeasurementSet m;
  m.kernels.push_back({KernelKind::kGemm, "small", 1e6, 0, 16, 1, 10});
  m.kernels.push_back({KernelKind::kGemm, "large", 1e10, 0, 4096, 1, 1e4});
  m.kernels.push_back({KernelKind::kMemory, "launch", 0, 4, 1, 1, 2});
  m.kernels.push_back({KernelKind::kMemory, "copy", 0, 1e8, 1, 1, 1e4});
  m.collectives.push_back({Collective::kAllGather, 2, false, 1e3, 40, 0.025, 0.0125});
  m.collectives.push_back({Collective::kAllGather, 2, false, 1e8, 1e5, 1, 0.5});
  {
    auto store = open_store(db);
    REQUIRE(store.record_measurements(cpplan::exec::machine(false).fingerprint, m, "probe").ok());
    // Six executor runs of flux-tiny on this machine; one of two images (--batch 2, one replica).
    const struct {
      int width, ring, ulysses, dp, batch;
      double step_ms;
    } runs[] = {{128, 1, 1, 1, 1, 10}, {128, 2, 1, 1, 1, 9}, {128, 1, 2, 1, 1, 11},
                {192, 1, 1, 1, 1, 21}, {192, 2, 1, 1, 1, 15}, {128, 1, 1, 1, 2, 19}};
    int i = 0;
    for (const auto& k : runs) {
      cpplan::data::RunRecord r;
      r.model = "flux-tiny";
      r.width = r.height = k.width;
      r.steps = 4;
      r.dtype = "fp32";
      r.ring = k.ring;
      r.ulysses = k.ulysses;
      r.dp = k.dp;
      r.batch = k.batch;
      r.world_size = k.ring * k.ulysses * k.dp;
      r.status = "ok";
      r.started_at = r.finished_at = "2025-12-01T09:00:0" + std::to_string(i++) + "Z";
      r.step_ms = k.step_ms;
      REQUIRE(store.record_run(cpplan::exec::machine(false).fingerprint, r).ok());
    }
  }
  const auto r = run_cli({"calibrate", "--db", db});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("calibrated on 6 runs of this machine"));
  for (const std::string& name : calibration_features()) CHECK_THAT(r.out, Catch::Contains("  " + name + " "));
  auto store = open_store(db);
  auto latest = store.latest_calibration(cpplan::exec::machine(false).fingerprint.key());
  REQUIRE(latest.ok());
  REQUIRE(latest->has_value());
  CHECK((*latest)->version == 1);
  CHECK((*latest)->features == calibration_features());
  CHECK((*latest)->runs == 6);
}
