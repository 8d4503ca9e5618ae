#pragma once
// What calibrate fits: a real store (a probe of this machine and executor runs of flux-tiny as
// cpplan run records them) and the real cpplan binary, for the tests of the runs it leaves out.
// Include after Catch (see the test files: LibTorch's CHECK).

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/measurements.h"
#include "data/store.h"
#include "exec/machine.h"
#include "tests/executor/process.h"

namespace cpplan::test {

// A probe of this machine in `db`: calibrate needs its measured model.
inline void record_probe(const std::string& db) {
  using namespace cpplan::costmodel;
  auto store = cpplan::data::Store::open(db);
  REQUIRE(store.ok());
  MeasurementSet m;
  m.kernels.push_back({KernelKind::kGemm, "small", 1e6, 0, 16, 1, 10});
  m.kernels.push_back({KernelKind::kGemm, "large", 1e10, 0, 4096, 1, 1e4});
  m.collectives.push_back({Collective::kAllGather, 2, false, 1e3, 40, 0.025, 0.0125});
  m.collectives.push_back({Collective::kAllGather, 2, false, 1e8, 1e5, 1, 0.5});
  REQUIRE(store.value().record_measurements(cpplan::exec::machine(false).fingerprint, m, "probe").ok());
}

using Metric = std::pair<std::string, double>;

// calibrate over `db` (with a probe) leaves out the runs whose metrics hold `marked`: three runs
// with `plain` (when given) and two with `marked` are 3 measured runs, one short of the 4 it
// needs; a fourth plain run makes it fit on 4. `key` tells the marked runs' keys apart.
inline void check_calibrate_leaves_out(const std::string& db, const std::string& key, const Metric& marked,
                                       const std::optional<Metric>& plain = std::nullopt) {
  record_probe(db);
  const auto fingerprint = cpplan::exec::machine(false).fingerprint;
  auto store = cpplan::data::Store::open(db);
  REQUIRE(store.ok());
  const auto record = [&](int size, double step_ms, const std::optional<Metric>& metric) {
    cpplan::data::RunRecord r;
    r.model = "flux-tiny";
    r.width = r.height = size;
    r.steps = 5;
    r.dtype = "fp32";
    r.status = "ok";
    r.started_at = r.finished_at = "2026-12-06T00:00:00Z";
    r.run_key = "flux-tiny|" + std::to_string(size) + (metric == plain ? "" : "|" + key);
    r.step_ms = step_ms;
    r.step_times_ms = std::vector<double>(5, step_ms);
    if (metric) r.metrics.push_back(*metric);
    REQUIRE(store.value().record_run(fingerprint, r).ok());
  };
  record(128, 10, plain);
  record(192, 20, plain);
  record(256, 40, plain);
  record(128, 14, marked);
  record(192, 26, marked);
  auto p = run_process({CPPLAN_BINARY, "calibrate", "--db", db});
  CHECK(p.code == 3);
  CHECK(p.err == "cpplan: " + db + ": 3 measured runs on this machine; calibration needs at least 4 (cpplan run or "
                                   "cpplan sweep)\n");
  record(320, 70, plain);
  p = run_process({CPPLAN_BINARY, "calibrate", "--db", db});
  INFO(p.err);
  CHECK(p.code == 0);
  CHECK_THAT(p.out, Catch::StartsWith("calibrated on 4 runs of this machine"));
}

}  // namespace cpplan::test
