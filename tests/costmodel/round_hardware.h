#pragma once
// Round figures in place of a datasheet, for cost-model tests whose expected values are derived by
// hand: memory-bound work moves 1 MB per ms (1e-6 ms per byte); a collective or send of n > 1
// ranks costs 10 us + size x busbw factor at the same 1e-6 ms per byte and counts as measured; one
// rank costs nothing; kernels cost nothing; a launch 5 us.

#include "costmodel/hardware_model.h"

namespace cpplan::test {

class RoundHardware final : public costmodel::HardwareModel {
 public:
  explicit RoundHardware(const HardwareProfile& hw) : hw_(hw) {}
  costmodel::Timed gemm(Flops, Bytes, double) const override { return {}; }
  costmodel::Timed attention(Flops, double, double, double, AttentionBackend) const override { return {}; }
  costmodel::Timed memory(Bytes bytes) const override { return {bytes * 1e-6, costmodel::Source::kDatasheet}; }
  costmodel::Timed conv(Flops) const override { return {}; }
  costmodel::Timed collective(costmodel::Collective c, Bytes bytes, const costmodel::CommGroup& g) const override {
    if (g.ranks <= 1) return {};
    return {0.01 + bytes * costmodel::busbw_factor(c, g.ranks) * 1e-6, costmodel::Source::kMeasured};
  }
  std::string collective_source(costmodel::Collective, const costmodel::CommGroup&) const override {
    return "round figures";
  }
  Microseconds launch_us() const override { return 5; }
  const HardwareProfile& profile() const override { return hw_; }

 private:
  const HardwareProfile& hw_;
};

}  // namespace cpplan::test
