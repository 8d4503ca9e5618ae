// The VAE's decode cost derived from its diffusers config (core/vae_cost.h): each class's decoder
// FLOPs per output pixel per frame summed by hand, stage by stage, from the structure of diffusers'
// autoencoder sources; the built-in profiles that name a config in [vae]; bad configs as one line.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/diffusers_classes.h"
#include "core/profiles.h"
#include "core/vae_cost.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"

using nlohmann::json;
namespace fs = std::filesystem;
namespace diffusers = cpplan::diffusers;

namespace {

json vae_json(const std::string& file) {
  std::ifstream in(fs::path(CPPLAN_TEST_PROFILES) / "vaes" / file);
  return json::parse(in);
}

diffusers::VaeCost cost_of(const json& j) {
  auto v = diffusers::vae_cost(j);
  REQUIRE(v);
  return *v;
}

std::string error_of(const json& j) {
  try {
    diffusers::vae_cost(j);
  } catch (const diffusers::detail::FieldError& e) {
    return e.message;
  }
  return "";
}

}  // namespace

TEST_CASE("FLUX.1's AutoencoderKL decoder FLOPs per pixel, stage by stage", "[diffusers][vae]") {
  // block_out_channels [128, 256, 512, 512], 3 resnets per up stage, 16 latent channels, no quant
  // convs. A conv costs 2 x taps x Cin x Cout per position of its output.
  //   latent (1/64 of the pixels): conv_in 9 x 16 x 512, mid block 4 convs 9 x 512^2 + attention
  //     q/k/v/o 4 x 512^2, stage 512 6 x 9 x 512^2: 2 x (73,728 + 23,592,960 + 1,048,576) / 64 = 772,352
  //   1/16: upsample conv + stage 512: 7 x 9 x 512^2 x 2 / 16 = 2,064,384
  //   1/4: upsample conv 9 x 512^2, stage 256 from 512: 9 x 512 x 256 + 9 x 256^2 + 1x1 512 x 256
  //     + 4 x 9 x 256^2: 2 x 6,619,136 / 4 = 3,309,568
  //   full size: upsample conv 9 x 256^2, stage 128 from 256: 9 x 256 x 128 + 9 x 128^2 +
  //     256 x 128 + 4 x 9 x 128^2, conv_out 9 x 128 x 3: 2 x 1,658,240 = 3,316,480
  //   = 9,462,784 FLOP per pixel (the profile's hand number was 9.3 M, without the shortcuts,
  //   conv_in, conv_out and attention projections)
  const diffusers::VaeCost v = cost_of(vae_json("flux.1.json"));
  CHECK(v.class_name == "AutoencoderKL");
  CHECK(v.decode_gflop_per_pixel * 1e9 == Approx(9462784).epsilon(1e-12));
  CHECK(v.spatial == 8);
  CHECK(v.temporal == 1);
  CHECK(v.mid_block_attention);
  CHECK(v.sample_size == 1024);
  // The widest activation: 256 channels at full size (stage 128's first resnet input, stage 256's
  // upsample conv); three bf16 tensors of it: 1,536 bytes per pixel.
  CHECK(v.decode_channels_per_pixel == 256);
  CHECK(v.decode_bytes_per_pixel == 1536);
  // Spatial convs: 11 at the latent, 7 at 1/4 side, 7 at 1/2, 8 at full size = 33; input channels
  // x side share: (16 + 10 x 512) / 8 + 7 x 512 / 4 + (512 + 512 + 256 + 4 x 256) / 2 + (256 +
  // 256 + 128 + 4 x 128 + 128) = 642 + 896 + 1,152 + 1,280 = 3,970, / 33.
  CHECK(v.decoder_convs == 33);
  CHECK(v.halo_channels == Approx(3970.0 / 33).epsilon(1e-12));
  CHECK(v.structure == "2D; up stages 512,512,256,128 channels from the latent, 3 resnets each; mid block 512 with attention");
}

TEST_CASE("CogVideoX's causal 3D decoder FLOPs per pixel per frame, time upsampled twice", "[diffusers][vae]") {
  // block_out_channels [128, 256, 256, 512], 4 resnets per up stage, causal 3x3x3 convs (27 taps),
  // SpatialNorm3D: each norm adds two 1x1x1 convs from the 16 latent channels; a resnet C -> C is
  // 2 x 27 C^2 + 4 x 16 C. Up stages 0 and 1 double the frames (temporal_compression_ratio 4).
  //   latent (1/64 pixels, 1/4 frames: 1/256): conv_in 27 x 16 x 512 + 6 resnets 512: x 2 / 256 = 666,816
  //   upsample 0, a 2D 3x3 conv 512^2 at 1/16, 1/2 frames: 9 x 512^2 x 2 / 32 = 147,456
  //   stage 256 from 512 at 1/32: norms 2 x 16 x 512 + 2 x 16 x 256, convs 27 x 512 x 256 + 27 x 256^2,
  //     shortcut 512 x 256, 3 resnets 256: 2 x 16,130,048 / 32 = 1,008,128
  //   upsample 1 at 1/4 pixels, every frame: 9 x 256^2 x 2 / 4 = 294,912
  //   stage 256 at 1/4: 4 resnets 256: 2 x 14,221,312 / 4 = 7,110,656
  //   upsample 2 at full size: 9 x 256^2 x 2 = 1,179,648
  //   stage 128 from 256: 2 x 16 x 256 + 27 x 256 x 128 + 2 x 16 x 128 + 27 x 128^2 + 256 x 128 +
  //     3 resnets 128: 2 x 4,050,944 = 8,101,888
  //   norm_out 2 x 16 x 128 and conv_out 27 x 128 x 3: 2 x 14,464 = 28,928
  //   = 18,538,432 (the profile's hand number: 18.3 M)
  const diffusers::VaeCost v = cost_of(vae_json("cogvideox.json"));
  CHECK(v.class_name == "AutoencoderKLCogVideoX");
  CHECK(v.decode_gflop_per_pixel * 1e9 == Approx(18538432).epsilon(1e-12));
  CHECK(v.spatial == 8);
  CHECK(v.temporal == 4);
  CHECK(v.decode_bytes_per_pixel == 1536);  // 256 channels at full size
  CHECK_FALSE(v.mid_block_attention);
}

TEST_CASE("HunyuanVideo's causal 3D decoder FLOPs per pixel per frame", "[diffusers][vae]") {
  // block_out_channels [128, 256, 512, 512], 3 resnets per up stage, causal 3x3x3 convs; 2x in
  // space after up stages 0-2 (spatial 8), in time after 1-2 (temporal 4), each a causal conv; a
  // resnet C -> C is 2 x 27 C^2.
  //   latent (1/256): post_quant_conv 16^2, conv_in 27 x 16 x 512, mid 2 resnets + attention
  //     4 x 512^2, stage 512 3 resnets: x 2 / 256 = 562,882
  //   upsample 0 at 1/16 pixels, 1/4 frames: 27 x 512^2 x 2 / 64 = 221,184
  //   stage 512 at 1/64: 3 resnets 512: 2 x 42,467,328 / 64 = 1,327,104
  //   upsample 1 at 1/4, 1/2 frames: 27 x 512^2 x 2 / 8 = 1,769,472
  //   stage 256 from 512 at 1/8: 27 x 512 x 256 + 27 x 256^2 + 512 x 256 + 2 resnets 256: 3,129,344
  //   upsample 2 at full size: 27 x 256^2 x 2 = 3,538,944
  //   stage 128 from 256: 27 x 256 x 128 + 27 x 128^2 + 256 x 128 + 2 resnets 128: 6,258,688
  //   conv_out 27 x 128 x 3 x 2 = 20,736
  //   = 16,828,354 (the profile's hand number: 16.7 M)
  const diffusers::VaeCost v = cost_of(vae_json("hunyuanvideo.json"));
  CHECK(v.class_name == "AutoencoderKLHunyuanVideo");
  CHECK(v.decode_gflop_per_pixel * 1e9 == Approx(16828354).epsilon(1e-12));
  CHECK(v.spatial == 8);
  CHECK(v.temporal == 4);
}

TEST_CASE("Wan2.1's causal 3D decoder FLOPs per pixel per frame, frame by frame", "[diffusers][vae]") {
  // base_dim 96, dim_mult [1, 2, 4, 4]: up stages 384, 384, 192, 96 (each after the first reads the
  // half width its upsampler left), 3 residual blocks each (C -> C: 2 x 27 C^2); time upsampling
  // (temperal_downsample reversed: stages 0 and 1) a (3,1,1) conv C -> 2C at the low resolution,
  // then a 2D 3x3 conv C -> C / 2 at the high one.
  //   latent (1/256): post_quant 16^2, conv_in 27 x 16 x 384, mid 2 blocks + attention 4 x 384^2,
  //     stage 384 3 blocks, time conv 3 x 384 x 768: x 2 / 256 = 323,858
  //   upsample conv 9 x 384 x 192 at 1/16 pixels, 1/2 frames: x 2 / 32 = 41,472
  //   stage 384 from 192 at 1/32: 27 x 192 x 384 + 27 x 384^2 + 192 x 384 + 2 blocks 384 + time conv
  //     3 x 384 x 768: 2 x 22,855,680 / 32 = 1,428,480
  //   upsample conv 9 x 384 x 192 at 1/4, every frame: 331,776
  //   stage 192 at 1/4: 3 blocks 192: 2,985,984
  //   upsample conv 9 x 192 x 96 at full size: 331,776
  //   stage 96: 3 blocks 96: 2,985,984; conv_out 27 x 96 x 3 x 2 = 15,552
  //   = 8,444,882 (the profile's hand number: 8.4 M)
  const diffusers::VaeCost v = cost_of(vae_json("wan2.1.json"));
  CHECK(v.class_name == "AutoencoderKLWan");
  CHECK(v.decode_gflop_per_pixel * 1e9 == Approx(8444882).epsilon(1e-12));
  CHECK(v.spatial == 8);
  CHECK(v.temporal == 4);
  // The widest: the 192 -> 96 upsample conv's input at full size.
  CHECK(v.decode_channels_per_pixel == 192);
  // Qwen-Image's, the same structure on one frame: no time conv, every stage at every frame.
  const diffusers::VaeCost q = cost_of(vae_json("qwen-image.json"));
  CHECK(q.temporal == 1);
  CHECK(q.decode_gflop_per_pixel > v.decode_gflop_per_pixel);
}

TEST_CASE("SANA's DC-AE decoder FLOPs per pixel: ResBlock and EfficientViT stages", "[diffusers][vae]") {
  // decoder_block_out_channels [128, 256, 512, 512, 1024, 1024], 3 blocks per stage, ResBlock in the
  // first three, EfficientViTBlock (multiscale 5) in the last three, interpolate upsampling (a 3x3
  // conv after nearest 2x), 32x: stage i at 1/4^i of the pixels.
  //   ResBlock C: two 3x3 convs C^2: 36 C^2.
  //   EfficientViTBlock C (C / 32 heads of 32): q/k/v 6 C^2; the 5x5 depthwise conv on 3C 150 C;
  //     the grouped 1x1 (groups of 32) 192 C; linear attention, 2 branches x C / 32 heads x 4 x 32
  //     x 33 = 264 C; out 2C -> C 4 C^2; GLUMBConv 1x1 C -> 8C 16 C^2, depthwise 3x3 on 8C 144 C,
  //     1x1 4C -> C 8 C^2: 34 C^2 + 750 C.
  //   latent (1/1024): conv_in 18 x 32 x 1024 + 3 ViT 1024: 109,848,576 / 1024 = 107,274
  //   1/256: up 18 x 1024^2 + 3 ViT 1024: 128,133,120 / 256 = 500,520
  //   1/64: up 18 x 1024 x 512 + 3 ViT 512: 37,327,872 / 64 = 583,248
  //   1/16: up 18 x 512^2 + 3 ResBlock 512: 33,030,144 / 16 = 2,064,384
  //   1/4: up 18 x 512 x 256 + 3 ResBlock 256: 9,437,184 / 4 = 2,359,296
  //   full size: up 18 x 256 x 128 + 3 ResBlock 128 + conv_out 18 x 128 x 3: 2,366,208
  //   = 7,980,930 (the SANA template's hand number, the SD VAE's: 9.3 M)
  std::ifstream in(fs::path(CPPLAN_TEST_PROFILES).parent_path() / "tests/data/diffusers/pipelines/sana-1600m-1024px/vae/config.json");
  const diffusers::VaeCost v = cost_of(json::parse(in));
  CHECK(v.class_name == "AutoencoderDC");
  CHECK(v.decode_gflop_per_pixel * 1e9 == Approx(7980930).epsilon(1e-12));
  CHECK(v.spatial == 32);
  CHECK(v.temporal == 1);
  // The committed copy is the same file.
  CHECK(cost_of(vae_json("dc-ae-f32c32-sana-1.0.json")).decode_gflop_per_pixel == v.decode_gflop_per_pixel);
}

TEST_CASE("a VAE config with a bad structure field is one line naming the field and the rule", "[diffusers][vae]") {
  CHECK(error_of({{"_class_name", "AutoencoderKL"}, {"block_out_channels", {128, 0, 512}}}) ==
        "block_out_channels = [128, 0, 512]: every entry must be at least 1 (AutoencoderKL)");
  CHECK(error_of({{"_class_name", "AutoencoderKLCogVideoX"}, {"temporal_compression_ratio", 3}}) ==
        "temporal_compression_ratio = 3: must be a power of 2 (AutoencoderKLCogVideoX)");
  CHECK(error_of({{"_class_name", "AutoencoderDC"}, {"decoder_block_types", "ConvNeXtBlock"}}) ==
        "decoder_block_types = ConvNeXtBlock: must be ResBlock or EfficientViTBlock (AutoencoderDC)");
  CHECK(error_of({{"_class_name", "AutoencoderKLWan"}, {"z_dim", 0}}) == "z_dim = 0: must be at least 1 (AutoencoderKLWan)");
  CHECK_FALSE(diffusers::vae_cost({{"_class_name", "AutoencoderKLLTXVideo"}}));
}

TEST_CASE("the built-in profiles' VAE costs come from their committed configs", "[diffusers][vae][profiles]") {
  const cpplan::ModelProfile* flux = cpplan::test::catalog().find_model("flux.1-dev");
  REQUIRE(flux);
  CHECK(flux->vae.config == "vaes/flux.1.json");
  CHECK(flux->vae.class_name == "AutoencoderKL");
  CHECK(flux->vae.decode_gflop_per_pixel * 1e9 == Approx(9462784).epsilon(1e-12));
  CHECK(flux->vae.weights.params == 83819683);  // the profile's explicit number overrides the count
  CHECK(flux->vae.tile_sample_size == 1024);
  const cpplan::ModelProfile* wan = cpplan::test::catalog().find_model("wan2.1-t2v-14b");
  REQUIRE(wan);
  CHECK(wan->vae.decode_gflop_per_pixel * 1e9 == Approx(8444882).epsilon(1e-12));
  CHECK(wan->vae.temporal == 4);
  // The tiny profiles keep their explicit numbers.
  const cpplan::ModelProfile* tiny = cpplan::test::catalog().find_model("flux-tiny");
  REQUIRE(tiny);
  CHECK(tiny->vae.decode_gflop_per_pixel == 0.0001);
  CHECK(tiny->vae.class_name.empty());
}

TEST_CASE("a [vae] config that names a missing file or a bad config fails on one line", "[diffusers][vae][profiles]") {
  const std::string head = R"(name = "x"
[transformer]
heads = 4
head_dim = 8
ffn_hidden = 64
ffn = "gelu"
params = 1000
patch_spatial = 2
in_channels = 16
blocks = [ { kind = "single", count = 1 } ]
[text]
handling = "joint"
tokens = 8
[vae]
name = "v"
params = 1000
)";
  const std::string tail = "[parallel]\ncp_split = \"image_and_text\"\n[pipeline]\ndefault_steps = 1\nguidance = \"none\"\n";
  auto missing = cpplan::parse_model_profile(head + "config = \"vaes/none.json\"\n" + tail, "profiles/models/x.toml");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("vae.config = \"vaes/none.json\"") != std::string::npos);
  CHECK(missing.error().message.find('\n') == std::string::npos);
  // A config of a class cpplan does not derive (LTX-Video's is written here, in a temporary folder).
  const cpplan::test::TempDir temp{"cpplan-test-vae-config-"};
  const fs::path dir = temp.path();
  fs::create_directories(dir / "vaes");
  std::ofstream(dir / "vaes" / "ltx.json") << R"({"_class_name": "AutoencoderKLLTXVideo"})";
  auto ltx = cpplan::parse_model_profile(head + "config = \"vaes/ltx.json\"\n" + tail, (dir / "models" / "x.toml").string());
  REQUIRE_FALSE(ltx.ok());
  CHECK(ltx.error().message.find("_class_name = AutoencoderKLLTXVideo: must be a VAE class whose cost cpplan derives") !=
        std::string::npos);
  std::ofstream(dir / "vaes" / "bad.json") << R"({"_class_name": "AutoencoderKL", "block_out_channels": [0]})";
  auto bad = cpplan::parse_model_profile(head + "config = \"vaes/bad.json\"\n" + tail, (dir / "models" / "x.toml").string());
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("block_out_channels = [0]: every entry must be at least 1 (AutoencoderKL)") !=
        std::string::npos);
}
