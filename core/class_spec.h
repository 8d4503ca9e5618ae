#pragma once
// A diffusers transformer class as data (profiles/classes/<ClassName>.toml, schema in
// docs/profiles.md): its constructor's defaults, and how a checkpoint's config fields become the
// transformer the cost model, the rules and the executor understand (block groups and their kind,
// heads, FFN, modulation, patching, the parameter count from the structure), or the one line
// saying which structure cpplan does not compute yet.

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace cpplan {

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
  bool rope = true;
  Modulation modulation = Modulation::kBlock;
  double params = 0;  // counted from the structure, every weight and bias
  int patch_spatial = 2;
  int patch_temporal = 1;
  int in_channels = 0;  // channels of one token after patchify (latent channels x patch volume)
  std::optional<Guidance> guidance;           // when the config decides it (FLUX's guidance embedder)
  std::optional<TextHandling> text_handling;  // when it differs from the pipeline's
  std::optional<int> text_tokens;             // when the config fixes the text length
  AttentionKind attention = AttentionKind::kSoftmax;
  int experts = 0, active_experts = 0, shared_experts = 0;  // a mixture-of-experts FFN
  int text_hidden = 0, text_ffn_hidden = 0;                  // a narrower text stream (Mochi)
  int ffn_temporal_taps = 0;                                 // a temporal conv after the FFN (SANA-Video)
  ModelProfile::SideCross side_cross;                         // ConsisID's face cross-attention
  std::string summary;  // "19 double + 38 single blocks, 24 x 128 heads" for the description
};

class ClassSpec {
 public:
  struct Data;
  explicit ClassSpec(std::shared_ptr<const Data> data) : data_(std::move(data)) {}
  // One class file; errors name the file and the field.
  static Result<ClassSpec> parse(std::string_view text, const std::string& path);
  static Result<ClassSpec> load(const std::string& path);

  const std::string& name() const;    // the diffusers class, e.g. "PixArtTransformer2DModel"
  const std::string& source() const;  // the file it was read from
  // Set when the class does not plan: the structure cpplan does not compute yet.
  const std::string& missing() const;
  // The built-in profiles its configs may run in (every `pipeline` alternative).
  std::vector<std::string> pipelines() const;
  // The pipeline around the transformer when no built-in profile runs the class: the file's
  // [template] (text encoders, VAE, parallel plan, defaults), used where `pipeline` is empty.
  const std::optional<ModelProfile>& pipeline_template() const;

  // The transformer of `config` (a transformer config.json's object). Errors are one line,
  // "FIELD = VALUE: RULE (CLASS)" or "FIELD: missing (CLASS needs it)".
  Result<TransformerShape> derive(const nlohmann::json& config) const;
  // The transformer of the constructor's defaults (a file's self-check).
  Result<TransformerShape> derive_defaults() const;

 private:
  std::shared_ptr<const Data> data_;
};

}  // namespace cpplan
