#include "core/diffusers_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "core/diffusers_classes.h"
#include "core/text.h"

namespace cpplan::diffusers {

namespace fs = std::filesystem;
using nlohmann::json;
using detail::ConfigFields;
using detail::FieldError;

// ---- ConfigFields ----------------------------------------------------------------------------

namespace detail {

const json* ConfigFields::find(std::string_view field) const {
  const auto it = config_.find(std::string(field));
  return it == config_.end() || it->is_null() ? nullptr : &*it;
}

bool ConfigFields::has(std::string_view field) const { return find(field) != nullptr; }

void ConfigFields::wrong_type(std::string_view field, std::string_view rule) const {
  throw FieldError{fmt::format("{} = {}: {} ({})", field, find(field)->dump(), rule, class_name_)};
}

int ConfigFields::integer(std::string_view field) const {
  const json* v = find(field);
  if (!v) throw FieldError{fmt::format("{}: missing ({} needs it)", field, class_name_)};
  if (!v->is_number_integer() || v->get<long long>() < 0 || v->get<long long>() > (1LL << 30))
    wrong_type(field, "must be an integer from 0 to 2^30");
  return v->get<int>();
}

int ConfigFields::integer_or(std::string_view field, int fallback) const {
  return has(field) ? integer(field) : fallback;
}

double ConfigFields::number_or(std::string_view field, double fallback) const {
  const json* v = find(field);
  if (!v) return fallback;
  if (!v->is_number()) wrong_type(field, "must be a number");
  return v->get<double>();
}

bool ConfigFields::boolean_or(std::string_view field, bool fallback) const {
  const json* v = find(field);
  if (!v) return fallback;
  if (!v->is_boolean()) wrong_type(field, "must be true or false");
  return v->get<bool>();
}

std::string ConfigFields::string_or(std::string_view field, std::string fallback) const {
  const json* v = find(field);
  if (!v) return fallback;
  if (!v->is_string()) wrong_type(field, "must be a string");
  return v->get<std::string>();
}

std::vector<int> ConfigFields::integers(std::string_view field) const {
  const json* v = find(field);
  if (!v) throw FieldError{fmt::format("{}: missing ({} needs it)", field, class_name_)};
  if (v->is_number_integer()) return {integer(field)};
  std::vector<int> out;
  if (!v->is_array()) wrong_type(field, "must be an integer or an array of integers");
  for (const json& e : *v) {
    if (!e.is_number_integer() || e.get<long long>() < 0 || e.get<long long>() > (1LL << 30))
      wrong_type(field, "must be an array of integers from 0 to 2^30");
    out.push_back(e.get<int>());
  }
  return out;
}

std::vector<int> ConfigFields::integers_or(std::string_view field, std::vector<int> fallback) const {
  return has(field) ? integers(field) : fallback;
}

}  // namespace detail

// ---- reading a checkpoint --------------------------------------------------------------------

namespace {

// The configs of a checkpoint: the transformer's, and, from a pipeline folder, the other
// components' (null when absent).
struct Checkpoint {
  json transformer;
  std::string transformer_source;  // for messages
  std::vector<json> text_encoders; // model_index order (text_encoder, text_encoder_2, ...)
  json vae;
  std::string folder;              // the pipeline folder, when there is one
  std::string default_name;
};

Result<json> read_json_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return Error{fmt::format("{}: cannot read the file", path.string())};
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded()) return Error{fmt::format("{}: not valid JSON", path.string())};
  if (!j.is_object()) return Error{fmt::format("{}: must be a JSON object (a diffusers config)", path.string())};
  return j;
}

// text_encoder, text_encoder_2, ... of a pipeline folder, in that order, where their configs exist.
std::vector<json> folder_text_encoders(const fs::path& folder) {
  std::vector<json> out;
  for (const std::string name : {"text_encoder", "text_encoder_2", "text_encoder_3"}) {
    const fs::path config = folder / name / "config.json";
    if (!fs::is_regular_file(config)) continue;
    if (auto j = read_json_file(config)) out.push_back(std::move(j).value());
  }
  return out;
}

// A name for the profile from the path: the pipeline folder's, else the config file's stem (its
// folder's when the file is a plain config.json).
std::string name_from_path(const fs::path& path) {
  fs::path p = fs::absolute(path).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  if (fs::is_directory(p)) return p.filename().string();
  if (p.stem() != "config") return p.stem().string();
  const fs::path parent = p.parent_path();
  if (parent.filename() == "transformer") return parent.parent_path().filename().string();
  return parent.filename().string();
}

Result<Checkpoint> read_checkpoint(const std::string& path) {
  Checkpoint c;
  c.default_name = name_from_path(path);
  fs::path config = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const fs::path folder = path;
    config = fs::is_regular_file(folder / "transformer" / "config.json") ? folder / "transformer" / "config.json"
                                                                          : folder / "config.json";
    if (!fs::is_regular_file(config))
      return Error{fmt::format("{}: a folder with neither transformer/config.json nor config.json", path)};
    if (fs::is_regular_file(folder / "model_index.json")) {
      c.folder = folder.string();
      c.text_encoders = folder_text_encoders(folder);
      if (auto vae = read_json_file(folder / "vae" / "config.json")) c.vae = std::move(vae).value();
    }
  } else if (!fs::exists(path, ec)) {
    return Error{fmt::format("{}: no such file or folder", path)};
  }
  auto transformer = read_json_file(config);
  if (!transformer) return transformer.error();
  c.transformer = std::move(transformer).value();
  c.transformer_source = config.string();
  return c;
}

// ---- the pipeline around the transformer --------------------------------------------------------

// A text encoder from its transformers config, when its architecture is one whose parameters we
// can count exactly (T5, UMT5, CLIP); nullopt otherwise.
std::optional<Component> text_encoder_from_config(const json& j) {
  const ConfigFields f(j, "text encoder");
  const std::vector<std::string> archs = j.contains("architectures") && j["architectures"].is_array()
                                             ? j["architectures"].get<std::vector<std::string>>()
                                             : std::vector<std::string>{};
  const std::string arch = archs.empty() ? "" : archs.front();
  try {
    Component c;
    c.name = f.string_or("_name_or_path", arch);
    if (arch == "T5EncoderModel" || arch == "UMT5EncoderModel") {
      const double d = f.integer("d_model"), inner = f.integer("num_heads") * f.integer("d_kv");
      const double ff = f.integer("d_ff"), layers = f.integer("num_layers");
      const bool gated = f.string_or("feed_forward_proj", "relu").rfind("gated", 0) == 0;
      const double bias = f.integer_or("relative_attention_num_buckets", 32) * f.integer("num_heads");
      const double layer = 4 * d * inner + d + (gated ? 3 : 2) * d * ff + d;
      // T5 keeps the position bias in its first layer; UMT5 has one per layer.
      c.params = f.integer("vocab_size") * d + layers * layer + (arch == "T5EncoderModel" ? bias : layers * bias) + d;
      c.layers = static_cast<int>(layers);
      c.hidden = static_cast<int>(d);
      return c;
    }
    if (arch == "CLIPTextModel" || arch == "CLIPTextModelWithProjection") {
      const double d = f.integer("hidden_size"), inter = f.integer("intermediate_size");
      const double layers = f.integer("num_hidden_layers"), positions = f.integer_or("max_position_embeddings", 77);
      const double layer = 4 * (d * d + d) + 4 * d + (d * inter + inter) + (inter * d + d);
      c.params = f.integer("vocab_size") * d + positions * d + layers * layer + 2 * d;
      if (arch == "CLIPTextModelWithProjection") c.params += d * f.integer_or("projection_dim", static_cast<int>(d));
      c.layers = static_cast<int>(layers);
      c.hidden = static_cast<int>(d);
      c.tokens = static_cast<int>(positions);
      return c;
    }
  } catch (const FieldError&) {
  }
  return std::nullopt;
}

// The folder's encoders replace the template's when every one of them is counted; otherwise the
// template's stay (its pipeline has the same encoders).
void apply_folder_components(const Checkpoint& c, ModelProfile& m) {
  std::vector<Component> encoders;
  for (const json& j : c.text_encoders) {
    auto e = text_encoder_from_config(j);
    if (!e) return;
    encoders.push_back(std::move(*e));
  }
  if (!encoders.empty()) m.text_encoders = std::move(encoders);
  if (c.vae.is_object() && c.vae.value("_class_name", "") == "AutoencoderKL" && c.vae.contains("block_out_channels") &&
      c.vae["block_out_channels"].is_array() && !c.vae["block_out_channels"].empty())
    m.vae.spatial = 1 << (c.vae["block_out_channels"].size() - 1);
}

// The template profile with the transformer's shape from the config.
ModelProfile join(const ModelProfile& pipeline, const TransformerShape& t) {
  ModelProfile m = pipeline;
  m.blocks = t.blocks;
  m.heads = t.heads;
  m.head_dim = t.head_dim;
  m.ffn_hidden = t.ffn_hidden;
  m.ffn_kind = t.ffn_kind;
  m.qk_norm = t.qk_norm;
  m.modulation = t.modulation;
  m.params = t.params;
  m.patch_spatial = t.patch_spatial;
  m.patch_temporal = t.patch_temporal;
  m.in_channels = t.in_channels;
  if (t.guidance) m.guidance = *t.guidance;
  if (t.text_handling) m.text_handling = *t.text_handling;
  if (t.text_tokens) m.text_tokens = m.max_text_tokens = *t.text_tokens;
  m.attention = t.attention;
  m.experts = t.experts;
  m.active_experts = t.active_experts;
  m.shared_experts = t.shared_experts;
  m.text_hidden = t.text_hidden;
  m.text_ffn_hidden = t.text_ffn_hidden;
  return m;
}

// The config's `_name_or_path` when it is a hub id ("org/name"); a local path or nothing gives ""
// (the snippets then ask for the path): the template's repo holds other weights.
std::string hub_id(const json& config) {
  const std::string p = config.value("_name_or_path", "");
  const bool id = std::count(p.begin(), p.end(), '/') == 1 && p.front() != '/' && p.front() != '.' &&
                  p.back() != '/' && p.find_first_of(" \\~") == std::string::npos;
  return id ? p : "";
}

// The profile's name: --name, else the path's; a default name never replaces a loaded profile.
Result<std::string> profile_name(const ImportOptions& o, const std::string& fallback, const ProfileCatalog& catalog) {
  if (!o.name.empty()) {
    if (catalog.find_model(o.name))
      return Error{fmt::format("--name = {}: a profile of that name is loaded; choose another", o.name)};
    return o.name;
  }
  std::string name = fallback.empty() ? "model-config" : fallback;
  if (catalog.find_model(name)) name += "-config";
  return name;
}

Result<ModelProfile> profile_from_checkpoint(const Checkpoint& c, const ProfileCatalog& catalog,
                                             const ImportOptions& o) {
  const std::string& source = c.transformer_source;
  const auto class_field = c.transformer.find("_class_name");
  const std::string class_name =
      class_field != c.transformer.end() && class_field->is_string() ? class_field->get<std::string>() : "";
  auto spec = catalog.class_spec(class_name);
  if (!spec) return Error{fmt::format("{}: {}", source, spec.error().message)};
  auto derived = spec->derive(c.transformer);
  if (!derived) return Error{printable(fmt::format("{}: {}", source, derived.error().message))};
  const TransformerShape& shape = *derived;
  // The built-in profile of the class's pipeline, else the class file's own template.
  const ModelProfile* pipeline =
      shape.pipeline.empty() ? &*spec->pipeline_template() : catalog.find_model(shape.pipeline);
  if (!pipeline)
    return Error{fmt::format("{}: {} runs in the pipeline of profile {}, which is not loaded", source, class_name,
                             shape.pipeline)};
  auto name = profile_name(o, c.default_name, catalog);
  if (!name) return name.error();
  ModelProfile m = join(*pipeline, shape);
  apply_folder_components(c, m);
  m.name = *name;
  m.base = pipeline->base.empty() ? pipeline->name : pipeline->base;
  m.description = fmt::format("{} from {} ({}), pipeline of {}", shape.summary, source, class_name,
                              shape.pipeline.empty() ? spec->source() : pipeline->name);
  m.hf_repo = !c.folder.empty() ? c.folder : hub_id(c.transformer);  // from_pretrained reads a local folder
  // The profile a file would hold: the same rules as a hand-written one, then the same values.
  auto checked = parse_model_profile(model_profile_toml(m), m.name + ".toml");
  if (!checked) return Error{fmt::format("{}: the derived profile breaks a rule: {}", source, checked.error().message)};
  ModelProfile out = std::move(checked).value();
  out.source = source;
  return out;
}

}  // namespace

Result<ModelProfile> import_profile(const std::string& path, const ProfileCatalog& catalog,
                                    const ImportOptions& options) {
  auto c = read_checkpoint(path);
  if (!c) return c.error();
  return profile_from_checkpoint(*c, catalog, options);
}

Result<ModelProfile> profile_from_config_text(std::string_view transformer_json, const ProfileCatalog& catalog,
                                              const ImportOptions& options) {
  Checkpoint c;
  c.transformer_source = options.source.empty() ? "model_config" : options.source;
  c.transformer = json::parse(transformer_json, nullptr, false);
  if (c.transformer.is_discarded() || !c.transformer.is_object())
    return Error{fmt::format("{}: must be a JSON object (a diffusers transformer config)", c.transformer_source)};
  c.default_name = c.transformer.value("_name_or_path", "");
  if (c.default_name.find_first_of("/\\ ") != std::string::npos) c.default_name = fs::path(c.default_name).filename();
  return profile_from_checkpoint(c, catalog, options);
}

}  // namespace cpplan::diffusers
