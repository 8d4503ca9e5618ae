#include "core/pipefusion.h"

#include <fmt/format.h>

#include <algorithm>

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

int pipefusion_skips_crossing(const ModelProfile& m, const std::vector<int>& stage_blocks) {
  int skips = 0;
  for (const BlockGroup& g : m.blocks)
    if (g.skip) skips += g.count;
  const int blocks = m.total_blocks();
  int most = 0, before = 0;  // blocks in the stages before the boundary
  for (std::size_t s = 0; s + 1 < stage_blocks.size(); ++s) {
    before += stage_blocks[s];
    const int last = before - 1;  // the boundary follows block `last`
    int crossing = 0;
    for (int j = 0; j < skips; ++j)
      if (j <= last && blocks - 1 - j > last) ++crossing;
    most = std::max(most, crossing);
  }
  return most;
}

std::string stage_split_text(const std::vector<int>& stage_blocks) { return fmt::format("{}", fmt::join(stage_blocks, "+")); }

long long latent_rows(const Query& q) {
  const int granularity = q.model->pixel_granularity();
  return granularity > 0 ? q.resolution.height / granularity : 0;
}

XditPatchSplit xdit_patch_split(long long latent_height, int patch_size, int sp, int patches) {
  XditPatchSplit s;
  s.requested = patches;
  s.height = latent_height;
  s.patch_size = patch_size;
  s.sp = sp;
  if (patches < 1 || patch_size < 1 || sp < 1 || latent_height < 1) return s;
  if (latent_height % sp != 0) {
    s.error = XditSplitError::kHeightOverSp;
    return s;
  }
  const long long unit = 1LL * patch_size * sp;
  s.unrounded = (latent_height + patches - 1) / patches;
  s.patch_height = (s.unrounded + unit - 1) / unit * unit;
  s.patches = static_cast<int>((latent_height + s.patch_height - 1) / s.patch_height);
  const long long last = latent_height - s.patch_height * (s.patches - 1);
  if (last % unit != 0) s.error = XditSplitError::kLastPatch;
  s.rows = s.patch_height / patch_size;
  s.last_rows = last / patch_size;
  return s;
}

XditPatchSplit xdit_patch_split(const Query& q, int patches, int sp) {
  const ModelProfile& m = *q.model;
  return xdit_patch_split(latent_rows(q) * m.patch_spatial, m.patch_spatial, sp, patches);
}

std::vector<long long> patch_rows(const XditPatchSplit& s) {
  std::vector<long long> out(std::max(0, s.patches), s.rows);
  if (!out.empty()) out.back() = s.last_rows;
  return out;
}

// xDiT lists the shares sp times over the patches (flatten_patches_height: sp outer, patches
// inner) and hands patch i the entries i x sp to (i + 1) x sp - 1 of that list.
std::vector<std::vector<long long>> sp_share_rows(const XditPatchSplit& s) {
  std::vector<long long> flat;
  const std::vector<long long> rows = patch_rows(s);
  for (int r = 0; r < s.sp; ++r)
    for (const long long p : rows) flat.push_back(p / s.sp);
  std::vector<std::vector<long long>> out;
  for (int i = 0; i < s.patches; ++i) out.emplace_back(flat.begin() + 1LL * i * s.sp, flat.begin() + 1LL * (i + 1) * s.sp);
  return out;
}

PatchSpan patch_row_span(const XditPatchSplit& s) {
  if (s.patches < 1) return {};
  return {std::max(s.rows, s.last_rows), std::min(s.rows, s.last_rows)};
}

PatchSpan patch_token_span(const Query& q, int patches, int sp) {
  const long long rows = latent_rows(q);
  const long long per_row = rows > 0 ? q.sequence.image_tokens / rows : 0;
  const PatchSpan r = patch_row_span(xdit_patch_split(q, patches, sp));
  return {r.largest * per_row, r.smallest * per_row};
}

}  // namespace cpplan
