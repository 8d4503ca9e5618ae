// The video transformer classes of diffusers mapped to a profile's transformer: Wan,
// HunyuanVideo, CogVideoX and LTX-Video. Each count follows the class's __init__ in diffusers
// (transformer_wan.py, transformer_hunyuan_video.py, cogvideox_transformer_3d.py,
// transformer_ltx.py): every nn.Parameter, weight and bias, as model.parameters() counts them, plus
// a learned positional table that the checkpoint stores as a buffer (CogVideoX I2V) since it is
// resident on the GPU all the same.
//
// The fields that make the model's size (heads, head_dim, layers) are required although the
// classes give them defaults: every saved config.json writes all of its class's arguments, so one
// without them is not a checkpoint's, and a default would silently describe another model.
// The other fields fall back to the class's defaults.

#include <fmt/format.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diffusers_classes.h"

namespace cpplan::diffusers::detail {

namespace {

// A required size field, at least 1.
int positive(const ConfigFields& f, std::string_view field) {
  const int v = f.integer(field);
  if (v < 1) throw FieldError{fmt::format("{} = {}: must be at least 1 for {}", field, v, f.class_name())};
  return v;
}
int positive_or(const ConfigFields& f, std::string_view field, int fallback) {
  const int v = f.integer_or(field, fallback);
  if (v < 1) throw FieldError{fmt::format("{} = {}: must be at least 1 for {}", field, v, f.class_name())};
  return v;
}

// A size field whose absence or null means "none" (image_dim, patch_size_t): 0 then.
int positive_or_none(const ConfigFields& f, std::string_view field) { return f.has(field) ? positive(f, field) : 0; }

// A string field where null means "none" (qk_norm: null builds no norm) and absence the default.
std::optional<std::string> nullable_string(const ConfigFields& f, std::string_view field,
                                           std::optional<std::string> fallback) {
  const auto& j = f.config();
  const auto it = j.find(std::string(field));
  if (it == j.end()) return fallback;
  if (it->is_null()) return std::nullopt;
  return f.string_or(field, "");
}

// Parameters of one q or k norm over `dim` features: RMSNorm has a weight, LayerNorm a weight and
// a bias, null none (diffusers' Attention qk_norm choices that these classes use).
double qk_norm_params(const ConfigFields& f, const std::optional<std::string>& kind, double dim) {
  if (!kind) return 0;
  if (*kind == "rms_norm" || *kind == "rms_norm_across_heads") return dim;
  if (*kind == "layer_norm") return 2 * dim;
  throw FieldError{fmt::format("qk_norm = \"{}\": {} supports rms_norm, rms_norm_across_heads, layer_norm or null",
                               *kind, f.class_name())};
}

// FeedForward's activation_fn: the gated ones project up to 2 x inner.
bool gated(const std::string& activation) {
  return activation == "geglu" || activation == "geglu-approximate" || activation == "swiglu";
}

// "1, 2, 4" (fmt::join trips GCC 12's -Wstringop-overflow at -O3 with fmt 9).
std::string list_text(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

std::string heads_text(int heads, int head_dim) { return fmt::format("{} x {} heads", heads, head_dim); }

// ---------------------------------------------------------------------------------------------
// WanTransformer3DModel (Wan2.1, Wan2.2): patch Conv3d; condition_embedder = time_embedder
// (TimestepEmbedding(freq_dim, D)), time_proj (D -> 6D), text_embedder (PixArtAlphaTextProjection
// text_dim -> D -> D) and, for I2V, image_embedder (LayerNorm, FeedForward(image_dim, D, mult 1,
// gelu), LayerNorm, optional pos_embed); per block: attn1 and attn2 (q, k, v, out D x D with
// bias; RMSNorm over all heads of q and k), norm2 (affine LayerNorm when cross_attn_norm), FFN
// D -> ffn_dim -> D (gelu-approximate), scale_shift_table 6 x D; I2V's attn2 adds add_k_proj,
// add_v_proj (added_kv_proj_dim -> D) and norm_added_k; then norm_out (no affine), proj_out
// D -> out_channels x patch volume, scale_shift_table 2 x D.
TransformerShape derive_wan(const ConfigFields& f) {
  const int heads = positive(f, "num_attention_heads");
  const int head_dim = positive(f, "attention_head_dim");
  const int layers = positive(f, "num_layers");
  const int ffn = positive_or(f, "ffn_dim", 13824);
  const int in_channels = positive_or(f, "in_channels", 16);
  const int out_channels = f.has("out_channels") ? positive(f, "out_channels") : in_channels;
  const std::vector<int> patch = f.integers_or("patch_size", {1, 2, 2});
  if (patch.size() != 3 || patch[0] < 1 || patch[1] < 1 || patch[1] != patch[2])
    throw FieldError{fmt::format("patch_size = [{}]: {} needs [t, h, w] of positive sizes with h = w",
                                 list_text(patch), f.class_name())};
  const int text_dim = positive_or(f, "text_dim", 4096);
  const int freq_dim = positive_or(f, "freq_dim", 256);
  const bool cross_attn_norm = f.boolean_or("cross_attn_norm", true);
  const auto qk_norm = nullable_string(f, "qk_norm", "rms_norm_across_heads");
  const int image_dim = positive_or_none(f, "image_dim");          // I2V: CLIP image features
  const int added_kv = positive_or_none(f, "added_kv_proj_dim");    // I2V: image K/V in attn2
  const int pos_embed_len = positive_or_none(f, "pos_embed_seq_len");

  const double d = double(heads) * head_dim;
  const double patch_volume = double(patch[0]) * patch[1] * patch[2];

  const double patch_embedding = linear_params(in_channels * patch_volume, d);  // Conv3d, kernel = stride = patch
  const double time_embedder = timestep_embedding_params(freq_dim, d);
  const double time_proj = linear_params(d, 6 * d);
  const double text_embedder = linear_params(text_dim, d) + linear_params(d, d);
  double image_embedder = 0;
  if (image_dim) {
    const double ff = linear_params(image_dim, image_dim) + linear_params(image_dim, d);  // mult 1, dim_out D
    image_embedder = layer_norm_params(image_dim) + ff + layer_norm_params(d) + double(pos_embed_len) * image_dim;
  }
  const double attention = 4 * linear_params(d, d) + 2 * qk_norm_params(f, qk_norm, d);
  const double added_kv_projections =
      added_kv ? 2 * linear_params(added_kv, d) + qk_norm_params(f, qk_norm, d) : 0;  // add_k, add_v, norm_added_k
  const double block = 2 * attention + added_kv_projections + (cross_attn_norm ? layer_norm_params(d) : 0) +
                       feed_forward_params(d, ffn, false) + 6 * d;  // + scale_shift_table
  const double proj_out = linear_params(d, out_channels * patch_volume);
  const double output_table = 2 * d;

  TransformerShape s;
  s.pipeline = in_channels == 48 ? "wan2.2-ti2v-5b" : "wan2.1-t2v-14b";  // 48 latent channels: the Wan2.2 VAE
  s.blocks = {BlockGroup{.kind = BlockKind::kCross, .count = layers}};
  s.heads = heads;
  s.head_dim = head_dim;
  s.ffn_hidden = ffn;
  s.ffn_kind = FfnKind::kGelu;
  s.qk_norm = qk_norm.has_value();
  s.modulation = Modulation::kTable;
  s.params = patch_embedding + time_embedder + time_proj + text_embedder + image_embedder + layers * block +
             proj_out + output_table;
  s.patch_spatial = patch[1];
  s.patch_temporal = patch[0];
  s.in_channels = in_channels * int(patch_volume);
  s.summary = fmt::format("{} blocks, {}{}", layers, heads_text(heads, head_dim),
                          image_dim ? ", image conditioning" : "");
  return s;
}

// ---------------------------------------------------------------------------------------------
// HunyuanVideoTransformer3DModel: x_embedder (Conv3d over patch_size_t x patch_size^2);
// context_embedder = HunyuanVideoTokenRefiner (time_text_embed: TimestepEmbedding(256, D) and
// PixArtAlphaTextProjection(text_embed_dim, D); proj_in text_embed_dim -> D; refiner blocks of
// LayerNorm, attention (q, k, v, out with bias), LayerNorm, FeedForward D -> 4D -> D (linear-silu),
// adaptive norm D -> 2D); time_text_embed (TimestepEmbedding(256, D), PixArtAlphaTextProjection
// (pooled_projection_dim, D), a guidance TimestepEmbedding when guidance_embeds); double blocks:
// AdaLayerNormZero D -> 6D for each stream, joint attention (q, k, v, add_q, add_k, add_v, out,
// add_out with bias, per-head RMSNorm of q, k, added q, added k), two FeedForward D -> mlp -> D;
// single blocks: q, k, v with per-head norms, AdaLayerNormZeroSingle D -> 3D, proj_mlp D -> mlp,
// proj_out (D + mlp) -> D; norm_out AdaLayerNormContinuous D -> 2D; proj_out.
TransformerShape derive_hunyuan_video(const ConfigFields& f) {
  const int heads = positive(f, "num_attention_heads");
  const int head_dim = positive(f, "attention_head_dim");
  const int double_layers = positive(f, "num_layers");
  const int single_layers = positive(f, "num_single_layers");
  const int refiner_layers = f.integer_or("num_refiner_layers", 2);  // 0 or more
  const int in_channels = positive_or(f, "in_channels", 16);
  const int out_channels = f.has("out_channels") ? positive(f, "out_channels") : in_channels;
  const int patch = positive_or(f, "patch_size", 2);
  const int patch_t = positive_or(f, "patch_size_t", 1);
  const double mlp_ratio = f.number_or("mlp_ratio", 4.0);
  if (!(mlp_ratio > 0))
    throw FieldError{fmt::format("mlp_ratio = {}: must be positive for {}", mlp_ratio, f.class_name())};
  const int text_dim = positive_or(f, "text_embed_dim", 4096);
  const int pooled_dim = positive_or(f, "pooled_projection_dim", 768);
  const bool guidance_embeds = f.boolean_or("guidance_embeds", true);
  const auto qk_norm = nullable_string(f, "qk_norm", "rms_norm");

  const double d = double(heads) * head_dim;
  const int mlp = int(d * mlp_ratio);  // Python's int(hidden_size * mlp_ratio)
  const double patch_volume = double(patch_t) * patch * patch;
  const double norm = qk_norm_params(f, qk_norm, head_dim);  // one per-head q or k norm

  const double x_embedder = linear_params(in_channels * patch_volume, d);  // Conv3d, kernel = stride = patch
  const double refiner_block = 2 * layer_norm_params(d) + 4 * linear_params(d, d) +
                               feed_forward_params(d, 4 * d, false) + linear_params(d, 2 * d);
  const double context_embedder = timestep_embedding_params(256, d) + linear_params(text_dim, d) +
                                  linear_params(d, d) + linear_params(text_dim, d) + refiner_layers * refiner_block;
  const double time_text_embed = timestep_embedding_params(256, d) + linear_params(pooled_dim, d) +
                                 linear_params(d, d) + (guidance_embeds ? timestep_embedding_params(256, d) : 0);
  const double double_block = 2 * linear_params(d, 6 * d) + 8 * linear_params(d, d) + 4 * norm +
                              2 * feed_forward_params(d, mlp, false);
  const double single_block =
      3 * linear_params(d, d) + 2 * norm + linear_params(d, 3 * d) + linear_params(d, mlp) + linear_params(d + mlp, d);
  const double norm_out = linear_params(d, 2 * d);
  const double proj_out = linear_params(d, out_channels * patch_volume);

  TransformerShape s;
  s.pipeline = "hunyuanvideo";
  s.blocks = {BlockGroup{.kind = BlockKind::kDouble, .count = double_layers},
              BlockGroup{.kind = BlockKind::kSingle, .count = single_layers}};
  s.heads = heads;
  s.head_dim = head_dim;
  s.ffn_hidden = mlp;
  s.ffn_kind = FfnKind::kGelu;
  s.qk_norm = qk_norm.has_value();
  s.modulation = Modulation::kBlock;
  s.params = x_embedder + context_embedder + time_text_embed + double_layers * double_block +
             single_layers * single_block + norm_out + proj_out;
  s.patch_spatial = patch;
  s.patch_temporal = patch_t;
  s.in_channels = in_channels * int(patch_volume);
  // Without a guidance embedder the pipeline runs one pass unless asked for true CFG.
  s.guidance = guidance_embeds ? Guidance::kDistilled : Guidance::kNone;
  s.summary = fmt::format("{} double + {} single blocks (+{} refiner), {}", double_layers, single_layers,
                          refiner_layers, heads_text(heads, head_dim));
  return s;
}

// ---------------------------------------------------------------------------------------------
// CogVideoXTransformer3DModel (1.0: patch_size_t null, Conv2d patches; 1.5: a Linear over
// patch_size_t x patch_size^2): patch_embed.proj and text_proj (text_embed_dim -> D);
// time_embedding TimestepEmbedding(D, time_embed_dim) (and ofs_embedding for 1.5 I2V); blocks:
// CogVideoXLayerNormZero T -> 6D (+ LayerNorm) twice, attention (q, k, v, out; LayerNorm of q and k
// per head), FeedForward D -> 4D -> D; norm_final; norm_out AdaLayerNorm T -> 2D (+ LayerNorm);
// proj_out.
TransformerShape derive_cogvideox(const ConfigFields& f) {
  const int heads = positive(f, "num_attention_heads");
  const int head_dim = positive(f, "attention_head_dim");
  const int layers = positive(f, "num_layers");
  const int in_channels = positive_or(f, "in_channels", 16);
  const int out_channels = positive_or(f, "out_channels", 16);
  const int patch = positive_or(f, "patch_size", 2);
  const int patch_t = positive_or_none(f, "patch_size_t");  // null for 1.0: Conv2d patches
  const int text_dim = positive_or(f, "text_embed_dim", 4096);
  const int time_dim = positive_or(f, "time_embed_dim", 512);
  const int ofs_dim = positive_or_none(f, "ofs_embed_dim");
  const bool attention_bias = f.boolean_or("attention_bias", true);
  const bool affine = f.boolean_or("norm_elementwise_affine", true);
  const bool patch_bias = f.boolean_or("patch_bias", true);
  const std::string activation = f.string_or("activation_fn", "gelu-approximate");
  const bool learned_positions = f.boolean_or("use_learned_positional_embeddings", false);

  const double d = double(heads) * head_dim;
  const int pt = patch_t ? patch_t : 1;
  const double patch_volume = double(pt) * patch * patch;
  const double ffn = 4 * d;  // FeedForward's default mult; the class passes no inner_dim

  // Conv2d (bias = patch_bias) for 1.0; a Linear with bias for 1.5.
  const double patch_proj = linear_params(in_channels * patch_volume, d, patch_t != 0 || patch_bias);
  const double text_proj = linear_params(text_dim, d);
  double positions = 0;  // the learned table: a persistent buffer of (text + video patches) x D
  if (learned_positions) {
    const int frames = positive_or(f, "sample_frames", 49);
    const int compression = positive_or(f, "temporal_compression_ratio", 4);
    const double patches = double(positive_or(f, "sample_height", 60) / patch) *
                           (positive_or(f, "sample_width", 90) / patch) * ((frames - 1) / compression + 1);
    positions = (f.integer_or("max_text_seq_length", 226) + patches) * d;
  }
  const double time_embedding = timestep_embedding_params(d, time_dim);
  const double ofs_embedding = ofs_dim ? timestep_embedding_params(ofs_dim, ofs_dim) : 0;
  const double layer_norm_zero = linear_params(time_dim, 6 * d) + layer_norm_params(d, affine);
  const double attention = 3 * linear_params(d, d, attention_bias) + linear_params(d, d) +
                           2 * layer_norm_params(head_dim);  // qk_norm="layer_norm", affine
  const double block = 2 * layer_norm_zero + attention + feed_forward_params(d, ffn, gated(activation));
  const double norm_final = layer_norm_params(d, affine);
  const double norm_out = linear_params(time_dim, 2 * d) + layer_norm_params(d, affine);
  const double proj_out = linear_params(d, out_channels * patch_volume);

  TransformerShape s;
  s.pipeline = "cogvideox-5b";
  s.blocks = {BlockGroup{.kind = BlockKind::kSingle, .count = layers, .sequential = true}};
  s.heads = heads;
  s.head_dim = head_dim;
  s.ffn_hidden = int(ffn);
  s.ffn_kind = gated(activation) ? FfnKind::kSwiGlu : FfnKind::kGelu;
  s.qk_norm = true;  // CogVideoXBlock's default, which the model does not change
  s.modulation = Modulation::kExpert;
  s.params = patch_proj + text_proj + positions + time_embedding + ofs_embedding + layers * block + norm_final +
             norm_out + proj_out;
  s.patch_spatial = patch;
  s.patch_temporal = pt;
  s.in_channels = in_channels * int(patch_volume);
  s.summary = fmt::format("{} blocks, {}", layers, heads_text(heads, head_dim));
  return s;
}

// ---------------------------------------------------------------------------------------------
// LTXVideoTransformer3DModel: proj_in in_channels -> D (the pipeline packs patches into channels,
// so in_channels already counts a token's channels); scale_shift_table 2 x D; time_embed
// AdaLayerNormSingle (TimestepEmbedding(256, D), linear D -> 6D); caption_projection
// PixArtAlphaTextProjection(caption_channels, D); blocks: RMSNorm, self-attention, RMSNorm,
// cross-attention (k, v from cross_attention_dim), RMSNorm over all heads of q and k, FeedForward
// D -> 4D -> D, scale_shift_table 6 x D; norm_out (no affine); proj_out D -> out_channels.
TransformerShape derive_ltx_video(const ConfigFields& f) {
  const int heads = positive(f, "num_attention_heads");
  const int head_dim = positive(f, "attention_head_dim");
  const int layers = positive(f, "num_layers");
  const int in_channels = positive_or(f, "in_channels", 128);
  const int out_channels = positive_or(f, "out_channels", 128);
  const int patch = positive_or(f, "patch_size", 1);
  const int patch_t = positive_or(f, "patch_size_t", 1);
  const int cross_dim = positive_or(f, "cross_attention_dim", 2048);
  const int caption_channels = positive_or(f, "caption_channels", 4096);
  const bool attention_bias = f.boolean_or("attention_bias", true);
  const bool attention_out_bias = f.boolean_or("attention_out_bias", true);
  const bool affine = f.boolean_or("norm_elementwise_affine", false);
  const std::string activation = f.string_or("activation_fn", "gelu-approximate");
  const auto qk_norm = nullable_string(f, "qk_norm", "rms_norm_across_heads");

  const double d = double(heads) * head_dim;
  const double ffn = 4 * d;
  const double qk_norms = 2 * qk_norm_params(f, qk_norm, d);

  const double proj_in = linear_params(in_channels, d);
  const double input_table = 2 * d;
  const double time_embed = timestep_embedding_params(256, d) + linear_params(d, 6 * d);
  const double caption_projection = linear_params(caption_channels, d) + linear_params(d, d);
  const double self_attention = 3 * linear_params(d, d, attention_bias) + linear_params(d, d, attention_out_bias) + qk_norms;
  const double cross_attention = linear_params(d, d, attention_bias) + 2 * linear_params(cross_dim, d, attention_bias) +
                                 linear_params(d, d, attention_out_bias) + qk_norms;
  const double block = 2 * (affine ? d : 0) + self_attention + cross_attention +
                       feed_forward_params(d, ffn, gated(activation)) + 6 * d;  // + scale_shift_table
  const double proj_out = linear_params(d, out_channels);

  TransformerShape s;
  s.pipeline = "ltx-video-2b";
  s.blocks = {BlockGroup{.kind = BlockKind::kCross, .count = layers}};
  s.heads = heads;
  s.head_dim = head_dim;
  s.ffn_hidden = int(ffn);
  s.ffn_kind = gated(activation) ? FfnKind::kSwiGlu : FfnKind::kGelu;
  s.qk_norm = qk_norm.has_value();
  s.modulation = Modulation::kTable;
  s.params = proj_in + input_table + time_embed + caption_projection + layers * block + proj_out;
  s.patch_spatial = patch;
  s.patch_temporal = patch_t;
  s.in_channels = in_channels;
  s.summary = fmt::format("{} blocks, {}", layers, heads_text(heads, head_dim));
  return s;
}

constexpr std::array<ClassMapping, 4> kVideoClasses{{
    {"WanTransformer3DModel", derive_wan},
    {"HunyuanVideoTransformer3DModel", derive_hunyuan_video},
    {"CogVideoXTransformer3DModel", derive_cogvideox},
    {"LTXVideoTransformer3DModel", derive_ltx_video},
}};

}  // namespace

std::span<const ClassMapping> video_classes() { return kVideoClasses; }

}  // namespace cpplan::diffusers::detail
