// FLOPs of one forward pass against shared/reference/models.md ("FLOPs per forward pass"), and
// the local FLOPs per step the cost model charges a rank under each parallel split.
#include <catch2/catch.hpp>

#include <string>

#include "core/sequence.h"
#include "costmodel/cost_model.h"
#include "tests/costmodel/datasheet_prediction.h"
#include "tests/support/fixtures.h"

using cpplan::costmodel::forward_flops;
using cpplan::test::config;
using cpplan::test::make_query;

namespace {
// One forward pass at `width` x `height` x `frames` with the model's default text, in TFLOP.
double tflop(const std::string& name, int width = 0, int height = 0, int frames = 0) {
  const auto q = make_query(name, 1, width, height, frames);
  return forward_flops(*q.model, q.sequence) / 1e12;
}

double predicted_step_flops(const cpplan::Query& q, const cpplan::ParallelConfig& c) {
  return cpplan::test::datasheet_prediction(q, c).step_flops;
}
}  // namespace

TEST_CASE("FLUX.1-dev at 1024x1024 costs 59.5 TFLOP of linears and 14.9 of attention", "[costmodel][flops]") {
  // S = 4096 + 512 = 4608, D = 3072, 57 blocks (19 double + 38 single), GELU FFN F = 4D:
  //   linears per block 2 * (4 D^2 + 2 D F) * S = 2 * 12 D^2 * S
  //   attention per block 4 * S^2 * D
  const double d = 3072, s = 4608, blocks = 57;
  const double linear = 2.0 * 12.0 * d * d * s * blocks;  // 59.4896 TFLOP
  const double attention = 4.0 * s * s * d * blocks;      // 14.8724 TFLOP
  CHECK(linear / 1e12 == Approx(59.5).epsilon(0.001));
  CHECK(attention / 1e12 == Approx(14.9).epsilon(0.003));

  const auto q = make_query("flux.1-dev", 1);
  const double total = forward_flops(*q.model, q.sequence);
  CHECK(total == Approx(linear + attention).epsilon(1e-12));
  CHECK(total / 1e12 == Approx(74.4).epsilon(0.005));

  // The linear part alone, from the weights the model charges per token.
  CHECK(cpplan::costmodel::linear_weights_per_token(*q.model, cpplan::BlockKind::kDouble) == 12.0 * d * d);
  CHECK(cpplan::costmodel::linear_weights_per_token(*q.model, cpplan::BlockKind::kSingle) == 12.0 * d * d);

  // The shortcut 2 * params * tokens overcounts (about 110 TFLOP).
  CHECK(2.0 * q.model->params * s / 1e12 == Approx(110).epsilon(0.01));
}

TEST_CASE("FLUX.1-dev at 1008x1008 costs about 71.9 TFLOP", "[costmodel][flops]") {
  // S = 3969 + 512 = 4481: 2 * 12 D^2 * S * 57 + 4 S^2 D * 57
  const double d = 3072, s = 4481;
  const double expected = 57.0 * (24.0 * d * d * s + 4.0 * s * s * d);
  CHECK(tflop("flux.1-dev", 1008, 1008) * 1e12 == Approx(expected).epsilon(1e-12));
  CHECK(tflop("flux.1-dev", 1008, 1008) == Approx(71.9).epsilon(0.005));
}

TEST_CASE("Cross-attention blocks add the text K/V projections and the cross-attention", "[costmodel][flops]") {
  // wan2.1-t2v-14b 832x480x81: S_img = 32760, S_txt = 512, D = 5120, F = 13824, 40 cross blocks.
  //   per block: 2 * (4D^2 + 2D^2 + 2DF) * S_img   (self q,k,v,o + cross q,o + FFN)
  //            + 4 * S_img^2 * D                    (self-attention)
  //            + 2 * 2D^2 * S_txt                   (cross k,v on the text)
  //            + 4 * S_img * S_txt * D              (cross-attention)
  const double d = 5120, f = 13824, img = 32760, txt = 512;
  const double per_block = 2.0 * (6.0 * d * d + 2.0 * d * f) * img + 4.0 * img * img * d + 4.0 * d * d * txt +
                           4.0 * img * txt * d;
  const auto q = make_query("wan2.1-t2v-14b", 1);
  CHECK(cpplan::costmodel::linear_weights_per_token(*q.model, cpplan::BlockKind::kCross) == 6.0 * d * d + 2.0 * d * f);
  CHECK(forward_flops(*q.model, q.sequence) == Approx(40.0 * per_block).epsilon(1e-12));
}

TEST_CASE("Forward FLOPs match the reference figures for every large model", "[costmodel][flops]") {
  // Reference values are approximations of the published architectures (models.md).
  CHECK(tflop("flux.2-dev") == Approx(282).epsilon(0.02));           // cpplan: 282.5
  CHECK(tflop("wan2.1-t2v-14b") == Approx(1680).epsilon(0.02));       // 480p/81f; cpplan: 1678.3
  CHECK(tflop("wan2.1-t2v-14b", 1280, 720) == Approx(6520).epsilon(0.02));  // 720p; cpplan: 6523.3
  CHECK(tflop("sd3.5-large") == Approx(31).epsilon(0.05));            // cpplan: 31.14
  CHECK(tflop("hunyuanvideo") == Approx(12070).epsilon(0.05));        // 720p/129f; cpplan: 12068.4
  CHECK(tflop("cogvideox-5b") == Approx(332).epsilon(0.05));          // cpplan: 332.2
  CHECK(tflop("ltx-video-2b") == Approx(37).epsilon(0.05));           // cpplan: 37.1
  CHECK(tflop("pixart-sigma") == Approx(6.6).epsilon(0.05));          // cpplan: 6.63
  // qwen-image 1328x1328: S = 6889 + 512 = 7401 over 60 double blocks gives
  //   60 * (24 D^2 * 7401 + 4 * 7401^2 * D) = 100.5 + 40.4 = 141.0 TFLOP.
  // The reference's 132 corresponds to a prompt of about 170 tokens (its text length is
  // variable, <= 1024); with the profile's default 512 tokens the figure is 6.8% higher.
  CHECK(tflop("qwen-image") == Approx(132).epsilon(0.10));
  const double d = 3072, s = 7401;
  CHECK(tflop("qwen-image") * 1e12 == Approx(60.0 * (24.0 * d * d * s + 4.0 * s * s * d)).epsilon(1e-12));
}

TEST_CASE("Wan2.1 at 720p spends about 72% of its FLOPs in attention", "[costmodel][flops]") {
  // S_img = 21 * 45 * 80 = 75600; self-attention 4 S^2 D + cross 4 S S_txt D, per block
  const double d = 5120, img = 75600, txt = 512;
  const double attention = 40.0 * (4.0 * img * img * d + 4.0 * img * txt * d);
  const double total = tflop("wan2.1-t2v-14b", 1280, 720) * 1e12;
  CHECK(attention / total == Approx(0.72).epsilon(0.02));
}

TEST_CASE("SD3.5-medium's image-only self-attention adds its projections and attention", "[costmodel][flops]") {
  // 24 double blocks, D = 1536, F = 6144 (= 4D), S = 4096 + 333 = 4429; blocks 0-12 add
  // 2 * 4 D^2 * S_img + 4 * S_img^2 * D.
  const double d = 1536, s = 4429, img = 4096;
  const double base = 24.0 * (24.0 * d * d * s + 4.0 * s * s * d);
  const double extra = 13.0 * (8.0 * d * d * img + 4.0 * img * img * d);
  CHECK(tflop("sd3.5-medium") * 1e12 == Approx(base + extra).epsilon(1e-12));
}

TEST_CASE("A single GPU computes exactly the forward FLOPs times the passes per step", "[costmodel][flops]") {
  // FLUX.1-dev is distilled: one pass per step.
  const auto flux = make_query("flux.1-dev", 1);
  CHECK(predicted_step_flops(flux, config(1, 1)) == Approx(forward_flops(*flux.model, flux.sequence)).epsilon(1e-9));
  // Wan runs true CFG: the conditional and unconditional passes batched on one GPU.
  const auto wan = make_query("wan2.1-t2v-14b", 1);
  CHECK(predicted_step_flops(wan, config(1, 1)) ==
        Approx(2.0 * forward_flops(*wan.model, wan.sequence)).epsilon(1e-9));
  // CFG parallelism gives each of the two GPUs one pass.
  auto wan2 = make_query("wan2.1-t2v-14b", 2);
  CHECK(predicted_step_flops(wan2, config(1, 1, 1, 2)) ==
        Approx(forward_flops(*wan.model, wan.sequence)).epsilon(1e-9));
}

TEST_CASE("N-way context parallelism divides the per-GPU FLOPs by N", "[costmodel][flops][cp]") {
  const auto one = make_query("flux.1-dev", 1);
  const double single = predicted_step_flops(one, config(1, 1));
  const auto four = make_query("flux.1-dev", 4);
  // 4608 tokens split 1152 per rank; attention over the full 4608 with 24 / 4 = 6 heads.
  CHECK(predicted_step_flops(four, config(1, 4)) == Approx(single / 4).epsilon(0.01));
  CHECK(predicted_step_flops(four, config(4, 1)) == Approx(single / 4).epsilon(0.01));
  CHECK(predicted_step_flops(four, config(2, 2)) == Approx(single / 4).epsilon(0.01));
  CHECK(predicted_step_flops(four, config(1, 1, 4)) == Approx(single / 4).epsilon(0.01));
  const auto two = make_query("flux.1-dev", 2);
  CHECK(predicted_step_flops(two, config(1, 2)) == Approx(single / 2).epsilon(0.01));
}

TEST_CASE("A temporal conv after the FFN (SANA-Video's conv_temp) adds 2 x taps x D^2 per image token and, under "
          "Ulysses, an all-gather of a frame on each side",
          "[costmodel][flops]") {
  // wan2.1-t2v-14b's shape with a 3-tap conv_temp D -> D after each of its 40 FFNs, 832x480x81:
  // 21 latent frames of 30 x 52 = 1560 tokens (32760 in all), D = 5120.
  const double d = 5120, img = 32760, frame = 1560, blocks = 40;
  const auto plain = make_query("wan2.1-t2v-14b", 2);
  cpplan::ModelProfile m = *plain.model;
  m.ffn_temporal_taps = 3;
  const auto temporal = make_query(m, 2);
  CHECK(forward_flops(m, temporal.sequence) - forward_flops(*plain.model, plain.sequence) ==
        Approx(blocks * 2.0 * 3.0 * d * d * img).epsilon(1e-12));
  // Ulysses 2: each rank convolves its 16380 tokens of both CFG samples (batched: 2), the weights
  // whole; its share starts and ends mid-video, so it all-gathers its first and last frame: 2 ranks
  // x 2 frames x 1560 tokens x D x 2 bytes x 2 samples, of which a rank sends (n - 1) / n = 1/2.
  const auto c = config(1, 2);
  const double flops = predicted_step_flops(temporal, c) - predicted_step_flops(plain, c);
  CHECK(flops == Approx(blocks * 2.0 * 2.0 * 3.0 * d * d * img / 2).epsilon(1e-9));
  const double bytes = cpplan::test::datasheet_prediction(temporal, c).comm_bytes -
                       cpplan::test::datasheet_prediction(plain, c).comm_bytes;
  CHECK(bytes == Approx(blocks * 2.0 * 2.0 * frame * d * 2.0 * 2.0 / 2).epsilon(1e-9));
}

TEST_CASE("Single-stream blocks whose text gives keys and values only (PRX) project the text to K and V and "
          "query with the image",
          "[costmodel][flops]") {
  // cogvideox-5b's 42 sequential single blocks at 720x480x49 (13 latent frames of 30 x 45 = 17550
  // video tokens, 226 text, S = 17776), D = 3072, GELU FFN F = 12288, with text_kv_only: per block
  //   2 (4 D^2 + 2 D F) S_img    q, k, v, out and the FFN on the video tokens
  // + 2 x 2 D^2 S_txt            the text's keys and values
  // + 4 S_img S D                video queries against every key
  const double d = 3072, f = 12288, img = 17550, txt = 226, s = img + txt;
  const double per_block = 2.0 * (4.0 * d * d + 2.0 * d * f) * img + 4.0 * d * d * txt + 4.0 * img * s * d;
  const auto plain = make_query("cogvideox-5b", 1);
  REQUIRE(plain.sequence.image_tokens == img);
  REQUIRE(plain.sequence.text_tokens == txt);
  cpplan::ModelProfile m = *plain.model;
  m.blocks[0].text_kv_only = true;
  const auto kv_only = make_query(m, 1);
  CHECK(forward_flops(m, kv_only.sequence) == Approx(42.0 * per_block).epsilon(1e-12));
  // The step's FLOPs on one GPU: both CFG passes (batched) of the blocks as forward_flops counts them.
  const double blocks_step = predicted_step_flops(kv_only, config(1, 1)) - predicted_step_flops(plain, config(1, 1));
  CHECK(blocks_step == Approx(2.0 * (42.0 * per_block - forward_flops(*plain.model, plain.sequence))).epsilon(1e-9));
}

TEST_CASE("A cross-attention to conditioning tokens every other block (ConsisID's face tokens) adds its q, out, "
          "K/V and attention FLOPs",
          "[costmodel][flops]") {
  // cogvideox-5b's 42 blocks at 720x480x49 (17550 video tokens, D = 3072) with ConsisID's
  // PerceiverCrossAttention after every 2nd block (21 of them) to 32 face tokens of 2048 channels,
  // 16 heads x 128 = 2048 inner: per cross-attention
  //   2 x 2 D x inner x S_img       q and out on the video tokens
  // + 2 x 2 x 2048 x inner x 32     the face tokens' K and V
  // + 4 x S_img x 32 x inner        the attention
  const double d = 3072, img = 17550, inner = 2048, face = 32;
  const double per_cross = 4.0 * d * inner * img + 4.0 * 2048 * inner * face + 4.0 * img * face * inner;
  const auto plain = make_query("cogvideox-5b", 2);
  cpplan::ModelProfile m = *plain.model;
  m.side_cross = {2, 32, 2048, 2048};
  const auto faces = make_query(m, 2);
  CHECK(forward_flops(m, faces.sequence) - forward_flops(*plain.model, plain.sequence) ==
        Approx(21.0 * per_cross).epsilon(1e-12));
  // Ulysses 2: each rank runs it on its half of the video tokens, both CFG samples batched; the
  // face tokens' K and V on every rank; no bytes beyond the blocks'.
  const auto c = config(1, 2);
  const double local = 4.0 * d * inner * img / 2 + 4.0 * 2048 * inner * face + 4.0 * img / 2 * face * inner;
  CHECK(predicted_step_flops(faces, c) - predicted_step_flops(plain, c) == Approx(2.0 * 21.0 * local).epsilon(1e-9));
  CHECK(cpplan::test::datasheet_prediction(faces, c).comm_bytes ==
        cpplan::test::datasheet_prediction(plain, c).comm_bytes);
}
