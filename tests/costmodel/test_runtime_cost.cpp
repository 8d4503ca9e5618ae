// The host side of a step (docs/cost-model.md, "The host: runtimes") and the once-per-image work
// with its placements ("Per image"), on hand-made runtimes so that every expected value is a hand
// derivation from the formulas.
#include <catch2/catch.hpp>

#include <cmath>

#include "costmodel/cost_model.h"
#include "tests/support/fixtures.h"

using cpplan::RuntimeProfile;
using cpplan::TextEncoderPlacement;
using cpplan::VaePlacement;
using cpplan::costmodel::CostModel;
using cpplan::costmodel::DatasheetModel;
using cpplan::costmodel::Prediction;
using cpplan::test::config;
using cpplan::test::make_query;

namespace {

// 10 us per op; 100 ops per double block, 50 per single; Ulysses 20 per layer, Ring 7 + 5 per
// K/V block; 30 us per collective; no waits unless a test sets them.
RuntimeProfile simple_runtime() {
  RuntimeProfile rt;
  rt.name = "test";
  rt.dispatch = "python";
  rt.us_per_op = 10;
  rt.collective_us = 30;
  rt.ops.double_block = 100;
  rt.ops.single_block = 50;
  rt.ops.cross_block = 80;
  rt.ops.ulysses = 20;
  rt.ops.ring = 7;
  rt.ops.ring_iteration = 5;
  rt.ops.tp_all_reduce = 3;
  rt.ops.tp_linear = 2;
  rt.ops.step = 40;
  rt.image_ms = 25;
  return rt;
}

Prediction predict(cpplan::Query q, const RuntimeProfile& rt, const cpplan::ParallelConfig& c) {
  q.runtime = &rt;
  const DatasheetModel hw(*q.hardware);
  return CostModel(hw).predict(q, c, cpplan::classify(c.context_parallel_config));
}

constexpr double kFluxTextBytes = 2.0 * (4762310656.0 + 123060480.0);  // T5-XXL + CLIP-L, bf16

}  // namespace

TEST_CASE("A block's host time is its ops times the time per op plus its collectives", "[costmodel][runtime]") {
  const RuntimeProfile rt = simple_runtime();
  const Prediction p = predict(make_query("flux.1-dev", 4), rt, config(1, 4));
  REQUIRE(p.block_count == 2);
  const auto& dbl = p.blocks[0];
  const auto& sgl = p.blocks[1];
  // Ulysses: 4 all-to-alls per attention layer; FLUX.1-dev: 19 double and 38 single blocks.
  CHECK(dbl.collective_calls == 19 * 4);
  CHECK(sgl.collective_calls == 38 * 4);
  // 19 x ((100 + 20) ops x 10 us + 4 x 30 us) = 19 x 1.32 ms = 25.08 ms
  CHECK(dbl.host_ms == Approx(25.08));
  CHECK(dbl.ops == 19 * 100);
  CHECK(dbl.ulysses_ops == 19 * 20);
  // 38 x ((50 + 20) x 10 us + 4 x 30 us) = 38 x 0.82 ms = 31.16 ms
  CHECK(sgl.host_ms == Approx(31.16));
  // The rest of the step: 40 ops x 10 us + the CP output gather, one collective of 30 us.
  CHECK(p.step_rest.host_ms == Approx(0.43));
  CHECK(p.host_ms == Approx(25.08 + 31.16 + 0.43));
}

TEST_CASE("A block launches no q/k-norm or RoPE ops where its model has none", "[costmodel][runtime]") {
  RuntimeProfile rt = simple_runtime();
  rt.ops.qk_norm = 8;  // per normalized q or k
  rt.ops.rope = 15;    // per rotated q or k
  // FLUX.1-dev has both: its blocks launch the whole counts.
  const Prediction flux = predict(make_query("flux.1-dev", 1), rt, config(1, 1));
  CHECK(flux.blocks[0].ops == 19 * 100);
  CHECK(flux.blocks[1].ops == 38 * 50);
  // PixArt-alpha has neither: 28 cross blocks of 80 - 4 norms x 8 - 2 rotations x 15 = 18 ops.
  const Prediction pixart = predict(make_query("pixart-alpha", 1), rt, config(1, 1));
  REQUIRE(pixart.block_count == 1);
  CHECK(pixart.blocks[0].ops == 28 * (80 - 4 * 8 - 2 * 15));
  // A FLUX-shaped model without q/k norms keeps its RoPE: 100 - 4 x 8 and 50 - 2 x 8.
  cpplan::ModelProfile no_norm = *make_query("flux.1-dev", 1).model;
  no_norm.qk_norm = false;
  const Prediction p = predict(make_query(no_norm, 1), rt, config(1, 1));
  CHECK(p.blocks[0].ops == 19 * (100 - 32));
  CHECK(p.blocks[1].ops == 38 * (50 - 16));
}

TEST_CASE("Asynchronous launches cost max(host, GPU) per block, synchronous ones the sum", "[costmodel][runtime]") {
  RuntimeProfile rt = simple_runtime();
  const auto q = make_query("flux.1-dev", 4);
  const Prediction async = predict(q, rt, config(1, 4));
  double expected = 0;
  for (int i = 0; i < async.block_count; ++i) {
    const auto& b = async.blocks[i];
    CHECK(b.device_ms() == Approx(b.gemm_ms + b.attention_ms + b.memory_ms + b.comm_ms));
    expected += std::max(b.device_ms(), b.host_ms);
  }
  expected += std::max(async.step_rest.device_ms(), async.step_rest.host_ms);
  CHECK(async.step_ms == Approx(expected));

  rt.overlaps_device = false;
  const Prediction sync = predict(q, rt, config(1, 4));
  CHECK(sync.step_ms == Approx(async.compute_ms + async.comm_ms + async.host_ms));
}

TEST_CASE("Each collective waits for the slowest of its n ranks: sync_us x sqrt(2 ln n)", "[costmodel][runtime]") {
  RuntimeProfile rt = simple_runtime();
  rt.sync_us = 20;
  const Prediction p = predict(make_query("flux.1-dev", 4), rt, config(1, 4));
  const double per_collective_ms = 0.020 * std::sqrt(2 * std::log(4.0));  // 0.0333 ms
  CHECK(p.blocks[0].sync_ms == Approx(19 * 4 * per_collective_ms));
  CHECK(p.blocks[1].sync_ms == Approx(38 * 4 * per_collective_ms));
  // Waits add to the step whatever bounds the block.
  const auto& b = p.blocks[0];
  CHECK(b.time_ms() == Approx(std::max(b.device_ms(), b.host_ms) + b.sync_ms));
  // One GPU: no collective, no wait.
  const Prediction one = predict(make_query("flux.1-dev", 1), rt, config(1, 1));
  CHECK(one.sync_ms == 0);
  CHECK(one.blocks[0].collective_calls == 0);
}

TEST_CASE("Ring's host ops are its set-up plus one share per K/V block", "[costmodel][runtime][ring]") {
  const RuntimeProfile rt = simple_runtime();
  const Prediction r4 = predict(make_query("flux.1-dev", 4), rt, config(4, 1));
  // Per attention layer: 7 + 4 x 5 = 27 ops; 19 double blocks.
  CHECK(r4.blocks[0].ring_ops == 19 * 7);
  CHECK(r4.blocks[0].ring_iteration_ops == 19 * 4 * 5);
  CHECK(r4.blocks[0].ulysses_ops == 0);
  // Unified 2 x 2: Ulysses' 20 and Ring's 7 + 2 x 5.
  const Prediction usp = predict(make_query("flux.1-dev", 4), rt, config(2, 2));
  CHECK(usp.blocks[1].ulysses_ops == 38 * 20);
  CHECK(usp.blocks[1].ring_ops == 38 * 7);
  CHECK(usp.blocks[1].ring_iteration_ops == 38 * 2 * 5);
}

TEST_CASE("Tensor parallelism adds the runtime's ops per sharded linear and per all-reduce", "[costmodel][runtime][tp]") {
  const RuntimeProfile rt = simple_runtime();
  const Prediction tp2 = predict(make_query("flux.1-dev", 2), rt, config(1, 1, 2));
  // A double block shards 12 linears (q, k, v, out and the two FFN matrices of each stream) and
  // all-reduces 4 times (attention out and FFN out per stream): 100 + 12 x 2 + 4 x 3 = 136 ops.
  CHECK(tp2.blocks[0].ops == 19 * 136);
  CHECK(tp2.blocks[0].collective_calls == 19 * 4);
  // A single block shards q, k, v, the MLP in and the fused output (5) and all-reduces once.
  CHECK(tp2.blocks[1].ops == 38 * (50 + 5 * 2 + 1 * 3));
}

TEST_CASE("An image is text encoding, the steps, the decode and the pipeline's own host work", "[costmodel][runtime]") {
  const RuntimeProfile rt = simple_runtime();
  const auto q = make_query("flux.1-dev", 4);
  const Prediction p = predict(q, rt, config(1, 4));
  CHECK(p.pipeline.host_ms == 25);
  CHECK(p.image_ms == Approx(p.text_encode_ms + q.steps * p.step_ms + p.vae_decode_ms + 25));
  CHECK(p.text_encode_ms > 0);
  CHECK(p.vae_decode_ms > 0);
}

TEST_CASE("Each text-encoder placement puts the encoders' bytes in its own phase", "[costmodel][runtime][placement]") {
  const RuntimeProfile rt = simple_runtime();
  auto q = make_query("flux.1-dev", 4);
  auto placed = [&](TextEncoderPlacement te) {
    q.text_encoder = te;
    q.vae = VaePlacement::kSingle;
    return predict(q, rt, config(1, 4));
  };
  const Prediction replicated = placed(TextEncoderPlacement::kReplicated);
  CHECK(replicated.pipeline.text_encoder == TextEncoderPlacement::kReplicated);
  CHECK(replicated.memory.text_encoder_weights == kFluxTextBytes);

  // Sharded over the plan's 4 GPUs: a quarter each, all the time.
  const Prediction sharded = placed(TextEncoderPlacement::kSharded);
  CHECK(sharded.memory.text_encoder_weights == Approx(kFluxTextBytes / 4));
  CHECK(sharded.pipeline.text_comm_ms > 0);

  // Offloaded: nothing resident; while encoding, two of T5's 24 layers (CLIP-L: two of 12).
  const Prediction offloaded = placed(TextEncoderPlacement::kOffloaded);
  CHECK(offloaded.memory.text_encoder_weights == 0);
  const double two_layers = 2.0 * 2 * 4762310656.0 / 24 + 2.0 * 2 * 123060480.0 / 12;
  CHECK(offloaded.memory.text_encode > two_layers);
  CHECK(offloaded.memory.text_encode < two_layers + 0.2e9);  // plus the encoders' activations
  // The weights stream over the host link (h100-sxm: PCIe Gen5 64 GB/s x 0.8): 9,770,742,272
  // bytes in 190.8 ms, far longer than encoding itself, so it bounds the encoding.
  CHECK(offloaded.text_encode_ms == Approx(kFluxTextBytes / (64e9 * 0.8) * 1e3).epsilon(1e-6));
  CHECK(offloaded.pipeline.text_transfer_ms > 0);

  // Sequential: the encoders whole while encoding, without the transformer; nothing afterwards.
  const Prediction sequential = placed(TextEncoderPlacement::kSequential);
  CHECK(sequential.memory.text_encoder_weights == 0);
  CHECK_FALSE(sequential.memory.transformer_while_encoding);
  CHECK(sequential.memory.text_encode > kFluxTextBytes);
  const auto& m = sequential.memory;
  const double denoise = m.transformer_weights + m.vae_weights + std::max(m.activations, m.vae_decode);
  const double encode = m.vae_weights + m.text_encode;
  CHECK(m.peak() == Approx(m.runtime_reserved + std::max(denoise, encode)));
  CHECK(sequential.peak_mem_bytes < replicated.peak_mem_bytes);
}

TEST_CASE("A parallel decode divides the decoder's activations over the plan's GPUs", "[costmodel][runtime][placement]") {
  const RuntimeProfile rt = simple_runtime();
  auto q = make_query("flux.1-dev", 4);
  q.text_encoder = TextEncoderPlacement::kReplicated;
  q.vae = VaePlacement::kSingle;
  const Prediction single = predict(q, rt, config(1, 4));
  q.vae = VaePlacement::kParallel;
  const Prediction parallel = predict(q, rt, config(1, 4));
  CHECK(parallel.memory.vae_decode == Approx(single.memory.vae_decode / 4));
  CHECK(parallel.pipeline.vae_comm_ms > 0);
  CHECK(parallel.vae_decode_ms < single.vae_decode_ms);
}

TEST_CASE("Unforced, a plan gets the simplest placement that fits and is within 2% of the fastest",
          "[costmodel][runtime][placement]") {
  const RuntimeProfile rt = simple_runtime();
  // FLUX.1-dev on 4 x H100: everything fits; nothing else saves 2% of an image.
  const Prediction easy = predict(make_query("flux.1-dev", 4), rt, config(1, 4));
  CHECK(easy.pipeline.text_encoder == TextEncoderPlacement::kReplicated);
  CHECK(easy.pipeline.vae == VaePlacement::kSingle);
  // FLUX.2-dev on 8 x L20 (45 GiB): Mistral-24B alone is 48 GB, so replicated cannot fit; with
  // tp 8 the transformer's shard fits beside a sharded or offloaded encoder.
  const Prediction hard = predict(make_query("flux.2-dev", 8, 1024, 1024, 0, "l20"), rt, config(1, 1, 8));
  CHECK(hard.fits_memory);
  CHECK(hard.pipeline.text_encoder != TextEncoderPlacement::kReplicated);
  auto forced = make_query("flux.2-dev", 8, 1024, 1024, 0, "l20");
  forced.text_encoder = TextEncoderPlacement::kReplicated;
  CHECK_FALSE(predict(forced, rt, config(1, 1, 8)).fits_memory);
}
