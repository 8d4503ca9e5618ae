#include "core/parallel_config.h"

#include <array>

namespace cpplan {

namespace {
constexpr std::array<std::string_view, kCpVariantCount> kVariantNames = {
    "none", "ring", "ulysses", "unified", "ulysses_anything", "ring_anything"};
constexpr std::array<std::string_view, kCpVariantCount> kVariantDisplay = {
    "none", "Ring", "Ulysses", "Unified", "Ulysses Anything", "Ring Anything"};
constexpr bool all_named(const std::array<std::string_view, kCpVariantCount>& names) {
  for (const std::string_view n : names)
    if (n.empty()) return false;
  return true;
}
static_assert(all_named(kVariantNames) && all_named(kVariantDisplay), "every CpVariant has its names");
constexpr std::array<std::string_view, kAttentionBackendCount> kBackendNames = {
    "flash", "cudnn", "sage", "native", "fa3", "fa4", "aiter", "splash"};
}  // namespace

CpVariant classify(const ContextParallelConfig& cp) {
  if (cp.ulysses_anything) return CpVariant::kUlyssesAnything;
  if (cp.ring_anything) return CpVariant::kRingAnything;
  const bool ring = cp.ring_degree > 1;
  const bool ulysses = cp.ulysses_degree > 1;
  if (ring && ulysses) return CpVariant::kUnified;
  if (ring) return CpVariant::kRing;
  if (ulysses) return CpVariant::kUlysses;
  return CpVariant::kNone;
}

std::string_view to_string(CpVariant v) { return kVariantNames[static_cast<int>(v)]; }
std::string_view display_name(CpVariant v) { return kVariantDisplay[static_cast<int>(v)]; }

std::optional<CpVariant> cp_variant_from_string(std::string_view s) {
  for (int i = 0; i < kCpVariantCount; ++i)
    if (kVariantNames[i] == s) return static_cast<CpVariant>(i);
  return std::nullopt;
}

std::string_view to_string(AttentionBackend b) { return kBackendNames[static_cast<int>(b)]; }

std::optional<AttentionBackend> attention_backend_from_string(std::string_view s) {
  for (int i = 0; i < kAttentionBackendCount; ++i)
    if (kBackendNames[i] == s) return static_cast<AttentionBackend>(i);
  if (s == "fa2") return AttentionBackend::kFlash;
  if (s == "sdpa") return AttentionBackend::kNative;
  return std::nullopt;
}

std::string attention_backend_choices() {
  std::string out;
  for (const std::string_view n : kBackendNames) out += (out.empty() ? "" : " | ") + std::string(n);
  return out;
}



std::string_view to_string(RotateMethod m) {
  constexpr std::string_view n[] = {"allgather", "alltoall", "p2p"};
  return n[static_cast<int>(m)];
}

std::optional<RotateMethod> rotate_method_from_string(std::string_view s) {
  if (s == "allgather") return RotateMethod::kAllGather;
  if (s == "alltoall") return RotateMethod::kAllToAll;
  if (s == "p2p") return RotateMethod::kP2P;
  return std::nullopt;
}

std::string plan_label(const ParallelConfig& c) {
  std::string out;
  auto add = [&](const char* axis, int degree) {
    if (degree == 1) return;
    if (!out.empty()) out += " x ";
    out += axis;
    out += ' ';
    out += std::to_string(degree);
  };
  add("ring", c.ring());
  add("ulysses", c.ulysses());
  add("tp", c.tp());
  if (c.pp() > 1) {
    add("pipefusion", c.pp());
    out += " (" + std::to_string(c.pipefusion.patches) + " patches)";
  }
  add("cfg", c.cfg_degree);
  add("dp", c.dp_degree);
  add("fs", c.fs());
  return out.empty() ? "single GPU" : out;
}

}  // namespace cpplan
