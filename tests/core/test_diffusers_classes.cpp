// The diffusers transformer classes as data (profiles/classes/<Class>.toml): the published configs
// of six checkpoints import with their published sizes; every class of the reference list
// (profiles/reference/diffusers-transformers.md, a copy of shared/reference's) has a file that either plans from its defaults or
// refuses in one line naming the class; every planning file derives from its own defaults.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <toml++/toml.h>
#include <vector>

#include "core/class_spec.h"
#include "core/diffusers_config.h"
#include "tests/support/fixtures.h"

using cpplan::test::catalog;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path root() { return fs::path(CPPLAN_TEST_PROFILES).parent_path(); }
fs::path data_dir() { return root() / "tests" / "data" / "diffusers"; }
fs::path classes_dir() { return fs::path(CPPLAN_TEST_PROFILES) / "classes"; }
// The repository's copy of the reference list (scripts/fit-runtimes.sh checks it against the original).
fs::path reference() { return fs::path(CPPLAN_TEST_PROFILES) / "reference" / "diffusers-transformers.md"; }

// The `## Name (file.py)` headings of the reference list.
std::vector<std::string> reference_classes() {
  std::ifstream in(reference());
  REQUIRE(in);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("## ", 0) == 0) out.push_back(line.substr(3, line.find(' ', 3) - 3));
  return out;
}

cpplan::ModelProfile imported(const std::string& folder) {
  auto m = cpplan::diffusers::import_profile((data_dir() / folder / "config.json").string(), catalog());
  INFO(folder << ": " << (m ? "" : m.error().message));
  REQUIRE(m.ok());
  return std::move(m).value();
}

// The config from_pretrained builds from nothing but the class name: the class file's [defaults]
// (the constructor's, from the reference list) and its `none` fields as null.
json defaults_config(const fs::path& file, const std::string& name) {
  const toml::table t = toml::parse_file(file.string());
  json config = json::object();
  if (const toml::table* d = t["defaults"].as_table())
    for (const auto& [key, node] : *d) {
      const std::string k(key.str());
      if (node.is_integer()) config[k] = node.as_integer()->get();
      if (node.is_floating_point()) config[k] = node.as_floating_point()->get();
      if (node.is_boolean()) config[k] = node.as_boolean()->get();
      if (node.is_string()) config[k] = node.as_string()->get();
      if (const toml::array* a = node.as_array()) {
        config[k] = json::array();
        for (const auto& e : *a) config[k].push_back(e.value<int64_t>().value_or(0));
      }
    }
  if (const toml::array* none = t["none"].as_array())
    for (const auto& n : *none) config[n.value<std::string>().value_or("")] = nullptr;
  config["_class_name"] = name;
  return config;
}

int blocks_of(const cpplan::ModelProfile& m, cpplan::BlockKind kind) {
  int n = 0;
  for (const auto& b : m.blocks)
    if (b.kind == kind) n += b.count;
  return n;
}

}  // namespace

TEST_CASE("PixArt-alpha's Transformer2DModel config imports at its published 0.6B", "[diffusers]") {
  // PixArt-alpha/PixArt-XL-2-1024-MS: 28 blocks of 16 x 72 heads (PixArt-alpha paper, "PixArt-XL/2",
  // 0.6B parameters; the model card says 0.6B).
  const auto m = imported("pixart-alpha");
  REQUIRE(m.blocks.size() == 1);
  CHECK(m.blocks[0].kind == cpplan::BlockKind::kCross);
  CHECK(m.blocks[0].count == 28);
  CHECK(m.heads == 16);
  CHECK(m.head_dim == 72);
  CHECK(m.modulation == cpplan::Modulation::kTable);
  CHECK(m.params == Approx(0.6e9).epsilon(0.03));
  // The same blocks as PixArt-Sigma (models.md: 610,856,096) plus the two size embedders a 1024 px
  // alpha checkpoint turns on: 2 x TimestepEmbedding(256, 384) = 2 x (256 x 384 + 384 + 384^2 + 384).
  CHECK(m.params == 610856096.0 + 2 * (256 * 384 + 384 + 384 * 384 + 384));
}

TEST_CASE("a Transformer2DModel without patch_size is a UNet's attention block, refused", "[diffusers]") {
  const json config = {{"_class_name", "Transformer2DModel"}, {"in_channels", 320}, {"num_layers", 1},
                       {"cross_attention_dim", 768}};
  auto m = cpplan::diffusers::profile_from_config_text(config.dump(), catalog(), {"unet-block", "test"});
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().message.find("patch_size") != std::string::npos);
  CHECK(m.error().message.find("UNet") != std::string::npos);
  CHECK(m.error().message.find('\n') == std::string::npos);
}

TEST_CASE("a DiT-style Transformer2DModel (ada_norm_zero) plans as sequential blocks", "[diffusers]") {
  // facebook/DiT-XL-2-256's config: 28 blocks, 16 x 72 heads, class-conditional (no cross-attention).
  const json config = {{"_class_name", "Transformer2DModel"}, {"activation_fn", "gelu-approximate"},
                       {"attention_bias", true}, {"attention_head_dim", 72}, {"in_channels", 4},
                       {"norm_elementwise_affine", false}, {"norm_type", "ada_norm_zero"},
                       {"num_attention_heads", 16}, {"num_embeds_ada_norm", 1000}, {"num_layers", 28},
                       {"out_channels", 8}, {"patch_size", 2}, {"sample_size", 32}};
  auto m = cpplan::diffusers::profile_from_config_text(config.dump(), catalog(), {"dit", "test"});
  INFO((m ? "" : m.error().message));
  REQUIRE(m.ok());
  REQUIRE(m->blocks.size() == 1);
  CHECK(m->blocks[0].kind == cpplan::BlockKind::kSingle);
  CHECK(m->blocks[0].sequential);
  CHECK(m->blocks[0].count == 28);
  // DiT-XL/2 is 675M (DiT paper, Table 1); diffusers builds each block's AdaLayerNormZero with its
  // own timestep embedder (256 D + D + D^2 + D) and 1001 x D label table, 28 copies where the paper
  // has one: 675M + 27 x (1,624,320 + 1,153,152) = 750M.
  CHECK(m->params == Approx(675e6 + 27 * (1624320.0 + 1153152.0)).epsilon(0.03));
}

TEST_CASE("the built-in pixart-alpha is its config's import, with alpha's 120 text tokens", "[diffusers]") {
  // profiles/models/pixart-alpha.toml is written from the same config (the profile the xDiT
  // published set is fitted with): its transformer must be what the import derives.
  const auto m = imported("pixart-alpha");
  const cpplan::ModelProfile* b = catalog().find_model("pixart-alpha");
  REQUIRE(b != nullptr);
  CHECK(b->heads == m.heads);
  CHECK(b->head_dim == m.head_dim);
  REQUIRE(b->blocks.size() == m.blocks.size());
  CHECK(b->blocks[0].kind == m.blocks[0].kind);
  CHECK(b->blocks[0].count == m.blocks[0].count);
  CHECK(b->ffn_hidden == m.ffn_hidden);
  CHECK(b->modulation == m.modulation);
  CHECK(b->in_channels == m.in_channels);
  CHECK(b->params == m.params);
  CHECK(b->text_tokens == 120);  // PixArtAlphaPipeline's max_sequence_length
}

TEST_CASE("HunyuanDiT v1.2 imports with its long-skip blocks at 1.5B", "[diffusers]") {
  // Tencent-Hunyuan/HunyuanDiT-v1.2-Diffusers: 40 blocks of 16 x 88 heads; blocks after 40 // 2 = 20
  // (19 of them) take the long skip; 1.5B parameters (the HunyuanDiT model card: "DiT-g/2, 1.5B").
  const auto m = imported("hunyuandit-v1.2");
  REQUIRE(m.blocks.size() == 2);
  CHECK(m.blocks[0].count == 21);
  CHECK_FALSE(m.blocks[0].skip);
  CHECK(m.blocks[1].count == 19);
  CHECK(m.blocks[1].skip);
  CHECK(blocks_of(m, cpplan::BlockKind::kCross) == 40);
  CHECK(m.heads == 16);
  CHECK(m.head_dim == 88);
  CHECK(m.params == Approx(1.5e9).epsilon(0.03));
}

TEST_CASE("Latte-1 imports as spatial and temporal block groups", "[diffusers]") {
  // maxin-cn/Latte-1: 28 spatial + 28 temporal blocks of 16 x 72 heads. No parameter count is
  // published for Latte-1 that we know; it starts from PixArt-alpha (0.6B published) without the
  // size embedders and adds 28 temporal blocks of attention 4 D^2 and FFN 8 D^2 (D = 1152):
  // 0.6B + 28 x 12 x 1152^2 = 0.6B + 0.446B = 1.046B.
  const auto m = imported("latte-1");
  REQUIRE(m.blocks.size() == 2);
  CHECK(m.blocks[0].kind == cpplan::BlockKind::kCross);
  CHECK(m.blocks[0].count == 28);
  CHECK_FALSE(m.blocks[0].temporal);
  CHECK(m.blocks[1].count == 28);
  CHECK(m.blocks[1].temporal);
  CHECK(m.heads == 16);
  CHECK(m.head_dim == 72);
  CHECK(m.params == Approx(0.6e9 + 28 * 12 * 1152.0 * 1152.0).epsilon(0.03));
}

TEST_CASE("SANA 1600M 4K imports with linear attention and GLUMBConv at 1.6B", "[diffusers]") {
  // Efficient-Large-Model/Sana_1600M_4Kpx_BF16_diffusers: 20 blocks of 70 x 32 heads, mlp_ratio 2.5
  // (5600 hidden channels); 1.6B parameters (the SANA paper and model card, "Sana-1.6B").
  const auto m = imported("sana-1600m-4k");
  REQUIRE(m.blocks.size() == 1);
  CHECK(m.blocks[0].kind == cpplan::BlockKind::kCross);
  CHECK(m.blocks[0].count == 20);
  CHECK(m.heads == 70);
  CHECK(m.head_dim == 32);
  CHECK(m.attention == cpplan::AttentionKind::kLinear);
  CHECK(m.ffn_kind == cpplan::FfnKind::kConvGlu);
  CHECK(m.ffn_hidden == 5600);
  CHECK(m.params == Approx(1.6e9).epsilon(0.03));
}

TEST_CASE("Mochi-1 imports as asymmetric double-stream blocks at 10B", "[diffusers]") {
  // genmo/mochi-1-preview: 48 blocks of 24 x 128 heads, a 1536-wide text stream; 10B parameters
  // (Genmo's model card: "a 10 billion parameter diffusion model").
  const auto m = imported("mochi-1");
  REQUIRE(m.blocks.size() == 1);
  CHECK(m.blocks[0].kind == cpplan::BlockKind::kDouble);
  CHECK(m.blocks[0].count == 48);
  CHECK(m.heads == 24);
  CHECK(m.head_dim == 128);
  CHECK(m.text_hidden == 1536);
  CHECK(m.params == Approx(10e9).epsilon(0.03));
}

TEST_CASE("ConsisID imports as CogVideoX blocks plus its face modules", "[diffusers]") {
  // BestWishYsh/ConsisID-preview: CogVideoX-5B-I2V's 42 blocks of 48 x 64 heads. No parameter count
  // is published for ConsisID that we know; by hand: CogVideoX-5B (models.md: 5,570,283,072) + the
  // I2V patch embedder's 16 more input channels (16 x 4 x 3072) + the learned position table
  // ((226 + 30 x 45 x 13) x 3072) + the face modules: LocalFacialExtractor 151,398,400 (latents
  // 32 x 1024, proj 1024 x 2048, 10 x (perceiver 4 x 1024^2 + 2 LayerNorms, FFN 8 x 1024^2 + a
  // LayerNorm), 5 mappings 3 x (1024^2 + 1024) + 2 LayerNorms, id MLP 1280 -> 1024 -> 1024 -> 5120
  // with 2 LayerNorms) and 21 perceiver cross-attentions of 3 x 3072 x 2048 + 2048 x 4096 + LayerNorms
  // (20,981,760 each).
  const auto m = imported("consisid");
  REQUIRE(m.blocks.size() == 1);
  CHECK(m.blocks[0].kind == cpplan::BlockKind::kSingle);
  CHECK(m.blocks[0].count == 42);
  CHECK(m.heads == 48);
  CHECK(m.head_dim == 64);
  const double expected =
      5570283072.0 + 16 * 4 * 3072 + (226 + 30 * 45 * 13) * 3072.0 + 151398400.0 + 21 * 20981760.0;
  CHECK(m.params == Approx(expected).epsilon(0.03));
}

TEST_CASE("every class of the reference list has a file that plans or refuses in one line", "[diffusers]") {
  const auto classes = reference_classes();
  REQUIRE(classes.size() >= 60);
  int plans = 0;
  std::vector<std::string> not_modelled, needs_a_config, without_file;
  for (const auto& name : classes) {
    INFO(name);
    if (!fs::exists(classes_dir() / (name + ".toml"))) {
      without_file.push_back(name);
      continue;
    }
    auto spec = cpplan::ClassSpec::load((classes_dir() / (name + ".toml")).string());
    INFO((spec ? "" : spec.error().message));
    REQUIRE(spec.ok());
    const json config = defaults_config(classes_dir() / (name + ".toml"), name);
    auto m = cpplan::diffusers::profile_from_config_text(config.dump(), catalog(), {"coverage", "test"});
    if (m.ok()) {
      ++plans;
      continue;
    }
    const std::string& e = m.error().message;
    INFO(e);
    CHECK(e.find('\n') == std::string::npos);
    CHECK(e.find(name) != std::string::npos);
    CHECK(e.find("not a diffusers transformer class") == std::string::npos);
    (spec->missing().empty() ? needs_a_config : not_modelled).push_back(name);
  }
  std::string missing_files;
  for (const auto& n : without_file) missing_files += " " + n;
  INFO("classes without a file:" << missing_files);
  CHECK(without_file.empty());
  // README: "54 of the 67 transformer classes of diffusers plan, and the other 13 (audio, a UNet's
  // layers, history-frame video) are refused saying why". The 13, by the `missing` line of each
  // class file: 7 audio models, 2 layers of a UNet, 3 history- or past-frame video generators and
  // unCLIP's embedding prior.
  const std::vector<std::string> expected_not_modelled = {
      "AceStepTransformer1DModel", "LongCatAudioDiTTransformer", "MiniMaxMusic3RVQDepthDecoder",
      "MiniMaxMusic3Transformer1DModel", "StableAudio3DiTModel", "StableAudioDiTModel", "T5FilmDecoder",
      "DreamLiteTransformer2DModel", "TransformerTemporalModel",
      "AnyFlowFARTransformer3DModel", "HeliosTransformer3DModel", "HunyuanVideoFramepackTransformer3DModel",
      "PriorTransformer"};
  // Of the other 54, those whose constructor leaves patch_size or in_channels None (the `none` line
  // of their class files, diffusers' signatures) have no token count from their defaults alone:
  // they plan from a real config (tests/data/diffusers: pixart-alpha, hunyuandit-v1.2, latte-1), not
  // from the defaults. 54 - 5 = 49 plan here.
  const std::vector<std::string> expected_needs_a_config = {"EasyAnimateTransformer3DModel",
                                                            "HiDreamImageTransformer2DModel", "HunyuanDiT2DModel",
                                                            "LatteTransformer3DModel", "Transformer2DModel"};
  CHECK(classes.size() == 67);
  CHECK_THAT(not_modelled, Catch::UnorderedEquals(expected_not_modelled));
  CHECK_THAT(needs_a_config, Catch::UnorderedEquals(expected_needs_a_config));
  CHECK(plans == 67 - 13 - 5);
}

TEST_CASE("every planning class file derives a transformer from its own defaults", "[diffusers]") {
  int derived = 0;
  for (const auto& entry : fs::directory_iterator(classes_dir())) {
    if (entry.path().extension() != ".toml") continue;
    INFO(entry.path().filename().string());
    auto spec = cpplan::ClassSpec::load(entry.path().string());
    INFO((spec ? "" : spec.error().message));
    REQUIRE(spec.ok());
    if (!spec->missing().empty()) {
      CHECK(spec->missing().find('\n') == std::string::npos);
      continue;
    }
    // The constructor's defaults make a model, or leave a field the class needs as None (HunyuanDiT's
    // in_channels, Transformer2DModel's patch_size): then one line naming the class.
    auto d = spec->derive_defaults();
    if (d.ok()) {
      ++derived;
      CHECK(d->params > 0);
      CHECK(!d->blocks.empty());
      continue;
    }
    INFO(d.error().message);
    CHECK(d.error().message.find('\n') == std::string::npos);
    CHECK(d.error().message.find(spec->name()) != std::string::npos);
  }
  CHECK(derived > 0);
}
