#include "costmodel/hardware_model.h"

#include <algorithm>

namespace cpplan::costmodel {

std::string_view to_string(Source s) {
  constexpr std::string_view n[] = {"datasheet", "measured", "calibrated"};
  return n[static_cast<int>(s)];
}

std::string_view to_string(Collective c) {
  constexpr std::string_view n[] = {"all_gather", "all_to_all", "all_reduce", "reduce_scatter", "send_recv"};
  return n[static_cast<int>(c)];
}

double busbw_factor(Collective c, int n) {
  if (n <= 1) return 0;
  switch (c) {
    case Collective::kAllReduce: return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll: return static_cast<double>(n - 1) / n;
    case Collective::kSendRecv: return 1.0;
  }
  return 1.0;
}

namespace {
// Efficiency that saturates with size: eff_max * x / (x + half). Small GEMMs and short
// attention blocks leave the tensor cores idle (wave quantization, prologue/epilogue).
double saturating(double eff_max, double x, double half) { return eff_max * x / (x + half); }
}  // namespace

Timed DatasheetModel::gemm(Flops flops, Bytes bytes, double rows) const {
  const double eff = saturating(hw_.gemm_efficiency, rows, hw_.gemm_half_rows);
  const Milliseconds math = compute_ms(flops, hw_.bf16_tflops * eff);
  const Milliseconds traffic = transfer_ms(bytes, hw_.memory_bandwidth_gbps * hw_.memory_efficiency);
  const bool bound = traffic > math;
  return {std::max(math, traffic), Source::kDatasheet, bound, bound ? Resource::kHbm : Resource::kTensor};
}

Timed DatasheetModel::attention(Flops flops, double q_tokens, double kv_tokens, double head_dim, AttentionBackend b) const {
  const AttentionBackend profiled_b = profiled(b) ? b : AttentionBackend::kFlash;
  const double block = std::min(q_tokens, kv_tokens);
  const double eff = saturating(hw_.attention_efficiency[static_cast<int>(profiled_b)], block, hw_.attention_half_tokens);
  const Milliseconds calibrated = compute_ms(flops, hw_.bf16_tflops * eff);
  const AttentionRoofline own = attention_roofline(hw_, b, head_dim);
  if (profiled_b == b) return {calibrated, Source::kDatasheet, false, own.binding()};
  // A kernel the profile gives no fraction for: the profile's flash-class kernel's time (FA2; on a
  // TPU or Neuron device its own flash kernel) scaled by the ratio of the two kernels' rooflines on
  // this GPU's resources.
  const double reference = attention_roofline(hw_, profiled_b, head_dim).ps_per_score();
  const double ratio = reference > 0 ? own.ps_per_score() / reference : 1;
  return {calibrated * ratio, Source::kDatasheet, false, own.binding()};
}

Timed DatasheetModel::memory(Bytes bytes) const {
  return {transfer_ms(bytes, hw_.memory_bandwidth_gbps * hw_.memory_efficiency), Source::kDatasheet, true, Resource::kHbm};
}

Timed DatasheetModel::conv(Flops flops) const {
  return {compute_ms(flops, hw_.bf16_tflops * hw_.conv_efficiency), Source::kDatasheet};
}

Timed DatasheetModel::collective(Collective c, Bytes bytes, const CommGroup& g) const {
  if (g.ranks <= 1 || bytes <= 0) return {0, Source::kDatasheet};
  if (g.busbw_gbps > 0)  // placed on a topology: the group's own bandwidth and alpha
    return {g.latency_us * 1e-3 + transfer_ms(bytes * busbw_factor(c, g.ranks), g.busbw_gbps), Source::kDatasheet, true,
            Resource::kLink};
  const Link& link = g.crosses_nodes() ? hw_.network : hw_.intra_node;
  const GBps busbw = link.bandwidth_gbps * link.efficiency;
  // Ring-style algorithms pay one latency per step; nccl-tests' alpha grows with log2 for
  // tree/NVLS but the ring bound is the conservative one for the message sizes of DiT layers.
  const Microseconds alpha = link.latency_us;
  return {alpha * 1e-3 + transfer_ms(bytes * busbw_factor(c, g.ranks), busbw), Source::kDatasheet, true, Resource::kLink};
}

std::string DatasheetModel::collective_source(Collective, const CommGroup& g) const {
  if (g.busbw_gbps > 0) return "datasheet: the links of the group's placement";
  return "datasheet: " + hw_.name + (g.crosses_nodes() ? "'s network link" : "'s intra-node link");
}

}  // namespace cpplan::costmodel
