#pragma once
// The one registry form of the context-parallel variants, shared by the planner (CpRules,
// planner/cp_rules_registry.cpp), the cost model (CpCostStrategy, costmodel/cp_cost_registry.cpp)
// and the executor (AttentionOp, executor/attention/registry.cpp): one line per CpVariant, in the
// enum's order, naming the variant and the function that returns its strategy. A layer writes
//
//   constexpr CpRegistryLines<X> kLines = {{{CpVariant::kNone, no_cp_x}, ...}};
//   static_assert(one_line_per_variant(kLines));
//
// so a missing, extra or misplaced line fails to compile; build_cp_registry() then checks, once,
// that each strategy's variant() is its line's (std::logic_error otherwise). Lookup is by index:
// every variant has its own entry, there is no fallback.

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/parallel_config.h"

namespace cpplan {

template <class Strategy>
struct CpRegistryLine {
  CpVariant variant = CpVariant::kNone;
  const Strategy& (*strategy)() = nullptr;
};

template <class Strategy>
using CpRegistryLines = std::array<CpRegistryLine<Strategy>, kCpVariantCount>;

// Strategy of CpVariant i at index i.
template <class Strategy>
using CpRegistry = std::array<const Strategy*, kCpVariantCount>;

// Line i names CpVariant i and a strategy function (lines left out are value-initialised: kNone
// with no function, so they fail this too).
template <class Strategy>
constexpr bool one_line_per_variant(const CpRegistryLines<Strategy>& lines) {
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (static_cast<std::size_t>(lines[i].variant) != i || lines[i].strategy == nullptr) return false;
  return true;
}

// The table of the lines' strategies; throws std::logic_error naming the layer when a strategy's
// variant() is not its line's.
template <class Strategy>
CpRegistry<Strategy> build_cp_registry(const CpRegistryLines<Strategy>& lines, std::string_view layer) {
  CpRegistry<Strategy> out{};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const Strategy& s = lines[i].strategy();
    if (s.variant() != lines[i].variant)
      throw std::logic_error(std::string(layer) + " registry: the line of " + std::string(to_string(lines[i].variant)) +
                             " returns the strategy of " + std::string(to_string(s.variant())));
    out[i] = &s;
  }
  return out;
}

// The variant's entry (std::out_of_range for a value outside the enum).
template <class Strategy>
const Strategy& cp_registry_entry(const CpRegistry<Strategy>& registry, CpVariant v) {
  return *registry.at(static_cast<std::size_t>(v));
}

}  // namespace cpplan
