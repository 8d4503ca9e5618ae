#pragma once
// The pipeline around a diffusers transformer, from a pipeline folder: model_index.json names the
// components; the text encoders' transformers config.json files give their parameter counts
// (counted from each architecture's structure), the VAE's config its compression factors and, for
// the classes whose structure is counted, its parameters. What the folder does not say is the
// template profile's, and the profile lists it in `assumptions`.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "core/vae_cost.h"

namespace cpplan::diffusers {

// A component of a pipeline folder: its model_index key ("text_encoder_2"), the class
// model_index gives it, and its config (null when the folder has no config for it).
struct ComponentConfig {
  std::string key;
  std::string class_name;
  nlohmann::json config;
};

struct PipelineConfigs {
  bool folder = false;                        // read from a folder with model_index.json
  std::vector<ComponentConfig> text_encoders; // model_index order: text_encoder, text_encoder_2, ...
  std::optional<ComponentConfig> vae;
  std::optional<ComponentConfig> transformer_2;
};

// A config file as a JSON object; errors: "<file>: cannot read the file", "not valid JSON", "must be
// a JSON object (a diffusers config)".
Result<nlohmann::json> read_config_file(const std::filesystem::path& path);

// model_index.json and the component configs it names. Tokenizers, schedulers and the like are
// ignored; a component listed as [null, null] is absent. Errors: one line naming the file.
Result<PipelineConfigs> read_pipeline_configs(const std::filesystem::path& folder);

// A text encoder counted from its transformers config (architectures[0]); nullopt for an
// architecture cpplan does not count. A missing or mistyped field throws detail::FieldError.
std::optional<Component> text_encoder_from_config(const nlohmann::json& config);

// The VAE's compression and, when its structure is counted, parameters (0: not counted).
struct VaeShape {
  int spatial = 8;
  int temporal = 1;
  double params = 0;
  // The decoder's widest activation, in channels per output pixel: the largest over its layers of
  // the wider of a convolution's input and output channels times the share of the output's pixels
  // (and frames) it runs at (0: not derived).
  double decode_channels_per_pixel = 0;
  bool mid_block_attention = false;  // mid_block_add_attention (AutoencoderKL's default: true)
  int sample_size = 0;               // the tile side of enable_tiling, pixels (0: not in the config)
  std::optional<VaeCost> cost;       // the decode and encode costs, for the classes vae_cost derives
};
// nullopt for a class cpplan does not know.
std::optional<VaeShape> vae_from_config(const nlohmann::json& config);

// The folder's encoders and VAE in `m` (whose pipeline is the template's), each guess stated in
// m.assumptions.
void apply_pipeline_configs(const PipelineConfigs& p, ModelProfile& m);

}  // namespace cpplan::diffusers
