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

// FLUX.1-dev: 11,901,408,320 bf16 parameters. Its block linears are 12 D^2 per stream: 19 double
// blocks x 2 streams + 38 single blocks = 76 units, so a double block (2 units) holds 2/76 = 1/38 of
// the parameters once scaled to the model's total (fully_shard_block_params).
constexpr double kFluxParams = 11901408320.0;
}  // namespace

TEST_CASE("A fully-shard group of F holds 1/F of the weights plus two whole blocks", "[costmodel][memory][fs]") {
  const auto& m = *make_query("flux.1-dev", 4).model;
  // The largest block: a double block, params / 38 = 313,194,955.79 parameters.
  CHECK(cpplan::costmodel::fully_shard_block_params(m, m.blocks.front()) == Approx(kFluxParams / 38).epsilon(1e-12));
  // F = 4: 2 bytes x params x (1/4 + 2/38) = 2 x 11,901,408,320 x 23/76 = 7,203,483,983.16 bytes.
  const auto u4 = predict(make_query("flux.1-dev", 4), config(1, 4));
  const auto u4fs4 = predict(make_query("flux.1-dev", 4), sharded(config(1, 4), 4));
  CHECK(u4fs4.memory.transformer_weights == Approx(7203483983.157895).epsilon(1e-12));
  CHECK(u4.memory.transformer_weights == 2.0 * kFluxParams);
  // The activations do not change: the same work per rank.
  CHECK(u4fs4.memory.activations == u4.memory.activations);
  CHECK(u4fs4.transformer_peak_bytes ==
        Approx(u4.transformer_peak_bytes - (2.0 * kFluxParams - 7203483983.157895)).epsilon(1e-12));
  CHECK(u4fs4.peak_mem_bytes < u4.peak_mem_bytes);
  // F = 2: 2 x params x (1/2 + 2/38) = 2 x 11,901,408,320 x 21/38 = 13,154,188,143.16 bytes.
  const auto u4fs2 = predict(make_query("flux.1-dev", 4), sharded(config(1, 4), 2));
  CHECK(u4fs2.memory.transformer_weights == Approx(13154188143.157895).epsilon(1e-12));
}

TEST_CASE("Each block's weights are all-gathered once per step over the fs group", "[costmodel][communication][fs]") {
  // Every block's gather together moves all the parameters: nccl-tests size 2 x params bytes per
  // step, of which each rank sends (F - 1)/F: 23,802,816,640 x 3/4 = 17,852,112,480 bytes at F = 4.
  const auto q = make_query("flux.1-dev", 4);
  const auto u4 = predict(q, config(1, 4));
  const auto u4fs4 = predict(q, sharded(config(1, 4), 4));
  CHECK(u4fs4.comm_bytes - u4.comm_bytes == Approx(17852112480.0).epsilon(1e-9));
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
