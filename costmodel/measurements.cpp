#include "costmodel/measurements.h"

#include <array>

namespace cpplan::costmodel {

namespace {
constexpr std::array<std::string_view, 4> kKernelNames = {"gemm", "attention", "memory", "conv"};
constexpr std::array<std::string_view, 5> kCollectiveNames = {"all_gather", "all_to_all", "all_reduce",
                                                              "reduce_scatter", "send_recv"};
}  // namespace

std::string_view to_string(KernelKind k) { return kKernelNames[static_cast<int>(k)]; }

std::optional<KernelKind> kernel_kind_from_string(std::string_view s) {
  for (std::size_t i = 0; i < kKernelNames.size(); ++i)
    if (kKernelNames[i] == s) return static_cast<KernelKind>(i);
  return std::nullopt;
}

std::optional<Collective> collective_from_string(std::string_view s) {
  for (std::size_t i = 0; i < kCollectiveNames.size(); ++i)
    if (kCollectiveNames[i] == s) return static_cast<Collective>(i);
  return std::nullopt;
}

}  // namespace cpplan::costmodel
