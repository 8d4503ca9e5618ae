#pragma once
// End-to-end timings of real pipelines, as people publish or record them: one row per measured
// configuration (model, hardware, runtime, GPUs, size, steps, plan) with its seconds per image or
// ms per step and, optionally, its peak memory. Read from JSON (an array of rows, or an object
// with "points" and per-source "sources" as ../shared/reference/published-flux.json), CSV (a
// header of the same keys) or the JSON lines python/cpplan_record.py writes. Schema:
// docs/calibration.md, "End-to-end timings".

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/parallel_config.h"
#include "core/result.h"
#include "core/runtime.h"

namespace cpplan::costmodel {

struct TimingRow {
  std::string where;      // "file:line" or "file: points[3]", for messages
  std::string source;     // who measured it (the row's "source"; the file name when absent)
  std::string model, hardware, runtime;
  int gpus = 1, width = 0, height = 0, frames = 1;
  int steps = 0;          // 0: not given (a per-step figure)
  int batch = 1;
  int text_tokens = 0;    // 0: the model's
  ParallelConfig config;
  AttentionBackend backend = AttentionBackend::kFlash;
  std::optional<TextEncoderPlacement> text_encoder;  // unset: replicated, as the frameworks load pipelines
  std::optional<VaePlacement> vae;                   // unset: single
  std::optional<double> step_ms, image_ms;           // at least one is set
  std::optional<double> peak_mem_bytes;              // as the source reports it
};

struct TimingImportOptions {
  std::string default_runtime;                           // for rows without one ("" : an error)
  std::map<std::string, std::string> runtime_for_source; // --runtime-for SOURCE=RUNTIME
};

// Parses `text` (the content of `path`; its extension .json, .jsonl or .csv picks the format, and
// JSON lines are recognised by their "cpplan_record" key). Every row is checked; the first bad one
// is an error naming the file, the row, the field, the value and the rule.
Result<std::vector<TimingRow>> parse_timing_rows(std::string_view text, const std::string& path,
                                                 const TimingImportOptions& options);

}  // namespace cpplan::costmodel
