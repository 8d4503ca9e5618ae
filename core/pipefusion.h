#pragma once
// How PipeFusion cuts a model and a latent (shared/spec/parallelism.md, "PipeFusion"): the
// stages' block counts and the patches' latent rows and tokens. Shared by the planner's rules,
// the cost model and the executor, so that all three cut the same way.

#include <string>
#include <vector>

#include "core/plan.h"

namespace cpplan {

// Blocks of each of `stages` contiguous stages of `blocks` blocks, as xDiT's default split:
// ceil(blocks / stages) per stage, the last stage the rest (empty entries where that leaves
// nothing: the planner refuses such a split).
std::vector<int> pipefusion_stage_blocks(int blocks, int stages);
// "15+15+15+12".
std::string stage_split_text(const std::vector<int>& stage_blocks);

// Latent token rows of the query: height / (VAE factor x patch size) per latent frame; PipeFusion
// cuts its patches along them (xDiT's patch axis is the latent height).
long long latent_rows(const Query& q);
// Rows of each of `patches` patches: torch.tensor_split's split, the first rows % patches patches
// one row more (xDiT warns and cuts uneven patches the same way).
std::vector<long long> patch_rows(long long rows, int patches);
// Image tokens of each patch: its rows x the latent columns x the latent frames.
std::vector<long long> patch_tokens(const Query& q, int patches);

}  // namespace cpplan
