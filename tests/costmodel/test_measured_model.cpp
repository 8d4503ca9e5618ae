// MeasuredModel: log-log interpolation, clamping, measured vs datasheet sources, group sizes
// borrowed through busbw, and the local profile built from probes.
#include <catch2/catch.hpp>

#include "costmodel/measured_model.h"
#include "tests/support/fixtures.h"

using namespace cpplan;
using namespace cpplan::costmodel;

TEST_CASE("LogLogCurve interpolates power laws exactly and clamps outside", "[costmodel][measured]") {
  LogLogCurve c;
  c.add(1e3, 1e1);  // y = x^(1/3) * ... : two points on y = 0.1 * x^(2/3)
  c.add(1e6, 1e3);
  CHECK(c(1e3) == Approx(1e1));
  CHECK(c(1e6) == Approx(1e3));
  CHECK(c(1e4) == Approx(1e1 * std::pow(10.0, 2.0 / 3.0)));  // on the line in log-log
  CHECK(c(1.0) == Approx(1e1));   // clamped below
  CHECK(c(1e9) == Approx(1e3));   // clamped above
  LogLogCurve repeated;           // repeated sizes average (in log space)
  repeated.add(10, 4);
  repeated.add(10, 16);
  CHECK(repeated(10) == Approx(8.0));
}

TEST_CASE("measured collectives replace the datasheet, per group size", "[costmodel][measured]") {
  const HardwareProfile& hw = *test::catalog().find_hardware("h100-sxm");
  const DatasheetModel datasheet(hw);
  MeasurementSet m;
  m.collectives.push_back({Collective::kAllReduce, 2, false, 1e6, 100, 10, 10});
  m.collectives.push_back({Collective::kAllReduce, 2, false, 1e8, 5000, 20, 20});
  const MeasuredModel model(hw, m, datasheet);
  const Timed exact = model.collective(Collective::kAllReduce, 1e6, {2, 1, false});
  CHECK(exact.source == Source::kMeasured);
  CHECK(exact.ms == Approx(0.1));
  // 1e7 lies a third of the way... in log: halfway between 1e6 and 1e8 -> sqrt(100 * 5000) us
  CHECK(model.collective(Collective::kAllReduce, 1e7, {2, 1, false}).ms == Approx(std::sqrt(100.0 * 5000.0) * 1e-3));
  // 4 ranks borrow the 2-rank curve scaled by the bus factor: 2*3/4 / (2*1/2) = 1.5
  CHECK(model.collective(Collective::kAllReduce, 1e6, {4, 1, false}).ms == Approx(0.15));
  // Nothing measured for all_gather: the datasheet answers, and says so.
  const Timed fallback = model.collective(Collective::kAllGather, 1e6, {2, 1, false});
  CHECK(fallback.source == Source::kDatasheet);
  CHECK(fallback.ms == Approx(datasheet.collective(Collective::kAllGather, 1e6, {2, 1, false}).ms));
}

TEST_CASE("measured kernels give achieved rates over the size of the call", "[costmodel][measured]") {
  const HardwareProfile& hw = *test::catalog().find_hardware("h100-sxm");
  const DatasheetModel datasheet(hw);
  MeasurementSet m;
  m.kernels.push_back({KernelKind::kGemm, "small", 1e6, 0, 16, 1, 10});     // 1e11 FLOP/s
  m.kernels.push_back({KernelKind::kGemm, "large", 1e10, 0, 4096, 1, 1e4});  // 1e12 FLOP/s
  m.kernels.push_back({KernelKind::kMemory, "launch", 0, 4, 1, 1, 7});      // the smallest op: 7 us
  m.kernels.push_back({KernelKind::kMemory, "copy", 0, 1e8, 1, 1, 1e4});    // 1e10 B/s
  const MeasuredModel model(hw, m, datasheet);
  CHECK(model.gemm(1e6, 0, 16).ms == Approx(0.01));
  CHECK(model.gemm(1e10, 0, 4096).ms == Approx(10.0));
  CHECK(model.gemm(1e8, 0, 256).ms == Approx(1e8 / std::sqrt(1e11 * 1e12) * 1e3));
  CHECK(model.launch_us() == Approx(7.0));
  CHECK(model.memory(1e8).ms == Approx(10.0));
  CHECK(model.attention(1e9, 100, 100, AttentionBackend::kFlash).source == Source::kDatasheet);
}

TEST_CASE("the local profile takes the best measured rates", "[costmodel][measured]") {
  MeasurementSet m;
  m.kernels.push_back({KernelKind::kGemm, "a", 2e9, 0, 256, 1, 1e3});   // 2 TFLOP/s
  m.kernels.push_back({KernelKind::kGemm, "b", 1e9, 0, 64, 1, 1e3});    // 1 TFLOP/s
  m.kernels.push_back({KernelKind::kMemory, "c", 0, 1e9, 1, 1, 1e5});   // 10 GB/s
  m.collectives.push_back({Collective::kAllGather, 2, false, 1e3, 40, 0.025, 0.0125});
  m.collectives.push_back({Collective::kAllGather, 2, false, 1e8, 1e5, 1, 0.5});
  const HardwareProfile h = local_profile(m, "test machine", 16384);
  CHECK(h.name == "local");
  CHECK(h.bf16_tflops == Approx(2.0));
  CHECK(h.memory_bandwidth_gbps == Approx(10.0));
  CHECK(h.intra_node.bandwidth_gbps == Approx(0.5));
  CHECK(h.intra_node.latency_us == Approx(40.0));
  CHECK(h.memory_bytes() == Approx(16384.0 * kMiB));
}
