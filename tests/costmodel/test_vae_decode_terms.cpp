// The once-per-image terms behind --explain (costmodel's PipelineCost: each text encoder's terms and
// the VAE decode's): the decode prices the FLOPs derived from the VAE's config (core/vae_cost.h)
// over the pixels and frames decoded, and the terms add up to the image's.
#include <catch2/catch.hpp>

#include "costmodel/cost_model.h"
#include "tests/costmodel/datasheet_prediction.h"
#include "tests/support/fixtures.h"

using cpplan::VaePlacement;
using cpplan::test::config;
using cpplan::test::make_query;

TEST_CASE("FLUX.1's VAE decode prices its derived FLOPs per pixel over the image", "[costmodel][vae][pipeline]") {
  auto q = make_query("flux.1-dev", 1, 1024, 1024, 0, "h100-sxm");
  q.vae = VaePlacement::kSingle;
  const auto p = cpplan::test::datasheet_prediction(q, config(1, 1));
  const auto& d = p.pipeline.decode;
  // 9,462,784 FLOP per pixel (tests/core/test_vae_cost.cpp) x 1024 x 1024 pixels x 1 frame, at the
  // datasheet's bf16 peak x e_conv.
  const cpplan::HardwareProfile& hw = *q.hardware;
  CHECK(d.gflop_per_pixel * 1e9 == Approx(9462784).epsilon(1e-12));
  CHECK(d.frame_pixels == 1024.0 * 1024);
  CHECK(d.frames == 1);
  CHECK(d.images == 1);
  CHECK(d.tiles == 1);
  CHECK(d.chunks == 1);
  CHECK(d.gpus == 1);
  CHECK(d.conv_ms == Approx(9462784.0 * 1024 * 1024 / (hw.bf16_tflops * 1e12 * hw.conv_efficiency) * 1e3).epsilon(1e-9));
  CHECK(d.comm_ms == 0);
  CHECK(d.memory_ms > 0);
  CHECK(p.pipeline.vae_decode_ms >= d.conv_ms + d.memory_ms - 1e-9);
}

TEST_CASE("each text encoder's terms add up to the text encoding", "[costmodel][pipeline]") {
  const auto q = make_query("flux.1-dev", 1, 1024, 1024, 0, "h100-sxm");
  const auto p = cpplan::test::datasheet_prediction(q, config(1, 1));
  const auto& pc = p.pipeline;
  REQUIRE(pc.encoder_count == 2);  // FLUX.1's T5-XXL and CLIP-L, in the profile's order
  CHECK(pc.encoders[0].encoder == 0);
  CHECK(pc.encoders[1].encoder == 1);
  CHECK(pc.encoders[0].tokens == 512);  // the model's text tokens
  CHECK(pc.encoders[1].tokens == 77);   // CLIP's own
  CHECK(pc.encoders[0].prompts == 1);   // distilled guidance: one prompt
  CHECK(pc.encoders[0].ms + pc.encoders[1].ms == Approx(pc.text_encode_ms));
  CHECK(pc.encoders[0].gemm_ms > 0);
  CHECK(pc.encoders[0].attention_ms > 0);
}
