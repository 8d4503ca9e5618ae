#pragma once
// A plan evaluated by the planner on datasheet figures (no fit), with its placement's links,
// groups and per-axis communication at hand: the placement tests' expected figures are derived by
// hand from the profiles and compared with these.
#include <catch2/catch.hpp>

#include "planner/planner.h"

namespace cpplan::test {

struct PricedPlan {
  planner::RankedPlan plan;
  const planner::topology::AxisBandwidth& link(costmodel::CommAxis a) const {
    return plan.placement->links[static_cast<int>(a)];
  }
  const costmodel::CommGroup& group(costmodel::CommAxis a) const { return plan.placement->layout[a]; }
  Milliseconds comm_ms(costmodel::CommAxis a) const { return plan.predicted->axis_comm_ms[static_cast<int>(a)]; }
};

// The plan as the planner evaluates it; it must be valid and placed.
inline PricedPlan price(const Query& q, const ParallelConfig& c) {
  const costmodel::DatasheetModel hw(*q.hardware);
  const costmodel::CostModel cost(hw);
  PricedPlan p{planner::Planner(cost).evaluate(q, c)};
  REQUIRE(p.plan.plan.valid());
  REQUIRE(p.plan.placement);
  return p;
}

// FLUX.1-dev at 1024^2: 4096 image + 512 text tokens, hidden 3072, bf16; 19 double + 38 single
// blocks, one attention layer each.
inline constexpr double kFluxTokens = 4608, kFluxHidden = 3072, kFluxBytes = 2, kFluxLayers = 57;

}  // namespace cpplan::test
