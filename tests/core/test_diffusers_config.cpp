// Profiles imported from diffusers configs (core/diffusers_config.cpp, core/diffusers_image.cpp):
// the image transformers' published config.json files (tests/data/diffusers/<profile>/) give the
// built-in profiles' transformers, sequence lengths and parameter counts; a pipeline folder's text
// encoder configs give the encoders' counts; errors name the field and the class; every built-in
// profile survives model_profile_toml and back.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/diffusers_config.h"
#include "core/sequence.h"
#include "tests/support/fixtures.h"

using cpplan::test::catalog;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path data_dir() { return fs::path(CPPLAN_TEST_PROFILES).parent_path() / "tests" / "data" / "diffusers"; }

json fixture_json(const std::string& profile) {
  std::ifstream in(data_dir() / profile / "config.json");
  REQUIRE(in);
  return json::parse(in);
}

cpplan::ModelProfile from_text(const json& config, const std::string& name = "derived") {
  auto m = cpplan::diffusers::profile_from_config_text(config.dump(), catalog(), {name, "test config"});
  INFO((m ? "" : m.error().message));
  REQUIRE(m.ok());
  return std::move(m).value();
}

std::string error_of(const json& config) {
  auto m = cpplan::diffusers::profile_from_config_text(config.dump(), catalog(), {"derived", "test config"});
  REQUIRE_FALSE(m.ok());
  return m.error().message;
}

// The transformer fields and sequence lengths of `derived` equal those of built-in `name`.
void check_same_transformer(const cpplan::ModelProfile& derived, const std::string& name) {
  const cpplan::ModelProfile& b = *catalog().find_model(name);
  INFO(name);
  CHECK(derived.heads == b.heads);
  CHECK(derived.head_dim == b.head_dim);
  CHECK(derived.ffn_hidden == b.ffn_hidden);
  CHECK(derived.ffn_kind == b.ffn_kind);
  CHECK(derived.qk_norm == b.qk_norm);
  CHECK(derived.modulation == b.modulation);
  CHECK(derived.patch_spatial == b.patch_spatial);
  CHECK(derived.patch_temporal == b.patch_temporal);
  CHECK(derived.in_channels == b.in_channels);
  CHECK(derived.guidance == b.guidance);
  CHECK(derived.text_handling == b.text_handling);
  REQUIRE(derived.blocks.size() == b.blocks.size());
  for (std::size_t i = 0; i < b.blocks.size(); ++i) {
    CHECK(derived.blocks[i].kind == b.blocks[i].kind);
    CHECK(derived.blocks[i].count == b.blocks[i].count);
    CHECK(derived.blocks[i].image_self_attention == b.blocks[i].image_self_attention);
  }
  CHECK(derived.params == Approx(b.params).epsilon(0.005));
  const cpplan::Resolution size{b.default_width, b.default_height};
  const auto want = cpplan::compute_sequence(b, size, b.default_frames, b.text_tokens);
  const auto got = cpplan::compute_sequence(derived, size, b.default_frames, derived.text_tokens);
  REQUIRE(want.ok());
  REQUIRE(got.ok());
  CHECK(got->image_tokens == want->image_tokens);
  CHECK(got->text_tokens == want->text_tokens);
}

}  // namespace

TEST_CASE("the image transformers' published configs give the built-in profiles", "[diffusers]") {
  for (const std::string name :
       {"flux.1-dev", "flux.1-schnell", "flux.2-dev", "sd3.5-large", "sd3.5-medium", "qwen-image", "pixart-sigma"}) {
    auto m = cpplan::diffusers::import_profile((data_dir() / name / "config.json").string(), catalog());
    INFO((m ? "" : m.error().message));
    REQUIRE(m.ok());
    check_same_transformer(*m, name);
    CHECK(m->name == name + "-config");  // the folder's name, taken: a derived profile never replaces one
  }
}

TEST_CASE("parameter counts follow the classes layer by layer", "[diffusers]") {
  // FLUX.1-dev, D = 3072, MLP 4D = 12288, head_dim 128:
  //   double block: norm1 + norm1_context 2 x (6D^2 + 6D), attention 8 x (D^2 + D) + 4 x 128 norms,
  //                 ff + ff_context 2 x (8D^2 + 5D)                   = 36D^2 + 30D + 512 = 339,831,296
  //   single block: norm 3D^2 + 3D, proj_mlp 4D^2 + 4D, q/k/v 3(D^2 + D), 2 x 128, proj_out 5D^2 + D
  //                                                                   = 15D^2 + 11D + 256 = 141,591,808
  //   x_embedder 64D + D = 199,680; context_embedder 4096D + D = 12,585,984; timestep and guidance
  //   embedders 2 x (256D + D + D^2 + D) = 20,459,520; text embedder 768D + D + D^2 + D = 11,802,624;
  //   norm_out 2D^2 + 2D = 18,880,512; proj_out 64D + 64 = 196,672
  //   19 x 339,831,296 + 38 x 141,591,808 + 64,124,992 = 11,901,408,320 (models.md: 11,901,408,320)
  CHECK(from_text(fixture_json("flux.1-dev")).params == 11901408320.0);
  // schnell has no guidance embedder: 11,901,408,320 - 10,229,760 (models.md: 11,891,178,560)
  CHECK(from_text(fixture_json("flux.1-schnell")).params == 11891178560.0);
  // Qwen-Image: 60 FLUX-like double blocks 60 x 339,831,296 = 20,389,877,760; timestep 10,229,760;
  // txt_norm 3584; img_in 199,680; txt_in 3584D + D = 11,013,120; norm_out 18,880,512; proj_out
  // 196,672: 20,430,401,088 (models.md: 20,430,401,088)
  CHECK(from_text(fixture_json("qwen-image")).params == 20430401088.0);
  // PixArt-Sigma, D = 1152: block 8(D^2 + D) attention + 8D^2 + 5D FFN + 6D table = 16D^2 + 19D =
  // 21,255,552 (x 28 = 595,155,456); patch conv 4 x 4 x D + D = 19,584; adaLN-single 256D + D + D^2
  // + D + 6D^2 + 6D = 9,593,856; caption 4096D + D + D^2 + D = 6,048,000; table 2D = 2,304;
  // proj_out 32D + 32 = 36,896: 610,856,096 (models.md: 610,856,096)
  CHECK(from_text(fixture_json("pixart-sigma")).params == 610856096.0);
}

TEST_CASE("a derivative config plans without a hand-written profile", "[diffusers]") {
  json config = fixture_json("flux.1-dev");
  config["joint_attention_dim"] = 2048;  // another text encoder width
  config["guidance_embeds"] = false;     // no guidance embedder
  const cpplan::ModelProfile m = from_text(config);
  // schnell's count with a 2048-wide context embedder: 11,891,178,560 - (4096 - 2048) x 3072
  CHECK(m.params == 11891178560.0 - 2048.0 * 3072);
  CHECK(m.guidance == cpplan::Guidance::kNone);
  CHECK(m.name == "derived");
  CHECK(m.hf_repo.empty());  // the config's _name_or_path is a local path: the snippets ask for it
}

TEST_CASE("a pipeline folder's text encoder configs give the encoders", "[diffusers]") {
  const fs::path folder = fs::temp_directory_path() / "cpplan-test-diffusers" / "my-flux";
  fs::remove_all(folder.parent_path());
  fs::create_directories(folder / "transformer");
  fs::create_directories(folder / "text_encoder");
  fs::create_directories(folder / "text_encoder_2");
  fs::create_directories(folder / "vae");
  auto write = [](const fs::path& p, const json& j) { std::ofstream(p) << j.dump(2); };
  write(folder / "model_index.json", {{"_class_name", "FluxPipeline"}, {"transformer", {"diffusers", "FluxTransformer2DModel"}}});
  write(folder / "transformer" / "config.json", fixture_json("flux.1-dev"));
  // openai/clip-vit-large-patch14's text config and google/t5-v1_1-xxl's, as FLUX.1 ships them.
  write(folder / "text_encoder" / "config.json",
        {{"architectures", {"CLIPTextModel"}}, {"hidden_size", 768}, {"intermediate_size", 3072},
         {"num_hidden_layers", 12}, {"num_attention_heads", 12}, {"max_position_embeddings", 77}, {"vocab_size", 49408}});
  write(folder / "text_encoder_2" / "config.json",
        {{"architectures", {"T5EncoderModel"}}, {"d_model", 4096}, {"d_kv", 64}, {"d_ff", 10240}, {"num_heads", 64},
         {"num_layers", 24}, {"vocab_size", 32128}, {"feed_forward_proj", "gated-gelu"},
         {"relative_attention_num_buckets", 32}});
  write(folder / "vae" / "config.json", {{"_class_name", "AutoencoderKL"}, {"block_out_channels", {128, 256, 512, 512}}});
  auto m = cpplan::diffusers::import_profile(folder.string(), catalog());
  INFO((m ? "" : m.error().message));
  REQUIRE(m.ok());
  CHECK(m->name == "my-flux");
  CHECK(m->hf_repo == folder.string());
  REQUIRE(m->text_encoders.size() == 2);
  // models.md: CLIP-L 123,060,480 and the T5-XXL encoder 4,762,310,656 parameters.
  CHECK(m->text_encoders[0].params == 123060480.0);
  CHECK(m->text_encoders[0].tokens == 77);
  CHECK(m->text_encoders[1].params == 4762310656.0);
  CHECK(m->text_encoders[1].layers == 24);
  CHECK(m->vae.spatial == 8);
  check_same_transformer(*m, "flux.1-dev");
  fs::remove_all(folder.parent_path());
}

TEST_CASE("an unknown class or a missing field is one line naming it", "[diffusers]") {
  json unknown = fixture_json("flux.1-dev");
  unknown["_class_name"] = "UNet2DConditionModel";
  const std::string e = error_of(unknown);
  CHECK(e.find("_class_name = UNet2DConditionModel: not a diffusers transformer class cpplan knows; ") !=
        std::string::npos);
  CHECK(e.find("classes known (cpplan list classes)") != std::string::npos);
  json typo = fixture_json("flux.1-dev");
  typo["_class_name"] = "FluxTransformer2DModl";
  const std::string near = error_of(typo);
  CHECK(near.find("did you mean ") != std::string::npos);
  CHECK(near.find("FluxTransformer2DModel") != std::string::npos);
  CHECK(e.find('\n') == std::string::npos);
  for (const std::string name : {"flux.1-dev", "flux.2-dev", "sd3.5-large", "qwen-image", "pixart-sigma"}) {
    json config = fixture_json(name);
    config.erase("num_attention_heads");
    const std::string missing = error_of(config);
    CHECK(missing.find("num_attention_heads: missing") != std::string::npos);
    CHECK(missing.find(config["_class_name"].get<std::string>()) != std::string::npos);
  }
  json wrong = fixture_json("flux.1-dev");
  wrong["num_layers"] = "nineteen";
  CHECK(error_of(wrong).find("num_layers = \"nineteen\": must be an integer") != std::string::npos);
  auto not_json = cpplan::diffusers::profile_from_config_text("[1, 2", catalog(), {"x", "test config"});
  REQUIRE_FALSE(not_json.ok());
  CHECK(not_json.error().message == "test config: must be a JSON object (a diffusers transformer config)");
  auto absent = cpplan::diffusers::import_profile("/nonexistent/config.json", catalog());
  REQUIRE_FALSE(absent.ok());
  CHECK(absent.error().message == "/nonexistent/config.json: no such file or folder");
  auto taken = cpplan::diffusers::profile_from_config_text(fixture_json("flux.1-dev").dump(), catalog(),
                                                           {"flux.1-dev", "test config"});
  REQUIRE_FALSE(taken.ok());
  CHECK(taken.error().message == "--name = flux.1-dev: a profile of that name is loaded; choose another");
}

TEST_CASE("every built-in profile survives model_profile_toml and back", "[diffusers][profiles]") {
  for (const cpplan::ModelProfile& b : catalog().models()) {
    INFO(b.name);
    auto back = cpplan::parse_model_profile(cpplan::model_profile_toml(b), b.name + ".toml");
    INFO((back ? "" : back.error().message));
    REQUIRE(back.ok());
    CHECK(back->description == b.description);
    CHECK(back->params == b.params);
    CHECK(back->bytes_per_param == b.bytes_per_param);
    CHECK(back->text_tokens == b.text_tokens);
    CHECK(back->max_text_tokens == b.max_text_tokens);
    REQUIRE(back->text_encoders.size() == b.text_encoders.size());
    for (std::size_t i = 0; i < b.text_encoders.size(); ++i) {
      CHECK(back->text_encoders[i].name == b.text_encoders[i].name);
      CHECK(back->text_encoders[i].params == b.text_encoders[i].params);
      CHECK(back->text_encoders[i].tokens == b.text_encoders[i].tokens);
      CHECK(back->text_encoders[i].layers == b.text_encoders[i].layers);
    }
    CHECK(back->vae.weights.params == b.vae.weights.params);
    CHECK(back->vae.spatial == b.vae.spatial);
    CHECK(back->vae.temporal == b.vae.temporal);
    CHECK(back->vae.decode_gflop_per_pixel == b.vae.decode_gflop_per_pixel);
    CHECK(back->vae.decode_traffic_bytes_per_pixel == b.vae.decode_traffic_bytes_per_pixel);
    CHECK(back->cp_split == b.cp_split);
    CHECK(back->attention_mask == b.attention_mask);
    CHECK(back->video == b.video);
    CHECK(back->default_width == b.default_width);
    CHECK(back->default_frames == b.default_frames);
    CHECK(back->default_steps == b.default_steps);
    CHECK(back->hf_repo == b.hf_repo);
    CHECK(back->pipeline_class == b.pipeline_class);
    CHECK(back->base == b.base);
    check_same_transformer(*back, b.name);
  }
}
