// Profiles imported from the video transformers' diffusers configs (core/diffusers_video.cpp):
// each published config.json (tests/data/diffusers/<profile>/) gives the built-in profile's
// transformer, sequence lengths and parameter count; a missing size field names itself and the class.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "core/diffusers_config.h"
#include "core/sequence.h"
#include "tests/support/fixtures.h"

using cpplan::test::catalog;

namespace {
namespace fs = std::filesystem;

fs::path fixture(const std::string& profile) {
  return fs::path(CPPLAN_TEST_PROFILES).parent_path() / "tests" / "data" / "diffusers" / profile / "config.json";
}

nlohmann::json fixture_json(const std::string& profile) {
  std::ifstream in(fixture(profile));
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

const cpplan::ModelProfile& builtin(const std::string& name) {
  const cpplan::ModelProfile* m = catalog().find_model(name);
  INFO("built-in profile " << name);
  REQUIRE(m != nullptr);
  return *m;
}

cpplan::ModelProfile imported(const std::string& profile) {
  cpplan::diffusers::ImportOptions options;
  options.name = profile + "-derived";
  auto m = cpplan::diffusers::import_profile(fixture(profile).string(), catalog(), options);
  INFO(profile << ": " << (m.ok() ? std::string() : m.error().message));
  REQUIRE(m.ok());
  return std::move(m).value();
}

// A config given as text (as from Python), with edits to the published one.
cpplan::Result<cpplan::ModelProfile> from_json(const nlohmann::json& config) {
  return cpplan::diffusers::profile_from_config_text(config.dump(), catalog(),
                                                     {.name = "edited-derived", .source = "edited config"});
}

cpplan::Sequence default_sequence(const cpplan::ModelProfile& m, const cpplan::ModelProfile& size_of) {
  auto s = cpplan::compute_sequence(m, {size_of.default_width, size_of.default_height}, size_of.default_frames,
                                    size_of.text_tokens);
  INFO(m.name << ": " << (s.ok() ? std::string() : s.error().message));
  REQUIRE(s.ok());
  return *s;
}

// The imported profile of `profile`'s config against the built-in profile of the same name.
cpplan::ModelProfile check_matches_builtin(const std::string& profile) {
  INFO(profile);
  const cpplan::ModelProfile m = imported(profile);
  const cpplan::ModelProfile& b = builtin(profile);
  CHECK(m.name == profile + "-derived");
  CHECK(m.heads == b.heads);
  CHECK(m.head_dim == b.head_dim);
  REQUIRE(m.blocks.size() == b.blocks.size());
  for (std::size_t i = 0; i < b.blocks.size(); ++i) {
    INFO("block group " << i);
    CHECK(m.blocks[i].kind == b.blocks[i].kind);
    CHECK(m.blocks[i].count == b.blocks[i].count);
    CHECK(m.blocks[i].sequential == b.blocks[i].sequential);
  }
  CHECK(m.ffn_hidden == b.ffn_hidden);
  CHECK(m.ffn_kind == b.ffn_kind);
  CHECK(m.qk_norm == b.qk_norm);
  CHECK(m.modulation == b.modulation);
  CHECK(m.in_channels == b.in_channels);
  CHECK(m.patch_spatial == b.patch_spatial);
  CHECK(m.patch_temporal == b.patch_temporal);
  CHECK(m.video);
  CHECK(m.text_handling == b.text_handling);
  CHECK(m.guidance == b.guidance);
  CHECK(m.params == Approx(b.params).epsilon(0.005));

  const cpplan::Sequence got = default_sequence(m, b);
  const cpplan::Sequence want = default_sequence(b, b);
  CHECK(got.latent_frames == want.latent_frames);
  CHECK(got.image_tokens == want.image_tokens);
  CHECK(got.text_tokens == want.text_tokens);
  CHECK(got.attention_tokens == want.attention_tokens);
  return m;
}

// The published config without `field`: the error names the field and the class.
void check_missing_field(const std::string& profile, const std::string& field, const std::string& class_name) {
  nlohmann::json config = fixture_json(profile);
  REQUIRE(config.erase(field) == 1);
  auto m = from_json(config);
  INFO(profile << " without " << field);
  REQUIRE_FALSE(m.ok());
  CHECK_THAT(m.error().message, Catch::Contains(field) && Catch::Contains(class_name));
}
}  // namespace

TEST_CASE("A Wan2.1-T2V-14B config imports as the built-in wan2.1-t2v-14b", "[core][diffusers][wan]") {
  const auto m = check_matches_builtin("wan2.1-t2v-14b");
  // D = 40 x 128 = 5120, ffn 13824, 40 blocks, 16 latent channels, patch (1,2,2) = 4:
  //   patch_embedding Conv3d 64 x 5120 + 5120                                =        332,800
  //   time_embedder 256 x 5120 + 5120 + 5120^2 + 5120                        =     27,535,360
  //   time_proj 5120 x 30720 + 30720                                         =    157,317,120
  //   text_embedder 4096 x 5120 + 5120 + 5120^2 + 5120                       =     47,196,160
  //   per block: attn1, attn2 4 x (5120^2 + 5120) + 2 x 5120 RMSNorm each     =    209,776,640
  //              norm2 2 x 5120 + ffn 2 x 5120 x 13824 + 13824 + 5120
  //              + scale_shift_table 6 x 5120                                =    141,617,664
  //              block                                                       =    351,394,304
  //   40 blocks                                                              = 14,055,772,160
  //   proj_out 5120 x 64 + 64 + scale_shift_table 2 x 5120                   =        337,984
  //   total                                                                  = 14,288,491,584
  CHECK(m.params == 14288491584.0);
  // 832x480, 81 frames: 21 latent frames x (480/16) x (832/16) = 32,760 video tokens; text is K/V.
  const auto s = default_sequence(m, builtin("wan2.1-t2v-14b"));
  CHECK(s.image_tokens == 32760);
  CHECK(s.attention_tokens == 32760);
}

TEST_CASE("A Wan2.1-T2V-1.3B config imports as the built-in wan2.1-t2v-1.3b", "[core][diffusers][wan]") {
  const auto m = check_matches_builtin("wan2.1-t2v-1.3b");
  // D = 1536, ffn 8960, 30 blocks of 46,440,704; embedders 99,840 + 2,755,584 + 14,164,992 + 8,653,824;
  // proj_out 98,368; scale_shift_table 3,072.
  CHECK(m.params == 1418996800.0);
}

TEST_CASE("A Wan2.2-TI2V-5B config imports as the built-in wan2.2-ti2v-5b", "[core][diffusers][wan]") {
  const auto m = check_matches_builtin("wan2.2-ti2v-5b");
  // D = 3072, ffn 14336, 30 blocks of 163,656,704 = 4,909,701,120; 48 latent channels: patch_embedding
  // 192 x 3072 + 3072 = 592,896, proj_out 3072 x 192 + 192 = 590,016; time_embedder 10,229,760,
  // time_proj 56,641,536, text_embedder 22,026,240, scale_shift_table 6,144. The built-in's 5.0e9 is approx.
  CHECK(m.params == 4999787712.0);
  CHECK(m.vae.spatial == 16);  // the template of 48-channel Wan configs is the Wan2.2 pipeline
}

TEST_CASE("A Wan2.1 I2V config counts the image embedder and the added K/V projections", "[core][diffusers][wan]") {
  nlohmann::json config = fixture_json("wan2.1-t2v-14b");
  config["image_dim"] = 1280;
  config["added_kv_proj_dim"] = 5120;
  config["in_channels"] = 36;  // 16 noise + 20 condition channels
  auto m = from_json(config);
  INFO((m.ok() ? std::string() : m.error().message));
  REQUIRE(m.ok());
  // T2V 14,288,491,584 + 40 x (add_k, add_v 2 x (5120^2 + 5120) + norm_added_k 5120) 2,097,766,400
  // + image_embedder (LayerNorm 2560, 1280^2 + 1280, 1280 x 5120 + 5120, LayerNorm 10240) 8,211,200
  // + 20 more input channels in patch_embedding 20 x 4 x 5120 = 409,600.
  CHECK(m->params == 16394878784.0);
  CHECK(m->in_channels == 144);
}

TEST_CASE("A HunyuanVideo config imports as the built-in hunyuanvideo", "[core][diffusers][hunyuanvideo]") {
  const auto m = check_matches_builtin("hunyuanvideo");
  // D = 3072, head_dim 128, mlp 12288: x_embedder 199,680; token refiner (time+text embedders
  // 32,256,000, proj_in 12,585,984, 2 blocks of 14 D^2 + 15 D = 132,166,656) 309,175,296;
  // time_text_embed (timestep, pooled text 768, guidance) 32,262,144; 20 double blocks of
  // 36 D^2 + 30 D + 4 x 128 = 339,831,296; 40 single blocks of 15 D^2 + 11 D + 2 x 128 = 141,591,808;
  // norm_out 18,880,512; proj_out 196,672. The built-in's 12.82e9 is approx.
  CHECK(m.params == 12821012544.0);
}

TEST_CASE("A HunyuanVideo config without a guidance embedder is not guidance-distilled", "[core][diffusers][hunyuanvideo]") {
  nlohmann::json config = fixture_json("hunyuanvideo");
  config["guidance_embeds"] = false;
  auto m = from_json(config);
  INFO((m.ok() ? std::string() : m.error().message));
  REQUIRE(m.ok());
  CHECK(m->guidance == cpplan::Guidance::kNone);
  CHECK(m->params == 12821012544.0 - 10229760.0);  // the guidance TimestepEmbedding(256, 3072)
}

TEST_CASE("A CogVideoX-5B config imports as the built-in cogvideox-5b", "[core][diffusers][cogvideox]") {
  const auto m = check_matches_builtin("cogvideox-5b");
  // D = 3072, time_embed_dim T = 512: 42 blocks of 12 D^2 + 12 T D + 25 D + 4 x 64 = 132,197,632;
  // patch_embed 199,680 + text_proj 12,585,984; time_embedding 1,836,032; norm_final 6,144;
  // norm_out 3,158,016; proj_out 196,672.
  CHECK(m.params == 5570283072.0);
}

TEST_CASE("A CogVideoX 1.5 config patches two latent frames per token", "[core][diffusers][cogvideox]") {
  nlohmann::json config = fixture_json("cogvideox-5b");
  config["patch_size_t"] = 2;
  config["patch_bias"] = false;
  auto m = from_json(config);
  INFO((m.ok() ? std::string() : m.error().message));
  REQUIRE(m.ok());
  CHECK(m->patch_temporal == 2);
  CHECK(m->in_channels == 128);  // 16 latent channels x 2 x 2 x 2
  // The Conv2d (64 x 3072 + 3072) becomes a Linear 128 -> 3072 with bias; proj_out 3072 -> 128.
  CHECK(m->params == 5570283072.0 + 64 * 3072 + 64 * 3072 + 64);
}

TEST_CASE("An LTX-Video config imports as the built-in ltx-video-2b", "[core][diffusers][ltx]") {
  const auto m = check_matches_builtin("ltx-video-2b");
  // D = 2048: 28 blocks of 16 D^2 + 23 D = 67,155,968; proj_in 264,192; scale_shift_table 4,096;
  // time_embed 29,900,800; caption_projection 12,587,008; proj_out 262,272.
  CHECK(m.params == 1923385472.0);
}

TEST_CASE("A Wan config without num_attention_heads names the field and the class", "[core][diffusers][errors]") {
  check_missing_field("wan2.1-t2v-14b", "num_attention_heads", "WanTransformer3DModel");
}

TEST_CASE("A HunyuanVideo config without num_attention_heads names the field and the class",
          "[core][diffusers][errors]") {
  check_missing_field("hunyuanvideo", "num_attention_heads", "HunyuanVideoTransformer3DModel");
}

TEST_CASE("A CogVideoX config without num_attention_heads names the field and the class", "[core][diffusers][errors]") {
  check_missing_field("cogvideox-5b", "num_attention_heads", "CogVideoXTransformer3DModel");
}

TEST_CASE("An LTX-Video config without num_attention_heads names the field and the class", "[core][diffusers][errors]") {
  check_missing_field("ltx-video-2b", "num_attention_heads", "LTXVideoTransformer3DModel");
}

TEST_CASE("A Wan config with a non-square patch is refused with the field", "[core][diffusers][errors]") {
  nlohmann::json config = fixture_json("wan2.1-t2v-14b");
  config["patch_size"] = {1, 2, 4};
  auto m = from_json(config);
  REQUIRE_FALSE(m.ok());
  CHECK_THAT(m.error().message, Catch::Contains("patch_size = [1, 2, 4]") && Catch::Contains("h = w"));
}
