#pragma once
// Internal to core/diffusers_*.cpp: how one diffusers transformer class maps to a profile's
// transformer. Each class file (diffusers_image.cpp, diffusers_video.cpp) lists its mappings;
// diffusers_config.cpp reads the configs and joins a mapping's shape to its pipeline template.

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"

namespace cpplan::diffusers::detail {

// A field a class needs is missing or has the wrong type: thrown by ConfigFields, caught by the
// importer, which prefixes the file. `message` is "FIELD = VALUE: RULE" or "FIELD: missing (...)".
struct FieldError {
  std::string message;
};

// Typed access to a config's fields; a required field that is absent or mistyped throws
// FieldError naming the field and the class that needs it.
class ConfigFields {
 public:
  ConfigFields(const nlohmann::json& config, std::string class_name)
      : config_(config), class_name_(std::move(class_name)) {}
  const std::string& class_name() const { return class_name_; }
  bool has(std::string_view field) const;  // present and not null
  int integer(std::string_view field) const;
  int integer_or(std::string_view field, int fallback) const;
  double number_or(std::string_view field, double fallback) const;
  bool boolean_or(std::string_view field, bool fallback) const;
  std::string string_or(std::string_view field, std::string fallback) const;
  // An integer array (or, where a class accepts both, one integer as a one-element array).
  std::vector<int> integers(std::string_view field) const;
  std::vector<int> integers_or(std::string_view field, std::vector<int> fallback) const;
  const nlohmann::json& config() const { return config_; }

 private:
  const nlohmann::json* find(std::string_view field) const;
  [[noreturn]] void wrong_type(std::string_view field, std::string_view rule) const;
  const nlohmann::json& config_;
  std::string class_name_;
};

// What a class's config says of the transformer; the rest of the profile comes from `pipeline`,
// the built-in profile of the pipeline this class runs in.
struct TransformerShape {
  std::string pipeline;  // built-in profile name, e.g. "flux.1-dev"
  std::vector<BlockGroup> blocks;
  int heads = 0;
  int head_dim = 0;
  int ffn_hidden = 0;
  FfnKind ffn_kind = FfnKind::kGelu;
  bool qk_norm = true;
  Modulation modulation = Modulation::kBlock;
  double params = 0;  // counted from the structure, every weight and bias
  int patch_spatial = 2;
  int patch_temporal = 1;
  int in_channels = 0;  // channels of one token after patchify (latent channels x patch volume)
  std::optional<Guidance> guidance;  // when the config decides it (FLUX's guidance embedder)
  std::string summary;  // "19 double + 38 single blocks, 24 x 128 heads" for the description
};

using DeriveShape = TransformerShape (*)(const ConfigFields&);
struct ClassMapping {
  std::string_view class_name;
  DeriveShape derive;
};
std::span<const ClassMapping> image_classes();
std::span<const ClassMapping> video_classes();

// Parameters of common layers (weights and biases), as torch counts them.
inline double linear_params(double in, double out, bool bias = true) { return in * out + (bias ? out : 0); }
inline double layer_norm_params(double dim, bool affine = true, bool bias = true) {
  return affine ? dim * (bias ? 2 : 1) : 0;
}
// diffusers' TimestepEmbedding(in, dim): linear_1 in -> dim, linear_2 dim -> dim.
inline double timestep_embedding_params(double in, double dim) {
  return linear_params(in, dim) + linear_params(dim, dim);
}
// FeedForward(dim, mult/inner) with activation "gelu", "gelu-approximate" (one up projection) or
// "geglu"/"swiglu" (up projection to 2 x inner), and the down projection.
inline double feed_forward_params(double dim, double inner, bool gated, bool bias = true) {
  return linear_params(dim, gated ? 2 * inner : inner, bias) + linear_params(inner, dim, bias);
}

}  // namespace cpplan::diffusers::detail
