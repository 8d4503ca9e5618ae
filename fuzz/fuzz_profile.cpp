// Model, hardware and runtime profiles and fits (TOML, docs/profiles.md) from their text, as if
// read from models/fuzz.toml, hardware/fuzz.toml, runtimes/fuzz.toml and fits/fuzz.toml (so a
// profile named "fuzz" passes the name rule).
// Checks: every error is one line; a model that loads can denoise its own default size, frames
// and text tokens; a hardware profile that loads keeps some memory free; a runtime that loads has
// non-negative costs; a fit that loads writes TOML that loads back to the same values.

#include <cstdint>
#include <fmt/format.h>
#include <string_view>

#include "core/profiles.h"
#include "core/sequence.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace cpplan;
using cpplan::fuzz::check;
using cpplan::fuzz::fail;

void check_model(std::string_view text) {
  const auto m = parse_model_profile(text, "models/fuzz.toml");
  check("parse_model_profile", m);
  if (!m) return;
  if (m->name != "fuzz" || m->blocks.empty() || m->pixel_granularity() < 1)
    fail("a loaded model breaks its own schema", m->name);
  const auto s = compute_sequence(*m, {m->default_width, m->default_height}, m->default_frames, m->text_tokens);
  check("compute_sequence", s);
  if (!s) fail("a loaded model cannot denoise its own default size", s.error().message);
  if (s->image_tokens < 1 || s->total() < s->image_tokens) fail("empty sequence of a default size", "");
}

void check_hardware(std::string_view text) {
  const auto h = parse_hardware_profile(text, "hardware/fuzz.toml");
  check("parse_hardware_profile", h);
  if (!h) return;
  if (h->name != "fuzz" || !(h->memory_mib > h->reserved_mib) || !(h->bf16_tflops > 0))
    fail("a loaded hardware profile breaks its own schema", fmt::format("{} {} {}", h->memory_mib, h->reserved_mib, h->bf16_tflops));
}

void check_runtime(std::string_view text) {
  const auto r = parse_runtime_profile(text, "runtimes/fuzz.toml");
  check("parse_runtime_profile", r);
  if (!r) return;
  if (r->name != "fuzz" || r->us_per_op < 0 || r->sync_us < 0 || !(r->elementwise_traffic > 0))
    fail("a loaded runtime breaks its own schema", r->name);
}

void check_fit(std::string_view text) {
  const auto f = parse_runtime_fit(text, "fits/fuzz.toml");
  check("parse_runtime_fit", f);
  if (!f) return;
  const auto again = parse_runtime_fit(to_toml(*f), "fits/fuzz.toml");
  check("parse_runtime_fit(to_toml)", again);
  if (!again) fail("a loaded fit's TOML does not load back", again.error().message);
  if (again->runtimes.size() != f->runtimes.size() || again->architectures.size() != f->architectures.size() ||
      again->links.size() != f->links.size())
    fail("a loaded fit's TOML loads back different", f->name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  cpplan::fuzz::no_throw("model profile", [&] { check_model(text); });
  cpplan::fuzz::no_throw("hardware profile", [&] { check_hardware(text); });
  cpplan::fuzz::no_throw("runtime profile", [&] { check_runtime(text); });
  cpplan::fuzz::no_throw("fit", [&] { check_fit(text); });
  return 0;
}
