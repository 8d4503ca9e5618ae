#pragma once
// Sequence lengths of one forward pass from a model and a requested size
// (shared/spec/parallelism.md, "Sequence length per model").

#include <string>
#include <string_view>

#include "core/model.h"
#include "core/result.h"

namespace cpplan {

struct Resolution {
  int width = 0;   // pixels
  int height = 0;  // pixels
};

struct Sequence {
  long long latent_frames = 1;   // token frames: ceil((1 + (F - 1) // VAE factor) / temporal patch) (1 for images)
  int decoded_frames = 1;        // the frames the pipeline decodes: F when F - 1 is a multiple of the factors
  long long image_tokens = 0;    // image or video tokens (S_img)
  long long text_tokens = 0;     // S_txt
  // attention sequence of the self-attention: S_img + S_txt for joint models, S_img for
  // cross-attention models (their text enters as cross-attention K/V only)
  long long total() const { return attention_tokens; }
  long long attention_tokens = 0;
};

// Parses "WxH" (e.g. "1008x1008"); the error names the flag and the expected form.
Result<Resolution> parse_resolution(std::string_view text);

// Checks that the size is one the model can denoise: width and height multiples of
// VAE factor x patch size, frames from 1 to 2049 for video models (diffusers floors the
// latent frames, so any count runs; decoded_frames says what it decodes), 1 for image models.
// The message names the nearest valid sizes.
Result<Sequence> compute_sequence(const ModelProfile& model, Resolution res, int frames,
                                  int text_tokens);

// Nearest multiples of `step` below and above `value` (below >= step).
std::string nearest_sizes_hint(Resolution res, int step);

}  // namespace cpplan
