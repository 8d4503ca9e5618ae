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
// nothing: xDiT runs such a stage with no block between the forward's ends).
std::vector<int> pipefusion_stage_blocks(int blocks, int stages);
// The most long skips (HunyuanDiT) any stage boundary of `stage_blocks` carries: the last K
// blocks take skips (K = the model's skip blocks), block L - 1 - j the output of block j (diffusers'
// hunyuan_transformer_2d.py pops the skips last in, first out); a boundary after block b carries
// the skips of every j <= b whose consumer L - 1 - j lies beyond it. They travel with the hidden
// states, so each is one more hidden-state tensor of the patch per send. 0 without skips.
int pipefusion_skips_crossing(const ModelProfile& m, const std::vector<int>& stage_blocks);
// "15+15+15+12".
std::string stage_split_text(const std::vector<int>& stage_blocks);

// Latent token rows of the query: height / (VAE factor x patch size) per latent frame; PipeFusion
// cuts its patches along them (xDiT's patch axis is the latent height).
long long latent_rows(const Query& q);

// xDiT's patch split (runtime_state.py, _calc_patches_metadata) of a latent H latent pixels high
// (height / VAE factor) into M pipeline patches under a sequence-parallel degree sp: patches of
// h = ceil(H / M) latent pixels rounded up to a multiple of patch size x sp, n = ceil(H / h) of
// them (xDiT warns and runs n when n != M), the last one the rest H - (n - 1) h. Counted here in
// token rows (latent pixels / patch size). Inside a patch every sp rank takes 1 / sp of its rows.
enum class XditSplitError {
  kNone,
  kHeightOverSp,  // H % sp != 0 ("height of the input is not divisible by the number of sequence parallel devices")
  kLastPatch,     // the last patch's height is not a multiple of patch size x sp
};
struct XditPatchSplit {
  int requested = 0;           // M
  int patches = 0;             // n: the count xDiT runs
  long long rows = 0;          // token rows of each patch but the last (h / patch size)
  long long last_rows = 0;     // the last patch's ((H - (n - 1) h) / patch size)
  long long height = 0;        // H, latent pixels
  long long unrounded = 0;     // ceil(H / M), latent pixels
  long long patch_height = 0;  // h: that rounded up to a multiple of patch_size x sp
  int patch_size = 1, sp = 1;
  XditSplitError error = XditSplitError::kNone;
  bool changes_count() const { return error == XditSplitError::kNone && patches != requested; }
  // xDiT's sp shares of a patch are rows / sp of the patches in a flattened order (sp outer,
  // patches inner, regrouped sp at a time): unequal inside a patch when sp > 1 and the last
  // patch is shorter, which its all-to-all and ring cannot run.
  bool unequal_sp_shares() const { return sp > 1 && patches > 1 && last_rows != rows; }
};
// An argument below 1 gives an empty split (patches 0).
XditPatchSplit xdit_patch_split(long long latent_height, int patch_size, int sp, int patches);
// The query's latent (height / VAE factor; patch size the model's) under the split.
XditPatchSplit xdit_patch_split(const Query& q, int patches, int sp);
// Token rows of each of the split's patches, in order (n entries).
std::vector<long long> patch_rows(const XditPatchSplit& s);
// Token rows of each sp rank's share of each patch [patch][sp rank], as xDiT's flattened lists
// give them (pp_patches_height per sp rank).
std::vector<std::vector<long long>> sp_share_rows(const XditPatchSplit& s);

// The largest and smallest patch of the split, in rows or in image tokens (its rows x the latent
// columns x the latent frames), without building it (the planner checks thousands of configs per
// query): equal when the split is even.
struct PatchSpan {
  long long largest = 0, smallest = 0;
};
PatchSpan patch_row_span(const XditPatchSplit& s);
PatchSpan patch_token_span(const Query& q, int patches, int sp);

}  // namespace cpplan
