#pragma once
// What each framework needs to run a ranked plan, as both fronts show it: the diffusers script, the
// xDiT command line, or the reason a framework cannot run the plan with its placement of the text
// encoders and the VAE.

#include <array>
#include <string>

#include "planner/frameworks.h"
#include "planner/planner.h"

namespace cpplan::planner {

// One framework's answer for a plan: `text` (a script, a command, or cache-dit's note that it runs
// the plan too), else `unavailable`, the reason it cannot run it.
struct FrameworkSnippet {
  std::string text;
  std::string unavailable;
};
// Indexed by Framework; every entry empty for an invalid plan.
std::array<FrameworkSnippet, kFrameworkCount> snippets_for(const Query& q, const RankedPlan& p);

// The fastest valid plan of `r` (ranked fastest first) that `f` runs; null when it runs none.
const RankedPlan* fastest_plan_for(const PlanReport& r, Framework f);

// "# diffusers\n<script>", "# cache-dit: ...", "# xDiT\n<command>" or "# <framework>: cannot run
// this plan: <reason>" lines, for a valid plan; empty for an invalid one (snippets_for, as text).
std::string framework_snippets(const Query& q, const RankedPlan& p);

}  // namespace cpplan::planner
