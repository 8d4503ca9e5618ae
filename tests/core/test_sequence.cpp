// Sequence lengths per model (shared/spec/parallelism.md, "Sequence length per model") and the
// parsing and checking of requested sizes.
#include <catch2/catch.hpp>

#include <string>

#include "core/sequence.h"
#include "tests/support/fixtures.h"

using cpplan::Resolution;
using cpplan::Sequence;
using cpplan::test::catalog;

namespace {
const cpplan::ModelProfile& model(const std::string& name) {
  const cpplan::ModelProfile* m = catalog().find_model(name);
  INFO("built-in profile " << name);
  REQUIRE(m != nullptr);
  return *m;
}

// The model's default size and text length.
Sequence default_sequence(const std::string& name) {
  const auto& m = model(name);
  auto s = cpplan::compute_sequence(m, {m.default_width, m.default_height}, m.default_frames, m.text_tokens);
  INFO(name << ": " << (s.ok() ? std::string() : s.error().message));
  REQUIRE(s.ok());
  return *s;
}

void check_sequence(const std::string& name, long long frames, long long image, long long text, long long total) {
  INFO(name);
  const Sequence s = default_sequence(name);
  CHECK(s.latent_frames == frames);
  CHECK(s.image_tokens == image);
  CHECK(s.text_tokens == text);
  CHECK(s.total() == total);
  CHECK(s.attention_tokens == total);
}
}  // namespace

TEST_CASE("parse_resolution reads WIDTHxHEIGHT", "[core][sequence][resolution]") {
  auto r = cpplan::parse_resolution("1024x768");
  REQUIRE(r.ok());
  CHECK(r->width == 1024);
  CHECK(r->height == 768);

  auto upper = cpplan::parse_resolution("1008X1008");
  REQUIRE(upper.ok());
  CHECK(upper->width == 1008);
  CHECK(upper->height == 1008);

  // The largest side accepted is 16384.
  auto largest = cpplan::parse_resolution("16384x16384");
  REQUIRE(largest.ok());
  CHECK(largest->width == 16384);
}

TEST_CASE("parse_resolution rejects malformed, non-positive and huge sizes with a message naming --res",
          "[core][sequence][resolution]") {
  SECTION("a single number has no height") {
    auto r = cpplan::parse_resolution("1024");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "--res = 1024: must be WIDTHxHEIGHT in pixels, e.g. 1024x1024");
  }
  SECTION("letters are not numbers") {
    auto r = cpplan::parse_resolution("axb");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "--res = axb: must be WIDTHxHEIGHT in pixels, e.g. 1024x1024");
  }
  SECTION("trailing garbage is rejected") {
    auto r = cpplan::parse_resolution("1024x1024px");
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("must be WIDTHxHEIGHT"));
  }
  SECTION("an empty side is rejected") {
    auto r = cpplan::parse_resolution("x1024");
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("must be WIDTHxHEIGHT"));
  }
  SECTION("zero width") {
    auto r = cpplan::parse_resolution("0x1024");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "--res = 0x1024: width and height must be positive");
  }
  SECTION("negative width") {
    auto r = cpplan::parse_resolution("-5x5");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "--res = -5x5: width and height must be positive");
  }
  SECTION("larger than any pipeline") {
    auto r = cpplan::parse_resolution("20000x20000");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "--res = 20000x20000: width and height must be at most 16384");
  }
}

TEST_CASE("Image models at their default size: (H/16)(W/16) image tokens plus the joint text",
          "[core][sequence]") {
  // flux.1-dev 1024x1024: 64 * 64 = 4096 image + 512 T5 = 4608
  check_sequence("flux.1-dev", 1, 4096, 512, 4608);
  // flux.1-schnell pads T5 to 256: 4096 + 256 = 4352
  check_sequence("flux.1-schnell", 1, 4096, 256, 4352);
  // flux.2-dev 1024x1024: 4096 + 512 = 4608
  check_sequence("flux.2-dev", 1, 4096, 512, 4608);
  // sd3.5 1024x1024: 4096 + 77 CLIP + 256 T5 = 4429
  check_sequence("sd3.5-large", 1, 4096, 333, 4429);
  check_sequence("sd3.5-medium", 1, 4096, 333, 4429);
  // qwen-image 1328x1328: 83 * 83 = 6889 + 512 = 7401
  check_sequence("qwen-image", 1, 6889, 512, 7401);
  // pixart-sigma 1024x1024: 4096 image tokens; 300 T5 tokens enter by cross-attention only
  check_sequence("pixart-sigma", 1, 4096, 300, 4096);
  // flux-tiny 256x256: 16 * 16 = 256 + 16 = 272
  check_sequence("flux-tiny", 1, 256, 16, 272);
}

TEST_CASE("Video models at their default size: latent frames x latent pixels", "[core][sequence]") {
  // wan2.1 832x480x81: (1 + 80/4) = 21 frames x (480/16 = 30) x (832/16 = 52) = 32760; cross text
  check_sequence("wan2.1-t2v-14b", 21, 32760, 512, 32760);
  check_sequence("wan2.1-t2v-1.3b", 21, 32760, 512, 32760);
  // wan2.2-ti2v-5b 1280x704x121, granularity 16 x 2 = 32: (1 + 120/4) = 31 x (704/32 = 22) x (1280/32 = 40)
  //   = 27280; cross text
  check_sequence("wan2.2-ti2v-5b", 31, 27280, 512, 27280);
  // hunyuanvideo 1280x720x129: (1 + 128/4) = 33 x 45 x 80 = 118800 + 256 = 119056
  check_sequence("hunyuanvideo", 33, 118800, 256, 119056);
  // cogvideox-5b 720x480x49: (1 + 48/4) = 13 x 30 x 45 = 17550 + 226 = 17776
  check_sequence("cogvideox-5b", 13, 17550, 226, 17776);
  // ltx-video-2b 704x512x161, granularity 32 x 1: (1 + 160/8) = 21 x 16 x 22 = 7392; cross text 128
  check_sequence("ltx-video-2b", 21, 7392, 128, 7392);
  // wan-tiny 128x128x5: (1 + 4/4) = 2 x 8 x 8 = 128; cross text 16
  check_sequence("wan-tiny", 2, 128, 16, 128);
}

TEST_CASE("Every built-in model's default size is one it can denoise", "[core][sequence]") {
  REQUIRE(catalog().models().size() == 27);
  for (const auto& m : catalog().models()) {
    INFO(m.name);
    auto s = cpplan::compute_sequence(m, {m.default_width, m.default_height}, m.default_frames, m.text_tokens);
    REQUIRE(s.ok());
    CHECK(s->image_tokens > 0);
    CHECK(s->attention_tokens >= s->image_tokens);
  }
}

TEST_CASE("FLUX.1-dev at 1008x1008 has the odd 63 x 63 = 3969 image tokens", "[core][sequence]") {
  auto s = cpplan::compute_sequence(model("flux.1-dev"), {1008, 1008}, 1, 512);
  REQUIRE(s.ok());
  CHECK(s->image_tokens == 3969);
  CHECK(s->total() == 3969 + 512);
}

TEST_CASE("Non-square sizes and shorter prompts change the counts accordingly", "[core][sequence]") {
  // flux 1280x768: (768/16 = 48) x (1280/16 = 80) = 3840 + 256 text
  auto s = cpplan::compute_sequence(model("flux.1-dev"), {1280, 768}, 1, 256);
  REQUIRE(s.ok());
  CHECK(s->image_tokens == 3840);
  CHECK(s->text_tokens == 256);
  CHECK(s->total() == 4096);
  // wan2.1 1280x720x81 (720p): 21 x 45 x 80 = 75600
  auto w = cpplan::compute_sequence(model("wan2.1-t2v-14b"), {1280, 720}, 81, 512);
  REQUIRE(w.ok());
  CHECK(w->image_tokens == 75600);
  CHECK(w->total() == 75600);
  // a single frame of a video model: 1 latent frame
  auto one = cpplan::compute_sequence(model("wan2.1-t2v-14b"), {832, 480}, 1, 512);
  REQUIRE(one.ok());
  CHECK(one->latent_frames == 1);
  CHECK(one->image_tokens == 30 * 52);
}

TEST_CASE("A size off the model's grid names the nearest valid sizes", "[core][sequence]") {
  auto s = cpplan::compute_sequence(model("flux.1-dev"), {1000, 1000}, 1, 512);
  REQUIRE_FALSE(s.ok());
  // 1000 / 16 = 62.5: 62 * 16 = 992 below, 63 * 16 = 1008 above
  CHECK(s.error().message ==
        "--res = 1000x1000: width and height must be multiples of 16 for flux.1-dev (VAE 8 x patch 2); "
        "nearest valid sizes: 992x992 or 1008x1008");

  // ltx needs multiples of 32: 700x500 -> 672x480 below, 704x512 above
  auto l = cpplan::compute_sequence(model("ltx-video-2b"), {700, 500}, 161, 128);
  REQUIRE_FALSE(l.ok());
  CHECK_THAT(l.error().message, Catch::Contains("multiples of 32") && Catch::Contains("672x480 or 704x512"));

  // Only one side off the grid still names both neighbours of that side.
  auto h = cpplan::compute_sequence(model("flux.1-dev"), {1024, 1000}, 1, 512);
  REQUIRE_FALSE(h.ok());
  CHECK_THAT(h.error().message, Catch::Contains("1024x992 or 1024x1008"));
}

TEST_CASE("nearest_sizes_hint never goes below one step", "[core][sequence]") {
  CHECK(cpplan::nearest_sizes_hint({8, 8}, 16) == "16x16");
  CHECK(cpplan::nearest_sizes_hint({1000, 1000}, 16) == "992x992 or 1008x1008");
  CHECK(cpplan::nearest_sizes_hint({1024, 1024}, 16) == "1024x1024");
}

// diffusers floors the latent frames of any count (pipeline_mochi.py, prepare_latents:
// "num_frames = (num_frames - 1) // self.vae_temporal_compression_ratio + 1"; CogVideoX, HunyuanVideo
// and LTX alike), so a count off the 1 + k x factor grid runs: Mochi 84 frames, factor 6:
// (84 - 1) // 6 + 1 = 14 latent frames, decoded (14 - 1) x 6 + 1 = 79 frames.
TEST_CASE("A video frame count off the 1 + k x factor grid runs with the latent frames floored, as diffusers does",
          "[core][sequence]") {
  auto mochi = cpplan::compute_sequence(model("mochi-tiny"), {256, 256}, 84, 16);
  REQUIRE(mochi.ok());
  CHECK(mochi->latent_frames == 14);
  CHECK(mochi->decoded_frames == 79);
  // Wan 80 frames, factor 4: 79 // 4 + 1 = 20 latent frames, 77 decoded; 832 x 480 / 16 per side: 52 x 30.
  auto wan = cpplan::compute_sequence(model("wan2.1-t2v-14b"), {832, 480}, 80, 512);
  REQUIRE(wan.ok());
  CHECK(wan->latent_frames == 20);
  CHECK(wan->decoded_frames == 77);
  CHECK(wan->image_tokens == 20LL * 30 * 52);
  // On the grid nothing is floored: 81 frames, 21 latent frames, 81 decoded.
  auto on = cpplan::compute_sequence(model("wan2.1-t2v-14b"), {832, 480}, 81, 512);
  REQUIRE(on.ok());
  CHECK(on->latent_frames == 21);
  CHECK(on->decoded_frames == 81);
}

TEST_CASE("Video frame counts outside 1..2049 are rejected", "[core][sequence]") {
  auto zero = cpplan::compute_sequence(model("wan2.1-t2v-14b"), {832, 480}, 0, 512);
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error().message == "--frames = 0: must be between 1 and 2049");
  auto huge = cpplan::compute_sequence(model("wan2.1-t2v-14b"), {832, 480}, 4097, 512);
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().message == "--frames = 4097: must be between 1 and 2049");
}

TEST_CASE("Frames other than 1 for an image model are an error", "[core][sequence]") {
  auto s = cpplan::compute_sequence(model("flux.1-dev"), {1024, 1024}, 5, 512);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == "--frames = 5: flux.1-dev generates images; frames must be 1");
}

TEST_CASE("Text tokens must lie within the model's range", "[core][sequence]") {
  auto over = cpplan::compute_sequence(model("flux.1-dev"), {1024, 1024}, 1, 513);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().message == "--text-tokens = 513: must be between 1 and 512 for flux.1-dev");
  auto zero = cpplan::compute_sequence(model("flux.1-dev"), {1024, 1024}, 1, 0);
  REQUIRE_FALSE(zero.ok());
  CHECK_THAT(zero.error().message, Catch::StartsWith("--text-tokens = 0:"));
  // Qwen-Image accepts up to 1024 prompt tokens: 6889 + 1024 = 7913
  auto qwen = cpplan::compute_sequence(model("qwen-image"), {1328, 1328}, 1, 1024);
  REQUIRE(qwen.ok());
  CHECK(qwen->total() == 7913);
}
