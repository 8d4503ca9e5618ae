#include "data/pipeline_timings.h"

#include <fmt/format.h>

namespace cpplan::data {

std::vector<costmodel::TimingRow> pipeline_timings(const std::vector<StoredRun>& runs, const std::string& db) {
  std::vector<costmodel::TimingRow> rows;
  for (const StoredRun& s : runs) {
    const RunRecord& r = s.run;
    if (r.source != "pipeline" || r.status != "ok" || !r.step_ms) continue;
    costmodel::TimingRow row;
    row.where = fmt::format("{}: run {}", db, s.id);
    row.source = "pipeline";
    row.model = r.model;
    // import-runs keeps the line's hardware profile in predicted_hardware.
    row.hardware = !r.predicted_hardware.empty() ? r.predicted_hardware : "gpu:" + s.hardware.gpu_name;
    row.runtime = r.runtime;
    row.gpus = r.world_size;
    row.width = r.width;
    row.height = r.height;
    row.frames = r.frames;
    row.steps = r.steps;
    row.batch = r.batch;
    row.config = parallel_config(r);
    TextEncoderPlacement te{};
    if (text_encoder_placement_from_string(r.text_encoder, te)) row.text_encoder = te;
    VaePlacement vae{};
    if (vae_placement_from_string(r.vae, vae)) row.vae = vae;
    row.step_ms = r.step_ms;
    row.peak_mem_bytes = r.peak_mem_bytes;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace cpplan::data
