#pragma once
// What each framework needs to run a ranked plan, as both fronts show it: the diffusers script, the
// xDiT command line, or the reason a framework cannot run the plan with its placement of the text
// encoders and the VAE.

#include <string>

#include "planner/planner.h"

namespace cpplan::planner {

// "# diffusers\n<script>", "# cache-dit: ...", "# xDiT\n<command>" or "# <framework>: cannot run
// this plan: <reason>" lines, for a valid plan; empty for an invalid one.
std::string framework_snippets(const Query& q, const RankedPlan& p);

}  // namespace cpplan::planner
