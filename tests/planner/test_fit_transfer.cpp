// What a runtime fit carries from one GPU to another of the same architecture (issue 34, item 4):
// a fit ties each multiplier to the terms a row really spends. Host-bound rows on an H100 move the
// runtime's host costs and leave the Hopper GPU efficiencies where they were, so an H20 (a Hopper
// with about a seventh of the H100's compute) is priced by its own datasheet on its GPU-bound steps.
#include <catch2/catch.hpp>

#include "core/fit.h"
#include "planner/planner.h"
#include "planner/runtime_calibration.h"
#include "tests/support/fixtures.h"

using namespace cpplan;
using namespace cpplan::planner;

namespace {

Query flux_query(const std::string& hardware, int gpus, int size) {
  Query q = test::make_query("flux.1-dev", gpus, size, size, 0, hardware);
  q.runtime = test::catalog().find_runtime("diffusers");
  REQUIRE(q.runtime);
  return q;
}

costmodel::Prediction predict(const Query& q, const ParallelConfig& c) {
  const costmodel::DatasheetModel hw(*q.hardware);
  const RankedPlan rp = Planner(costmodel::CostModel(hw)).evaluate(q, c);
  REQUIRE(rp.predicted);
  return *rp.predicted;
}

bool every_block_host_bound(const costmodel::Prediction& p) {
  for (int i = 0; i < p.block_count; ++i)
    if (!p.blocks[i].host_bound()) return false;
  return p.block_count > 0;
}

}  // namespace

TEST_CASE("a fit of host-bound H100 rows moves host costs only: an H20 inherits no GPU efficiency from them",
          "[planner][calibration]") {
  // FLUX.1-dev at 256x256 (256 image tokens) under eager diffusers on 1, 2, 4 and 8 H100s: kernels
  // of a few microseconds, the host's dispatch binds every block (checked on the priors). The
  // "measured" steps are 1.6x the priors': a slower host, nothing the GPU terms could explain.
  std::vector<costmodel::TimingRow> rows;
  for (int u : {1, 2, 4, 8}) {
    const Query q = flux_query("h100-sxm", u, 256);
    const costmodel::Prediction p = predict(q, test::config(1, u));
    INFO("ulysses " << u);
    REQUIRE(every_block_host_bound(p));
    costmodel::TimingRow r;
    r.where = "test: ulysses " + std::to_string(u);
    r.source = "slow-host";
    r.model = "flux.1-dev", r.hardware = "h100-sxm", r.runtime = "diffusers";
    r.gpus = u, r.width = r.height = 256;
    r.config = test::config(1, u);
    r.step_ms = 1.6 * p.step_ms;
    rows.push_back(r);
  }
  const auto fitted = calibrate_runtimes(test::catalog(), rows, {});
  INFO((fitted ? std::string() : fitted.error().message));
  REQUIRE(fitted.ok());
  // Every host term scales by 1.6 and every row is reproduced.
  for (const auto& row : fitted->rows) CHECK(row.fitted_ms == Approx(row.measured_ms).epsilon(0.02));
  // No row's time depends on a GPU term, so the fit leaves Hopper's at the priors (multiplier 1).
  const ArchitectureFitValues& hopper = fitted->fit.architectures.at("hopper");
  for (double m : {hopper.gemm, hopper.attention, hopper.memory, hopper.conv}) CHECK(m == Approx(1).epsilon(1e-6));
  // An H20 at 1024x1024 on one GPU is GPU-bound (989 vs 148 dense bf16 TFLOPS: each step's GEMMs
  // take about 7x an H100's): with the fit its step is the prior's; its host costs did move.
  HardwareProfile h20 = *test::catalog().find_hardware("h20");
  RuntimeProfile diffusers = *test::catalog().find_runtime("diffusers");
  apply_fit(fitted->fit, h20);
  apply_fit(fitted->fit, diffusers);
  CHECK(diffusers.us_per_op == Approx(1.6 * test::catalog().find_runtime("diffusers")->us_per_op).epsilon(0.05));
  Query before = flux_query("h20", 1, 1024), after = before;
  after.hardware = &h20;
  after.runtime = &diffusers;
  const costmodel::Prediction prior = predict(before, test::config(1, 1));
  REQUIRE_FALSE(prior.blocks[0].host_bound());
  CHECK(predict(after, test::config(1, 1)).step_ms == Approx(prior.step_ms).epsilon(1e-3));
}
