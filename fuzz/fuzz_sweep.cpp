// Sweep files (`cpplan sweep FILE`, session/jobs/sweep_file.h) from their text, over the built-in
// profiles. Checks: every error is one line; every run of a sweep that loads names a known
// model, a size the model accepts, a positive GPU count equal to its plan's world size, a label
// and the arguments of `cpplan run`.

#include <cstdint>
#include <string_view>

#include "session/jobs/sweep_file.h"
#include "core/profiles.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace cpplan;
using cpplan::fuzz::check;
using cpplan::fuzz::fail;

const ProfileCatalog& catalog() { return cpplan::fuzz::builtin_catalog(); }

void check_sweep(std::string_view text) {
  const auto runs = session::parse_sweep(text, "sweep.toml", catalog());
  check("parse_sweep", runs);
  if (!runs) return;
  for (const session::SweepRun& r : *runs) {
    const ModelProfile* m = catalog().find_model(r.model);
    if (!m) fail("a run of an unknown model", r.model);
    if (!compute_sequence(*m, r.size, r.frames, m->text_tokens)) fail("a run of a size its model rejects", r.resolution);
    if (r.gpus < 1 || r.gpus != r.config.world_size()) fail("a run's GPU count is not its plan's world size", r.label);
    if (r.label.empty() || r.run_args.empty() || r.steps < 1) fail("a run without label, arguments or steps", r.model);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  cpplan::fuzz::no_throw("sweep file", [&] { check_sweep(text); });
  return 0;
}
