// Fully sharded weights (xDiT fully_shard_degree, docs/usage.md "Fully sharded weights"): memory
// per rank is 1/F of the weights plus two whole blocks (the running one and the prefetched next);
// per step every block's weights are all-gathered over the F ranks, hidden behind the block's
// compute up to its length.
#include <catch2/catch.hpp>

#include <algorithm>

#include "costmodel/cost_model.h"
#include "costmodel/predict_terms.h"
#include "tests/costmodel/datasheet_prediction.h"
#include "tests/support/fixtures.h"

using cpplan::costmodel::CommAxis;
using cpplan::costmodel::Prediction;
using cpplan::test::config;
using cpplan::test::make_query;

namespace {
Prediction predict(const cpplan::Query& q, const cpplan::ParallelConfig& c) { return cpplan::test::datasheet_prediction(q, c); }

cpplan::ParallelConfig sharded(cpplan::ParallelConfig c, int fs) {
  c.fs_degree = fs;
  return c;
}

// FLUX.1-dev: 11,901,408,320 bf16 parameters, D = 3072, F = 12288. A block's linears are
// 4 D^2 + 2 D F = 113,246,208 per stream; its adaLN 6 D x D per double-block stream, 3 D x D per
// single block. A double block: 2 x 113,246,208 + 12 D^2 = 339,738,624; a single one:
// 113,246,208 + 3 D^2 = 141,557,760. The 19 + 38 blocks: 6,455,033,856 + 5,379,194,880 =
// 11,834,228,736; the rest, 67,179,584 (embedders, output layer, biases, norms), stays whole.
constexpr double kFluxParams = 11901408320.0;
constexpr double kFluxDouble = 339738624.0;
}  // namespace

TEST_CASE("A fully-shard group of F holds 1/F of the blocks, the rest whole, plus two whole blocks",
          "[costmodel][memory][fs]") {
  const auto& m = *make_query("flux.1-dev", 4).model;
  CHECK(cpplan::costmodel::fully_shard_block_params(m, m.blocks.front()) == kFluxDouble);
  // F = 4: 2 bytes x (11,834,228,736 / 4 + 67,179,584 + 2 x 339,738,624) = 2 x 3,705,214,016 =
  // 7,410,428,032 bytes.
  const auto u4 = predict(make_query("flux.1-dev", 4), config(1, 4));
  const auto u4fs4 = predict(make_query("flux.1-dev", 4), sharded(config(1, 4), 4));
  CHECK(u4fs4.memory.transformer_weights == Approx(7410428032.0).epsilon(1e-12));
  CHECK(u4.memory.transformer_weights == 2.0 * kFluxParams);
  // The activations do not change: the same work per rank.
  CHECK(u4fs4.memory.activations == u4.memory.activations);
  CHECK(u4fs4.transformer_peak_bytes ==
        Approx(u4.transformer_peak_bytes - (2.0 * kFluxParams - 7410428032.0)).epsilon(1e-12));
  CHECK(u4fs4.peak_mem_bytes < u4.peak_mem_bytes);
  // F = 2: 2 x (5,917,114,368 + 67,179,584 + 679,477,248) = 13,327,542,400 bytes.
  const auto u4fs2 = predict(make_query("flux.1-dev", 4), sharded(config(1, 4), 2));
  CHECK(u4fs2.memory.transformer_weights == Approx(13327542400.0).epsilon(1e-12));
}

TEST_CASE("The embedders and the output layer that the executor keeps whole are not divided by F",
          "[costmodel][memory][fs]") {
  // flux-tiny (profiles/models/flux-tiny.toml): 4,109,824 parameters, D = F/4 = 192, bf16. A double
  // block: linears 2 x (4 D^2 + 2 D F) = 2 x (147,456 + 294,912) = 884,736, adaLN 12 D^2 = 442,368
  // -> 1,327,104; a single block: 442,368 + 3 D^2 = 552,960. The blocks: 2 x 1,327,104 +
  // 2 x 552,960 = 3,760,128; held whole: 4,109,824 - 3,760,128 = 349,696 (the embedders and final
  // layer, 333,760, and the blocks' biases and norms). F = 2: 2 bytes x (3,760,128 / 2 + 349,696 +
  // 2 x 1,327,104) = 2 x 4,883,968 = 9,767,936 bytes. Dividing every parameter by F, as before,
  // would count 2 x 4,109,824 / 2 = 4,109,824 bytes for the sharded part alone.
  const auto& m = *make_query("flux-tiny", 2).model;
  CHECK(cpplan::costmodel::fully_shard_block_params(m, m.blocks.front()) == 1327104.0);
  CHECK(cpplan::costmodel::fully_sharded_weight_bytes(m, 2) == 9767936.0);
}

TEST_CASE("Each block's weights are all-gathered once per step over the fs group", "[costmodel][communication][fs]") {
  // Every block's gather together moves the blocks' parameters: nccl-tests size 2 x 11,834,228,736
  // bytes per step, of which each rank sends (F - 1)/F: 23,668,457,472 x 3/4 = 17,751,343,104 bytes
  // at F = 4.
  const auto q = make_query("flux.1-dev", 4);
  const auto u4 = predict(q, config(1, 4));
  const auto u4fs4 = predict(q, sharded(config(1, 4), 4));
  CHECK(u4fs4.comm_bytes - u4.comm_bytes == Approx(17751343104.0).epsilon(1e-9));
  // One more collective per block (57 blocks).
  CHECK(u4fs4.collective_calls - u4.collective_calls == Approx(57));
  // The fs group: 4 consecutive ranks, inside the node.
  const auto layout = cpplan::costmodel::default_layout(sharded(config(1, 4), 4), *q.hardware);
  CHECK(layout[CommAxis::kFs].ranks == 4);
  CHECK(layout[CommAxis::kFs].stride == 1);
  CHECK(layout[CommAxis::kFs].nodes == 1);
}

TEST_CASE("The gather is exposed only beyond the block's own GPU time (prefetch)", "[costmodel][communication][fs]") {
  const cpplan::costmodel::DatasheetModel hw(*make_query("flux.1-dev", 4).hardware);
  for (const int side : {256, 2048}) {
    INFO("resolution " << side);
    const auto q = make_query("flux.1-dev", 4, side, side);
    const auto base = predict(q, config(1, 4));
    const auto fs = predict(q, sharded(config(1, 4), 4));
    const auto layout = cpplan::costmodel::default_layout(sharded(config(1, 4), 4), *q.hardware);
    double exposed = 0;
    for (int i = 0; i < base.block_count; ++i) {
      const auto& b = base.blocks[i];
      const double block_bytes = 2.0 * cpplan::costmodel::fully_shard_block_params(*q.model, q.model->blocks[i]);
      const double gather_ms = hw.collective(cpplan::costmodel::Collective::kAllGather, block_bytes, layout[CommAxis::kFs]).ms;
      const double one = std::max(0.0, gather_ms - b.device_ms() / b.count);
      CHECK(fs.blocks[i].comm_ms - b.comm_ms == Approx(b.count * one).margin(1e-9));
      exposed += b.count * one;
    }
    CHECK(fs.axis_comm_ms[static_cast<int>(CommAxis::kFs)] == Approx(exposed).margin(1e-9));
    // 256x256 (320 tokens): the blocks are shorter than their gathers; 2048x2048: fully hidden.
    if (side == 256) CHECK(exposed > 0);
    else CHECK(exposed == 0);
    CHECK(fs.step_ms >= base.step_ms);
  }
}

namespace {
// FLUX.1-dev's text encoders (models.md): T5-XXL, 4,762,310,656 parameters in 24 layers, and CLIP-L,
// 123,060,480, both bf16.
constexpr double kT5Bytes = 2.0 * 4762310656.0;
constexpr double kClipBytes = 2.0 * 123060480.0;

Prediction placed(cpplan::TextEncoderPlacement te, int fs) {
  auto q = make_query("flux.1-dev", 4);
  q.text_encoder = te;
  q.vae = cpplan::VaePlacement::kSingle;
  return predict(q, sharded(config(1, 4), fs));
}

// The all-gather of every T5 layer over the plan's fs group, summed: the fetch the encoder waits on
// beyond its own GPU time.
double t5_gathers_ms(int fs) {
  const auto q = make_query("flux.1-dev", 4);
  const cpplan::costmodel::DatasheetModel hw(*q.hardware);
  const auto layout = cpplan::costmodel::default_layout(sharded(config(1, 4), fs), *q.hardware);
  return 24 * hw.collective(cpplan::costmodel::Collective::kAllGather, kT5Bytes / 24, layout[CommAxis::kFs]).ms;
}
}  // namespace

TEST_CASE("A fully-sharded text encoder: the largest encoder's weights over the fs group, gathered layer by layer",
          "[costmodel][memory][fs][placement]") {
  using cpplan::TextEncoderPlacement;
  const Prediction whole = placed(TextEncoderPlacement::kReplicated, 4);
  const Prediction fsdp = placed(TextEncoderPlacement::kFullySharded, 4);
  CHECK(fsdp.pipeline.text_encoder == TextEncoderPlacement::kFullySharded);
  // T5 in quarters (xDiT's fsdp_strategy names text_encoder_2), CLIP whole: 9,524,621,312 / 4 +
  // 246,120,960 = 2,627,276,288 bytes on every GPU throughout.
  CHECK(whole.memory.text_encoder_weights == kT5Bytes + kClipBytes);
  CHECK(fsdp.memory.text_encoder_weights == 2627276288.0);
  // While encoding: the running T5 layer and the prefetched one, 2 x 9,524,621,312 / 24 =
  // 793,718,442.7 bytes, plus the activations.
  CHECK(fsdp.memory.text_encode > 793718442.0);
  CHECK(fsdp.memory.text_encode < 793718442.0 + 0.2e9);
  // Loading holds the shards, not the two whole blocks a forward gathers: the transformer's
  // 7,410,428,032 bytes at F = 4 (the test above) less 2 x 2 x 339,738,624 = 6,051,473,536.
  CHECK(fsdp.memory.load_weights ==
        Approx(6051473536.0 + 2627276288.0 + fsdp.memory.vae_weights).epsilon(1e-12));
  // The gathers hide behind T5's compute but for the first layer's: at least 1/24 of them and at
  // most all of them plus that; the encoding computes the whole prompt on every rank, as before.
  const double gathers = t5_gathers_ms(4);
  CHECK(fsdp.pipeline.text_comm_ms >= Approx(gathers / 24));
  CHECK(fsdp.pipeline.text_comm_ms <= Approx(gathers * 25 / 24));
  CHECK(fsdp.pipeline.text_transfer_ms == 0);
  CHECK(fsdp.text_encode_ms >= Approx(whole.text_encode_ms + fsdp.pipeline.text_comm_ms));
  // Unforced, a plan without fully sharded weights is never given one.
  auto q = make_query("flux.1-dev", 4);
  const Prediction plain = predict(q, config(1, 4));
  const Prediction fs4 = predict(q, sharded(config(1, 4), 4));
  const auto count_fs = [](const Prediction& p) {
    int n = 0;
    for (int i = 0; i < p.pipeline_option_count; ++i) n += fully_sharded(p.pipeline_options[i].cost.text_encoder);
    return n;
  };
  CHECK(count_fs(plain) == 0);
  // Forced on a plan without fully sharded weights, a group of one: the encoder whole, nothing gathered.
  const Prediction alone = placed(TextEncoderPlacement::kFullySharded, 1);
  CHECK(alone.memory.text_encoder_weights == kT5Bytes + kClipBytes);
  CHECK(alone.pipeline.text_comm_ms == 0);
  CHECK(alone.pipeline.text_transfer_ms == 0);
  CHECK(alone.text_encode_ms == Approx(placed(TextEncoderPlacement::kReplicated, 1).text_encode_ms));
  CHECK(count_fs(fs4) == 2 * 2);  // two fully-sharded placements x single or parallel decode
}

TEST_CASE("With its shards in host memory, the encoder copies this rank's shard of each layer over the host link",
          "[costmodel][memory][fs][placement]") {
  using cpplan::TextEncoderPlacement;
  const Prediction host = placed(TextEncoderPlacement::kFullyShardedHost, 4);
  // Only CLIP stays on the GPU.
  CHECK(host.memory.text_encoder_weights == kClipBytes);
  CHECK(host.memory.text_encode > 793718442.0);
  // h100-sxm's host link: PCIe Gen5, 64 GB/s x 0.8. Each rank copies its quarter of T5,
  // 2,381,155,328 bytes, in 46.51 ms, then the layers are gathered. The fetch exposed beyond T5's
  // compute is split between the two in their proportion.
  const double copy_ms = kT5Bytes / 4 / (64e9 * 0.8) * 1e3;
  const double gathers = t5_gathers_ms(4);
  REQUIRE(host.pipeline.text_comm_ms > 0);
  CHECK(host.pipeline.text_transfer_ms / host.pipeline.text_comm_ms == Approx(copy_ms / gathers).epsilon(1e-9));
  CHECK(host.pipeline.text_transfer_ms + host.pipeline.text_comm_ms <= Approx((copy_ms + gathers) * 25 / 24));
  CHECK(host.pipeline.text_transfer_ms + host.pipeline.text_comm_ms >= Approx((copy_ms + gathers) / 24));
}
