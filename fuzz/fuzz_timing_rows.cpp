// End-to-end timings for `cpplan calibrate --import` (imports/timing_rows.h) from their text,
// as JSON, CSV and the recorder's JSON lines (the file name's extension picks the format).
// Checks: every error is one line; every row read has a model, a hardware, a runtime, GPUs equal
// to the product of its degrees, a size, and a positive timing (a per-image one with its steps).

#include <cstdint>
#include <fmt/format.h>
#include <string_view>

#include "imports/timing_rows.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace cpplan;
using cpplan::fuzz::check;
using cpplan::fuzz::fail;

void check_rows(std::string_view text, const std::string& path) {
  imports::TimingImportOptions options;
  options.runtime_for_source["fuzz"] = "diffusers";
  const auto rows = imports::parse_timing_rows(text, path, options);
  check("parse_timing_rows", rows);
  if (!rows) return;
  for (const auto& r : *rows) {
    if (r.model.empty() || r.hardware.empty() || r.runtime.empty())
      fail("a row read without its model, hardware or runtime", r.where);
    if (r.config.world_size() != r.gpus) fail("a row read whose GPUs are not its degrees' product", r.where);
    if (r.width < 1 || r.height < 1) fail("a row read without a size", r.where);
    if (!r.step_ms && !r.image_ms) fail("a row read without a timing", r.where);
    if ((r.step_ms && !(*r.step_ms > 0)) || (r.image_ms && (!(*r.image_ms > 0) || r.steps < 1)))
      fail("a row read with a timing that is not positive, or per image without steps", r.where);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const char* path : {"timings.json", "timings.csv", "runs.jsonl"})
    cpplan::fuzz::no_throw(path, [&] { check_rows(text, path); });
  return 0;
}
