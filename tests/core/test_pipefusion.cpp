// xDiT's patch split (core/pipefusion.h; xDiT runtime_state.py, _calc_patches_metadata), on cases
// worked by hand from its Python: latents_height = height // 8; pipeline_patches_height =
// ceil(H / M) rounded up to a multiple of patch_size x sp; num_pipeline_patch = ceil(H / h); the
// last patch H - (n - 1) h; the sp shares listed sp times over the patches and regrouped sp at a time.
#include <catch2/catch.hpp>

#include "core/pipefusion.h"
#include "tests/support/fixtures.h"

using cpplan::XditSplitError;
using cpplan::xdit_patch_split;
using Rows = std::vector<long long>;

TEST_CASE("xDiT's split of a 1024-px latent into 8 patches under sequence parallelism 2 is 8 even patches",
          "[core][pipefusion]") {
  // H = 1024 // 8 = 128; ceil(128 / 8) = 16, already a multiple of 2 x 2: h = 16; n = ceil(128 /
  // 16) = 8; last 128 - 7 x 16 = 16. In token rows (/ 2): 8 each; each sp rank 16 // 2 = 8 latent
  // pixels, 4 token rows (256 tokens of a 64-wide latent).
  const auto s = xdit_patch_split(128, 2, 2, 8);
  CHECK(s.error == XditSplitError::kNone);
  CHECK(s.patches == 8);
  CHECK(s.patch_height == 16);
  CHECK(s.rows == 8);
  CHECK(s.last_rows == 8);
  CHECK_FALSE(s.changes_count());
  CHECK_FALSE(s.unequal_sp_shares());
  CHECK(cpplan::patch_rows(s) == Rows(8, 8));
  for (const Rows& shares : cpplan::sp_share_rows(s)) CHECK(shares == Rows{4, 4});
}

TEST_CASE("xDiT changes a patch count its rounding cannot keep", "[core][pipefusion]") {
  // M = 9 on H = 128, patch 2, no sp: ceil(128 / 9) = 15 rounds up to 16: ceil(128 / 16) = 8
  // patches (xDiT warns "Pipeline patches num changed from 9 to 8").
  const auto nine = xdit_patch_split(128, 2, 1, 9);
  CHECK(nine.unrounded == 15);
  CHECK(nine.patch_height == 16);
  CHECK(nine.patches == 8);
  CHECK(nine.changes_count());
  // M = 64 with sp 2 (a 1024-px latent): ceil(128 / 64) = 2 rounds up to 4: 32 patches.
  CHECK(xdit_patch_split(128, 2, 2, 64).patches == 32);
  // M = 6, no sp: ceil(128 / 6) = 22 (a multiple of 2); ceil(128 / 22) = 6; the last 128 - 5 x 22
  // = 18. Token rows 11 x 5 and 9 (torch.tensor_split's 11 x 4 and 10 x 2 is not xDiT's split).
  const auto six = xdit_patch_split(128, 2, 1, 6);
  CHECK(six.patches == 6);
  CHECK(cpplan::patch_rows(six) == Rows{11, 11, 11, 11, 11, 9});
}

TEST_CASE("xDiT's sequence-parallel shares of uneven patches differ inside a patch", "[core][pipefusion]") {
  // M = 3, sp 2, H = 128: ceil(128 / 3) = 43 rounds up to 44; 3 patches, the last 128 - 88 = 40.
  // Shares: [44 // 2, 44 // 2, 40 // 2] listed twice, [22, 22, 20, 22, 22, 20] latent pixels
  // (token rows 11, 11, 10, 11, 11, 10), regrouped two at a time: [11, 11], [10, 11], [11, 10].
  const auto s = xdit_patch_split(128, 2, 2, 3);
  CHECK(s.error == XditSplitError::kNone);
  CHECK(cpplan::patch_rows(s) == Rows{22, 22, 20});
  const auto shares = cpplan::sp_share_rows(s);
  REQUIRE(shares.size() == 3);
  CHECK(shares[0] == Rows{11, 11});
  CHECK(shares[1] == Rows{10, 11});
  CHECK(shares[2] == Rows{11, 10});
  CHECK(s.unequal_sp_shares());
  // Without sp the same uneven patches are fine: H = 16 (flux-tiny's 128 px), M = 3: ceil(16 / 3)
  // = 6; patches of 3, 3 and 2 token rows.
  const auto tiny = xdit_patch_split(16, 2, 1, 3);
  CHECK(cpplan::patch_rows(tiny) == Rows{3, 3, 2});
  CHECK_FALSE(tiny.unequal_sp_shares());
}

TEST_CASE("xDiT's two errors: the height over the sp degree, and a last patch off the patch x sp grid",
          "[core][pipefusion]") {
  // 1008 px: H = 126, not divisible by sp 4.
  CHECK(xdit_patch_split(126, 2, 4, 4).error == XditSplitError::kHeightOverSp);
  // 992 px: H = 124 (divisible by 4); ceil(124 / 4) = 31 rounds up to 32 (a multiple of 2 x 4);
  // 4 patches, the last 124 - 3 x 32 = 28, not a multiple of 8.
  const auto s = xdit_patch_split(124, 2, 4, 4);
  CHECK(s.error == XditSplitError::kLastPatch);
  CHECK(s.patches == 4);
  CHECK(s.last_rows == 14);
}

TEST_CASE("A query's patch span follows xDiT's split of its latent", "[core][pipefusion]") {
  // flux.1-dev at 1024x1024: 64 token rows of 64 tokens; M = 6: rows 11 x 5 and 9: the largest
  // 704 tokens, the smallest 576.
  const auto q = cpplan::test::make_query("flux.1-dev", 4, 1024, 1024);
  const auto span = cpplan::patch_token_span(q, 6, 1);
  CHECK(span.largest == 704);
  CHECK(span.smallest == 576);
  CHECK(xdit_patch_split(q, 6, 1).height == 128);
}

// HunyuanDiT-v1.2's 40 blocks (diffusers' hunyuan_transformer_2d.py: "skip=layer > num_layers // 2",
// so blocks 21..39 take skips, 19 of them; block 39 - j takes block j's output). Four stages of 10:
// after block 9 the skips of blocks 0..9 (consumers 39..30) cross: 10; after block 19, blocks 0..18
// (consumers 39..21): 19; after block 29, blocks 0..9 (consumers 39..30): 10. The busiest carries 19.
TEST_CASE("PipeFusion's busiest stage boundary carries HunyuanDiT's long skips counted by hand", "[core][pipefusion]") {
  cpplan::ModelProfile m = *cpplan::test::catalog().find_model("pixart-alpha");
  m.blocks = {cpplan::BlockGroup{cpplan::BlockKind::kCross, 21},
              cpplan::BlockGroup{cpplan::BlockKind::kCross, 19, false, false, false, true}};
  CHECK(cpplan::pipefusion_skips_crossing(m, {10, 10, 10, 10}) == 19);
  // Two stages of 20: after block 19, 19 skips.
  CHECK(cpplan::pipefusion_skips_crossing(m, {20, 20}) == 19);
  // Eight stages of 5: after block 4, blocks 0..4 (5); the most is after block 19: 19.
  CHECK(cpplan::pipefusion_skips_crossing(m, {5, 5, 5, 5, 5, 5, 5, 5}) == 19);
  // hunyuandit-tiny's 3 + 2: block 3 takes block 1's output, block 4 block 0's. Stages 3 + 2: both cross.
  m.blocks = {cpplan::BlockGroup{cpplan::BlockKind::kCross, 3},
              cpplan::BlockGroup{cpplan::BlockKind::kCross, 2, false, false, false, true}};
  CHECK(cpplan::pipefusion_skips_crossing(m, {3, 2}) == 2);
  // Stages 1 + 1 + 1 + 1 + 1: after block 0, block 0's skip (1); after block 1, both (2); after 2, both; after 3, block 0's.
  CHECK(cpplan::pipefusion_skips_crossing(m, {1, 1, 1, 1, 1}) == 2);
  // No skips: nothing crosses.
  m.blocks = {cpplan::BlockGroup{cpplan::BlockKind::kCross, 5}};
  CHECK(cpplan::pipefusion_skips_crossing(m, {3, 2}) == 0);
}
