#include "costmodel/measured_model.h"

#include <algorithm>
#include <cmath>

namespace cpplan::costmodel {

void LogLogCurve::add(double x, double y) {
  if (x <= 0 || y <= 0) return;
  points_.emplace_back(std::log(x), std::log(y));
  sorted_ = false;
}

void LogLogCurve::sort() const {
  if (sorted_) return;
  std::sort(points_.begin(), points_.end());
  // Repeated x: keep the mean of their y (several repetitions of one size).
  std::vector<std::pair<double, double>> merged;
  for (std::size_t i = 0; i < points_.size();) {
    std::size_t j = i;
    double sum = 0;
    while (j < points_.size() && points_[j].first == points_[i].first) sum += points_[j++].second;
    merged.emplace_back(points_[i].first, sum / static_cast<double>(j - i));
    i = j;
  }
  points_ = std::move(merged);
  sorted_ = true;
}

double LogLogCurve::operator()(double x) const {
  sort();
  const double lx = std::log(std::max(x, 1e-300));
  if (points_.size() == 1 || lx <= points_.front().first) return std::exp(points_.front().second);
  if (lx >= points_.back().first) {
    const double beyond = beyond_ == Beyond::kProportional ? lx - points_.back().first : 0.0;
    return std::exp(points_.back().second + beyond);
  }
  const auto hi = std::lower_bound(points_.begin(), points_.end(), std::make_pair(lx, -1e300));
  const auto lo = hi - 1;
  const double t = (lx - lo->first) / (hi->first - lo->first);
  return std::exp(lo->second + t * (hi->second - lo->second));
}

MeasuredModel::MeasuredModel(const HardwareProfile& profile, const MeasurementSet& m, const HardwareModel& fallback)
    : profile_(profile), fallback_(fallback) {
  for (const KernelSample& k : m.kernels) {
    if (k.time_us <= 0) continue;
    const double seconds = k.time_us * 1e-6;
    if (k.kind == KernelKind::kMemory) {
      // The smallest memory-bound call is the per-kernel overhead: what a launch costs.
      if (k.bytes <= 64 && (launch_us_ < 0 || k.time_us < launch_us_)) launch_us_ = k.time_us;
      if (k.bytes > 64) kernels_[{static_cast<int>(k.kind), k.concurrent_ranks}].add(k.bytes, k.bytes / seconds);
    } else if (k.flops > 0) {
      kernels_[{static_cast<int>(k.kind), k.concurrent_ranks}].add(k.flops, k.flops / seconds);
      if (k.kind == KernelKind::kGemm && k.rows > 0)
        gemm_shapes_[{k.concurrent_ranks, weight_elements(k.flops, k.rows)}].add(k.rows, k.flops / seconds);
    }
  }
  // Kernel rates saturate beyond the largest call probed (a bigger GEMM runs at the same FLOP/s,
  // so its time still grows with its work: clamping the rate extrapolates the time in proportion).
  // A collective's curve is time itself: clamped, a 1.5 GiB gather would cost what the largest
  // probed 256 MiB one did; it grows at the largest probe's bandwidth instead (nccl-tests' busbw
  // is flat beyond a few hundred MiB). Below the smallest probe the time stays at its latency.
  for (const CollectiveSample& c : m.collectives) {
    if (c.uneven || c.time_us <= 0) continue;
    collectives_.try_emplace({static_cast<int>(c.kind), c.ranks, std::max(1, c.nodes)}, LogLogCurve::Beyond::kProportional)
        .first->second.add(c.bytes, c.time_us);
  }
}

const LogLogCurve* MeasuredModel::kernel_curve(KernelKind k) const {
  // Prefer the curve measured with as many concurrent ranks as this plan has; else the closest.
  const LogLogCurve* best = nullptr;
  int best_distance = 1 << 30;
  for (const auto& [key, curve] : kernels_) {
    if (key.first != static_cast<int>(k)) continue;
    const int distance = std::abs(key.second - concurrent_);
    if (distance < best_distance) {
      best = &curve;
      best_distance = distance;
    }
  }
  return best;
}

long long MeasuredModel::weight_elements(Flops flops, double rows) {
  return rows > 0 ? std::llround(flops / (2.0 * rows)) : 0;
}

const LogLogCurve* MeasuredModel::gemm_shape_curve(long long weights) const {
  const LogLogCurve* best = nullptr;
  int best_distance = 1 << 30;
  for (const auto& [key, curve] : gemm_shapes_) {
    if (key.second != weights) continue;
    const int distance = std::abs(key.first - concurrent_);
    if (distance < best_distance) {
      best = &curve;
      best_distance = distance;
    }
  }
  return best;
}

Timed MeasuredModel::gemm(Flops flops, Bytes bytes, double rows) const {
  if (flops > 0 && rows > 0)
    if (const LogLogCurve* shape = gemm_shape_curve(weight_elements(flops, rows)))
      return {flops / (*shape)(rows) * 1e3, Source::kMeasured};
  const LogLogCurve* c = kernel_curve(KernelKind::kGemm);
  if (!c || flops <= 0) return fallback_.gemm(flops, bytes, rows);
  return {flops / (*c)(flops) * 1e3, Source::kMeasured};
}

Timed MeasuredModel::attention(Flops flops, double q_tokens, double kv_tokens, double head_dim, AttentionBackend b) const {
  const LogLogCurve* c = kernel_curve(KernelKind::kAttention);
  if (!c || flops <= 0) return fallback_.attention(flops, q_tokens, kv_tokens, head_dim, b);
  return {flops / (*c)(flops) * 1e3, Source::kMeasured};
}

Timed MeasuredModel::memory(Bytes bytes) const {
  const LogLogCurve* c = kernel_curve(KernelKind::kMemory);
  if (!c || bytes <= 0) return fallback_.memory(bytes);
  return {bytes / (*c)(bytes) * 1e3, Source::kMeasured};
}

Timed MeasuredModel::conv(Flops flops) const {
  const LogLogCurve* c = kernel_curve(KernelKind::kConv);
  if (!c || flops <= 0) return fallback_.conv(flops);
  return {flops / (*c)(flops) * 1e3, Source::kMeasured};
}

const std::pair<const MeasuredModel::CurveKey, LogLogCurve>* MeasuredModel::collective_curve(
    Collective kind, const CommGroup& group) const {
  // Nearest first by node count, then by group size, on the group's side of the node boundary.
  const auto distance = [&](const CurveKey& k) {
    return std::make_pair(std::abs(std::get<2>(k) - group.nodes), std::abs(std::get<1>(k) - group.ranks));
  };
  const std::pair<const CurveKey, LogLogCurve>* best = nullptr;
  for (const auto& entry : collectives_) {
    const auto& [k, ranks, nodes] = entry.first;
    if (k != static_cast<int>(kind) || (nodes > 1) != group.crosses_nodes()) continue;
    if (!best || distance(entry.first) < distance(best->first)) best = &entry;
  }
  return best;
}

Timed MeasuredModel::collective(Collective kind, Bytes bytes, const CommGroup& group) const {
  if (group.ranks <= 1 || bytes <= 0) return {0, Source::kMeasured};
  const auto* curve = collective_curve(kind, group);
  if (!curve) return fallback_.collective(kind, bytes, group);
  // Another group size: keep its busbw at this size (busbw is the figure that stays comparable
  // across group sizes) and rescale by the bus factors.
  const int measured_ranks = std::get<1>(curve->first);
  const double scale = busbw_factor(kind, group.ranks) / std::max(1e-9, busbw_factor(kind, measured_ranks));
  return {curve->second(bytes) * scale * 1e-3, Source::kMeasured};
}

std::string MeasuredModel::collective_source(Collective kind, const CommGroup& group) const {
  const auto* curve = collective_curve(kind, group);
  const auto on = [](int nodes) { return nodes == 1 ? std::string("1 node") : std::to_string(nodes) + " nodes"; };
  if (!curve)
    return fallback_.collective_source(kind, group) + " (no " + std::string(to_string(kind)) + " measured " +
           (group.crosses_nodes() ? "across nodes)" : "within a node)");
  const auto& [k, ranks, nodes] = curve->first;
  std::string s = "measured " + std::string(to_string(kind)) + ", " + std::to_string(ranks) + " ranks on " + on(nodes);
  if (ranks != group.ranks || nodes != group.nodes)
    s += ", rescaled to " + std::to_string(group.ranks) + " ranks on " + on(group.nodes);
  return s;
}

Microseconds MeasuredModel::launch_us() const { return launch_us_ >= 0 ? launch_us_ : fallback_.launch_us(); }

HardwareProfile local_profile(const MeasurementSet& m, const std::string& description, double memory_mib) {
  HardwareProfile h;
  h.name = "local";
  h.description = description;
  h.source = "measured";
  double gemm_rate = 0, memory_rate = 0, busbw = 0, smallest_us = 1e300;
  for (const KernelSample& k : m.kernels) {
    if (k.time_us <= 0) continue;
    if (k.kind == KernelKind::kGemm) gemm_rate = std::max(gemm_rate, k.flops / (k.time_us * 1e-6));
    if (k.kind == KernelKind::kMemory && k.bytes > 64) memory_rate = std::max(memory_rate, k.bytes / (k.time_us * 1e-6));
  }
  for (const CollectiveSample& c : m.collectives) {
    busbw = std::max(busbw, c.busbw_gbps);
    smallest_us = std::min(smallest_us, c.time_us);
  }
  h.bf16_tflops = gemm_rate > 0 ? gemm_rate / 1e12 : 1e-3;
  h.memory_bandwidth_gbps = memory_rate > 0 ? memory_rate / 1e9 : 1;
  h.memory_mib = memory_mib;
  h.reserved_mib = 0;
  h.link_kind = LinkKind::kPcieHost;
  h.intra_node = {busbw > 0 ? busbw : 1, smallest_us < 1e300 ? smallest_us : 50, 1.0};
  h.network = h.intra_node;
  h.gpus_per_node = 1 << 20;
  h.gemm_efficiency = 1;
  h.gemm_half_rows = 0;
  for (double& e : h.attention_efficiency) e = 1;
  h.attention_half_tokens = 0;
  h.conv_efficiency = 1;
  h.memory_efficiency = 1;
  return h;
}

}  // namespace cpplan::costmodel
