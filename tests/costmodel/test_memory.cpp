// Memory per GPU (shared/spec/parallelism.md, "Memory per GPU"): weights in their dtype with the
// TP-sharded part divided by t, text encoders unless offloaded, per-strategy attention buffers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "costmodel/cost_model.h"
#include "tests/costmodel/datasheet_prediction.h"
#include "tests/support/fixtures.h"

using cpplan::kGiB;
using cpplan::costmodel::Prediction;
using cpplan::test::config;
using cpplan::test::make_query;

namespace {
Prediction predict(const cpplan::Query& q, const cpplan::ParallelConfig& c) { return cpplan::test::datasheet_prediction(q, c); }

// FLUX.1-dev: 11,901,408,320 bf16 parameters.
constexpr double kFluxWeightBytes = 2.0 * 11901408320.0;  // 23,802,816,640
// T5-XXL 4,762,310,656 + CLIP-L 123,060,480 parameters in bf16.
constexpr double kFluxTextBytes = 2.0 * (4762310656.0 + 123060480.0);  // 9,770,742,272
}  // namespace

TEST_CASE("Without tensor parallelism the transformer weighs params x 2 bytes", "[costmodel][memory]") {
  const auto p = predict(make_query("flux.1-dev", 1), config(1, 1));
  CHECK(p.memory.transformer_weights == kFluxWeightBytes);
  // Context parallelism replicates the weights.
  const auto u4 = predict(make_query("flux.1-dev", 4), config(1, 4));
  CHECK(u4.memory.transformer_weights == kFluxWeightBytes);
  const auto r4 = predict(make_query("flux.1-dev", 4), config(4, 1));
  CHECK(r4.memory.transformer_weights == kFluxWeightBytes);
}

TEST_CASE("Tensor parallelism divides only the attention and FFN weights by t", "[costmodel][memory][tp]") {
  // Sharded per token: 12 D^2 per stream; 19 double blocks x 2 streams + 38 single = 76 x 12 D^2
  // = 912 x 3072^2 = 8,606,711,808 parameters. With t = 2 half of them leave:
  // 2 x (11,901,408,320 - 8,606,711,808 / 2) = 15,196,104,832 bytes.
  const auto tp2 = predict(make_query("flux.1-dev", 2), config(1, 1, 2));
  CHECK(tp2.memory.transformer_weights == 15196104832.0);
  CHECK(tp2.memory.transformer_weights < kFluxWeightBytes);
  CHECK(tp2.memory.transformer_weights >= kFluxWeightBytes / 2);
  // t = 4: 2 x (11,901,408,320 - 8,606,711,808 x 3/4) = 10,892,748,928
  const auto tp4 = predict(make_query("flux.1-dev", 4), config(1, 1, 4));
  CHECK(tp4.memory.transformer_weights == Approx(10892748928.0).epsilon(1e-12));
  CHECK(tp4.memory.transformer_weights < tp2.memory.transformer_weights);
  CHECK(tp4.memory.transformer_weights >= kFluxWeightBytes / 4);
}

TEST_CASE("Text encoders count unless offloaded, and the VAE always counts", "[costmodel][memory]") {
  auto q = make_query("flux.1-dev", 1);
  const auto resident = predict(q, config(1, 1));
  CHECK(resident.memory.text_encoder_weights == kFluxTextBytes);
  CHECK(resident.memory.vae_weights == 2.0 * 83819683.0);
  q.text_encoder = cpplan::TextEncoderPlacement::kOffloaded;
  const auto offloaded = predict(q, config(1, 1));
  CHECK(offloaded.memory.text_encoder_weights == 0.0);
  CHECK(offloaded.memory.vae_weights == 2.0 * 83819683.0);
  CHECK(resident.peak_mem_bytes - offloaded.peak_mem_bytes == Approx(kFluxTextBytes).epsilon(1e-12));
}

TEST_CASE("Peak memory is the weights, the reserve and the larger of the two phases", "[costmodel][memory]") {
  const auto p = predict(make_query("flux.1-dev", 4), config(1, 4));
  const auto& m = p.memory;
  CHECK(m.runtime_reserved == 1536.0 * 1024 * 1024);  // h100-sxm reserved_mib
  const double expected = m.transformer_weights + m.text_encoder_weights + m.vae_weights + m.runtime_reserved +
                          std::max(m.activations, m.vae_decode);
  CHECK(m.peak() == expected);
  CHECK(p.peak_mem_bytes == expected);
  CHECK(m.activations > m.attention_extra);
}

TEST_CASE("The transformer peak is its weights and activations alone, what the executor measures",
          "[costmodel][memory]") {
  // FLUX.1-dev 1024x1024 on one GPU: S = 4096 + 512 = 4608 tokens, D = 3072, F = 12288, bf16.
  // Resident: 4 x 4608 x 3072 x 2 = 113,246,208 bytes; the largest live layer is the GELU FFN's
  // hidden, 4608 x 12288 x 2 x 2 = 226,492,416 (Q/K/V/O are 113,246,208); x 1.15 allocator slack:
  // 1.15 x 339,738,624 = 390,699,417.6. Plus the weights: 24,193,516,057.6 bytes.
  const auto p = predict(make_query("flux.1-dev", 1, 1024, 1024), config(1, 1));
  CHECK(p.memory.activations == Approx(390699417.6).epsilon(1e-12));
  CHECK(p.transformer_peak_bytes == Approx(kFluxWeightBytes + 390699417.6).epsilon(1e-12));
  CHECK(p.transformer_peak_bytes == p.memory.transformer_peak());
  // The whole pipeline adds at least the text encoders, the VAE and the runtime's reserve.
  CHECK(p.memory.text_encoder_weights == kFluxTextBytes);
  CHECK(p.peak_mem_bytes >= p.transformer_peak_bytes + kFluxTextBytes + 2.0 * 83819683.0 + 1536.0 * 1024 * 1024);
  // Ulysses 4: each rank holds a quarter of the tokens, and the full sequence for 6 of 24 heads.
  const auto u4 = predict(make_query("flux.1-dev", 4, 1024, 1024), config(1, 4));
  CHECK(u4.transformer_peak_bytes == u4.memory.transformer_weights + u4.memory.activations);
  CHECK(u4.transformer_peak_bytes < p.transformer_peak_bytes);
  CHECK(u4.transformer_peak_bytes > kFluxWeightBytes);
}

TEST_CASE("FLUX.1-dev with CP on 4 GPUs peaks between 30 and 40 GiB: weights dominate", "[costmodel][memory]") {
  // Published runs: about 34 GB per GPU. Weights alone: 23.8 + 9.77 + 0.17 GB = 33.7 GB = 31.4 GiB.
  const auto q = make_query("flux.1-dev", 4);
  for (const auto& c : {config(4, 1), config(1, 4), config(2, 2), config(1, 4, 1, 1, 1, true),
                        config(4, 1, 1, 1, 1, false, true)}) {
    INFO(cpplan::plan_label(c) << " " << cpplan::to_string(cpplan::classify(c.context_parallel_config)));
    const auto p = predict(q, c);
    CHECK(p.peak_mem_bytes / kGiB > 30.0);
    CHECK(p.peak_mem_bytes / kGiB < 40.0);
    const double weights = p.memory.transformer_weights + p.memory.text_encoder_weights + p.memory.vae_weights;
    CHECK(weights / p.peak_mem_bytes > 0.85);
    CHECK(p.fits_memory);
  }
}

TEST_CASE("Ring's gathered K/V needs more memory than Ulysses' full-sequence Q/K/V", "[costmodel][memory][cp]") {
  const auto q = make_query("flux.1-dev", 4);
  const auto ring = predict(q, config(4, 1));
  const auto ulysses = predict(q, config(1, 4));
  const auto none = predict(make_query("flux.1-dev", 1), config(1, 1));
  // Ring: 2 x 4608 x 3072 x 2 (K and V of the ring group) + 1152 x (3072 + 24) x 4 (fp32 output, LSE)
  CHECK(ring.memory.attention_extra == 70889472.0);
  // Ulysses: Q, K, V, O over the full 4608 tokens for 6 heads: 4 x 4608 x 768 x 2
  CHECK(ulysses.memory.attention_extra == 28311552.0);
  CHECK(ring.memory.attention_extra > ulysses.memory.attention_extra);
  CHECK(ulysses.memory.attention_extra > 0);
  CHECK(none.memory.attention_extra == 0);
  // Splitting the sequence shrinks the activations.
  CHECK(ulysses.memory.activations < none.memory.activations);
}

TEST_CASE("A plan that exceeds the GPU's memory does not fit", "[costmodel][memory]") {
  // FLUX.2-dev: 32.2B transformer + 24B Mistral in bf16 = 112 GB against a 24 GB RTX 4090.
  const auto q = make_query("flux.2-dev", 1, 1024, 1024, 0, "rtx4090");
  const auto p = predict(q, config(1, 1));
  CHECK(p.memory.transformer_weights == 2.0 * 32223281152.0);
  CHECK(p.peak_mem_bytes > q.hardware->memory_bytes());
  CHECK_FALSE(p.fits_memory);
  // FLUX.1-dev fits one H100.
  const auto h100 = predict(make_query("flux.1-dev", 1), config(1, 1));
  CHECK(h100.fits_memory);
}

TEST_CASE("True CFG batches two samples and doubles the activations, CFG parallelism halves them again",
          "[costmodel][memory][cfg]") {
  const auto batched = predict(make_query("wan2.1-t2v-14b", 2), config(1, 2));
  const auto split = predict(make_query("wan2.1-t2v-14b", 4), config(1, 2, 1, 2));
  CHECK(split.memory.attention_extra == Approx(batched.memory.attention_extra / 2).epsilon(1e-12));
  CHECK(split.memory.activations < batched.memory.activations);
}
