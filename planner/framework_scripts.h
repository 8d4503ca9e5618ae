#pragma once
// The launch text of cache-dit, SGLang Diffusion and vLLM-Omni for one plan, with its text encoders
// and VAE placed as `where`: cache-dit's Python script, SGLang Diffusion's and vLLM-Omni's command
// lines. Every call and flag is one that shared/reference/frameworks.md names; what it does not
// confirm, the text says in a comment. (diffusers' script and xDiT's command: planner/frameworks.h.)

#include <string>
#include <vector>

#include "core/plan.h"

namespace cpplan::planner {

// cache-dit's ParallelismConfig(...) for the plan: ulysses_size, ring_size, tp_size (those over 1),
// ulysses_anything, ring_rotate_method (with Ring) and extra_parallel_modules (the text encoder
// cache-dit shards, the VAE) as `where` says; empty when the plan has no CP or TP group.
std::string cache_dit_parallelism_config(const Query& q, const Plan& p, const PipelinePlacement& where);
// cache-dit's Python script (launch line in its first comment); precondition: cache-dit runs the plan.
std::string cache_dit_script(const Query& q, const Plan& p, const PipelinePlacement& where);

// SGLang Diffusion's parallel flags for the plan ("--num-gpus", "4", "--ulysses-degree", "4", ...).
std::vector<std::string> sglang_parallel_args(const Plan& p, const PipelinePlacement& where);
// `sglang generate ...` for the plan, after one comment line with what is unconfirmed;
// precondition: SGLang Diffusion runs the plan.
std::string sglang_command(const Query& q, const Plan& p, const PipelinePlacement& where);

// vLLM-Omni's parallel flags for the plan ("--usp", "4", "--ring", "1", ...).
std::vector<std::string> vllm_omni_parallel_args(const Plan& p, const PipelinePlacement& where);
// `vllm serve REPO --omni ...` for the plan, after one comment line on the request; precondition:
// vLLM-Omni runs the plan.
std::string vllm_omni_command(const Query& q, const Plan& p, const PipelinePlacement& where);

}  // namespace cpplan::planner
