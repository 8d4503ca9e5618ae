// The memory of each phase of a job (docs/cost-model.md, "Memory per GPU"): loading, encoding,
// denoising and decoding on the GPU, and the host memory of a node while its ranks load.
#include <catch2/catch.hpp>

#include <algorithm>

#include "costmodel/cost_model.h"
#include "tests/costmodel/datasheet_prediction.h"
#include "tests/support/fixtures.h"

using cpplan::kGiB;
using cpplan::VaePlacement;
using cpplan::costmodel::HostLoad;
using cpplan::costmodel::MemoryPhase;
using cpplan::costmodel::Prediction;
using cpplan::test::config;
using cpplan::test::make_query;

namespace {
Prediction predict(const cpplan::Query& q, const cpplan::ParallelConfig& c) { return cpplan::test::datasheet_prediction(q, c); }

cpplan::Query flux_on_a100(int side, VaePlacement vae, int gpus = 1) {
  auto q = make_query("flux.1-schnell", gpus, side, side, 0, "a100-sxm-80g");
  q.vae = vae;
  return q;
}

// FLUX.1's VAE (AutoencoderKL, block_out_channels [128, 256, 512, 512]): the larger of its last
// stages' activations, 1536 bytes per output pixel (3 bf16 tensors of 256 channels at full
// resolution) with 15% fragmentation, and its mid-block attention's scores at the latent
// resolution, (W/8 x H/8)^2 bf16 values; they are not live at the same time.
double flux_decode_bytes(double w, double h, double gpus = 1) {
  const double latent = (w / 8) * (h / 8);
  return std::max(1.15 * 1536 * w * h, latent * latent * 2) / gpus;
}
}  // namespace

TEST_CASE("FLUX.1 at 4096 x 4096 on one 80 GB A100 runs out of memory in a single VAE decode",
          "[costmodel][memory][phases][vae]") {
  // xDiT's FLUX page: the VAE runs out of memory above 2048 px on an 80 GB A100 unless the decode
  // is parallel or tiled. The scores alone: (512 x 512)^2 x 2 bytes = 128 GiB.
  const auto p = predict(flux_on_a100(4096, VaePlacement::kSingle), config(1, 1));
  CHECK(p.memory.vae_decode == Approx(flux_decode_bytes(4096, 4096)));
  CHECK(p.memory.vae_decode == 128 * kGiB);
  CHECK(p.peak_phase == MemoryPhase::kDecode);
  CHECK_FALSE(p.fits_memory);
  // Denoising alone would fit: the decode is what does not.
  CHECK(p.memory.phase(MemoryPhase::kDenoise) < 80 * kGiB);
}

TEST_CASE("FLUX.1 at 2048 x 2048 on one 80 GB A100 fits with a single VAE decode", "[costmodel][memory][phases][vae]") {
  // (256 x 256)^2 x 2 = 8 GiB of scores, above 1.15 x 1536 x 2048^2 = 6.9 GiB of convolutions.
  const auto p = predict(flux_on_a100(2048, VaePlacement::kSingle), config(1, 1));
  CHECK(p.memory.vae_decode == Approx(flux_decode_bytes(2048, 2048)));
  CHECK(p.fits_memory);
}

TEST_CASE("A tiled decode keeps one 1024-pixel tile live and costs the overlaps' time", "[costmodel][memory][phases][vae]") {
  // Tiles of 1024 px (the VAE config's sample_size) every 768 px: 6 per side at 4096 px, the last
  // one 256 px wide, so 5 x 1024 + 256 = 5376 decoded pixels per side. Live: one tile's
  // activations (above its scores, (128 x 128)^2 x 2) and the decoded tiles (5376^2 x 3 x 2).
  const auto tiled = predict(flux_on_a100(4096, VaePlacement::kTiled), config(1, 1));
  CHECK(tiled.memory.vae_decode == Approx(flux_decode_bytes(1024, 1024) + 5376.0 * 5376 * 3 * 2));
  CHECK(tiled.fits_memory);
  CHECK(tiled.pipeline.vae == VaePlacement::kTiled);
  const auto single = predict(flux_on_a100(4096, VaePlacement::kSingle), config(1, 1));
  // 5376^2 / 4096^2 = 1.72 x the pixels of the single decode.
  CHECK(tiled.vae_decode_ms > 1.5 * single.vae_decode_ms);
}

TEST_CASE("A parallel decode over 8 A100s fits FLUX.1 at 4096 x 4096", "[costmodel][memory][phases][vae]") {
  // Each GPU holds 1/8 of the activations and its queries' scores against every key: 16 GiB.
  const auto parallel = predict(flux_on_a100(4096, VaePlacement::kParallel, 8), config(1, 8));
  CHECK(parallel.memory.vae_decode == Approx(flux_decode_bytes(4096, 4096, 8)));
  CHECK(parallel.fits_memory);
  const auto single = predict(flux_on_a100(4096, VaePlacement::kSingle, 8), config(1, 8));
  CHECK_FALSE(single.fits_memory);
}

TEST_CASE("At the default 1024 x 1024 the convolutions, not the mid-block attention, set the decode's memory",
          "[costmodel][memory][phases][vae]") {
  // 1.15 x 1536 x 1024^2 = 1.85 GB against (128 x 128)^2 x 2 = 0.54 GB of scores.
  const auto p = predict(flux_on_a100(1024, VaePlacement::kSingle), config(1, 1));
  CHECK(p.memory.vae_decode == Approx(1.15 * 1536 * 1024 * 1024));
}

TEST_CASE("A sliced decode holds one image of the batch", "[costmodel][memory][phases][vae]") {
  auto q = flux_on_a100(1024, VaePlacement::kSliced);
  q.batch = 4;
  const auto sliced = predict(q, config(1, 1));
  q.vae = VaePlacement::kSingle;
  const auto whole = predict(q, config(1, 1));
  CHECK(sliced.memory.vae_decode == Approx(flux_decode_bytes(1024, 1024)));
  CHECK(whole.memory.vae_decode == Approx(4 * flux_decode_bytes(1024, 1024)));
}

TEST_CASE("Tensor parallel 8 of FLUX.2-dev on L20 fits while loading only when sharded before moving",
          "[costmodel][memory][phases][load]") {
  // FLUX.2-dev: 32,223,281,152 bf16 parameters = 60.0 GiB whole, above the L20's 45 GiB; sharded
  // over 8 GPUs its attention and FFN weights are an eighth.
  auto q = make_query("flux.2-dev", 8, 1024, 1024, 0, "l20");
  q.text_encoder = cpplan::TextEncoderPlacement::kOffloaded;
  const auto p = predict(q, config(1, 1, 8));
  const double capacity = 46068.0 * 1024 * 1024;
  CHECK(p.memory.load_weights == p.memory.transformer_weights + p.memory.vae_weights);
  CHECK(p.memory.phase(MemoryPhase::kLoad) <= capacity);
  // Moved first: the whole transformer (2 x 32,223,281,152) and the VAE (2 x 84,000,000).
  CHECK(p.memory.load_weights_moved_first == 2.0 * 32223281152.0 + 2.0 * 84000000.0);
  CHECK(p.memory.runtime_reserved + p.memory.load_weights_moved_first > capacity);
  CHECK(p.fits_memory);
}

TEST_CASE("Every rank of a node reads its own copy of the pipeline into host memory", "[costmodel][memory][host]") {
  // FLUX.2-dev per rank: 2 x (32,223,281,152 + 24,011,361,280 Mistral + 84,000,000 VAE)
  // = 112,637,284,864 bytes (104.9 GiB); 8 ranks: 839.2 GiB.
  auto q = make_query("flux.2-dev", 8, 1024, 1024, 0, "l20");
  q.host_memory_gib = 1024;
  const auto p = predict(q, config(1, 1, 8));
  CHECK(p.memory.host_load_per_rank == 112637284864.0);
  CHECK(p.ranks_per_node == 8);
  CHECK(p.host_load_bytes == 8 * 112637284864.0);
  CHECK(p.host_load == HostLoad::kFits);
  q.host_memory_gib = 256;  // one copy fits, eight do not: the ranks load in turn
  CHECK(predict(q, config(1, 1, 8)).host_load == HostLoad::kStaggered);
  q.host_memory_gib = 64;  // not one copy
  const auto too_small = predict(q, config(1, 1, 8));
  CHECK(too_small.host_load == HostLoad::kTooLarge);
  CHECK_FALSE(too_small.fits_memory);
  q.host_memory_gib = 0;
  CHECK(predict(q, config(1, 1, 8)).host_load == HostLoad::kUnknown);
}

TEST_CASE("The peak is the largest phase", "[costmodel][memory][phases]") {
  cpplan::costmodel::MemoryBreakdown m;
  m.runtime_reserved = 1;
  m.transformer_weights = 10;
  m.activations = 5;
  m.vae_decode = 7;
  m.load_weights = 10;
  CHECK(m.phase(MemoryPhase::kDenoise) == 16);
  CHECK(m.phase(MemoryPhase::kDecode) == 18);
  CHECK(m.phase(MemoryPhase::kLoad) == 11);
  CHECK(m.phase(MemoryPhase::kEncode) == 11);
  CHECK(m.peak_phase() == MemoryPhase::kDecode);
  CHECK(m.peak() == 18);
}
