#pragma once
// The two runs inside tests/data/store-v1.db. That file was written once by the schema-v1 store
// (commit 93d001c, before schema v2 existed) from exactly these records, then committed; it is
// never regenerated, since newer code would write a newer schema. The migration test reads it
// back and compares field for field with these functions, so they must not change either.

#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "data/store.h"

namespace cpplan::test::v1_fixture {

inline data::HardwareFingerprint gpu_node() {
  data::HardwareFingerprint hw;
  hw.device_kind = "cuda";
  hw.gpu_name = "NVIDIA H100 80GB HBM3";
  hw.gpu_count = 4;
  hw.cpu_name = "Intel Xeon Platinum 8480+";
  hw.cpu_count = 112;
  hw.driver = "550.54.15";
  hw.cuda = "12.4";
  hw.nccl = "2.20.5";
  hw.torch = "2.4.0";
  hw.host = "gpu-node-03";
  return hw;
}

inline data::HardwareFingerprint cpu_box() {
  data::HardwareFingerprint hw;
  hw.device_kind = "cpu";
  hw.cpu_name = "AMD Ryzen 9 7950X";
  hw.cpu_count = 32;
  hw.torch = "2.4.0";
  hw.host = "workstation";
  return hw;
}

// Every field set, values that test exact round trips (0.1 + 0.2, LLONG_MIN, quotes).
inline data::RunRecord gpu_run() {
  data::RunRecord r;
  r.run_key = "flux.1-dev|1024x1024|r2u2";
  r.model = "flux.1-dev";
  r.width = 1024;
  r.height = 1024;
  r.frames = 1;
  r.steps = 28;
  r.warmup = 2;
  r.dtype = "bf16";
  r.ring = 2;
  r.ulysses = 2;
  r.tp = 1;
  r.cfg = 1;
  r.dp = 1;
  r.ulysses_anything = false;
  r.ring_anything = true;
  r.rotate_method = "p2p";
  r.convert_to_fp32 = false;
  r.attention_backend = "flash";
  r.world_size = 4;
  r.seed = LLONG_MIN;
  r.status = "ok";
  r.error = "";
  r.started_at = "2025-10-02T08:15:00Z";
  r.finished_at = "2025-10-02T08:16:12Z";
  r.cpplan_version = "0.1.0";
  r.step_ms = 0.1 + 0.2;
  r.step_ms_p10 = 251.5;
  r.step_ms_p90 = 262.25;
  r.steps_per_sec = 3.9;
  r.compute_ms = 201.125;
  r.comm_ms = 48.0;
  r.peak_mem_bytes = 61234567890.0;
  r.bytes_sent = 1.5e9;
  r.predicted_step_ms = 249.75;
  r.predicted_steps_per_sec = 4.004;
  r.predicted_peak_mem_bytes = 6.0e10;
  r.predicted_hardware = "h100-sxm";
  r.step_times_ms = {255.5, 254.25, 1.0 / 3.0};
  r.metrics = {{"rank1.peak_mem_bytes", 6.1e10}, {"rank0.comm_ms", 47.5}};
  return r;
}

// A failed run: optional numbers absent, an error text with quotes.
inline data::RunRecord cpu_run() {
  data::RunRecord r;
  r.run_key = "flux-tiny|128x128|u2";
  r.model = "flux-tiny";
  r.width = 128;
  r.height = 128;
  r.steps = 4;
  r.warmup = 1;
  r.dtype = "fp32";
  r.ulysses = 2;
  r.attention_backend = "native";
  r.world_size = 2;
  r.seed = 7;
  r.status = "failed";
  r.error = "rank 1: connection reset; it's \"gone\"";
  r.started_at = "2025-10-03T10:00:00Z";
  r.finished_at = "2025-10-03T10:00:03Z";
  r.cpplan_version = "0.1.0";
  r.predicted_step_ms = 12.5;
  r.predicted_hardware = "h100-sxm";
  return r;
}

// In the order they were recorded (ids 1 and 2).
inline std::vector<std::pair<data::HardwareFingerprint, data::RunRecord>> runs() {
  return {{gpu_node(), gpu_run()}, {cpu_box(), cpu_run()}};
}

}  // namespace cpplan::test::v1_fixture
