// `cpplan import-nccl-tests` and `cpplan db merge` in-process on real files: what they record and
// print, and bad input as one line with exit code 3.
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
#include "session/engine/cluster_model.h"
#include "tests/cli/run_cli.h"

// Last: LibTorch (through exec/machine.h) defines glog's CHECK, which would replace Catch's and
// abort on the first failure instead of counting it.
#undef CHECK
#include <catch2/catch.hpp>

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
  // The cluster is named after the stem of its host names (gpu-node-03 -> gpu-node).
  CHECK_THAT(r.out, Catch::Contains("  cluster gpu-node: machine "));
  CHECK_THAT(r.out, Catch::Contains("(cuda, NVIDIA H100 80GB HBM3); plan with it: cpplan --cluster gpu-node ..."));
  CHECK_THAT(r.out, Catch::Contains("all_reduce          8    18  1 KiB .. 128 MiB       351.79 GB/s at 128 MiB"));

  // The JSON has no host list: --cluster files it with the first.
  const auto j = run_cli({"import-nccl-tests", fixture("all_gather_perf.json"), "--cluster", "gpu-node", "--db", db});
  REQUIRE(j.code == 0);
  CHECK_THAT(j.out, Catch::Contains("all_gather          8     6  1 MiB .. 1 GiB         371.10 GB/s at 1 GiB"));

  auto store = open_store(db);
  auto machines = store.hardware();
  REQUIRE(machines.ok());
  REQUIRE(machines->size() == 1);  // both files: one cluster
  CHECK(machines->front().host == "gpu-node");
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
  CHECK(j["cluster"] == "test-nccl-efa-worker");
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

TEST_CASE("import-nccl-tests records the nodes: from the device list, or --nodes for a file without one",
          "[cli][store][nodes]") {
  TempDir dir;
  const std::string db = dir.file("cpplan.db");
  const auto r = run_cli({"import-nccl-tests", fixture("alltoall_perf.txt"), "--nodes", "2", "--cluster", "lab",
                          "--db", db, "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["nodes"] == 2);
  CHECK(j["cluster"] == "lab");
  auto store = open_store(db);
  auto machines = store.hardware();
  REQUIRE(machines.ok());
  REQUIRE(machines->size() == 1);
  CHECK(machines->front().host == "lab");
  const auto set = store.measurements(machines->front().key()).value();
  for (const auto& sample : set.collectives) CHECK(sample.nodes == 2);

  const auto too_many = run_cli({"import-nccl-tests", fixture("all_reduce_perf_mpi-2nodes.txt"), "--nodes", "3",
                                 "--db", db});
  CHECK(too_many.code == 3);
  CHECK(too_many.err == "cpplan import-nccl-tests: --nodes = 3: more nodes than the test's 2 ranks\n");
}

TEST_CASE("a cluster is named after the stem its host names share", "[cli][store][nodes]") {
  using cpplan::session::cluster_of_hosts;
  CHECK(cluster_of_hosts({"gpu07", "gpu12"}) == "gpu");
  CHECK(cluster_of_hosts({"nccl-tests-worker-0", "nccl-tests-worker-1"}) == "nccl-tests-worker");
  CHECK(cluster_of_hosts({"node-a.cluster.local", "node-b.cluster.local"}) == "node");
  CHECK(cluster_of_hosts({"gpu-node-03"}) == "gpu-node");
  CHECK(cluster_of_hosts({"alpha", "beta"}) == "alpha");  // nothing shared: the first host
  CHECK(cluster_of_hosts({}).empty());
}

// The cluster of the fixtures: nccl-tests-worker-0 alone (8 ranks, NVLink: 315 GB/s all_to_all busbw
// at 256 MiB, 745.2 us) and with nccl-tests-worker-1 (16 ranks on 2 nodes: 4.11 GB/s, 61220 us).
TEST_CASE("cpplan --cluster prices a Ulysses group across nodes from the 2-node curve, one inside a node from the 1-node one",
          "[cli][store][nodes]") {
  TempDir dir;
  const std::string db = dir.file("cpplan.db");
  for (const char* log : {"alltoall_perf-kubectl-2nodes.txt", "alltoall_perf-1node.txt"}) {
    const auto imported = run_cli({"import-nccl-tests", fixture(log), "--db", db});
    INFO(imported.err);
    REQUIRE(imported.code == 0);
    CHECK_THAT(imported.out, Catch::Contains("cluster nccl-tests-worker: "));
  }
  const auto check = [&](std::vector<std::string> plan) {
    std::vector<std::string> args{"check",     "--model", "flux.2-dev", "--res",     "1024x1024",
                                  "--gpus",    "16",      "--topology", "dgx-h100", "--nodes",
                                  "2",         "--hardware", "h100-sxm", "--cluster", "nccl-tests-worker",
                                  "--db",      db,        "--explain"};
    args.insert(args.end(), plan.begin(), plan.end());
    return run_cli(args);
  };
  const auto across = check({"--ulysses", "16"});
  INFO(across.err);
  REQUIRE(across.code == 0);
  CHECK_THAT(across.out, Catch::Contains("  ulysses      16       1  all_to_all  2 nodes"));
  CHECK_THAT(across.out, Catch::Contains("priced by: measured all_to_all, 16 ranks on 2 nodes\n"));
  // No all_gather was imported: the CP output gather keeps the placement's datasheet links.
  CHECK_THAT(across.out, Catch::Contains("priced by: datasheet: the links of the group's placement (no all_gather "
                                         "measured across nodes)"));
  const auto inside = check({"--ulysses", "8", "--ring", "2"});
  REQUIRE(inside.code == 0);
  CHECK_THAT(inside.out, Catch::Contains("  ulysses       8       2  all_to_all  1 node"));
  CHECK_THAT(inside.out, Catch::Contains("priced by: measured all_to_all, 8 ranks on 1 node\n"));

  // The ranking says where its collectives came from, in text and JSON.
  const auto ranked = run_cli({"--model", "flux.2-dev", "--gpus", "16", "--topology", "dgx-h100", "--nodes", "2",
                               "--hardware", "h100-sxm",
                               "--cluster", "nccl-tests-worker", "--db", db, "--json"});
  REQUIRE(ranked.code == 0);
  CHECK(nlohmann::json::parse(ranked.out)["prediction_source"] ==
        "datasheet figures, collectives measured on cluster nccl-tests-worker (NVIDIA H100 80GB HBM3)");
}

TEST_CASE("cpplan --cluster refuses an unknown cluster, a missing database and --hardware local in one line",
          "[cli][store][nodes]") {
  TempDir dir;
  const std::string db = dir.file("cpplan.db");
  const auto missing = run_cli({"--gpus", "8", "--hardware", "h100-sxm", "--cluster", "lab", "--db", db});
  CHECK(missing.code == 3);
  CHECK(missing.err == "cpplan: --cluster = lab: no database at " + db +
                           " (import its nccl-tests logs with cpplan import-nccl-tests FILE --cluster lab)\n");
  CHECK_FALSE(fs::exists(db));  // a query creates no database
  REQUIRE(run_cli({"import-nccl-tests", fixture("alltoall_perf-1node.txt"), "--db", db}).code == 0);
  const auto unknown = run_cli({"--gpus", "8", "--hardware", "h100-sxm", "--cluster", "lab", "--db", db});
  CHECK(unknown.code == 3);
  CHECK(unknown.err == "cpplan: --cluster = lab: " + db + " holds no imports of that cluster (there: nccl-tests-worker)\n");
  const auto local = run_cli({"--gpus", "8", "--hardware", "local", "--cluster", "nccl-tests-worker", "--db", db});
  CHECK(local.code == 3);
  CHECK(lines(local.err) == 1);
  CHECK_THAT(local.err, Catch::Contains("--cluster = nccl-tests-worker: "));
  // An empty name is no cluster: refused, for queries and imports alike.
  const auto empty = run_cli({"--gpus", "8", "--hardware", "h100-sxm", "--cluster", "", "--db", db});
  CHECK(empty.code == 2);
  CHECK(empty.err == "cpplan: --cluster: must not be empty (see cpplan --help)\n");
  CHECK(run_cli({"import-nccl-tests", fixture("alltoall_perf-1node.txt"), "--cluster", "", "--db", db}).code == 2);
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
