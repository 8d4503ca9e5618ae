#pragma once
// What tests/data/store-v3.db holds. That file was written once by the schema-v3 store (commit
// d543f92, before schema v4 existed) from exactly these records, then committed; it is never
// regenerated, since newer code would write a newer schema. The migration test reads it back
// and compares with these functions, so they must not change either.
//  - the two runs of v1_fixture.h (ids 1 and 2), recorded with record_run;
//  - on the CPU box, executor_run() (id 3): a `cpplan run --batch 2` with the whole pipeline's
//    predicted peak beside the measured transformer peak (what v3 stored);
//  - on the GPU node, calibration() (version 1): a fit with the feature list of that time.

#include <string>

#include "costmodel/calibration.h"
#include "data/store.h"

namespace cpplan::test::v3_fixture {

inline data::RunRecord executor_run() {
  data::RunRecord r;
  r.run_key = "flux-tiny|128x128x1|4|fp32|r1u2t1c1d2|ua0ra0|allgather|b2|s0";
  r.model = "flux-tiny";
  r.width = 128;
  r.height = 128;
  r.steps = 4;
  r.warmup = 1;
  r.dtype = "fp32";
  r.ulysses = 2;
  r.dp = 2;
  r.attention_backend = "math";
  r.world_size = 4;
  r.status = "ok";
  r.started_at = "2025-12-10T10:00:00Z";
  r.finished_at = "2025-12-10T10:00:05Z";
  r.cpplan_version = "0.1.0";
  r.step_ms = 31.25;
  r.step_ms_p10 = 30.5;
  r.step_ms_p90 = 33.0;
  r.steps_per_sec = 32.0;
  r.compute_ms = 28.0;
  r.comm_ms = 3.25;
  r.peak_mem_bytes = 3.0e8;
  r.bytes_sent = 1.25e6;
  r.predicted_step_ms = 29.5;
  r.predicted_steps_per_sec = 1000.0 / 29.5;
  r.predicted_peak_mem_bytes = 2.5e8;
  r.predicted_hardware = "local";
  r.runtime = "";
  r.batch = 2;
  r.step_times_ms = {31.0, 31.25, 33.0, 30.5};
  r.metrics = {{"rank0.peak_mem_bytes", 3.0e8}, {"rank1.peak_mem_bytes", 2.875e8}};
  return r;
}

// The feature list calibrations were fitted with until schema v4 (launch time added to the
// kernels' time); coefficients that tell the features apart.
inline costmodel::Calibration calibration() {
  costmodel::Calibration c;
  c.fitted_at = "2025-12-10T11:00:00Z";
  c.features = {"gemm_ms",       "attention_ms",  "memory_bound_ms",  "launch_ms",       "comm_ms",
                "step_constant", "contention_ms", "collective_calls", "distributed_step"};
  c.coefficients = {1.5, 0.75, 2.0, 0.5, 1.25, 3.0, 0.125, 0.0625, 4.0};
  c.runs = 17;
  c.folds = 5;
  c.mape_before = 0.5;
  c.mape_after = 0.125;
  c.rank_corr_before = 0.75;
  c.rank_corr_after = 0.9375;
  return c;
}

}  // namespace cpplan::test::v3_fixture
