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
// The largest and smallest patch of that split, in rows or in image tokens (its rows x the latent
// columns x the latent frames), without building it (the planner checks thousands of configs per
// query): equal when the split is even.
struct PatchSpan {
  long long largest = 0, smallest = 0;
};
PatchSpan patch_row_span(long long rows, int patches);
PatchSpan patch_token_span(const Query& q, int patches);
// Stages of xDiT's split of `blocks` that get no block (planner: every stage needs one).
int empty_stages(int blocks, int stages);

}  // namespace cpplan
