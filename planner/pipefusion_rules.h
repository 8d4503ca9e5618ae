#pragma once
// Validity rules of PipeFusion (planner/strategies/pipefusion.cpp; shared/spec/parallelism.md).

#include <string>
#include <vector>

#include "core/plan.h"

namespace cpplan::planner {

// Appends every PipeFusion rule the plan breaks: the stage split of the blocks,
// the patches (at least one per stage, whole latent rows, split evenly over the context-parallel
// group), the warm-up steps, and the axes PipeFusion does not combine with.
void validate_pipefusion(const Query& q, const ParallelConfig& c, std::vector<Violation>& out);

}  // namespace cpplan::planner
