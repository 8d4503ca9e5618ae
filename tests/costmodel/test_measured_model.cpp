// MeasuredModel: log-log interpolation, clamping, measured vs datasheet sources, group sizes
// borrowed through busbw, and the local profile built from probes.
#include <catch2/catch.hpp>

#include "costmodel/calibration.h"
#include "costmodel/measured_model.h"
#include "tests/support/fixtures.h"

using namespace cpplan;
using namespace cpplan::costmodel;

TEST_CASE("LogLogCurve interpolates power laws exactly and clamps outside, or grows in proportion above",
          "[costmodel][measured]") {
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
  LogLogCurve time(LogLogCurve::Beyond::kProportional);
  time.add(1e3, 1e1);
  time.add(1e6, 1e3);
  CHECK(time(1e4) == Approx(1e1 * std::pow(10.0, 2.0 / 3.0)));  // inside: the same line
  CHECK(time(1.0) == Approx(1e1));                               // below: clamped
  CHECK(time(3e6) == Approx(3e3));                               // above: y / x of the largest point
}

TEST_CASE("measured collectives replace the datasheet, per group size", "[costmodel][measured]") {
  const HardwareProfile& hw = *test::catalog().find_hardware("h100-sxm");
  const DatasheetModel datasheet(hw);
  MeasurementSet m;
  m.collectives.push_back({Collective::kAllReduce, 2, false, 1e6, 100, 10, 10});
  m.collectives.push_back({Collective::kAllReduce, 2, false, 1e8, 5000, 20, 20});
  const MeasuredModel model(hw, m, datasheet);
  const Timed exact = model.collective(Collective::kAllReduce, 1e6, {2, 1, 1});
  CHECK(exact.source == Source::kMeasured);
  CHECK(exact.ms == Approx(0.1));
  // 1e7 lies a third of the way... in log: halfway between 1e6 and 1e8 -> sqrt(100 * 5000) us
  CHECK(model.collective(Collective::kAllReduce, 1e7, {2, 1, 1}).ms == Approx(std::sqrt(100.0 * 5000.0) * 1e-3));
  // 4 ranks borrow the 2-rank curve scaled by the bus factor: 2*3/4 / (2*1/2) = 1.5
  CHECK(model.collective(Collective::kAllReduce, 1e6, {4, 1, 1}).ms == Approx(0.15));
  // Nothing measured for all_gather: the datasheet answers, and says so.
  const Timed fallback = model.collective(Collective::kAllGather, 1e6, {2, 1, 1});
  CHECK(fallback.source == Source::kDatasheet);
  CHECK(fallback.ms == Approx(datasheet.collective(Collective::kAllGather, 1e6, {2, 1, 1}).ms));
}

TEST_CASE("measured collectives beyond the largest probe grow at its bandwidth, below the smallest keep its latency",
          "[costmodel][measured]") {
  const HardwareProfile& hw = *test::catalog().find_hardware("h100-sxm");
  const DatasheetModel datasheet(hw);
  MeasurementSet m;
  // Probed: 1 MiB in 100 us, 256 MiB in 20 ms (13.4 GB/s at the largest size).
  m.collectives.push_back({Collective::kAllGather, 4, false, kMiB, 100, 0, 0});
  m.collectives.push_back({Collective::kAllGather, 4, false, 256 * kMiB, 20000, 0, 0});
  const MeasuredModel model(hw, m, datasheet);
  const CommGroup four{4, 1, 1};
  // A 720p video's 1.5 GiB Ring gather is 6 x 256 MiB: 6 x 20 ms, not the 20 ms of the largest probe.
  CHECK(model.collective(Collective::kAllGather, 1.5 * kGiB, four).ms == Approx(120.0).epsilon(1e-12));
  CHECK(model.collective(Collective::kAllGather, 512 * kMiB, four).ms == Approx(40.0).epsilon(1e-12));
  CHECK(model.collective(Collective::kAllGather, 256 * kMiB, four).ms == Approx(20.0).epsilon(1e-12));
  // 16 MiB: halfway in log between 1 MiB and 256 MiB: sqrt(100 x 20000) us.
  CHECK(model.collective(Collective::kAllGather, 16 * kMiB, four).ms == Approx(std::sqrt(100.0 * 20000.0) * 1e-3));
  // Below 1 MiB the latency floor: 4 KiB costs what 1 MiB did.
  CHECK(model.collective(Collective::kAllGather, 4096, four).ms == Approx(0.1).epsilon(1e-12));
  // Another group size borrows the extrapolated curve through busbw: 8 ranks x (7/8) / (3/4).
  CHECK(model.collective(Collective::kAllGather, 1.5 * kGiB, {8, 1, 1}).ms ==
        Approx(120.0 * (7.0 / 8.0) / (3.0 / 4.0)).epsilon(1e-12));
}

TEST_CASE("a group inside a node is priced from the single-node curve, one across nodes from the multi-node one",
          "[costmodel][measured][nodes]") {
  const HardwareProfile& hw = *test::catalog().find_hardware("h100-sxm");
  const DatasheetModel datasheet(hw);
  MeasurementSet m;
  // all_to_all of 8 ranks in one node (NVLink) and of 16 ranks on 2 nodes of 8 (the network).
  m.collectives.push_back({Collective::kAllToAll, 8, false, kMiB, 20, 0, 0, 1});
  m.collectives.push_back({Collective::kAllToAll, 8, false, 256 * kMiB, 800, 0, 0, 1});
  m.collectives.push_back({Collective::kAllToAll, 16, false, kMiB, 610.3, 0, 0, 2});
  m.collectives.push_back({Collective::kAllToAll, 16, false, 256 * kMiB, 61220, 0, 0, 2});
  const MeasuredModel model(hw, m, datasheet);
  const CommGroup inside{8, 1, 1}, across{16, 1, 2};
  CHECK(model.collective(Collective::kAllToAll, 256 * kMiB, inside).ms == Approx(0.8).epsilon(1e-12));
  CHECK(model.collective(Collective::kAllToAll, 256 * kMiB, across).ms == Approx(61.22).epsilon(1e-12));
  CHECK(model.collective_source(Collective::kAllToAll, inside) == "measured all_to_all, 8 ranks on 1 node");
  CHECK(model.collective_source(Collective::kAllToAll, across) == "measured all_to_all, 16 ranks on 2 nodes");
  // 8 ranks spread over 2 nodes (stride 2): the 2-node curve, by busbw: x (7/8) / (15/16).
  const CommGroup spread{8, 2, 2};
  CHECK(model.collective(Collective::kAllToAll, 256 * kMiB, spread).ms ==
        Approx(61.22 * (7.0 / 8.0) / (15.0 / 16.0)).epsilon(1e-12));
  CHECK(model.collective_source(Collective::kAllToAll, spread) ==
        "measured all_to_all, 16 ranks on 2 nodes, rescaled to 8 ranks on 2 nodes");
  // 4 ranks in a node: the 8-rank single-node curve, never the network's although 16 is no farther.
  CHECK(model.collective(Collective::kAllToAll, kMiB, {4, 1, 1}).ms ==
        Approx(0.020 * (3.0 / 4.0) / (7.0 / 8.0)).epsilon(1e-12));

  // Measured within a node only: a group across nodes falls back to the datasheet's network link.
  MeasurementSet one_node;
  one_node.collectives = {m.collectives[0], m.collectives[1]};
  const MeasuredModel node_only(hw, one_node, datasheet);
  const Timed fallback = node_only.collective(Collective::kAllToAll, 256 * kMiB, across);
  CHECK(fallback.source == Source::kDatasheet);
  CHECK(fallback.ms == Approx(datasheet.collective(Collective::kAllToAll, 256 * kMiB, across).ms));
  CHECK(node_only.collective_source(Collective::kAllToAll, across) ==
        "datasheet: h100-sxm's network link (no all_to_all measured across nodes)");
}

TEST_CASE("a kernel's rate saturates beyond the largest call probed, so its time grows with the work",
          "[costmodel][measured]") {
  const HardwareProfile& hw = *test::catalog().find_hardware("h100-sxm");
  const DatasheetModel datasheet(hw);
  MeasurementSet m;
  m.kernels.push_back({KernelKind::kGemm, "small", 1e6, 0, 16, 1, 10});      // 1e11 FLOP/s
  m.kernels.push_back({KernelKind::kGemm, "large", 1e10, 0, 4096, 1, 1e4});  // 1e12 FLOP/s
  const MeasuredModel model(hw, m, datasheet);
  CHECK(model.gemm(1e11, 0, 4096).ms == Approx(100.0).epsilon(1e-12));  // 1e11 FLOP at 1e12 FLOP/s
  CHECK(model.gemm(1e5, 0, 4).ms == Approx(1e-3).epsilon(1e-12));       // 1e5 FLOP at 1e11 FLOP/s
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
  CHECK(model.attention(1e9, 100, 100, 128, AttentionBackend::kFlash).source == Source::kDatasheet);
}

TEST_CASE("a GEMM of a probed weight is priced from that weight's calls over its rows, not over its FLOPs",
          "[costmodel][measured]") {
  const HardwareProfile& hw = *test::catalog().find_hardware("h100-sxm");
  const DatasheetModel datasheet(hw);
  // Weight A: 192 x 192 = 36,864 elements, probed at 16 rows (1e10 FLOP/s) and 256 rows (4e10);
  // weight B: 16 times wider, probed at 16 rows only (1.2e10), with the FLOPs of A's 256 rows.
  const double a = 192.0 * 192.0, b = 16 * a;
  const auto call = [](double rows, double weight, double flops_per_s, int concurrent = 1) {
    const double flops = 2 * rows * weight;
    return KernelSample{KernelKind::kGemm, "gemm", flops, 0, rows, concurrent, flops / flops_per_s * 1e6};
  };
  MeasurementSet m;
  m.kernels.push_back(call(16, a, 1e10));
  m.kernels.push_back(call(256, a, 4e10));
  m.kernels.push_back(call(16, b, 1.2e10));
  m.kernels.push_back(call(16, a, 5e9, 2));  // with 2 ranks computing at once
  MeasuredModel model(hw, m, datasheet);
  // A at 64 rows: halfway between 16 and 256 in log rows, so sqrt(1e10 x 4e10) = 2e10 FLOP/s.
  CHECK(model.gemm(2 * 64 * a, 0, 64).ms == Approx(2 * 64 * a / 2e10 * 1e3));
  CHECK(model.gemm(2 * 64 * a, 0, 64).source == Source::kMeasured);
  // B at 16 rows: its own 1.2e10, although A's 256-row call has the same FLOPs (the FLOP curve
  // gives their mean, sqrt(4e10 x 1.2e10)).
  CHECK(model.gemm(2 * 16 * b, 0, 16).ms == Approx(2 * 16 * b / 1.2e10 * 1e3));
  // A weight nobody probed: the FLOP curve, at its two calls of 2 x 16 x b FLOPs.
  CHECK(model.gemm(2 * 16 * b, 0, 8).ms == Approx(2 * 16 * b / std::sqrt(4e10 * 1.2e10) * 1e3));
  // Rows beyond the probed ones: the rate of the nearest (it has saturated).
  CHECK(model.gemm(2 * 4096 * a, 0, 4096).ms == Approx(2 * 4096 * a / 4e10 * 1e3));
  // Two ranks at once: the calls measured so.
  model.set_concurrent_ranks(2);
  CHECK(model.gemm(2 * 16 * a, 0, 16).ms == Approx(2 * 16 * a / 5e9 * 1e3));
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

TEST_CASE("every predicted term says where its inputs came from", "[costmodel][measured]") {
  const HardwareProfile& hw = *test::catalog().find_hardware("h100-sxm");
  const DatasheetModel datasheet(hw);
  // GEMMs and collectives measured; attention and memory-bound work left to the datasheet.
  MeasurementSet m;
  m.kernels.push_back({KernelKind::kGemm, "small", 1e6, 0, 16, 1, 10});
  m.kernels.push_back({KernelKind::kGemm, "large", 1e12, 0, 4096, 1, 2e3});
  for (Collective c : {Collective::kAllGather, Collective::kAllToAll})
    for (int ranks : {2, 4}) {
      m.collectives.push_back({c, ranks, false, 1e3, 20, 0, 0});
      m.collectives.push_back({c, ranks, false, 1e9, 2e4, 0, 0});
    }
  const MeasuredModel model(hw, m, datasheet);
  const Query q = test::make_query("flux.1-dev", 4, 1024, 1024);
  const ParallelConfig c = test::config(1, 4);
  const Prediction p = CostModel(model).predict(q, c, CpVariant::kUlysses);
  REQUIRE(p.block_count == 2);
  for (int i = 0; i < p.block_count; ++i) {
    const BlockCost& b = p.blocks[i];
    CHECK(b.sources.gemm == Source::kMeasured);
    CHECK(b.sources.attention == Source::kDatasheet);
    CHECK(b.sources.memory == Source::kDatasheet);
    CHECK(b.sources.comm == Source::kMeasured);
    CHECK(b.source == Source::kDatasheet);  // the least measured of the block's terms
  }
  CHECK(p.step_comm_extra_source == Source::kMeasured);  // the CP output all-gather
  CHECK(p.source == Source::kDatasheet);
  CHECK_FALSE(p.calibrated);

  // Without parallelism a block has no collective: its comm term has no source at all.
  const Prediction single = CostModel(model).predict(q, ParallelConfig{}, CpVariant::kNone);
  CHECK_FALSE(single.blocks[0].sources.comm.has_value());
  CHECK_FALSE(single.step_comm_extra_source.has_value());

  // Everything from the datasheet says so.
  const Prediction sheet = CostModel(datasheet).predict(q, c, CpVariant::kUlysses);
  CHECK(sheet.blocks[0].sources.gemm == Source::kDatasheet);
  CHECK(sheet.source == Source::kDatasheet);
}

TEST_CASE("a step correction replaces the step time and keeps the analytic sum", "[costmodel][measured]") {
  const HardwareProfile& hw = *test::catalog().find_hardware("h100-sxm");
  const DatasheetModel datasheet(hw);
  const Query q = test::make_query("flux.1-dev", 4, 1024, 1024);
  const ParallelConfig c = test::config(1, 4);
  const Prediction raw = CostModel(datasheet).predict(q, c, CpVariant::kUlysses);

  Calibration cal;
  cal.features = calibration_features();
  cal.coefficients = {2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0, 0.5, 0.0, 0.0};  // gemm x2, + 3 ms, + half the contention
  const auto correction = step_correction(cal, /*cores=*/2);  // 4 ranks on 2 cores: oversubscription 1
  const Prediction p = CostModel(datasheet, correction).predict(q, c, CpVariant::kUlysses);
  const auto f = features_of(raw, 1.0);
  double expected = 0;
  for (std::size_t i = 0; i < cal.coefficients.size(); ++i) expected += f[i] * cal.coefficients[i];
  CHECK(p.calibrated);
  CHECK(p.uncalibrated_step_ms == Approx(raw.step_ms));
  CHECK(p.step_ms == Approx(expected));
  CHECK(p.step_ms != Approx(raw.step_ms));
  CHECK(p.steps_per_sec == Approx(1e3 / expected));
  // Per image: the corrected steps plus the once-per-image work of the placement chosen for them.
  CHECK(p.image_ms == Approx(p.text_encode_ms + q.steps * expected + p.vae_decode_ms + p.pipeline.host_ms));
  CHECK(p.compute_ms == Approx(raw.compute_ms));  // the terms themselves are untouched
}
