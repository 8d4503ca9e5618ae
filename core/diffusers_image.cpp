// Image transformer classes of diffusers mapped to a profile's transformer: FLUX.1, FLUX.2, SD3,
// Qwen-Image, PixArt. Parameter counts follow each class's __init__ layer by layer (diffusers
// main, 2026); the built-in profiles' exact counts check them (tests/core/test_diffusers_config.cpp).
#include <fmt/format.h>

#include "core/diffusers_classes.h"

namespace cpplan::diffusers::detail {

namespace {

std::string heads_text(int heads, int head_dim) { return fmt::format("{} x {} heads", heads, head_dim); }

// Attention(query_dim=D, added_kv_proj_dim=D, qk_norm) of a joint block: image q, k, v, out and
// text q, k, v (and text out unless context_pre_only), with biases; RMSNorm(head_dim) of q and k
// on both streams when `qk_norm`.
double joint_attention_params(double d, double head_dim, bool text_out, bool qk_norm, bool bias = true) {
  const double projections = (text_out ? 8 : 7) * linear_params(d, d, bias);
  return projections + (qk_norm ? 4 * head_dim : 0);
}

// FluxTransformer2DModel (FLUX.1 dev, schnell, Kontext, Fill and derivatives): double-stream
// FluxTransformerBlocks, then single-stream FluxSingleTransformerBlocks; the pipeline packs 2x2
// latent patches into tokens of in_channels.
TransformerShape flux(const ConfigFields& f) {
  TransformerShape t;
  const int heads = f.integer("num_attention_heads"), head_dim = f.integer("attention_head_dim");
  const int doubles = f.integer("num_layers"), singles = f.integer("num_single_layers");
  const int in = f.integer("in_channels"), out = f.integer_or("out_channels", in), patch = f.integer_or("patch_size", 1);
  const double d = heads * head_dim, mlp = 4 * d;  // FluxTransformerBlock's mlp_ratio is 4.0
  const bool guidance = f.boolean_or("guidance_embeds", false);
  // norm1 and norm1_context (AdaLayerNormZero: D -> 6D), joint attention, ff and ff_context.
  const double double_block = 2 * linear_params(d, 6 * d) + joint_attention_params(d, head_dim, true, true) +
                              2 * feed_forward_params(d, mlp, false);
  // norm (D -> 3D), proj_mlp, q/k/v (no output projection), proj_out over attention and MLP.
  const double single_block = linear_params(d, 3 * d) + linear_params(d, mlp) + 3 * linear_params(d, d) +
                              2 * head_dim + linear_params(d + mlp, d);
  const double embedders = linear_params(in, d) + linear_params(f.integer("joint_attention_dim"), d) +
                           timestep_embedding_params(256, d) * (guidance ? 2 : 1) +
                           timestep_embedding_params(f.integer("pooled_projection_dim"), d);  // text_embedder
  const double output = linear_params(d, 2 * d) + linear_params(d, patch * patch * out);       // norm_out, proj_out
  t.pipeline = guidance ? "flux.1-dev" : "flux.1-schnell";
  t.guidance = guidance ? Guidance::kDistilled : Guidance::kNone;
  t.blocks = {{BlockKind::kDouble, doubles}, {BlockKind::kSingle, singles}};
  t.heads = heads;
  t.head_dim = head_dim;
  t.ffn_hidden = static_cast<int>(mlp);
  t.params = doubles * double_block + singles * single_block + embedders + output;
  t.patch_spatial = 2 * patch;
  t.in_channels = in;
  t.summary = fmt::format("{} double + {} single blocks, {}", doubles, singles, heads_text(heads, head_dim));
  return t;
}

// Flux2Transformer2DModel: no biases, SwiGLU feed-forwards (mlp_ratio 3), and shared modulations
// (one D -> 6D projection per stream for all double blocks, one D -> 3D for all single blocks).
TransformerShape flux2(const ConfigFields& f) {
  TransformerShape t;
  const int heads = f.integer("num_attention_heads"), head_dim = f.integer("attention_head_dim");
  const int doubles = f.integer("num_layers"), singles = f.integer("num_single_layers");
  const int in = f.integer("in_channels"), out = f.integer_or("out_channels", in), patch = f.integer_or("patch_size", 1);
  const double d = heads * head_dim, mlp = d * f.number_or("mlp_ratio", 3.0);
  const int time_channels = f.integer_or("timestep_guidance_channels", 256);
  const auto no_bias = [](double in, double out) { return linear_params(in, out, false); };
  const double double_block =
      joint_attention_params(d, head_dim, true, true, false) + 2 * (no_bias(d, 2 * mlp) + no_bias(mlp, d));
  // to_qkv_mlp_proj (D -> 3D + 2 x mlp), q/k norms, to_out over attention and MLP.
  const double single_block = no_bias(d, 3 * d + 2 * mlp) + 2 * head_dim + no_bias(d + mlp, d);
  const double modulation = 2 * no_bias(d, 6 * d) + no_bias(d, 3 * d);
  const double timestep = no_bias(time_channels, d) + no_bias(d, d);  // TimestepEmbedding(bias=False)
  const double embedders = no_bias(in, d) + no_bias(f.integer("joint_attention_dim"), d) +
                           timestep * (f.boolean_or("guidance_embeds", true) ? 2 : 1);
  const double output = no_bias(d, 2 * d) + no_bias(d, patch * patch * out);
  t.pipeline = "flux.2-dev";
  t.blocks = {{BlockKind::kDouble, doubles}, {BlockKind::kSingle, singles}};
  t.heads = heads;
  t.head_dim = head_dim;
  t.ffn_hidden = static_cast<int>(mlp);
  t.ffn_kind = FfnKind::kSwiGlu;
  t.modulation = Modulation::kShared;
  t.params = doubles * double_block + singles * single_block + modulation + embedders + output;
  t.patch_spatial = 2 * patch;
  t.in_channels = in;
  t.summary = fmt::format("{} double + {} single blocks, {}", doubles, singles, heads_text(heads, head_dim));
  return t;
}

// SD3Transformer2DModel (SD3, SD3.5 Large and Medium): JointTransformerBlocks; the last one is
// context_pre_only (no text output, text norm D -> 2D, no text FFN); dual_attention_layers
// (MMDiT-X) add an image-only self-attention and a 9D image modulation.
TransformerShape sd3(const ConfigFields& f) {
  TransformerShape t;
  const int heads = f.integer("num_attention_heads"), head_dim = f.integer("attention_head_dim");
  const int layers = f.integer("num_layers"), in = f.integer("in_channels"), patch = f.integer("patch_size");
  const int out = f.integer_or("out_channels", in);
  const std::vector<int> dual = f.integers_or("dual_attention_layers", {});
  const bool qk_norm = f.string_or("qk_norm", "") == "rms_norm";
  const double d = heads * head_dim, ff = feed_forward_params(d, 4 * d, false);
  const double block = 2 * linear_params(d, 6 * d) + joint_attention_params(d, head_dim, true, qk_norm) + 2 * ff;
  const double last = linear_params(d, 6 * d) + linear_params(d, 2 * d) +
                      joint_attention_params(d, head_dim, false, qk_norm) + ff;
  const double dual_extra = linear_params(d, 3 * d) + 4 * linear_params(d, d) + (qk_norm ? 2 * head_dim : 0);
  const double max_size = f.integer_or("pos_embed_max_size", 0);  // a persistent buffer of max^2 x D
  const double embedders = in * patch * patch * d + d + max_size * max_size * d + timestep_embedding_params(256, d) +
                           timestep_embedding_params(f.integer("pooled_projection_dim"), d) +
                           linear_params(f.integer("joint_attention_dim"), f.integer("caption_projection_dim"));
  const double output = linear_params(d, 2 * d) + linear_params(d, patch * patch * out);
  int dual_count = 0;
  for (int i : dual) dual_count += i < layers ? 1 : 0;
  t.pipeline = "sd3.5-large";
  if (dual_count > 0) t.blocks.push_back({BlockKind::kDouble, dual_count, true});
  t.blocks.push_back({BlockKind::kDouble, layers - dual_count});
  t.heads = heads;
  t.head_dim = head_dim;
  t.ffn_hidden = static_cast<int>(4 * d);
  t.qk_norm = qk_norm;
  t.params = (layers - 1) * block + last + dual_count * dual_extra + embedders + output;
  t.patch_spatial = patch;
  t.in_channels = in * patch * patch;
  t.summary = fmt::format("{} joint blocks ({} with an image self-attention), {}", layers, dual_count,
                          heads_text(heads, head_dim));
  return t;
}

// QwenImageTransformer2DModel: FLUX-like double-stream blocks (img_mod / txt_mod D -> 6D), an
// RMSNorm over the text features before txt_in; tokens are the pipeline's packed 2x2 patches.
TransformerShape qwen_image(const ConfigFields& f) {
  TransformerShape t;
  const int heads = f.integer("num_attention_heads"), head_dim = f.integer("attention_head_dim");
  const int layers = f.integer("num_layers"), in = f.integer("in_channels"), patch = f.integer("patch_size");
  const int out = f.integer_or("out_channels", in), text = f.integer("joint_attention_dim");
  const double d = heads * head_dim;
  const double block = 2 * linear_params(d, 6 * d) + joint_attention_params(d, head_dim, true, true) +
                       2 * feed_forward_params(d, 4 * d, false);
  const double embedders = timestep_embedding_params(256, d) + text + linear_params(in, d) + linear_params(text, d);
  const double output = linear_params(d, 2 * d) + linear_params(d, patch * patch * out);
  t.pipeline = "qwen-image";
  t.blocks = {{BlockKind::kDouble, layers}};
  t.heads = heads;
  t.head_dim = head_dim;
  t.ffn_hidden = static_cast<int>(4 * d);
  t.params = layers * block + embedders + output;
  t.patch_spatial = patch;
  t.in_channels = in;
  t.summary = fmt::format("{} double-stream blocks, {}", layers, heads_text(heads, head_dim));
  return t;
}

// PixArtTransformer2DModel (PixArt-Alpha and Sigma): BasicTransformerBlocks with adaLN-single (a
// 6 x D table per block), self-attention, cross-attention to the caption, GELU FFN.
TransformerShape pixart(const ConfigFields& f) {
  TransformerShape t;
  const int heads = f.integer("num_attention_heads"), head_dim = f.integer("attention_head_dim");
  const int layers = f.integer("num_layers"), in = f.integer_or("in_channels", 4), patch = f.integer_or("patch_size", 2);
  const int out = f.integer_or("out_channels", in), caption = f.integer_or("caption_channels", 4096);
  const double d = heads * head_dim, cross = f.integer_or("cross_attention_dim", static_cast<int>(d));
  // diffusers turns the size conditions on for 128-latent (1024 px) checkpoints unless told.
  const bool sizes = f.boolean_or("use_additional_conditions", f.integer_or("sample_size", 128) == 128);
  const double block = 4 * linear_params(d, d) + 2 * linear_params(d, d) + 2 * linear_params(cross, d) +
                       feed_forward_params(d, 4 * d, false) + 6 * d;
  const double size_dim = static_cast<int>(d) / 3;
  const double adaln = timestep_embedding_params(256, d) + linear_params(d, 6 * d) +
                       (sizes ? 2 * timestep_embedding_params(256, size_dim) : 0);
  const double embedders = in * patch * patch * d + d + adaln + linear_params(caption, d) + linear_params(d, d);
  const double output = 2 * d + linear_params(d, patch * patch * out);
  t.pipeline = "pixart-sigma";
  t.blocks = {{BlockKind::kCross, layers}};
  t.heads = heads;
  t.head_dim = head_dim;
  t.ffn_hidden = static_cast<int>(4 * d);
  t.qk_norm = false;
  t.modulation = Modulation::kTable;
  t.params = layers * block + embedders + output;
  t.patch_spatial = patch;
  t.in_channels = in * patch * patch;
  t.summary = fmt::format("{} cross-attention blocks, {}", layers, heads_text(heads, head_dim));
  return t;
}

constexpr ClassMapping kImageClasses[] = {
    {"FluxTransformer2DModel", flux},
    {"Flux2Transformer2DModel", flux2},
    {"SD3Transformer2DModel", sd3},
    {"QwenImageTransformer2DModel", qwen_image},
    {"PixArtTransformer2DModel", pixart},
};

}  // namespace

std::span<const ClassMapping> image_classes() { return kImageClasses; }

}  // namespace cpplan::diffusers::detail
