#pragma once
// What a kernel or a collective costs on one hardware profile. The analytic model asks this
// interface only, so measured tables (probes) and calibrated fits can replace the datasheet
// figures term by term; every answer says where its inputs came from.

#include <string>
#include <string_view>

#include "core/hardware.h"
#include "core/units.h"

namespace cpplan::costmodel {

enum class Source { kDatasheet, kMeasured, kCalibrated };
std::string_view to_string(Source s);

enum class Collective { kAllGather, kAllToAll, kAllReduce, kReduceScatter, kSendRecv };
std::string_view to_string(Collective c);
// nccl-tests' bus-bandwidth factor: busbw = algbw * factor.
double busbw_factor(Collective c, int ranks);

// Where the ranks of one collective sit. Without a placement, whether the group crosses nodes
// decides which of the hardware profile's links bounds it; topology-aware placement
// (planner/topology/) supplies the group's effective bus bandwidth and alpha instead. A measured
// model prices the group from the curve measured on as many nodes.
struct CommGroup {
  int ranks = 1;
  int stride = 1;           // distance between consecutive ranks of the group
  int nodes = 1;            // nodes one group spans (the widest group of its axis)
  bool crosses_nodes() const { return nodes > 1; }
  // From placement: achievable busbw of this group's collective with the concurrent groups of its
  // axis sharing the links, and its alpha. busbw_gbps = 0: use the hardware profile's link.
  GBps busbw_gbps = 0;
  Microseconds latency_us = 0;
};

struct Timed {
  Milliseconds ms = 0;
  Source source = Source::kDatasheet;
  bool bandwidth_bound = false;  // the roofline's memory side set ms (a GEMM too small for its weights)
  Resource binding = Resource::kTensor;  // the resource whose ceiling set ms
};

class HardwareModel {
 public:
  virtual ~HardwareModel() = default;
  // Dense GEMMs of `flops` that read/write `bytes` with `rows` rows (tokens): roofline.
  virtual Timed gemm(Flops flops, Bytes bytes, double rows) const = 0;
  // Attention kernel calls of `flops` in total (both matmuls), each over `q_tokens` x `kv_tokens`
  // with heads `head_dim` wide: flops / (4 head_dim) scores, one exponential each.
  virtual Timed attention(Flops flops, double q_tokens, double kv_tokens, double head_dim, AttentionBackend b) const = 0;
  // Memory-bound work (norms, modulation, RoPE, activations, residuals, merges).
  virtual Timed memory(Bytes bytes) const = 0;
  // VAE convolutions.
  virtual Timed conv(Flops flops) const = 0;
  // One collective whose nccl-tests "size" is `bytes` (t = alpha + bytes * factor / busbw).
  virtual Timed collective(Collective c, Bytes bytes, const CommGroup& group) const = 0;
  // What prices collective(c, ., group): the measured curve or the link, in words (--explain).
  virtual std::string collective_source(Collective c, const CommGroup& group) const = 0;
  virtual Microseconds launch_us() const = 0;
  virtual const HardwareProfile& profile() const = 0;
};

// Datasheet peaks times the profile's achievable efficiencies (fitted to published timings). An
// attention kernel the profile gives no fraction for (FA3, FA4, AITER, splash) costs the profile's
// flash time (FA2, or the device's own flash kernel) times the ratio of the two kernels' rooflines
// (AttentionRoofline).
class DatasheetModel final : public HardwareModel {
 public:
  explicit DatasheetModel(const HardwareProfile& hw) : hw_(hw) {}
  Timed gemm(Flops flops, Bytes bytes, double rows) const override;
  Timed attention(Flops flops, double q_tokens, double kv_tokens, double head_dim, AttentionBackend b) const override;
  Timed memory(Bytes bytes) const override;
  Timed conv(Flops flops) const override;
  Timed collective(Collective c, Bytes bytes, const CommGroup& group) const override;
  std::string collective_source(Collective c, const CommGroup& group) const override;
  Microseconds launch_us() const override { return hw_.kernel_launch_us; }
  const HardwareProfile& profile() const override { return hw_; }

 private:
  const HardwareProfile& hw_;
};

}  // namespace cpplan::costmodel
