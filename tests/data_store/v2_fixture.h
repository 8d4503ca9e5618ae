#pragma once
// What tests/data/store-v2.db holds. That file was written once by the schema-v2 store (commit
// ded1bd7, before schema v3 existed) from exactly these records, then committed; it is never
// regenerated, since newer code would write a newer schema. The migration test reads it back
// and compares with these functions, so they must not change either.
//  - the two runs of v1_fixture.h (ids 1 and 2), recorded with record_run;
//  - on the GPU node: samples() recorded with source "probe", and calibration() (version 1).

#include <string>

#include "costmodel/calibration.h"
#include "costmodel/measurements.h"
#include "tests/data_store/v1_fixture.h"

namespace cpplan::test::v2_fixture {

inline costmodel::MeasurementSet samples() {
  costmodel::MeasurementSet m;
  costmodel::CollectiveSample c;
  c.kind = costmodel::Collective::kAllToAll;
  c.ranks = 4;
  c.uneven = true;
  c.bytes = 1048576;
  c.time_us = 1.0 / 3.0;
  c.algbw_gbps = 3145.728;
  c.busbw_gbps = 2359.296;
  m.collectives.push_back(c);
  costmodel::KernelSample k;
  k.kind = costmodel::KernelKind::kGemm;
  k.shape = "m=4096 n=3072 k=3072";
  k.flops = 2.0 * 4096 * 3072 * 3072;
  k.bytes = 75497472;
  k.rows = 4096;
  k.concurrent_ranks = 2;
  k.time_us = 98.75;
  m.kernels.push_back(k);
  return m;
}

inline costmodel::Calibration calibration() {
  costmodel::Calibration c;
  c.fitted_at = "2025-11-05T12:00:00Z";
  c.features = {"gemm_ms", "comm_ms"};
  c.coefficients = {0.1 + 0.2, 1.0 / 3.0};
  c.runs = 12;
  c.folds = 4;
  c.mape_before = 0.25;
  c.mape_after = 0.0625;
  c.rank_corr_before = 0.5;
  c.rank_corr_after = 0.875;
  return c;
}

}  // namespace cpplan::test::v2_fixture
