// Pipeline folders (core/pipeline_components.cpp): model_index.json names the components; the text
// encoders are counted from their transformers configs, the VAE's compression (and, for
// AutoencoderKL, its parameters) read from its config; a second transformer of the same shape
// makes two; whatever the folder does not say is the template's and the profile says so. The
// fixtures are the published checkpoints' configs (tests/data/diffusers/README.md); the expected
// counts are the published sizes or the hand derivations written here.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/diffusers_config.h"
#include "core/pipeline_components.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"

using cpplan::test::catalog;
using nlohmann::json;
namespace fs = std::filesystem;
namespace diffusers = cpplan::diffusers;

namespace {

fs::path pipelines() {
  return fs::path(CPPLAN_TEST_PROFILES).parent_path() / "tests" / "data" / "diffusers" / "pipelines";
}

json read(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE(in);
  return json::parse(in);
}

void write(const fs::path& p, const json& j) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << j.dump(2);
}

cpplan::ModelProfile import(const fs::path& path) {
  auto m = diffusers::import_profile(path.string(), catalog());
  INFO((m ? "" : m.error().message));
  REQUIRE(m.ok());
  return std::move(m).value();
}

double encoder_params(const json& config) {
  auto e = diffusers::text_encoder_from_config(config);
  REQUIRE(e);
  return e->params;
}

bool mentions(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

// Copies a fixture folder to a scratch folder the test may change.
fs::path scratch_copy(const cpplan::test::TempDir& temp, const std::string& name) {
  const fs::path to = temp.path() / name;
  fs::copy(pipelines() / name, to, fs::copy_options::recursive);
  return to;
}

}  // namespace

TEST_CASE("Wan2.2 A14B: the UMT5-XXL encoder, the Wan VAE and two transformers of one shape", "[diffusers][pipeline]") {
  const cpplan::ModelProfile m = import(pipelines() / "wan2.2-t2v-a14b");
  CHECK(m.transformers == 2);
  // Each expert is Wan2.1 T2V 14B's shape: 14,288,491,584 parameters (models.md).
  CHECK(m.params == 14288491584.0);
  REQUIRE(m.text_encoders.size() == 1);
  // UMT5-XXL encoder, d = 4096, 64 heads x 64, d_ff 10240 gated, 24 layers, vocab 256,384:
  //   embedding 256,384 x 4096 = 1,050,148,864; per layer 4 x 4096^2 + 3 x 4096 x 10240 + 2 x 4096
  //   = 192,946,176 (x 24 = 4,630,708,224); relative bias 32 x 64 per layer (UMT5) = 49,152; final
  //   norm 4096: 5,680,910,336 (published: 5.7B)
  CHECK(m.text_encoders[0].params == 5680910336.0);
  CHECK(m.text_encoders[0].params == Approx(5.7e9).epsilon(0.02));
  CHECK(m.text_encoders[0].layers == 24);
  CHECK(m.text_encoders[0].hidden == 4096);
  CHECK(m.vae.spatial == 8);   // dim_mult has 4 stages: 2^3
  CHECK(m.vae.temporal == 4);  // temperal_downsample [false, true, true]: 2^2
  // The Wan2.1 VAE, base 96, dim_mult [1, 2, 4, 4], 2 residual blocks per stage, z 16; a residual
  //   block (i -> o) is i + 27io + o + o + 27o^2 + o (+ io + o when i != o); the mid block (c) two
  //   of them + c + 3c^2 + 3c + c^2 + c.
  //   encoder: conv_in 3 x 96 x 27 + 96; stages 96 -> 96, 96 -> 192, 192 -> 384, 384 -> 384 with
  //   a 3x3 stride-2 conv after the first three (+ a (3,1,1) time conv after the 2nd and 3rd); mid
  //   block 384; norm 384; conv 384 -> 32 (27): 53,595,872
  //   decoder: conv 16 -> 384 (27), mid block 384, stages of 3 blocks 384 -> 384, 192 -> 384,
  //   192 -> 192, 96 -> 96, the first three followed by a 3x3 conv to half the width (+ a (3,1,1)
  //   time conv c -> 2c after the first two); norm 96; conv 96 -> 3 (27): 73,295,331
  //   quant convs 32^2 + 32 + 16^2 + 16 = 1,328: 126,892,531 (published: Wan2.1_VAE, ~127M)
  CHECK(m.vae.weights.params == 126892531.0);
  CHECK(m.vae.weights.params == Approx(127e6).epsilon(0.02));
  CHECK(mentions(m.assumptions, "VAE (AutoencoderKLWan): spatial 8, temporal 4, 126.9M parameters counted; "
                                "decode cost derived from its structure (8.44 MFLOP per pixel per frame)"));
  CHECK_FALSE(mentions(m.assumptions, "text encoders: the template's"));
}

TEST_CASE("Qwen-Image: the Qwen2.5-VL-7B encoder with its vision tower", "[diffusers][pipeline]") {
  const cpplan::ModelProfile m = import(pipelines() / "qwen-image");
  CHECK(m.transformers == 1);
  REQUIRE(m.text_encoders.size() == 1);
  // Language model, d = 3584, 28 layers, 28 heads x 128, 4 KV heads, MLP 18944 gated, vocab 152,064:
  //   per layer q 3584^2 + 3584, k and v 2 x (3584 x 512 + 512), o 3584^2, MLP 3 x 3584 x 18944,
  //   two norms: 233,057,792 (x 28 = 6,525,618,176); embedding and the untied lm_head 2 x 544,997,376;
  //   final norm 3584: 7,615,616,512.
  // Vision tower, width 1280, 32 blocks: patch Conv3d 3 x 2 x 14 x 14 x 1280 = 1,505,280; block two
  //   RMSNorms 2560, qkv 1280 x 3840 + 3840, proj 1280^2 + 1280, gated MLP 2 x (1280 x 3420 + 3420) +
  //   3420 x 1280 + 1280 = 19,702,200 (x 32 = 630,470,400); merger RMSNorm 1280, 5120^2 + 5120,
  //   5120 x 3584 + 3584 = 44,574,464: 676,550,144.
  // Total 8,292,166,656 (published: 8.29B).
  CHECK(m.text_encoders[0].params == 8292166656.0);
  CHECK(m.text_encoders[0].params == Approx(8.29e9).epsilon(0.02));
  CHECK(m.text_encoders[0].layers == 28);
  CHECK(m.text_encoders[0].hidden == 3584);
  CHECK(m.vae.spatial == 8);
  CHECK(m.vae.temporal == 1);  // an image pipeline: one frame
  CHECK(m.vae.weights.params == 126892531.0);  // the Wan2.1 VAE's structure (the Wan2.2 A14B test's derivation)
}

TEST_CASE("SANA: the Gemma-2-2B encoder and the f32 deep-compression VAE", "[diffusers][pipeline]") {
  // SanaTransformer2DModel has no class file yet: its components are read on their own.
  auto p = diffusers::read_pipeline_configs(pipelines() / "sana-1600m-1024px");
  REQUIRE(p.ok());
  REQUIRE(p->text_encoders.size() == 1);
  CHECK(p->text_encoders[0].class_name == "Gemma2Model");
  // Gemma-2-2B as Gemma2Model (tied embedding, no lm_head), d = 2304, 26 layers, 8 heads x 256, 4 KV
  //   heads, MLP 9216 gated: per layer q 2304 x 2048, k and v 2 x 2304 x 1024, o 2048 x 2304, MLP
  //   3 x 2304 x 9216, four norms: 77,865,984 (x 26 = 2,024,515,584); embedding 256,000 x 2304 =
  //   589,824,000; final norm 2304: 2,614,341,888 (published: 2.61B)
  CHECK(encoder_params(p->text_encoders[0].config) == 2614341888.0);
  CHECK(encoder_params(p->text_encoders[0].config) == Approx(2.61e9).epsilon(0.02));
  REQUIRE(p->vae);
  auto vae = diffusers::vae_from_config(p->vae->config);
  REQUIRE(vae);
  CHECK(vae->spatial == 32);  // six encoder stages: 2^5
  CHECK(vae->temporal == 1);
  CHECK(vae->params == 0);  // not counted: the template's stays
  CHECK_FALSE(p->transformer_2);
}

TEST_CASE("HunyuanDiT: the BERT CLIP and mT5 encoders and the SDXL AutoencoderKL", "[diffusers][pipeline]") {
  auto p = diffusers::read_pipeline_configs(pipelines() / "hunyuandit-v1.2");
  REQUIRE(p.ok());
  REQUIRE(p->text_encoders.size() == 2);  // tokenizers, the null safety checker and feature extractor ignored
  // BertModel, d = 1024, 24 layers, intermediate 4096: embeddings (47,020 + 512 + 2) x 1024 + LayerNorm
  //   2048 = 48,676,864; per layer 4 x (1024^2 + 1024) + 2048 + (1024 x 4096 + 4096) + (4096 x 1024 +
  //   1024) + 2048 = 12,596,224 (x 24 = 302,309,376); pooler 1024^2 + 1024: 352,035,840
  CHECK(encoder_params(p->text_encoders[0].config) == 352035840.0);
  // mT5-XL encoder, d = 2048, 32 heads x 64, d_ff 5120 gated, 24 layers, vocab 250,112: embedding
  //   512,229,376; per layer 4 x 2048^2 + 3 x 2048 x 5120 + 2 x 2048 = 48,238,592 (x 24 =
  //   1,157,726,208); relative bias 32 x 32 in the first layer; final norm 2048: 1,669,958,656
  CHECK(encoder_params(p->text_encoders[1].config) == 1669958656.0);
  REQUIRE(p->vae);
  auto vae = diffusers::vae_from_config(p->vae->config);
  REQUIRE(vae);
  CHECK(vae->spatial == 8);
  // The SD / SDXL AutoencoderKL: 83,653,863 parameters (published, diffusers' sd-vae-ft-mse).
  CHECK(vae->params == 83653863.0);
}

TEST_CASE("the other counted architectures match their published sizes", "[diffusers][pipeline]") {
  // meta-llama/Llama-3.1-8B: 8.03B (untied lm_head).
  const json llama = {{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 4096}, {"intermediate_size", 14336},
                      {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"num_key_value_heads", 8},
                      {"vocab_size", 128256}, {"tie_word_embeddings", false}};
  CHECK(encoder_params(llama) == Approx(8.03e9).epsilon(0.02));
  // As LlamaModel (no lm_head): 8,030,261,248 - 128,256 x 4096.
  json llama_model = llama;
  llama_model["architectures"] = {"LlamaModel"};
  CHECK(encoder_params(llama_model) == Approx(encoder_params(llama) - 128256.0 * 4096).epsilon(1e-12));
  // Qwen/Qwen3-4B: 4.02B (tied, q/k norms, head_dim 128).
  CHECK(encoder_params({{"architectures", {"Qwen3ForCausalLM"}}, {"hidden_size", 2560}, {"intermediate_size", 9728},
                        {"num_hidden_layers", 36}, {"num_attention_heads", 32}, {"num_key_value_heads", 8},
                        {"head_dim", 128}, {"vocab_size", 151936}, {"tie_word_embeddings", true}}) ==
        Approx(4.02e9).epsilon(0.02));
  // google/gemma-2b as GemmaModel: 2.51B.
  CHECK(encoder_params({{"architectures", {"GemmaModel"}}, {"hidden_size", 2048}, {"intermediate_size", 16384},
                        {"num_hidden_layers", 18}, {"num_attention_heads", 8}, {"num_key_value_heads", 1},
                        {"head_dim", 256}, {"vocab_size", 256000}}) == Approx(2.51e9).epsilon(0.02));
  // THUDM/glm-4-9b-hf as GlmForCausalLM: 9.40B; THUDM/chatglm3-6b (Kolors) as ChatGLMModel: 6.24B.
  CHECK(encoder_params({{"architectures", {"GlmForCausalLM"}}, {"hidden_size", 4096}, {"intermediate_size", 13696},
                        {"num_hidden_layers", 40}, {"num_attention_heads", 32}, {"num_key_value_heads", 2},
                        {"head_dim", 128}, {"vocab_size", 151552}, {"attention_bias", true}}) ==
        Approx(9.40e9).epsilon(0.02));
  CHECK(encoder_params({{"architectures", {"ChatGLMModel"}}, {"hidden_size", 4096}, {"ffn_hidden_size", 13696},
                        {"kv_channels", 128}, {"num_attention_heads", 32}, {"multi_query_attention", true},
                        {"multi_query_group_num", 2}, {"add_qkv_bias", true}, {"num_layers", 28},
                        {"padded_vocab_size", 65024}}) == Approx(6.24e9).epsilon(0.02));
  // mistralai/Mistral-Small-3.1-24B (FLUX.2's encoder, the flux.2-dev profile's 24,011,361,280): the
  // Mistral language model, the Pixtral tower and the projector.
  const json mistral3 = {
      {"architectures", {"Mistral3ForConditionalGeneration"}}, {"spatial_merge_size", 2},
      {"multimodal_projector_bias", false},
      {"text_config", {{"hidden_size", 5120}, {"intermediate_size", 32768}, {"num_hidden_layers", 40},
                       {"num_attention_heads", 32}, {"num_key_value_heads", 8}, {"head_dim", 128}, {"vocab_size", 131072}}},
      {"vision_config", {{"hidden_size", 1024}, {"intermediate_size", 4096}, {"num_hidden_layers", 24},
                         {"num_attention_heads", 16}, {"patch_size", 14}, {"num_channels", 3}}}};
  CHECK(encoder_params(mistral3) == Approx(24.0e9).epsilon(0.02));
  // Qwen/Qwen2-VL-7B-Instruct: 8.29B (language model and its LayerNorm/QuickGELU vision tower).
  CHECK(encoder_params({{"architectures", {"Qwen2VLForConditionalGeneration"}}, {"hidden_size", 3584},
                        {"intermediate_size", 18944}, {"num_hidden_layers", 28}, {"num_attention_heads", 28},
                        {"num_key_value_heads", 4}, {"vocab_size", 152064}, {"tie_word_embeddings", false},
                        {"vision_config", {{"depth", 32}, {"embed_dim", 1280}, {"mlp_ratio", 4}, {"num_heads", 16},
                                           {"hidden_size", 3584}, {"patch_size", 14}, {"spatial_merge_size", 2},
                                           {"temporal_patch_size", 2}, {"in_chans", 3}}}}) ==
        Approx(8.29e9).epsilon(0.02));
  // google/gemma-3-4b-it: 4.30B; its text_config leaves the Gemma3TextConfig defaults out.
  CHECK(encoder_params({{"architectures", {"Gemma3ForConditionalGeneration"}},
                        {"text_config", {{"model_type", "gemma3_text"}, {"hidden_size", 2560},
                                         {"intermediate_size", 10240}, {"num_hidden_layers", 34}}},
                        {"vision_config", {{"hidden_size", 1152}, {"image_size", 896}, {"intermediate_size", 4304},
                                           {"num_attention_heads", 16}, {"num_hidden_layers", 27}, {"patch_size", 14}}}}) ==
        Approx(4.30e9).epsilon(0.02));
  // SDXL's text_encoder_2 (OpenCLIP bigG text tower with projection): 694,659,840 (published).
  CHECK(encoder_params({{"architectures", {"CLIPTextModelWithProjection"}}, {"hidden_size", 1280},
                        {"intermediate_size", 5120}, {"num_hidden_layers", 32}, {"num_attention_heads", 20},
                        {"max_position_embeddings", 77}, {"vocab_size", 49408}, {"projection_dim", 1280}}) ==
        694659840.0);
  CHECK_FALSE(diffusers::text_encoder_from_config({{"architectures", {"LlavaForConditionalGeneration"}}}));
}

TEST_CASE("the video VAEs' compression from their configs", "[diffusers][pipeline]") {
  auto shape = [](const json& j) {
    auto v = diffusers::vae_from_config(j);
    REQUIRE(v);
    return std::pair{v->spatial, v->temporal};
  };
  // Wan2.2 TI2V 5B's VAE patchifies 2x more: scale_factor_spatial 16.
  CHECK(shape({{"_class_name", "AutoencoderKLWan"}, {"dim_mult", {1, 2, 4, 4}}, {"patch_size", 2},
               {"scale_factor_spatial", 16}, {"scale_factor_temporal", 4}, {"temperal_downsample", {false, true, true}}}) ==
        std::pair{16, 4});
  CHECK(shape({{"_class_name", "AutoencoderKLHunyuanVideo"}, {"spatial_compression_ratio", 8},
               {"temporal_compression_ratio", 4}}) == std::pair{8, 4});
  CHECK(shape({{"_class_name", "AutoencoderKLCogVideoX"}, {"block_out_channels", {128, 256, 256, 512}},
               {"temporal_compression_ratio", 4}}) == std::pair{8, 4});
  // LTX-Video: a 4x4 output patch and three 2x2x2 stages: 32 and 8 (the ltx-video-2b profile's).
  CHECK(shape({{"_class_name", "AutoencoderKLLTXVideo"}, {"patch_size", 4}, {"patch_size_t", 1},
               {"spatio_temporal_scaling", {true, true, true, false}}}) == std::pair{32, 8});
  CHECK(shape({{"_class_name", "AutoencoderKLMochi"}}) == std::pair{8, 6});  // (2,2,2) and (1,2,3)
  CHECK(shape({{"_class_name", "AutoencoderKLAllegro"}, {"block_out_channels", {128, 256, 512, 512}},
               {"temporal_compression_ratio", 4}}) == std::pair{8, 4});
  CHECK_FALSE(diffusers::vae_from_config({{"_class_name", "VQModel"}}));
}

TEST_CASE("AutoencoderKL's decode memory from its config: the widest up stage and the mid-block attention",
          "[diffusers][pipeline][vae]") {
  // FLUX.1's vae/config.json: block_out_channels [128, 256, 512, 512], sample_size 1024, the mid
  // block's attention by default. Up stages from the output: 256 -> 128 channels at full size
  // (256 per pixel), 512 -> 256 at 1/2 (512 / 4 = 128), 512 at 1/4 (32), 512 at 1/8 (8).
  const json flux{{"_class_name", "AutoencoderKL"}, {"block_out_channels", {128, 256, 512, 512}},
                  {"layers_per_block", 2}, {"latent_channels", 16}, {"sample_size", 1024}};
  auto v = diffusers::vae_from_config(flux);
  REQUIRE(v);
  CHECK(v->decode_channels_per_pixel == 256);
  CHECK(v->mid_block_attention);
  CHECK(v->sample_size == 1024);
  json plain = flux;
  plain["mid_block_add_attention"] = false;
  CHECK_FALSE(diffusers::vae_from_config(plain)->mid_block_attention);
  // SD 1.5's VAE, the same channels: the same widest stage.
  CHECK(diffusers::vae_from_config({{"_class_name", "AutoencoderKL"}, {"block_out_channels", {128, 256, 512, 512}}})
            ->decode_channels_per_pixel == 256);
}

TEST_CASE("a transformer-only folder plans and lists what it assumed", "[diffusers][pipeline]") {
  const cpplan::test::TempDir temp{"cpplan-test-pipeline-"};
  const fs::path folder = temp.path() / "my-wan";
  write(folder / "transformer" / "config.json", read(pipelines() / "wan2.2-t2v-a14b" / "transformer" / "config.json"));
  const cpplan::ModelProfile m = import(folder);
  CHECK(m.transformers == 1);
  CHECK(mentions(m.assumptions, "text encoders: the template's (umt5-xxl 5.68B): no pipeline folder"));
  CHECK(mentions(m.assumptions, "VAE: the template's wan2.1-vae"));
  // With a model_index.json whose encoder cpplan does not count and no vae config.
  write(folder / "model_index.json", {{"_class_name", "WanPipeline"},
                                      {"text_encoder", {"transformers", "XYZForFoo"}},
                                      {"tokenizer", {"transformers", "T5TokenizerFast"}},
                                      {"transformer", {"diffusers", "WanTransformer3DModel"}},
                                      {"vae", {"diffusers", "AutoencoderKLWan"}}});
  write(folder / "text_encoder" / "config.json", {{"architectures", {"XYZForFoo"}}, {"hidden_size", 64}});
  const cpplan::ModelProfile listed = import(folder);
  REQUIRE(listed.text_encoders.size() == 1);
  CHECK(listed.text_encoders[0].params == 5680910336.0);  // the template's umt5-xxl
  CHECK(mentions(listed.assumptions,
                 "text_encoder (XYZForFoo): not an architecture cpplan counts; the template's umt5-xxl 5.68B kept"));
  CHECK(mentions(listed.assumptions, "VAE: the template's wan2.1-vae (spatial 8, temporal 4, 126.9M): the folder has no vae/config.json"));
  // A counted architecture missing a field it needs: the field named, the template's kept.
  write(folder / "text_encoder" / "config.json", {{"architectures", {"UMT5EncoderModel"}}, {"d_model", 4096}, {"d_kv", 64}});
  CHECK(mentions(import(folder).assumptions,
                 "text_encoder/config.json: num_heads: missing (UMT5EncoderModel needs it); the template's umt5-xxl"));
  // A component config that is not JSON: refused in one line naming the file.
  std::ofstream(folder / "text_encoder" / "config.json") << "{";
  auto broken = diffusers::import_profile(folder.string(), catalog());
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().message == (folder / "text_encoder" / "config.json").string() + ": not valid JSON");
}

TEST_CASE("a transformer_2 of another shape is refused in one line", "[diffusers][pipeline]") {
  const cpplan::test::TempDir temp{"cpplan-test-pipeline-"};
  const fs::path folder = scratch_copy(temp, "wan2.2-t2v-a14b");
  json second = read(folder / "transformer_2" / "config.json");
  second["num_layers"] = 30;
  write(folder / "transformer_2" / "config.json", second);
  auto m = diffusers::import_profile(folder.string(), catalog());
  REQUIRE_FALSE(m.ok());
  const std::string& e = m.error().message;
  CHECK(e.find((folder / "transformer_2" / "config.json").string()) != std::string::npos);
  CHECK(e.find("transformer_2 (30 blocks") != std::string::npos);
  CHECK(e.find("differs from transformer (40 blocks") != std::string::npos);
  CHECK(e.find('\n') == std::string::npos);
  second["_class_name"] = "FluxTransformer2DModel";
  write(folder / "transformer_2" / "config.json", second);
  auto other = diffusers::import_profile(folder.string(), catalog());
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().message.find("_class_name = \"FluxTransformer2DModel\": must be transformer's class") != std::string::npos);
}
