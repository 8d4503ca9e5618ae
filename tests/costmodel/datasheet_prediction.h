#pragma once
// The cost model's prediction of a plan on the query's hardware datasheet, the plan's CP variant
// classified from its config: what most cost-model tests compare with their hand derivations.

#include "core/plan.h"
#include "costmodel/cost_model.h"

namespace cpplan::test {

inline costmodel::Prediction datasheet_prediction(const Query& q, const ParallelConfig& c) {
  const costmodel::DatasheetModel hw(*q.hardware);
  const costmodel::CostModel cost(hw);
  return cost.predict(q, c, classify(c.context_parallel_config));
}

}  // namespace cpplan::test
