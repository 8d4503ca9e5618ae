// The context-parallel variants the cost model knows: one line each.
#include "costmodel/cp_cost.h"

namespace cpplan::costmodel {

const CpCostStrategy& no_cp_cost();
const CpCostStrategy& ring_cost();
const CpCostStrategy& ring_anything_cost();
const CpCostStrategy& ulysses_cost();
const CpCostStrategy& ulysses_anything_cost();
const CpCostStrategy& unified_cost();

const CpCostStrategy& cp_cost_strategy(CpVariant v) {
  static const CpCostStrategy* const kByVariant[kCpVariantCount] = {
      &no_cp_cost(), &ring_cost(), &ulysses_cost(), &unified_cost(), &ulysses_anything_cost(), &ring_anything_cost(),
  };
  return *kByVariant[static_cast<int>(v)];
}

}  // namespace cpplan::costmodel
