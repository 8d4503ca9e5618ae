#include "core/sequence.h"

#include <charconv>
#include <fmt/format.h>

#include "core/text.h"

namespace cpplan {

namespace {
constexpr int kMaxSide = 16384;  // pixels; larger is outside every pipeline's range
constexpr int kMaxFrames = 2049;

bool parse_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

Result<Resolution> parse_resolution(std::string_view text) {
  const auto x = text.find_first_of("xX");
  Resolution r;
  if (x == std::string_view::npos || !parse_int(text.substr(0, x), r.width) ||
      !parse_int(text.substr(x + 1), r.height)) {
    return Error{fmt::format("--res = {}: must be WIDTHxHEIGHT in pixels, e.g. 1024x1024", printable(text))};
  }
  if (r.width <= 0 || r.height <= 0)
    return Error{fmt::format("--res = {}: width and height must be positive", text)};
  if (r.width > kMaxSide || r.height > kMaxSide)
    return Error{fmt::format("--res = {}: width and height must be at most {}", text, kMaxSide)};
  return r;
}

std::string nearest_sizes_hint(Resolution res, int step) {
  auto down = [step](int v) { return std::max(step, v / step * step); };
  auto up = [step](int v) { return (v + step - 1) / step * step; };
  const std::string lo = fmt::format("{}x{}", down(res.width), down(res.height));
  const std::string hi = fmt::format("{}x{}", up(res.width), up(res.height));
  return lo == hi ? lo : lo + " or " + hi;
}

Result<Sequence> compute_sequence(const ModelProfile& m, Resolution res, int frames,
                                  int text_tokens) {
  const int g = m.pixel_granularity();
  if (res.width % g != 0 || res.height % g != 0) {
    return Error{fmt::format(
        "--res = {}x{}: width and height must be multiples of {} for {} (VAE {} x patch {}); "
        "nearest valid sizes: {}",
        res.width, res.height, g, m.name, m.vae.spatial, m.patch_spatial,
        nearest_sizes_hint(res, g))};
  }
  Sequence s;
  if (m.video) {
    if (frames < 1 || frames > kMaxFrames)
      return Error{fmt::format("--frames = {}: must be between 1 and {}", frames, kMaxFrames)};
    // diffusers' video pipelines floor the latent frames, (num_frames - 1) // temporal factor + 1
    // (Mochi's prepare_latents, CogVideoX's, HunyuanVideo's, LTX's), and decode
    // (latent - 1) x factor + 1 of them; a temporal patch pads the latent frames up to its multiple
    // (CogVideoX 1.5's additional_frames).
    const long long latent = 1 + (frames - 1) / m.vae.temporal;
    s.latent_frames = (latent + m.patch_temporal - 1) / m.patch_temporal;
    s.decoded_frames = static_cast<int>((s.latent_frames * m.patch_temporal - 1) * m.vae.temporal + 1);
  } else if (frames != 1) {
    return Error{fmt::format("--frames = {}: {} generates images; frames must be 1", frames,
                             m.name)};
  }
  if (text_tokens < 1 || text_tokens > m.max_text_tokens)
    return Error{fmt::format("--text-tokens = {}: must be between 1 and {} for {}", text_tokens,
                             m.max_text_tokens, m.name)};
  s.image_tokens = s.latent_frames * (res.height / g) * (res.width / g);
  s.text_tokens = text_tokens;
  s.attention_tokens =
      s.image_tokens + (m.text_handling == TextHandling::kJoint ? s.text_tokens : 0);
  return s;
}

}  // namespace cpplan
