#pragma once
// Internal to data/: the store's column lists and the helpers its source files share
// (store.cpp: runs; store_measurements.cpp: samples and calibrations; store_merge.cpp: merges).

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "data/sqlite_handle.h"
#include "data/store.h"

namespace cpplan::data::detail {

// The columns of `hardware` and `runs` in one place: binding, reading and the SQL's column lists
// all walk these, so they cannot disagree. `f(column_name, field)`; the order is the key()'s.
template <class Hw, class F>
void hardware_fields(Hw& h, F&& f) {
  f("device_kind", h.device_kind);
  f("gpu_name", h.gpu_name);
  f("gpu_count", h.gpu_count);
  f("cpu_name", h.cpu_name);
  f("cpu_count", h.cpu_count);
  f("driver", h.driver);
  f("cuda", h.cuda);
  f("nccl", h.nccl);
  f("torch", h.torch);
  f("host", h.host);
}

template <class Run, class F>
void run_fields(Run& r, F&& f) {
  f("run_key", r.run_key);
  f("model", r.model);
  f("width", r.width);
  f("height", r.height);
  f("frames", r.frames);
  f("steps", r.steps);
  f("warmup", r.warmup);
  f("dtype", r.dtype);
  f("ring", r.ring);
  f("ulysses", r.ulysses);
  f("tp", r.tp);
  f("cfg", r.cfg);
  f("dp", r.dp);
  f("ulysses_anything", r.ulysses_anything);
  f("ring_anything", r.ring_anything);
  f("rotate_method", r.rotate_method);
  f("convert_to_fp32", r.convert_to_fp32);
  f("attention_backend", r.attention_backend);
  f("world_size", r.world_size);
  f("seed", r.seed);
  f("status", r.status);
  f("error", r.error);
  f("started_at", r.started_at);
  f("finished_at", r.finished_at);
  f("cpplan_version", r.cpplan_version);
  f("step_ms", r.step_ms);
  f("step_ms_p10", r.step_ms_p10);
  f("step_ms_p90", r.step_ms_p90);
  f("steps_per_sec", r.steps_per_sec);
  f("compute_ms", r.compute_ms);
  f("comm_ms", r.comm_ms);
  f("peak_mem_bytes", r.peak_mem_bytes);
  f("bytes_sent", r.bytes_sent);
  f("predicted_step_ms", r.predicted_step_ms);
  f("predicted_steps_per_sec", r.predicted_steps_per_sec);
  f("predicted_peak_mem_bytes", r.predicted_peak_mem_bytes);
  f("predicted_hardware", r.predicted_hardware);
  f("source", r.source);  // schema v3
  f("runtime", r.runtime);
  f("text_encoder", r.text_encoder);
  f("vae", r.vae);
  f("batch", r.batch);
  f("image_ms", r.image_ms);
  f("text_encode_ms", r.text_encode_ms);
  f("vae_decode_ms", r.vae_decode_ms);
  f("predicted_transformer_peak_bytes", r.predicted_transformer_peak_bytes);  // schema v4
  f("pipefusion_degree", r.pipefusion);  // schema v5
  f("num_pipeline_patch", r.pipeline_patches);
  f("pipefusion_warmup_steps", r.pipefusion_warmup_steps);
  f("fs_degree", r.fs);  // schema v7
}

// "a, b, c" of the columns, each prefixed with `prefix`.
template <class Fields>
std::string column_list(Fields&& fields, std::string_view prefix) {
  std::string out;
  fields([&](std::string_view name, const auto&) { out += fmt::format("{}{}{}", out.empty() ? "" : ", ", prefix, name); });
  return out;
}

template <class Fields>
std::string placeholders(Fields&& fields) {
  std::string out;
  fields([&](std::string_view, const auto&) { out += out.empty() ? "?" : ", ?"; });
  return out;
}

inline const auto kAllHardware = [](auto&& f) { HardwareFingerprint h; hardware_fields(h, f); };
inline const auto kAllRun = [](auto&& f) { RunRecord r; run_fields(r, f); };

// Reads the next column into `field`, whatever its type.
struct ColumnReader {
  const sql::Statement& stmt;
  int column;
  template <class T>
  void operator()(std::string_view, T& field) {
    if constexpr (std::is_same_v<T, std::string>) field = stmt.text(column);
    else if constexpr (std::is_same_v<T, bool>) field = stmt.integer(column) != 0;
    else if constexpr (std::is_same_v<T, std::optional<double>>) field = stmt.optional_real(column);
    else field = static_cast<T>(stmt.integer(column));
    ++column;
  }
};

inline Error closed() { return Error{"cpplan store: used after being moved from"}; }

// A read transaction, so that runs() sees one snapshot even while others write.
class ReadTransaction {
 public:
  ReadTransaction(sqlite3* db, const std::string& path) : db_(db), begun_(sql::exec(db, "BEGIN", path, "cannot begin a read")) {}
  ~ReadTransaction() {
    if (begun_ && !sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
  }
  const Result<bool>& begun() const { return begun_; }

 private:
  sqlite3* db_;
  Result<bool> begun_;
};

// Why `hw` cannot be stored, or "".
std::string invalid_hardware(const HardwareFingerprint& hw);

// Inside a write transaction: the id of `hw`'s row, adding the row when the machine is new.
Result<long long> hardware_row(sqlite3* db, const std::string& path, const HardwareFingerprint& hw);

// The id of the machine whose key is `key`, or nullopt when it is unknown.
Result<std::optional<long long>> find_hardware(sqlite3* db, const std::string& path, const std::string& key);

}  // namespace cpplan::data::detail
