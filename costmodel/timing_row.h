#pragma once
// One end-to-end timing of a real pipeline: a measured configuration (model, hardware, runtime,
// GPUs, size, steps, plan) with its seconds per image or ms per step and, optionally, its peak
// memory. The runtime fit (planner/runtime_calibration.h) takes these rows; they are read from
// files by imports/timing_rows.h and from the store's pipeline runs by data/pipeline_timings.h.
// A plain struct: no parsing here.

#include <optional>
#include <string>

#include "core/parallel_config.h"
#include "core/runtime.h"

namespace cpplan::costmodel {

struct TimingRow {
  std::string where;      // "file:line" or "file: points[3]", for messages
  std::string source;     // who measured it (the row's "source"; the file name when absent)
  std::string model, hardware, runtime;
  std::string model_config;  // a diffusers transformer config the row's model is derived from ("" : model is a profile)
  int gpus = 1, width = 0, height = 0, frames = 1;
  int steps = 0;          // 0: not given (a per-step figure)
  int batch = 1;
  int text_tokens = 0;    // 0: the model's
  std::string box;        // the machine in words, as the source describes it ("" : not given)
  std::string topology;   // a topology profile the row ran on ("" : the hardware's own node)
  ParallelConfig config;
  AttentionBackend backend = AttentionBackend::kFlash;
  std::optional<TextEncoderPlacement> text_encoder;  // unset: replicated, as the frameworks load pipelines
  std::optional<VaePlacement> vae;                   // unset: single
  std::optional<double> step_ms, image_ms;           // at least one is set
  std::optional<double> peak_mem_bytes;              // as the source reports it
  bool compiled = false;  // torch.compile on (the row's "compiled"): the compiled runtime unless mapped otherwise
  bool oom = false;       // the run did not fit: not a timing (the fit skips it)
};

}  // namespace cpplan::costmodel
