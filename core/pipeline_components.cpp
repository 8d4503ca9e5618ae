#include "core/pipeline_components.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <numeric>

#include "core/diffusers_classes.h"

namespace cpplan::diffusers {

namespace fs = std::filesystem;
using detail::ConfigFields;
using detail::FieldError;
using nlohmann::json;

// ---- reading the folder -------------------------------------------------------------------------

namespace {

// A string field of a config ("" when absent or not a string).
std::string text_field(const json& j, const std::string& key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}


// model_index.json's class for `key` ("" when the entry is absent, [null, null] or not a pair).
std::string listed_class(const json& index, const std::string& key) {
  const auto it = index.find(key);
  if (it == index.end() || !it->is_array() || it->size() != 2 || !(*it)[1].is_string()) return "";  // [null, null]
  return (*it)[1].get<std::string>();
}

// The component `key` when model_index lists it (or, unlisted, the folder has its config), with
// its config when the folder has one; [null, null] in model_index: absent.
Result<std::optional<ComponentConfig>> listed_component(const fs::path& folder, const json& index,
                                                        const std::string& key) {
  ComponentConfig c{key, listed_class(index, key), nullptr};
  const fs::path config = folder / key / "config.json";
  const bool has_config = fs::is_regular_file(config);
  if (c.class_name.empty() && (index.contains(key) || !has_config)) return std::optional<ComponentConfig>{};
  if (has_config) {
    auto j = read_config_file(config);
    if (!j) return j.error();
    c.config = std::move(j).value();
  }
  return std::optional<ComponentConfig>{std::move(c)};
}

}  // namespace

Result<PipelineConfigs> read_pipeline_configs(const fs::path& folder) {
  auto index = read_config_file(folder / "model_index.json");
  if (!index) return index.error();
  PipelineConfigs p;
  p.folder = true;
  // HiDream has four text encoders; tokenizers and schedulers carry no weights that matter here.
  for (const std::string key : {"text_encoder", "text_encoder_2", "text_encoder_3", "text_encoder_4"}) {
    auto c = listed_component(folder, *index, key);
    if (!c) return c.error();
    if (*c) p.text_encoders.push_back(std::move(**c));
  }
  auto vae = listed_component(folder, *index, "vae");
  if (!vae) return vae.error();
  p.vae = std::move(*vae);
  auto second = listed_component(folder, *index, "transformer_2");
  if (!second) return second.error();
  p.transformer_2 = std::move(*second);
  return p;
}

// ---- text encoders --------------------------------------------------------------------------------

namespace {

// A decoder-only language model's layers as transformers builds them: token embedding, per layer
// q/k/v/o (GQA: kv_heads key/value heads), optional q/k/v bias and per-head q/k RMSNorm, a gated
// MLP (gate, up, down), `norms` RMSNorms of width d; a final norm; an lm_head when not tied.
struct DecoderLm {
  double d = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, inter = 0, vocab = 0;
  bool qkv_bias = false;
  bool qk_norm = false;  // Qwen3, Gemma3: RMSNorm(head_dim) on q and on k
  int norms = 2;         // Gemma2/3: four (pre/post attention, pre/post feed-forward)
  bool lm_head = false;

  double layer() const {
    const double q = heads * head_dim, kv = kv_heads * head_dim;
    const double attention = d * q + 2 * d * kv + q * d + (qkv_bias ? q + 2 * kv : 0) + (qk_norm ? 2 * head_dim : 0);
    return attention + 3 * d * inter + norms * d;
  }
  double params() const { return vocab * d + layers * layer() + d + (lm_head ? vocab * d : 0); }
};

// The text model's fields: `text_config` when the config nests them (vision-language models),
// else the config itself. Gemma3's published configs leave Gemma3TextConfig's defaults out.
json text_part(const json& j) {
  const auto it = j.find("text_config");
  if (it == j.end() || !it->is_object() || !it->contains("hidden_size")) return j;
  if (text_field(*it, "model_type") != "gemma3_text") return *it;
  json text = {{"vocab_size", 262208}, {"num_attention_heads", 8}, {"num_key_value_heads", 4}, {"head_dim", 256}};
  text.update(*it);
  return text;
}

// The fields all decoder LMs share; head_dim defaults to d / heads unless `head_dim` is given.
DecoderLm decoder_fields(const ConfigFields& f, int default_head_dim = 0) {
  DecoderLm lm;
  lm.d = f.integer("hidden_size");
  lm.layers = f.integer("num_hidden_layers");
  lm.heads = f.integer("num_attention_heads");
  lm.kv_heads = f.integer_or("num_key_value_heads", static_cast<int>(lm.heads));
  if (lm.heads == 0) throw FieldError{fmt::format("num_attention_heads = 0: must be at least 1 ({})", f.class_name())};
  lm.head_dim = f.integer_or("head_dim", default_head_dim > 0 ? default_head_dim : static_cast<int>(lm.d / lm.heads));
  lm.inter = f.integer("intermediate_size");
  lm.vocab = f.integer("vocab_size");
  return lm;
}

// An lm_head unless tied; `tied` is the config class's default for tie_word_embeddings.
bool untied_head(const ConfigFields& top, bool tied) { return !top.boolean_or("tie_word_embeddings", tied); }

// Qwen2-VL's vision tower: Conv3d patch embedding (no bias), `depth` blocks of LayerNorm,
// qkv + proj with bias, an MLP of mlp_ratio x width (fc1, fc2 with bias), and the patch merger
// (LayerNorm, Linear(4E, 4E), Linear(4E, out)).
double qwen2_vl_vision(const ConfigFields& v) {
  const double e = v.integer("embed_dim"), mlp = e * v.integer_or("mlp_ratio", 4);
  const double patch = v.integer_or("in_chans", 3) * v.integer_or("temporal_patch_size", 2) *
                       std::pow(v.integer_or("patch_size", 14), 2) * e;
  const double block = 2 * 2 * e + (3 * e * e + 3 * e) + (e * e + e) + (e * mlp + mlp) + (mlp * e + e);
  const double merged = e * std::pow(v.integer_or("spatial_merge_size", 2), 2);
  const double merger = 2 * e + (merged * merged + merged) + (merged * v.integer("hidden_size") + v.integer("hidden_size"));
  return patch + v.integer("depth") * block + merger;
}

// Qwen2.5-VL's: the same with RMSNorms (weight only), a gated MLP of intermediate_size with bias,
// and the merger's RMSNorm; the merger projects to out_hidden_size.
double qwen2_5_vl_vision(const ConfigFields& v) {
  const double e = v.integer("hidden_size"), mlp = v.integer("intermediate_size");
  const double patch = v.integer_or("in_chans", 3) * v.integer_or("temporal_patch_size", 2) *
                       std::pow(v.integer_or("patch_size", 14), 2) * e;
  const double block = 2 * e + (3 * e * e + 3 * e) + (e * e + e) + 2 * (e * mlp + mlp) + (mlp * e + e);
  const double merged = e * std::pow(v.integer_or("spatial_merge_size", 2), 2), out = v.integer("out_hidden_size");
  const double merger = e + (merged * merged + merged) + (merged * out + out);
  return patch + v.integer("depth") * block + merger;
}

// Pixtral (Mistral3's vision tower): Conv2d patch embedding (no bias), ln_pre, layers of two
// RMSNorms, q/k/v/o without bias, a gated MLP without bias; then Mistral3's projector: RMSNorm,
// the patch merger Linear(m^2 E, E), Linear(E, text d), Linear(text d, text d) (bias per
// multimodal_projector_bias, default none).
double pixtral_vision(const ConfigFields& v, const ConfigFields& top, double text_d) {
  const double e = v.integer("hidden_size"), mlp = v.integer("intermediate_size");
  const double patch = v.integer_or("num_channels", 3) * std::pow(v.integer("patch_size"), 2) * e;
  const double tower = patch + e + v.integer("num_hidden_layers") * (2 * e + 4 * e * e + 3 * e * mlp);
  const double m2 = std::pow(top.integer_or("spatial_merge_size", 2), 2);
  const bool bias = top.boolean_or("multimodal_projector_bias", false);
  const double projector = e + m2 * e * e + (e * text_d + (bias ? text_d : 0)) + (text_d * text_d + (bias ? text_d : 0));
  return tower + projector;
}

// SigLIP (Gemma3's vision tower, no head): patch Conv2d with bias, a learned position per patch,
// layers of two LayerNorms, q/k/v/o with bias, an MLP (fc1, fc2 with bias), post_layernorm; then
// Gemma3's projector: an RMSNorm and a E x text d matrix.
double siglip_vision(const ConfigFields& v, double text_d) {
  const double e = v.integer("hidden_size"), mlp = v.integer("intermediate_size"), p = v.integer("patch_size");
  const double positions = std::pow(v.integer("image_size") / p, 2);
  const double embed = v.integer_or("num_channels", 3) * p * p * e + e + positions * e;
  const double layer = 4 * e + 4 * (e * e + e) + (e * mlp + mlp) + (mlp * e + e);
  return embed + v.integer("num_hidden_layers") * layer + 2 * e + (e + e * text_d);
}

// T5, mT5 and UMT5 encoders: shared embedding, per layer q/k/v/o without bias, a gated or plain
// FFN, two RMSNorms; the relative position bias in the first layer (T5, mT5) or every layer
// (UMT5); a final norm. No lm_head (an encoder).
double t5_encoder(const ConfigFields& f, bool bias_per_layer) {
  const double d = f.integer("d_model"), inner = f.integer("num_heads") * f.integer("d_kv");
  const double ff = f.integer("d_ff"), layers = f.integer("num_layers");
  const bool gated = f.string_or("feed_forward_proj", "relu").rfind("gated", 0) == 0;
  const double bias = f.integer_or("relative_attention_num_buckets", 32) * f.integer("num_heads");
  const double layer = 4 * d * inner + d + (gated ? 3 : 2) * d * ff + d;
  return f.integer("vocab_size") * d + layers * layer + (bias_per_layer ? layers : 1) * bias + d;
}

// CLIP's text tower: token and position embeddings, layers of two LayerNorms, q/k/v/o with bias,
// an MLP (fc1, fc2 with bias), a final LayerNorm; WithProjection adds text_projection (no bias).
double clip_text(const ConfigFields& f, bool projection) {
  const double d = f.integer("hidden_size"), inter = f.integer("intermediate_size");
  const double positions = f.integer_or("max_position_embeddings", 77);
  const double layer = 4 * (d * d + d) + 4 * d + (d * inter + inter) + (inter * d + d);
  return f.integer("vocab_size") * d + positions * d + f.integer("num_hidden_layers") * layer + 2 * d +
         (projection ? d * f.integer_or("projection_dim", static_cast<int>(d)) : 0);
}

// BERT (HunyuanDiT's Chinese CLIP text tower, loaded as BertModel): word, position and token-type
// embeddings and a LayerNorm; layers of q/k/v/o with bias, LayerNorm, intermediate and output
// linears with bias, LayerNorm; the pooler (d x d with bias, BertModel's default).
double bert(const ConfigFields& f) {
  const double d = f.integer("hidden_size"), inter = f.integer("intermediate_size");
  const double embed = (f.integer("vocab_size") + f.integer_or("max_position_embeddings", 512) +
                        f.integer_or("type_vocab_size", 2)) * d + 2 * d;
  const double layer = 4 * (d * d + d) + 2 * d + (d * inter + inter) + (inter * d + d) + 2 * d;
  return embed + f.integer("num_hidden_layers") * layer + d * d + d;
}

// ChatGLM (Kolors' ChatGLM3-6B, ChatGLMModel): embedding, layers of RMSNorm, fused qkv with bias
// (multi-query groups of kv_channels), dense, RMSNorm, gated MLP (h -> 2 ffn, ffn -> h, no bias);
// a final norm; ChatGLMModel holds the output_layer too.
double chatglm(const ConfigFields& f) {
  const double d = f.integer("hidden_size"), ffn = f.integer("ffn_hidden_size"), kv = f.integer("kv_channels");
  const double heads = f.integer("num_attention_heads");
  const double groups = f.boolean_or("multi_query_attention", false) ? f.integer("multi_query_group_num") : heads;
  const double qkv = heads * kv + 2 * groups * kv;
  const double layer = 2 * d + d * qkv + (f.boolean_or("add_qkv_bias", false) ? qkv : 0) + heads * kv * d + 3 * d * ffn;
  const double vocab = f.integer("padded_vocab_size");
  return vocab * d + f.integer("num_layers") * layer + d + vocab * d;
}

// The language model of a decoder architecture: its fields, bias, norms and head per the
// transformers class. nullopt: not one of them.
std::optional<DecoderLm> decoder_lm(const std::string& arch, const json& j) {
  const ConfigFields top(j, arch);
  const json text = text_part(j);
  const ConfigFields f(text, arch);
  DecoderLm lm;
  if (arch == "Qwen2_5_VLForConditionalGeneration" || arch == "Qwen2VLForConditionalGeneration") {
    lm = decoder_fields(f);
    lm.qkv_bias = true;
    lm.lm_head = untied_head(top, false);
  } else if (arch == "Qwen3Model" || arch == "Qwen3ForCausalLM") {
    lm = decoder_fields(f, 128);
    lm.qk_norm = true;
    lm.qkv_bias = f.boolean_or("attention_bias", false);
    lm.lm_head = arch == "Qwen3ForCausalLM" && untied_head(top, false);
  } else if (arch == "LlamaForCausalLM" || arch == "LlamaModel" || arch == "MistralModel" ||
             arch == "MistralForCausalLM" || arch == "Mistral3ForConditionalGeneration") {
    lm = decoder_fields(f);
    lm.qkv_bias = f.boolean_or("attention_bias", false);
    lm.lm_head = arch.find("Model") == std::string::npos && untied_head(top, false);  // *Model: no head
  } else if (arch == "GemmaModel" || arch == "Gemma2Model" || arch == "Gemma3ForConditionalGeneration") {
    lm = decoder_fields(f, 256);  // Gemma's embeddings are tied: no lm_head of its own
    lm.norms = arch == "GemmaModel" ? 2 : 4;
    lm.qk_norm = arch == "Gemma3ForConditionalGeneration";
  } else if (arch == "GlmModel" || arch == "GlmForCausalLM") {
    lm = decoder_fields(f, 128);
    lm.qkv_bias = f.boolean_or("attention_bias", true);
    lm.lm_head = arch == "GlmForCausalLM" && untied_head(top, false);
  } else {
    return std::nullopt;
  }
  return lm;
}

// The vision tower a vision-language encoder loads with its language model (0: none).
double vision_tower(const std::string& arch, const json& j, double text_d) {
  const auto it = j.find("vision_config");
  if (it == j.end() || !it->is_object()) return 0;
  const ConfigFields v(*it, arch + " vision_config");
  if (arch == "Qwen2_5_VLForConditionalGeneration") return qwen2_5_vl_vision(v);
  if (arch == "Qwen2VLForConditionalGeneration") return qwen2_vl_vision(v);
  if (arch == "Mistral3ForConditionalGeneration") return pixtral_vision(v, ConfigFields(j, arch), text_d);
  if (arch == "Gemma3ForConditionalGeneration") return siglip_vision(v, text_d);
  return 0;
}

// The encoder-only architectures' counts (nullopt: not one of them).
std::optional<double> encoder_params(const std::string& arch, const ConfigFields& f) {
  if (arch == "T5EncoderModel" || arch == "MT5EncoderModel") return t5_encoder(f, false);
  if (arch == "UMT5EncoderModel") return t5_encoder(f, true);
  if (arch == "CLIPTextModel" || arch == "CLIPTextModelWithProjection")
    return clip_text(f, arch == "CLIPTextModelWithProjection");
  if (arch == "BertModel") return bert(f);
  if (arch == "ChatGLMModel") return chatglm(f);
  return std::nullopt;
}

std::string architecture(const json& j) {
  const auto it = j.find("architectures");
  if (it == j.end() || !it->is_array() || it->empty() || !(*it)[0].is_string()) return "";
  return (*it)[0].get<std::string>();
}

// A short name: the last part of `_name_or_path` when it names a model, else the architecture.
std::string encoder_name(const json& j, const std::string& arch) {
  std::string p = text_field(j, "_name_or_path");
  while (!p.empty() && p.back() == '/') p.pop_back();
  p = p.substr(p.find_last_of('/') + 1);
  return p.empty() || p.rfind("text_encoder", 0) == 0 ? arch : p;
}

// Layers and width of the encoder, for its encoding cost.
void encoder_shape(const std::string& arch, const ConfigFields& f, Component& c) {
  const bool t5 = f.has("d_model");
  c.layers = f.integer_or(t5 ? "num_layers" : "num_hidden_layers", f.integer_or("num_layers", 0));
  c.hidden = f.integer_or(t5 ? "d_model" : "hidden_size", 0);
  if (arch.rfind("CLIPText", 0) == 0) c.tokens = f.integer_or("max_position_embeddings", 77);
}

}  // namespace

std::optional<Component> text_encoder_from_config(const json& j) {
  const std::string arch = architecture(j);
  Component c;
  c.name = encoder_name(j, arch);
  if (auto lm = decoder_lm(arch, j)) {
    c.params = lm->params() + vision_tower(arch, j, lm->d);
    const json text = text_part(j);
    encoder_shape(arch, ConfigFields(text, arch), c);
    return c;
  }
  const ConfigFields f(j, arch);
  const auto params = encoder_params(arch, f);
  if (!params) return std::nullopt;
  c.params = *params;
  encoder_shape(arch, f, c);
  return c;
}

// ---- the VAE ----------------------------------------------------------------------------------------

namespace {

double conv(double in, double out, double kernel) { return in * out * kernel + out; }

// diffusers' ResnetBlock2D: GroupNorm, 3x3 conv, GroupNorm, 3x3 conv, a 1x1 shortcut when the
// channels change.
double resnet(double in, double out) {
  return 2 * in + conv(in, out, 9) + 2 * out + conv(out, out, 9) + (in != out ? conv(in, out, 1) : 0);
}

// UNetMidBlock2D: two resnets around one attention (GroupNorm, q/k/v/o with bias).
double mid_block(double c) { return 2 * resnet(c, c) + 2 * c + 4 * (c * c + c); }

// AutoencoderKL's Encoder and Decoder (DownEncoderBlock2D / UpDecoderBlock2D stages of
// layers_per_block resnets, +1 in the decoder, a 3x3 down/upsampling conv between stages), with
// the quant convs it is configured with.
double autoencoder_kl(const ConfigFields& f) {
  const std::vector<int> ch = f.integers("block_out_channels");
  const double layers = f.integer_or("layers_per_block", 2), latent = f.integer_or("latent_channels", 4);
  double encoder = conv(f.integer_or("in_channels", 3), ch.front(), 9);
  double prev = ch.front();
  for (std::size_t i = 0; i < ch.size(); ++i) {
    for (int r = 0; r < layers; ++r) encoder += resnet(r == 0 ? prev : ch[i], ch[i]);
    if (i + 1 < ch.size()) encoder += conv(ch[i], ch[i], 9);
    prev = ch[i];
  }
  encoder += mid_block(ch.back()) + 2 * ch.back() + conv(ch.back(), 2 * latent, 9);
  double decoder = conv(latent, ch.back(), 9) + mid_block(ch.back());
  prev = ch.back();
  for (std::size_t i = ch.size(); i-- > 0;) {
    for (int r = 0; r <= layers; ++r) decoder += resnet(r == 0 ? prev : ch[i], ch[i]);
    if (i > 0) decoder += conv(ch[i], ch[i], 9);
    prev = ch[i];
  }
  decoder += 2 * ch.front() + conv(ch.front(), f.integer_or("out_channels", 3), 9);
  const double quant = (f.boolean_or("use_quant_conv", true) ? conv(2 * latent, 2 * latent, 1) : 0) +
                       (f.boolean_or("use_post_quant_conv", true) ? conv(latent, latent, 1) : 0);
  return encoder + decoder + quant;
}

int power_of_two(std::size_t n) { return 1 << n; }

int count_true(const ConfigFields& f, std::string_view field, std::vector<bool> fallback) {
  const auto it = f.config().find(std::string(field));
  if (it != f.config().end() && it->is_array()) {
    fallback.clear();
    for (const json& e : *it) fallback.push_back(e.is_boolean() && e.get<bool>());
  }
  return static_cast<int>(std::count(fallback.begin(), fallback.end(), true));
}

int product(const std::vector<int>& v) { return std::accumulate(v.begin(), v.end(), 1, std::multiplies<>()); }

// Wan2.1's causal 3D VAE blocks (diffusers' autoencoder_kl_wan): a residual block is RMSNorm
// (gamma), causal 3x3x3 conv, RMSNorm, causal 3x3x3 conv, a 1x1x1 shortcut when channels change;
// the mid block two of them around one attention (RMSNorm, 1x1 qkv and proj with bias).
double wan_residual(double in, double out) {
  return in + conv(in, out, 27) + out + conv(out, out, 27) + (in != out ? conv(in, out, 1) : 0);
}
double wan_mid(double c) { return 2 * wan_residual(c, c) + c + conv(c, 3 * c, 1) + conv(c, c, 1); }
// Resampling between stages: down, a 3x3 stride-2 conv; up, a 3x3 conv to half the channels; in
// time too (temperal_downsample), a (3,1,1) causal conv (down: c -> c; up: c -> 2c).
double wan_resample(double c, bool down, bool in_time) {
  if (down) return conv(c, c, 9) + (in_time ? conv(c, c, 3) : 0);
  return conv(c, c / 2, 9) + (in_time ? conv(c, 2 * c, 3) : 0);
}

// The encoder (3 -> base_dim, num_res_blocks residual blocks per dim_mult stage, mid block,
// RMSNorm, conv to 2 z_dim), the decoder (z_dim -> the last stage's width, mid block, stages of
// num_res_blocks + 1 blocks in reverse, each after the first reading the half width its upsampler
// left, RMSNorm, conv to 3) and the 1x1x1 quant convs. Wan2.2's residual VAE (is_residual) and
// attention inside the stages (attn_scales) are not counted: 0.
double wan_vae_params(const ConfigFields& f) {
  if (f.boolean_or("is_residual", false) || (f.config().contains("attn_scales") && !f.config()["attn_scales"].empty()))
    return 0;
  const double base = f.integer_or("base_dim", 96), z = f.integer_or("z_dim", 16), blocks = f.integer_or("num_res_blocks", 2);
  const std::vector<int> mult = f.integers_or("dim_mult", {1, 2, 4, 4});
  std::vector<bool> in_time{false, true, true};
  if (f.config().contains("temperal_downsample") && f.config()["temperal_downsample"].is_array())
    in_time = f.config()["temperal_downsample"].get<std::vector<bool>>();
  if (in_time.size() + 1 < mult.size()) return 0;
  double encoder = conv(3, base, 27), prev = base;
  for (std::size_t i = 0; i < mult.size(); ++i) {
    const double out = base * mult[i];
    for (int r = 0; r < blocks; ++r) encoder += wan_residual(r == 0 ? prev : out, out);
    if (i + 1 < mult.size()) encoder += wan_resample(out, true, in_time[i]);
    prev = out;
  }
  encoder += wan_mid(prev) + prev + conv(prev, 2 * z, 27);
  double decoder = conv(z, prev, 27) + wan_mid(prev);
  for (std::size_t i = mult.size(); i-- > 0;) {
    const double out = base * mult[i];
    for (int r = 0; r <= blocks; ++r) decoder += wan_residual(r == 0 ? prev : out, out);
    if (i > 0) decoder += wan_resample(out, false, in_time[i - 1]);
    prev = i > 0 ? out / 2 : out;
  }
  decoder += prev + conv(prev, 3, 27);
  return encoder + decoder + conv(2 * z, 2 * z, 1) + conv(z, z, 1);
}

// Wan's causal 3D VAE (and Qwen-Image's, its single-frame use): 2x per stage after the first,
// in time where temperal_downsample says; Wan2.2's patchifies 2x more (scale_factor_* when given).
VaeShape wan_vae(const ConfigFields& f, bool images) {
  VaeShape v;
  const int stages = static_cast<int>(f.integers_or("dim_mult", {1, 2, 4, 4}).size());
  v.spatial = f.integer_or("scale_factor_spatial", power_of_two(stages - 1) * f.integer_or("patch_size", 1));
  v.temporal = images ? 1 : f.integer_or("scale_factor_temporal", power_of_two(count_true(f, "temperal_downsample", {false, true, true})));
  v.params = wan_vae_params(f);
  return v;
}

}  // namespace

std::optional<VaeShape> vae_from_config(const json& j) {
  const std::string cls = text_field(j, "_class_name");
  const ConfigFields f(j, cls);
  VaeShape v;
  if (cls == "AutoencoderKL" || cls == "AutoencoderKLFlux2") {
    v.spatial = power_of_two(f.integers("block_out_channels").size() - 1);
    v.params = autoencoder_kl(f);
  } else if (cls == "AutoencoderKLWan" || cls == "AutoencoderKLQwenImage") {
    v = wan_vae(f, cls == "AutoencoderKLQwenImage");
  } else if (cls == "AutoencoderKLHunyuanVideo") {
    v.spatial = f.integer_or("spatial_compression_ratio", 8);
    v.temporal = f.integer_or("temporal_compression_ratio", 4);
  } else if (cls == "AutoencoderKLCogVideoX" || cls == "AutoencoderKLAllegro") {
    v.spatial = power_of_two(f.integers_or("block_out_channels", {128, 256, 256, 512}).size() - 1);
    v.temporal = f.integer_or("temporal_compression_ratio", 4);
  } else if (cls == "AutoencoderKLLTXVideo") {
    const int scaling = count_true(f, "spatio_temporal_scaling", {true, true, true, false});
    v.spatial = f.integer_or("patch_size", 4) * power_of_two(scaling);
    v.temporal = f.integer_or("patch_size_t", 1) * power_of_two(scaling);
  } else if (cls == "AutoencoderKLMochi") {
    v.spatial = product(f.integers_or("spatial_expansions", {2, 2, 2}));
    v.temporal = product(f.integers_or("temporal_expansions", {1, 2, 3}));
  } else if (cls == "AutoencoderDC") {  // deep compression: 2x per encoder stage after the first
    v.spatial = power_of_two(f.integers("encoder_block_out_channels").size() - 1);
  } else {
    return std::nullopt;
  }
  v.cost = vae_cost(j);
  if (v.cost) {
    v.decode_channels_per_pixel = v.cost->decode_channels_per_pixel;
    v.mid_block_attention = v.cost->mid_block_attention;
    v.sample_size = v.cost->sample_size;
  }
  return v;
}

// ---- applying them ----------------------------------------------------------------------------------

namespace {

std::string billions(double params) { return fmt::format("{:.2f}B", params / 1e9); }

std::string encoder_list(const std::vector<Component>& encoders) {
  std::string out;
  for (const Component& e : encoders) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", e.name, billions(e.params));
  return out.empty() ? "none" : out;
}

// The template's encoder at position i, stated; "left out" when the template has none there.
void template_encoder(const ModelProfile& tmpl, std::size_t i, const std::string& why, std::vector<Component>& out,
                      std::vector<std::string>& assumptions) {
  if (i < tmpl.text_encoders.size()) {
    out.push_back(tmpl.text_encoders[i]);
    assumptions.push_back(fmt::format("{}; the template's {} {} kept", why, tmpl.text_encoders[i].name,
                                      billions(tmpl.text_encoders[i].params)));
  } else {
    assumptions.push_back(fmt::format("{}, and the template has no encoder there: left out of memory", why));
  }
}

// One listed encoder: counted from its config, else the template's at its position.
void folder_encoder(const ComponentConfig& c, std::size_t i, const ModelProfile& tmpl, std::vector<Component>& out,
                    std::vector<std::string>& assumptions) {
  if (c.config.is_null())
    return template_encoder(tmpl, i, fmt::format("{} ({}): the folder has no {}/config.json", c.key, c.class_name, c.key),
                            out, assumptions);
  const std::string arch = architecture(c.config).empty() ? c.class_name : architecture(c.config);
  try {
    json config = c.config;
    if (architecture(config).empty()) config["architectures"] = {arch};
    if (auto e = text_encoder_from_config(config)) {
      if (e->tokens == 0 && i < tmpl.text_encoders.size()) e->tokens = tmpl.text_encoders[i].tokens;
      out.push_back(std::move(*e));
      return;
    }
    template_encoder(tmpl, i, fmt::format("{} ({}): not an architecture cpplan counts", c.key, arch), out, assumptions);
  } catch (const FieldError& e) {
    template_encoder(tmpl, i, fmt::format("{}/config.json: {}", c.key, e.message), out, assumptions);
  }
}

void apply_text_encoders(const PipelineConfigs& p, ModelProfile& m) {
  const std::string kept = fmt::format("text encoders: the template's ({})", encoder_list(m.text_encoders));
  if (!p.folder) return m.assumptions.push_back(kept + ": no pipeline folder (model_index.json) read");
  if (p.text_encoders.empty()) return m.assumptions.push_back(kept + ": model_index.json lists no text_encoder");
  const ModelProfile tmpl = m;
  std::vector<Component> encoders;
  for (std::size_t i = 0; i < p.text_encoders.size(); ++i) folder_encoder(p.text_encoders[i], i, tmpl, encoders, m.assumptions);
  m.text_encoders = std::move(encoders);
}

std::string vae_summary(const VaeProfile& v) {
  return fmt::format("{} (spatial {}, temporal {}, {:.1f}M)", v.weights.name, v.spatial, v.temporal, v.weights.params / 1e6);
}

void apply_vae(const PipelineConfigs& p, ModelProfile& m) {
  const std::string kept = "VAE: the template's " + vae_summary(m.vae);
  if (!p.folder) return m.assumptions.push_back(kept + ": no pipeline folder (model_index.json) read");
  if (!p.vae) return m.assumptions.push_back(kept + ": model_index.json lists no vae");
  if (p.vae->config.is_null()) return m.assumptions.push_back(kept + ": the folder has no vae/config.json");
  const std::string cls = text_field(p.vae->config, "_class_name").empty() ? p.vae->class_name
                                                                          : text_field(p.vae->config, "_class_name");
  std::optional<VaeShape> v;
  try {
    v = vae_from_config(p.vae->config);
  } catch (const FieldError& e) {
    return m.assumptions.push_back(fmt::format("{}: vae/config.json: {}", kept, e.message));
  }
  if (!v) return m.assumptions.push_back(fmt::format("{}: {} is not a VAE class cpplan reads", kept, cls));
  const std::string template_cost = fmt::format("decode cost per pixel the template's {}", m.vae.weights.name);
  if (v->cost) {
    apply_vae_cost(*v->cost, m.vae);
    m.vae.config.clear();
  }
  m.vae.spatial = v->spatial;
  m.vae.temporal = v->temporal;
  if (v->params > 0) m.vae.weights.params = v->params;
  m.assumptions.push_back(fmt::format(
      "VAE ({}): spatial {}, temporal {}{}; {}", cls, v->spatial, v->temporal,
      v->params > 0 ? fmt::format(", {:.1f}M parameters counted", v->params / 1e6)
                    : fmt::format(", parameters the template's {:.1f}M", m.vae.weights.params / 1e6),
      v->cost ? fmt::format("decode cost derived from its structure ({:.2f} MFLOP per pixel per frame)",
                            v->cost->decode_gflop_per_pixel * 1e3)
              : template_cost));
}

}  // namespace

void apply_pipeline_configs(const PipelineConfigs& p, ModelProfile& m) {
  apply_text_encoders(p, m);
  apply_vae(p, m);
}

}  // namespace cpplan::diffusers
