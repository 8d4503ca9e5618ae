// The context-parallel variants the planner enumerates and validates: one line each.
#include "planner/cp_rules.h"

namespace cpplan::planner {

const CpRules& no_cp_rules();
const CpRules& ring_rules();
const CpRules& ulysses_rules();
const CpRules& unified_rules();
const CpRules& ulysses_anything_rules();
const CpRules& ring_anything_rules();

const std::vector<const CpRules*>& all_cp_rules() {
  static const std::vector<const CpRules*> kAll = {
      &no_cp_rules(), &ring_rules(), &ulysses_rules(), &unified_rules(), &ulysses_anything_rules(), &ring_anything_rules(),
  };
  return kAll;
}

const CpRules& cp_rules(CpVariant v) {
  for (const CpRules* r : all_cp_rules())
    if (r->variant() == v) return *r;
  return *all_cp_rules().front();
}

}  // namespace cpplan::planner
