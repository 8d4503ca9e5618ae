#pragma once
// A HardwareModel that answers from measurements (probes, nccl-tests) where it has them and
// from the datasheet model elsewhere, saying which for every term:
// - collectives: time interpolated over message size (log-log, piecewise linear) per collective,
//   group size and node span; beyond the largest probed size the time grows with the bytes at the
//   bandwidth of that size, below the smallest it stays at the smallest's (the latency floor). A
//   group inside one node is priced from curves measured inside one node only, a group across
//   nodes from curves measured across nodes only (the nearest node count first): a group size
//   that was not measured borrows the busbw of the nearest measured one at the same message size;
//   with no curve on its side of the node boundary, the fallback prices it;
// - GEMM / attention: achieved FLOP/s interpolated over the work of the call (log-log): small
//   calls run further from peak. A GEMM whose weight (k x n elements) was probed is priced from
//   that shape's own calls, over its rows: a 16-row GEMM runs far below a 160-row one of the same
//   weight, at any FLOP count (a joint block's short text stream);
// - memory-bound work: achieved bytes/s over bytes moved;
// - kernel launches: the measured time of the smallest operation.

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "costmodel/hardware_model.h"
#include "costmodel/measurements.h"

namespace cpplan::costmodel {

// Piecewise-linear interpolation in log-log space. Outside the measured range: below the smallest
// x the smallest's y; above the largest, the largest's y (kClamp: a rate that has saturated), or
// y in proportion to x from the largest point on (kProportional: a time over bytes, moving the
// bytes beyond the largest probe at that probe's bandwidth x / y).
class LogLogCurve {
 public:
  enum class Beyond { kClamp, kProportional };
  explicit LogLogCurve(Beyond beyond = Beyond::kClamp) : beyond_(beyond) {}
  void add(double x, double y);
  bool empty() const { return points_.empty(); }
  double operator()(double x) const;  // precondition: !empty()

 private:
  void sort() const;
  mutable std::vector<std::pair<double, double>> points_;  // (log x, log y)
  mutable bool sorted_ = true;
  Beyond beyond_;
};

class MeasuredModel final : public HardwareModel {
 public:
  // `profile` describes the machine (the datasheet profile, or one built from the probes by
  // local_profile()); `fallback` answers what was not measured.
  MeasuredModel(const HardwareProfile& profile, const MeasurementSet& m, const HardwareModel& fallback);

  Timed gemm(Flops flops, Bytes bytes, double rows) const override;
  Timed attention(Flops flops, double q_tokens, double kv_tokens, double head_dim, AttentionBackend b) const override;
  Timed memory(Bytes bytes) const override;
  Timed conv(Flops flops) const override;
  Timed collective(Collective c, Bytes bytes, const CommGroup& group) const override;
  std::string collective_source(Collective c, const CommGroup& group) const override;
  Microseconds launch_us() const override;
  const HardwareProfile& profile() const override { return profile_; }

  // Ranks sharing the device (CPU cores) while kernels run: kernel curves measured with that many
  // concurrent ranks are used when present.
  void set_concurrent_ranks(int ranks) { concurrent_ = ranks; }

 private:
  const LogLogCurve* kernel_curve(KernelKind k) const;
  // k x n of a GEMM of `flops` over `rows` rows (2 rows k n FLOPs), rounded: its probed shape.
  static long long weight_elements(Flops flops, double rows);
  // The rate-over-rows curve of GEMMs of this weight, measured with the nearest number of
  // concurrent ranks; null when none was probed.
  const LogLogCurve* gemm_shape_curve(long long weights) const;
  // (collective, ranks, nodes) of a measured curve.
  using CurveKey = std::tuple<int, int, int>;
  // The curve that prices `c` over `group` (see the header comment); null when none applies.
  const std::pair<const CurveKey, LogLogCurve>* collective_curve(Collective c, const CommGroup& group) const;

  const HardwareProfile& profile_;
  const HardwareModel& fallback_;
  // (kind, concurrent ranks) -> achieved rate (FLOP/s, or B/s for memory) over work (FLOPs or bytes)
  std::map<std::pair<int, int>, LogLogCurve> kernels_;
  // (concurrent ranks, k x n) -> a GEMM's achieved FLOP/s over its rows
  std::map<std::pair<int, long long>, LogLogCurve> gemm_shapes_;
  // (collective, ranks, nodes) -> time (us) over bytes
  std::map<CurveKey, LogLogCurve> collectives_;
  Microseconds launch_us_ = -1;
  int concurrent_ = 1;
};

// A hardware profile of this machine from its measurements: peak = the best measured GEMM rate,
// memory bandwidth = the best measured memory-bound rate, link = the best measured busbw and the
// smallest measured collective time, efficiencies 1 (the measurements already are achieved
// figures). `name` is "local".
HardwareProfile local_profile(const MeasurementSet& m, const std::string& description, double memory_mib);

}  // namespace cpplan::costmodel
