#pragma once
// Model profiles from diffusers checkpoints: a transformer's `config.json` (or a pipeline folder:
// model_index.json, transformer/config.json, the text encoders' and the VAE's configs) mapped to a
// ModelProfile. The transformer's shape and parameter count come from the config's fields through
// the structure of its diffusers class; the pipeline around it (text encoders, VAE, defaults,
// which frameworks run it) from the built-in profile of the same pipeline (the class's template),
// corrected by the folder's encoder and VAE configs when present.

#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/profiles.h"
#include "core/result.h"

namespace cpplan::diffusers {

struct ImportOptions {
  std::string name;    // the profile's name; empty: the folder's (or the config's parent's) name
  std::string source;  // names the config in messages when it is not a file (a Python dict)
};

// A transformer config.json or a pipeline folder. One-line errors name the file and the field:
// a class no mapping knows lists the supported ones; a field the class needs names the class.
Result<ModelProfile> import_profile(const std::string& path, const ProfileCatalog& catalog,
                                    const ImportOptions& options = {});
// A transformer config as JSON text (e.g. `pipe.transformer.config` from Python).
Result<ModelProfile> profile_from_config_text(std::string_view transformer_json, const ProfileCatalog& catalog,
                                              const ImportOptions& options);

}  // namespace cpplan::diffusers
