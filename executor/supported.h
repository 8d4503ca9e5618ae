#pragma once
// The valid plans the executor does not run yet: frameworks run them (planner/frameworks.h says
// which), the executor's ranks do not. `cpplan run` refuses them in one line; the tests that run
// every accepted plan count and skip them.

#include <string>

#include "core/model.h"
#include "core/plan.h"

namespace cpplan::executor {

// Empty when the executor runs valid plan `c` of model `m`; else why not, naming the flags and
// the framework that does run it.
std::string unsupported_plan(const ModelProfile& m, const ParallelConfig& c);

}  // namespace cpplan::executor
