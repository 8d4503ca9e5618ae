// The context-parallel variants the planner enumerates and validates: one line each, in CpVariant
// order (core/cp_registry.h).
#include "planner/cp_rules.h"

namespace cpplan::planner {

const CpRules& no_cp_rules();
const CpRules& ring_rules();
const CpRules& ulysses_rules();
const CpRules& unified_rules();
const CpRules& ulysses_anything_rules();
const CpRules& ring_anything_rules();

namespace {
constexpr CpRegistryLines<CpRules> kLines = {{
    {CpVariant::kNone, no_cp_rules},
    {CpVariant::kRing, ring_rules},
    {CpVariant::kUlysses, ulysses_rules},
    {CpVariant::kUnified, unified_rules},
    {CpVariant::kUlyssesAnything, ulysses_anything_rules},
    {CpVariant::kRingAnything, ring_anything_rules},
}};
static_assert(one_line_per_variant(kLines), "one line per CpVariant, in the enum's order");
}  // namespace

const CpRegistry<CpRules>& all_cp_rules() {
  static const CpRegistry<CpRules> kRegistry = build_cp_registry(kLines, "planner CpRules");
  return kRegistry;
}

const CpRules& cp_rules(CpVariant v) { return cp_registry_entry(all_cp_rules(), v); }

}  // namespace cpplan::planner
