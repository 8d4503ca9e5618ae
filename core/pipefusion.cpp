#include "core/pipefusion.h"

#include <fmt/format.h>

namespace cpplan {

std::vector<int> pipefusion_stage_blocks(int blocks, int stages) {
  std::vector<int> out;
  if (stages < 1) return out;
  const int per_stage = (blocks + stages - 1) / stages;
  int left = blocks;
  for (int s = 0; s < stages; ++s) {
    const int here = std::min(per_stage, std::max(left, 0));
    out.push_back(here);
    left -= here;
  }
  return out;
}

std::string stage_split_text(const std::vector<int>& stage_blocks) { return fmt::format("{}", fmt::join(stage_blocks, "+")); }

long long latent_rows(const Query& q) {
  const int granularity = q.model->pixel_granularity();
  return granularity > 0 ? q.resolution.height / granularity : 0;
}

std::vector<long long> patch_rows(long long rows, int patches) {
  std::vector<long long> out;
  if (patches < 1) return out;
  for (int i = 0; i < patches; ++i) out.push_back(rows / patches + (i < rows % patches ? 1 : 0));
  return out;
}

PatchSpan patch_row_span(long long rows, int patches) {
  if (patches < 1) return {};
  return {rows / patches + (rows % patches != 0 ? 1 : 0), rows / patches};
}

PatchSpan patch_token_span(const Query& q, int patches) {
  const long long rows = latent_rows(q);
  const long long per_row = rows > 0 ? q.sequence.image_tokens / rows : 0;
  const PatchSpan r = patch_row_span(rows, patches);
  return {r.largest * per_row, r.smallest * per_row};
}

// ceil(blocks / stages) per stage leaves (stages x ceil - blocks) / ceil stages empty, rounded down.
int empty_stages(int blocks, int stages) {
  if (stages < 1) return 0;
  const int per_stage = (blocks + stages - 1) / stages;
  return per_stage > 0 ? static_cast<int>((1LL * stages * per_stage - blocks) / per_stage) : stages;
}

}  // namespace cpplan
