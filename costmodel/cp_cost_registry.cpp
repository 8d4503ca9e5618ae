// The context-parallel variants the cost model knows: one line each, in CpVariant order
// (core/cp_registry.h).
#include "costmodel/cp_cost.h"

namespace cpplan::costmodel {

const CpCostStrategy& no_cp_cost();
const CpCostStrategy& ring_cost();
const CpCostStrategy& ring_anything_cost();
const CpCostStrategy& ulysses_cost();
const CpCostStrategy& ulysses_anything_cost();
const CpCostStrategy& unified_cost();

namespace {
constexpr CpRegistryLines<CpCostStrategy> kLines = {{
    {CpVariant::kNone, no_cp_cost},
    {CpVariant::kRing, ring_cost},
    {CpVariant::kUlysses, ulysses_cost},
    {CpVariant::kUnified, unified_cost},
    {CpVariant::kUlyssesAnything, ulysses_anything_cost},
    {CpVariant::kRingAnything, ring_anything_cost},
}};
static_assert(one_line_per_variant(kLines), "one line per CpVariant, in the enum's order");
}  // namespace

const CpRegistry<CpCostStrategy>& all_cp_cost_strategies() {
  static const CpRegistry<CpCostStrategy> kRegistry = build_cp_registry(kLines, "costmodel CpCostStrategy");
  return kRegistry;
}

const CpCostStrategy& cp_cost_strategy(CpVariant v) { return cp_registry_entry(all_cp_cost_strategies(), v); }

}  // namespace cpplan::costmodel
