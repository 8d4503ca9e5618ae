// `cpplan check --explain` shows how the once-per-image terms were derived: each text encoder's
// shape and terms, and the VAE decode's class, structure (read from its vae/config.json), FLOPs
// per pixel, the pixels and frames decoded and its terms (docs/cost-model.md, "Per image").
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/cli/run_cli.h"

using cpplan::test::run_cli;
namespace fs = std::filesystem;

namespace {

std::string explained(std::vector<std::string> model_args) {
  std::vector<std::string> args{"check", "--gpus", "1", "--hardware", "h100-sxm", "--explain"};
  args.insert(args.end(), model_args.begin(), model_args.end());
  const auto r = run_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return r.out;
}

std::string pipeline_folder(const std::string& name) {
  return (fs::path(CPPLAN_TEST_PROFILES).parent_path() / "tests" / "data" / "diffusers" / "pipelines" / name).string();
}

}  // namespace

TEST_CASE("check --explain derives FLUX.1's VAE decode and its encoders' time", "[cli][explain][vae]") {
  const std::string out = explained({"--model", "flux.1-dev", "--res", "1024x1024"});
  CHECK_THAT(out, Catch::Contains("VAE decode: flux-vae AutoencoderKL from vaes/flux.1.json (2D; up stages 512,512,256,128"));
  // 9,462,784 FLOP per pixel (tests/core/test_vae_cost.cpp) over 1024 x 1024 pixels, one frame.
  CHECK_THAT(out, Catch::Contains("9.46 MFLOP and"));
  CHECK_THAT(out, Catch::Contains("x 1048576 pixels x 1 frame x 1 image (1 tile, 1 chunk) on 1 GPU: conv"));
  CHECK_THAT(out, Catch::Contains("text encoder clip-l:"));
  CHECK_THAT(out, Catch::Contains("text encoder t5-xxl: 24 layers x 4096 hidden, 512 tokens"));
}

TEST_CASE("check --explain derives CogVideoX's causal 3D VAE decode", "[cli][explain][vae]") {
  const std::string out = explained({"--model", "cogvideox-5b"});
  CHECK_THAT(out, Catch::Contains("AutoencoderKLCogVideoX from vaes/cogvideox.json (3D causal 3x3x3"));
  CHECK_THAT(out, Catch::Contains("18.54 MFLOP and"));
  CHECK_THAT(out, Catch::Contains("x 49 frames x"));
  CHECK_THAT(out, Catch::Contains("13 chunks"));  // one per latent frame: 1 + 48 / 4
  CHECK_THAT(out, Catch::Contains("text encoder "));
}

TEST_CASE("check --explain derives Wan2.1's VAE decode and its UMT5 encoding", "[cli][explain][vae]") {
  const std::string out = explained({"--model", "wan2.1-t2v-14b"});
  CHECK_THAT(out, Catch::Contains("AutoencoderKLWan from vaes/wan2.1.json (3D causal 3x3x3, one latent frame at a time"));
  CHECK_THAT(out, Catch::Contains("8.44 MFLOP and"));
  CHECK_THAT(out, Catch::Contains("text encoder "));
  CHECK_THAT(out, Catch::Contains("2 prompts"));  // true CFG: the negative prompt too
}

TEST_CASE("check --explain derives HunyuanVideo's VAE decode", "[cli][explain][vae]") {
  const std::string out = explained({"--model", "hunyuanvideo"});
  CHECK_THAT(out, Catch::Contains("AutoencoderKLHunyuanVideo from vaes/hunyuanvideo.json (3D causal 3x3x3"));
  CHECK_THAT(out, Catch::Contains("16.83 MFLOP and"));
  CHECK_THAT(out, Catch::Contains("text encoder "));
}

TEST_CASE("check --explain derives a SANA pipeline folder's DC-AE decode and Gemma encoding", "[cli][explain][vae]") {
  const std::string out = explained({"--model-config", pipeline_folder("sana-1600m-1024px")});
  CHECK_THAT(out, Catch::Contains("AutoencoderDC from its vae/config.json (2D; up stages from the latent: 1024 EfficientViTx3"));
  CHECK_THAT(out, Catch::Contains("7.98 MFLOP and"));
  CHECK_THAT(out, Catch::Contains("text encoder Gemma2Model: 26 layers x 2304 hidden, 300 tokens x 2 prompts"));
}

TEST_CASE("check --explain says a tiny profile's VAE costs are its own numbers", "[cli][explain][vae]") {
  const std::string out = explained({"--model", "flux-tiny", "--res", "256x256"});
  CHECK_THAT(out, Catch::Contains("VAE decode: tiny-vae: per-pixel costs given in the profile"));
}
