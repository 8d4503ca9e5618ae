#include "core/runtime.h"

#include <iterator>
#include <string>

namespace cpplan {

namespace {
constexpr std::string_view kTextEncoderNames[] = {"replicated", "offloaded",     "sequential",
                                                   "sharded",    "fully-sharded", "fully-sharded-host"};
static_assert(std::size(kTextEncoderNames) == kTextEncoderPlacementCount);
constexpr std::string_view kVaeNames[] = {"single", "parallel", "tiled", "sliced"};

template <class E, std::size_t N>
bool from_names(std::string_view s, const std::string_view (&names)[N], E& out) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == s) {
      out = static_cast<E>(i);
      return true;
    }
  return false;
}
}  // namespace

std::string_view to_string(TextEncoderPlacement p) { return kTextEncoderNames[static_cast<int>(p)]; }
std::string_view to_string(VaePlacement p) { return kVaeNames[static_cast<int>(p)]; }
bool text_encoder_placement_from_string(std::string_view s, TextEncoderPlacement& out) {
  return from_names(s, kTextEncoderNames, out);
}
std::string text_encoder_placement_choices() {
  std::string out;
  for (int i = 0; i < kTextEncoderPlacementCount; ++i)
    out += std::string(i == 0 ? "" : i + 1 == kTextEncoderPlacementCount ? " or " : ", ") + std::string(kTextEncoderNames[i]);
  return out;
}
bool vae_placement_from_string(std::string_view s, VaePlacement& out) { return from_names(s, kVaeNames, out); }

}  // namespace cpplan
