#pragma once
// The valid plans the executor (executor/, `cpplan run`) does not run yet: frameworks run them
// (planner/frameworks.h says which), the executor's ranks do not. `cpplan run` refuses them in one
// line and lists them (`--list-unsupported`), cpplan-gui's Run tab says why it cannot start one;
// the tests that run every accepted plan count them. In the session (no LibTorch): every front asks.

#include <string>
#include <vector>

#include "core/model.h"
#include "core/plan.h"

namespace cpplan::session {

// Empty when the executor runs valid plan `c` of model `m`; else why not, naming the flags and
// the framework that does run it.
std::string unsupported_plan(const ModelProfile& m, const ParallelConfig& c);

// Empty when the executor runs a plan ranked in number format `p` with step cache `s`; else why
// not: it runs its own compute dtype (`cpplan run --dtype fp32|bf16`) or weight-only int8
// (`--weights int8`), and of the caches the fixed schedule alone (`cpplan run --cache fixed`).
std::string unsupported_run_choice(const Precision& p, const CacheSpec& s);

// A valid plan of a query that the executor does not run: its label and unsupported_plan's reason.
struct UnsupportedPlan {
  ParallelConfig config;
  std::string label, reason;
};

// Every plan the planner enumerates for `q` (its GPU count, every patch count PipeFusion takes)
// that validate() accepts and the executor does not run, in enumeration order. Empty when the
// executor runs them all.
std::vector<UnsupportedPlan> unsupported_plans(const Query& q);

}  // namespace cpplan::session
