// A model profile written back as the TOML of profiles/models/*.toml (schema: docs/profiles.md):
// the file `cpplan profile import -o` writes, read back by load_model_profile to the same profile.
#include <cmath>
#include <cstdint>
#include <sstream>
#include <toml++/toml.h>

#include "core/profiles.h"

namespace cpplan {

namespace {

std::string dtype_name(Bytes b) { return b == 4 ? "fp32" : (b == 1 ? "fp8" : "bf16"); }
std::string str(std::string_view s) { return std::string(s); }
// A parameter count: an integer when it is one (the exact counts), else a float.
void put_count(toml::table& t, std::string_view key, double n) {
  if (n == std::floor(n) && std::abs(n) < 9e18) t.insert_or_assign(key, static_cast<std::int64_t>(n));
  else t.insert_or_assign(key, n);
}

toml::table transformer_table(const ModelProfile& m) {
  toml::array blocks;
  for (const BlockGroup& g : m.blocks) {
    toml::table b{{"kind", str(to_string(g.kind))}, {"count", g.count}};
    if (g.image_self_attention) b.insert("image_self_attention", true);
    if (g.sequential) b.insert("sequential", true);
    if (g.temporal) b.insert("temporal", true);
    if (g.skip) b.insert("skip", true);
    if (g.text_kv_only) b.insert("text_kv_only", true);
    blocks.push_back(std::move(b));
  }
  toml::table t{{"heads", m.heads},
                     {"head_dim", m.head_dim},
                     {"ffn_hidden", m.ffn_hidden},
                     {"ffn", str(to_string(m.ffn_kind))},
                     {"qk_norm", m.qk_norm},
                     {"modulation", str(to_string(m.modulation))},
                     {"dtype", dtype_name(m.bytes_per_param)},
                     {"patch_spatial", m.patch_spatial},
                     {"patch_temporal", m.patch_temporal},
                     {"in_channels", m.in_channels},
                     {"blocks", std::move(blocks)}};
  put_count(t, "params", m.params);
  // The newer structure, written only where it is not the default (older files stay as they were).
  if (m.attention != AttentionKind::kSoftmax) t.insert("attention", str(to_string(m.attention)));
  for (const auto& [key, v] : {std::pair{"experts", m.experts}, {"active_experts", m.active_experts},
                               {"shared_experts", m.shared_experts}, {"text_hidden", m.text_hidden},
                               {"text_ffn_hidden", m.text_ffn_hidden}, {"ffn_temporal_taps", m.ffn_temporal_taps},
                               {"side_cross_every", m.side_cross.every}, {"side_cross_tokens", m.side_cross.tokens},
                               {"side_cross_inner", m.side_cross.inner}, {"side_cross_width", m.side_cross.width}})
    if (v > 0) t.insert(key, v);
  if (m.transformers != 1) t.insert("transformers", m.transformers);
  if (!m.rope) t.insert("rope", false);
  return t;
}

toml::table text_table(const ModelProfile& m) {
  toml::array encoders;
  for (const Component& c : m.text_encoders) {
    toml::table e{{"name", c.name}, {"dtype", dtype_name(c.bytes_per_param)}};
    put_count(e, "params", c.params);
    if (c.layers > 0) e.insert("layers", c.layers);
    if (c.hidden > 0) e.insert("hidden", c.hidden);
    if (c.tokens > 0) e.insert("tokens", c.tokens);
    encoders.push_back(std::move(e));
  }
  return toml::table{{"handling", str(to_string(m.text_handling))},
                     {"tokens", m.text_tokens},
                     {"max_tokens", m.max_text_tokens},
                     {"encoders", std::move(encoders)}};
}

toml::table vae_table(const VaeProfile& v) {
  toml::table t{{"name", v.weights.name},
                     {"dtype", dtype_name(v.weights.bytes_per_param)},
                     {"spatial", v.spatial},
                     {"temporal", v.temporal},
                     {"decode_gflop_per_pixel", v.decode_gflop_per_pixel},
                     {"decode_bytes_per_pixel", v.decode_bytes_per_pixel},
                     {"decode_traffic_bytes_per_pixel", v.decode_traffic_bytes_per_pixel},
                     {"mid_block_attention", v.mid_block_attention},
                     {"sample_size", v.tile_sample_size},
                     {"encode_gflop_per_pixel", v.encode_gflop_per_pixel},
                     {"decoder_convs", v.decoder_convs},
                     {"halo_channels", v.halo_channels}};
  put_count(t, "params", v.weights.params);
  // The derivation's class and structure, stated; the numbers above are what it gave (a written
  // file need not sit beside the config it came from).
  if (!v.class_name.empty()) t.insert("class", v.class_name);
  if (!v.structure.empty()) t.insert("structure", v.structure);
  return t;
}

toml::table parallel_table(const ModelProfile& m) {
  return toml::table{{"cp_split", str(to_string(m.cp_split))}, {"attention_mask", m.attention_mask}};
}

toml::table pipeline_table(const ModelProfile& m) {
  toml::table p{{"video", m.video},
                {"default_width", m.default_width},
                {"default_height", m.default_height},
                {"default_frames", m.default_frames},
                {"default_steps", m.default_steps},
                {"guidance", str(to_string(m.guidance))}};
  if (!m.hf_repo.empty()) p.insert("hf_repo", m.hf_repo);
  if (!m.pipeline_class.empty()) p.insert("pipeline_class", m.pipeline_class);
  if (!m.transformer_class.empty()) p.insert("transformer_class", m.transformer_class);
  if (!m.base.empty()) p.insert("base", m.base);
  return p;
}

}  // namespace

std::string model_profile_toml(const ModelProfile& m) {
  toml::table root{{"name", m.name},
                   {"description", m.description},
                   {"transformer", transformer_table(m)},
                   {"text", text_table(m)},
                   {"vae", vae_table(m.vae)},
                   {"parallel", parallel_table(m)},
                   {"pipeline", pipeline_table(m)}};
  std::ostringstream out;
  out << root << '\n';
  return out.str();
}

}  // namespace cpplan
