#include "core/diffusers_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "core/diffusers_classes.h"
#include "core/pipeline_components.h"
#include "core/text.h"

namespace cpplan::diffusers {

namespace fs = std::filesystem;
using nlohmann::json;

Result<json> read_config_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return Error{fmt::format("{}: cannot read the file", path.string())};
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded()) return Error{fmt::format("{}: not valid JSON", path.string())};
  if (!j.is_object()) return Error{fmt::format("{}: must be a JSON object (a diffusers config)", path.string())};
  return j;
}

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
  PipelineConfigs pipeline;        // model_index.json's components, when there is one
  std::string folder;              // the pipeline folder, when there is one
  std::string default_name;
};


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
      auto pipeline = read_pipeline_configs(folder);
      if (!pipeline) return pipeline.error();
      c.pipeline = std::move(pipeline).value();
    }
  } else if (!fs::exists(path, ec)) {
    return Error{fmt::format("{}: no such file or folder", path)};
  }
  auto transformer = read_config_file(config);
  if (!transformer) return transformer.error();
  c.transformer = std::move(transformer).value();
  c.transformer_source = config.string();
  return c;
}

// ---- the pipeline around the transformer --------------------------------------------------------

bool same_shape(const TransformerShape& a, const TransformerShape& b) {
  auto same_group = [](const BlockGroup& x, const BlockGroup& y) { return x.kind == y.kind && x.count == y.count; };
  return a.heads == b.heads && a.head_dim == b.head_dim && a.ffn_hidden == b.ffn_hidden && a.params == b.params &&
         a.in_channels == b.in_channels && a.blocks.size() == b.blocks.size() &&
         std::equal(a.blocks.begin(), a.blocks.end(), b.blocks.begin(), same_group);
}

std::string shape_summary(const std::string& key, const TransformerShape& t) {
  int blocks = 0;
  for (const BlockGroup& g : t.blocks) blocks += g.count;
  return fmt::format("{} ({} blocks, {} heads x {}, FFN {}, {} parameters)", key, blocks, t.heads, t.head_dim,
                     t.ffn_hidden, t.params);
}

// A pipeline's second transformer (Wan2.2 A14B's low-noise expert): the same class and shape as
// the first, else refused; without its config, assumed the same (and said so).
std::optional<Error> apply_transformer_2(const Checkpoint& c, const ClassSpec& spec, const TransformerShape& first,
                                         ModelProfile& m) {
  if (!c.pipeline.transformer_2) return std::nullopt;
  m.transformers = 2;
  const json& config = c.pipeline.transformer_2->config;
  if (config.is_null()) {
    m.assumptions.push_back("transformer_2: the folder has no transformer_2/config.json; assumed the shape of transformer");
    return std::nullopt;
  }
  const std::string file = (fs::path(c.folder) / "transformer_2" / "config.json").string();
  const auto cls = config.find("_class_name");
  if (cls == config.end() || *cls != spec.name())
    return Error{printable(fmt::format("{}: _class_name = {}: must be transformer's class, {}", file,
                                       cls == config.end() ? "(none)" : cls->dump(), spec.name()))};
  auto second = spec.derive(config);
  if (!second) return Error{printable(fmt::format("{}: {}", file, second.error().message))};
  if (same_shape(*second, first)) return std::nullopt;
  return Error{fmt::format("{}: {} differs from {}: cpplan plans two transformers of one shape only", file,
                           shape_summary("transformer_2", *second), shape_summary("transformer", first))};
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
  m.rope = t.rope;
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
  m.ffn_temporal_taps = t.ffn_temporal_taps;
  m.side_cross = t.side_cross;
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
  apply_pipeline_configs(c.pipeline, m);
  if (auto refused = apply_transformer_2(c, *spec, shape, m)) return *refused;
  m.name = *name;
  m.base = pipeline->base.empty() ? pipeline->name : pipeline->base;
  m.transformer_class = class_name;
  m.description = fmt::format("{} from {} ({}), pipeline of {}", shape.summary, source, class_name,
                              shape.pipeline.empty() ? spec->source() : pipeline->name);
  m.hf_repo = !c.folder.empty() ? c.folder : hub_id(c.transformer);  // from_pretrained reads a local folder
  // The profile a file would hold: the same rules as a hand-written one, then the same values.
  auto checked = parse_model_profile(model_profile_toml(m), m.name + ".toml");
  if (!checked) return Error{fmt::format("{}: the derived profile breaks a rule: {}", source, checked.error().message)};
  ModelProfile out = std::move(checked).value();
  out.source = source;
  out.assumptions = m.assumptions;  // not a profile field: stated, not written
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
