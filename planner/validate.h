#pragma once
// Whether a parallel config can run a query, with every broken rule as a Violation: the field,
// its value, the rule and the lever (core/violation.h; shared/spec/parallelism.md).

#include <string>
#include <vector>

#include "core/plan.h"

namespace cpplan::planner {

// Every violated rule, in a stable order: degrees, device count, mode flags, the variant's own
// rules, tensor, CFG, PipeFusion, fully sharded weights and data parallelism. Empty when the plan is valid.
std::vector<Violation> validate(const Query& q, const ParallelConfig& c);

// The config, its variant and its verdict.
Plan make_plan(const Query& q, const ParallelConfig& c);

}  // namespace cpplan::planner
