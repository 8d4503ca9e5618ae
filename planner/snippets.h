#pragma once
// What each framework needs to run a ranked plan, as both fronts show it: the diffusers script, the
// xDiT command line, or the reason a framework cannot run the plan with its placement of the text
// encoders and the VAE.

#include <array>
#include <string>
#include <vector>

#include "planner/frameworks.h"
#include "planner/planner.h"

namespace cpplan::planner {

// A line a Python script adds for the plan's format or cache, as `plan.apply(pipe)` repeats it
// (python/cpplan/tune.py): `import`, then `code`, a statement on `pipe` (diffusers:
// pipe.transformer.enable_cache(...), quantize_(pipe.transformer, ...)) or, with a `keyword`, the
// value of that keyword argument of enable_cache (cache-dit: cache_config, quantize_config).
struct PythonHook {
  std::string what;  // "dtype" or "cache"
  std::string import;
  std::string keyword;
  std::string code;
};

// One framework's answer for a plan: `text` (a Python script: diffusers, cache-dit; a command line:
// xDiT, SGLang Diffusion, vLLM-Omni), else `unavailable`, the reason it cannot run it; `hooks`, the
// format's and the cache's lines of a Python script (diffusers, cache-dit), in the script's order.
struct FrameworkSnippet {
  std::string text;
  std::string unavailable;
  std::vector<PythonHook> hooks;
};
// Indexed by Framework; every entry empty for an invalid plan.
std::array<FrameworkSnippet, kFrameworkCount> snippets_for(const Query& q, const RankedPlan& p);

// What one framework offers for a ranking: the top plan when it runs that, else its best plan
// (best_plan(r, f), planner/planner.h; null when it runs none), that plan's step time over the top plan's minus one, why it cannot run
// the top plan (empty when it can), and the plan's script or command.
struct FrameworkChoice {
  Framework framework = Framework::kDiffusers;
  const RankedPlan* plan = nullptr;
  double gap = 0;
  std::string top_unavailable;
  std::string snippet;
};
// One per framework, for a report with a valid plan (ranked first); empty otherwise.
std::vector<FrameworkChoice> best_by_framework(const Query& q, const PlanReport& r);

// One framework's answer for a valid plan `p` as text: "# <framework>\n<script>", or "# <framework>:
// cannot run this plan: <reason>" and, with the ranking `report` it belongs to, "; the fastest
// plan it runs: L (V), 12% slower" and that plan's script (as the CLI's answers for the top plan).
std::string framework_answer(const Query& q, const RankedPlan& p, Framework f, const FrameworkSnippet& s,
                             const PlanReport* report = nullptr);
// Every framework's answer (framework_answer) for a valid plan, diffusers first; empty for an
// invalid one.
std::string framework_snippets(const Query& q, const RankedPlan& p, const PlanReport* report = nullptr);

}  // namespace cpplan::planner
