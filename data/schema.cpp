#include "data/schema.h"

#include <array>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>

#include "data/sqlite_handle.h"

namespace cpplan::data::schema {

namespace fs = std::filesystem;

namespace {

// v1: machines, runs (configuration, outcome, measured and predicted numbers side by side) and
// per-run metrics (every timed step as name 'step_ms' with its index, named extras with step NULL).
constexpr std::string_view kV1 = R"sql(
CREATE TABLE hardware (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  device_kind TEXT NOT NULL,
  gpu_name TEXT NOT NULL,
  gpu_count INTEGER NOT NULL,
  cpu_name TEXT NOT NULL,
  cpu_count INTEGER NOT NULL,
  driver TEXT NOT NULL,
  cuda TEXT NOT NULL,
  nccl TEXT NOT NULL,
  torch TEXT NOT NULL,
  host TEXT NOT NULL
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  run_key TEXT NOT NULL,
  hardware_id INTEGER NOT NULL REFERENCES hardware(id),
  model TEXT NOT NULL,
  width INTEGER NOT NULL,
  height INTEGER NOT NULL,
  frames INTEGER NOT NULL,
  steps INTEGER NOT NULL,
  warmup INTEGER NOT NULL,
  dtype TEXT NOT NULL,
  ring INTEGER NOT NULL,
  ulysses INTEGER NOT NULL,
  tp INTEGER NOT NULL,
  cfg INTEGER NOT NULL,
  dp INTEGER NOT NULL,
  ulysses_anything INTEGER NOT NULL,
  ring_anything INTEGER NOT NULL,
  rotate_method TEXT NOT NULL,
  convert_to_fp32 INTEGER NOT NULL,
  attention_backend TEXT NOT NULL,
  world_size INTEGER NOT NULL,
  seed INTEGER NOT NULL,
  status TEXT NOT NULL,
  error TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT NOT NULL,
  cpplan_version TEXT NOT NULL,
  step_ms REAL,
  step_ms_p10 REAL,
  step_ms_p90 REAL,
  steps_per_sec REAL,
  compute_ms REAL,
  comm_ms REAL,
  peak_mem_bytes REAL,
  bytes_sent REAL,
  predicted_step_ms REAL,
  predicted_steps_per_sec REAL,
  predicted_peak_mem_bytes REAL,
  predicted_hardware TEXT NOT NULL
);
CREATE INDEX runs_run_key ON runs(run_key);
CREATE INDEX runs_model ON runs(model);
CREATE INDEX runs_hardware_id ON runs(hardware_id);
CREATE TABLE run_metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  step INTEGER,
  value REAL NOT NULL
);
CREATE INDEX run_metrics_run_id ON run_metrics(run_id);
)sql";

// v2: measured collective and kernel timings per machine (costmodel/measurements.h; `source` is
// 'probe' or 'nccl-tests') and the versioned calibrations fitted on them (costmodel/calibration.h;
// features and coefficients as JSON arrays). The lookup indexes serve the merge's duplicate checks.
constexpr std::string_view kV2 = R"sql(
CREATE TABLE collective_samples (
  id INTEGER PRIMARY KEY,
  hardware_id INTEGER NOT NULL REFERENCES hardware(id),
  kind TEXT NOT NULL,
  ranks INTEGER NOT NULL,
  uneven INTEGER NOT NULL,
  bytes REAL NOT NULL,
  time_us REAL NOT NULL,
  algbw_gbps REAL NOT NULL,
  busbw_gbps REAL NOT NULL,
  source TEXT NOT NULL,
  recorded_at TEXT NOT NULL
);
CREATE INDEX collective_samples_lookup ON collective_samples(hardware_id, kind, ranks, bytes);
CREATE TABLE kernel_samples (
  id INTEGER PRIMARY KEY,
  hardware_id INTEGER NOT NULL REFERENCES hardware(id),
  kind TEXT NOT NULL,
  shape TEXT NOT NULL,
  flops REAL NOT NULL,
  bytes REAL NOT NULL,
  rows REAL NOT NULL,
  concurrent_ranks INTEGER NOT NULL,
  time_us REAL NOT NULL,
  recorded_at TEXT NOT NULL
);
CREATE INDEX kernel_samples_lookup ON kernel_samples(hardware_id, kind, shape);
CREATE TABLE calibrations (
  id INTEGER PRIMARY KEY,
  hardware_id INTEGER NOT NULL REFERENCES hardware(id),
  version INTEGER NOT NULL,
  fitted_at TEXT NOT NULL,
  features TEXT NOT NULL,
  coefficients TEXT NOT NULL,
  runs INTEGER NOT NULL,
  folds INTEGER NOT NULL,
  mape_before REAL NOT NULL,
  mape_after REAL NOT NULL,
  rank_corr_before REAL NOT NULL,
  rank_corr_after REAL NOT NULL,
  UNIQUE (hardware_id, version)
);
)sql";

// v3: runs measured outside cpplan's executor, in a user's own pipeline (python/cpplan_record.py,
// imported by `cpplan import-runs`): where the run came from ('executor' | 'pipeline'), the runtime
// that ran it (diffusers, xdit, compiled, cpplan), where the text encoder and the VAE ran, the
// images per call, and the whole image's, text encoding's and VAE decode's times. Existing rows
// are executor runs of one image.
constexpr std::string_view kV3 = R"sql(
ALTER TABLE runs ADD COLUMN source TEXT NOT NULL DEFAULT 'executor';
ALTER TABLE runs ADD COLUMN runtime TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN text_encoder TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN vae TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN batch INTEGER NOT NULL DEFAULT 1;
ALTER TABLE runs ADD COLUMN image_ms REAL;
ALTER TABLE runs ADD COLUMN text_encode_ms REAL;
ALTER TABLE runs ADD COLUMN vae_decode_ms REAL;
)sql";

// v4: the prediction of the transformer's denoising loop alone (its weights and activations per
// GPU), the quantity cpplan's executor measures as peak_mem_bytes, beside the whole pipeline's
// predicted peak (text encoders, VAE, runtime reserve) that predicted_peak_mem_bytes holds. Runs
// recorded before it have none (NULL): their measured peak has nothing like to compare with.
constexpr std::string_view kV4 = R"sql(
ALTER TABLE runs ADD COLUMN predicted_transformer_peak_bytes REAL;
)sql";

// v5: PipeFusion, xDiT's patch pipeline (core/parallel_config.h): its stages, patches and
// synchronous warm-up steps. Runs recorded before it ran without it: (1, 1, 0).
constexpr std::string_view kV5 = R"sql(
ALTER TABLE runs ADD COLUMN pipefusion_degree INTEGER NOT NULL DEFAULT 1;
ALTER TABLE runs ADD COLUMN num_pipeline_patch INTEGER NOT NULL DEFAULT 1;
ALTER TABLE runs ADD COLUMN pipefusion_warmup_steps INTEGER NOT NULL DEFAULT 0;
)sql";

// v6: the nodes a collective sample's ranks sat on (imports of multi-node nccl-tests logs); the
// samples before it were measured within one node (probes) or are taken to be.
constexpr std::string_view kV6 = R"sql(
ALTER TABLE collective_samples ADD COLUMN nodes INTEGER NOT NULL DEFAULT 1;
)sql";

// v7: fully sharded weights (xDiT's --fully_shard_degree, core/parallel_config.h): the ranks that
// share one copy of the block weights. Runs recorded before it held whole weights: 1.
constexpr std::string_view kV7 = R"sql(
ALTER TABLE runs ADD COLUMN fs_degree INTEGER NOT NULL DEFAULT 1;
)sql";

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};

// Big-endian 32-bit field of the database header (https://sqlite.org/fileformat.html#the_database_header).
std::uint32_t header_u32(const std::array<unsigned char, 100>& h, std::size_t offset) {
  return (std::uint32_t{h[offset]} << 24) | (std::uint32_t{h[offset + 1]} << 16) | (std::uint32_t{h[offset + 2]} << 8) |
         std::uint32_t{h[offset + 3]};
}

Error not_cpplan(const std::string& path, std::uint32_t application_id) {
  return Error{fmt::format("{}: not a cpplan database (application_id {:#010x}, cpplan's is {:#010x}); left unchanged",
                           path, application_id, static_cast<std::uint32_t>(kApplicationId))};
}

Error foreign_tables(const std::string& path, const std::vector<std::string>& tables, long long user_version) {
  std::string what = tables.empty() ? fmt::format("user_version {}", user_version)
                                    : fmt::format("it holds {}", fmt::join(tables, ", "));
  return Error{fmt::format("{}: not a cpplan database (application_id 0, and {}); left unchanged", path, what)};
}

Error newer(const std::string& path, long long version) {
  return Error{fmt::format("{}: schema version {} is newer than this cpplan knows ({}); left unchanged, use a newer cpplan",
                           path, version, current_version())};
}

// Names of the tables, indexes, views and triggers someone created (sqlite's own excluded).
Result<std::vector<std::string>> user_objects(sqlite3* db, const std::string& path) {
  auto stmt = sql::Statement::prepare(
      db, R"(SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name LIMIT 5)", path);
  if (!stmt) return stmt.error();
  std::vector<std::string> names;
  int rc;
  while ((rc = stmt.value().step()) == SQLITE_ROW) names.push_back(stmt->text(0));
  if (rc != SQLITE_DONE) return stmt->error("cannot list the schema");
  return names;
}

// A file: URI for `path`; every byte outside the unreserved set is %-escaped.
std::string file_uri(const std::string& path) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                       c == '.' || c == '_' || c == '~' || c == '/';
    uri += plain ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return uri;
}

struct Contents {
  long long application_id = 0;
  long long user_version = 0;
  std::vector<std::string> objects;
};

// Reads the application_id, user_version and schema through a read-only connection. With no
// -wal or -journal beside the file, the file alone is the whole database: `immutable` reads it
// without locks and without creating -wal/-shm files, which a read-only open of a WAL database
// would otherwise do.
Result<Contents> read_contents(const std::string& path, bool immutable) {
  const std::string uri = file_uri(path) + (immutable ? "?mode=ro&immutable=1" : "?mode=ro");
  auto db = sql::open(uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, path);
  if (!db) return db.error();
  Contents c;
  auto objects = user_objects(db->get(), path);  // first read: a non-database fails here
  if (!objects) {
    const int code = sqlite3_errcode(db->get());
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) {
      return Error{fmt::format("{}: not an SQLite database ({}); left unchanged", path, sqlite3_errmsg(db->get()))};
    }
    return objects.error();
  }
  c.objects = std::move(objects).value();
  auto app = sql::query_integer(db->get(), "PRAGMA application_id", path);
  if (!app) return app.error();
  auto version = sql::query_integer(db->get(), "PRAGMA user_version", path);
  if (!version) return version.error();
  c.application_id = *app;
  c.user_version = *version;
  return c;
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> list = {
      {1, "hardware, runs and run_metrics", kV1},
      {2, "collective_samples, kernel_samples and calibrations", kV2},
      {3, "runs: source, runtime, text_encoder, vae, batch, image_ms, text_encode_ms, vae_decode_ms", kV3},
      {4, "runs: predicted_transformer_peak_bytes", kV4},
      {5, "runs: pipefusion_degree, num_pipeline_patch, pipefusion_warmup_steps", kV5},
      {6, "collective_samples: nodes", kV6},
      {7, "runs: fs_degree", kV7},
  };
  return list;
}

int current_version() { return static_cast<int>(migrations().size()); }

Result<Probe> probe(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && status.type() != fs::file_type::not_found) {
    return Error{fmt::format("{}: cannot inspect: {}", path, ec.message())};
  }
  if (status.type() == fs::file_type::not_found) return Probe{true, 0};
  if (fs::is_directory(status)) return Error{fmt::format("{}: is a directory, not a database file", path)};
  if (!fs::is_regular_file(status)) return Error{fmt::format("{}: not a regular file, so not a cpplan database", path)};
  const auto size = fs::file_size(path, ec);
  if (ec) return Error{fmt::format("{}: cannot inspect: {}", path, ec.message())};
  if (size == 0) return Probe{true, 0};

  // The header decides most cases without sqlite opening the file at all.
  std::array<unsigned char, 100> header{};
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{fmt::format("{}: cannot read", path)};
  in.read(reinterpret_cast<char*>(header.data()), header.size());
  if (in.gcount() < static_cast<std::streamsize>(header.size()) ||
      std::string_view(reinterpret_cast<const char*>(header.data()), kSqliteMagic.size()) != kSqliteMagic) {
    return Error{fmt::format("{}: not an SQLite database (no SQLite header), so not a cpplan database; left unchanged", path)};
  }
  const std::uint32_t application_id = header_u32(header, 68);
  const bool ours = application_id == static_cast<std::uint32_t>(kApplicationId);
  if (application_id != 0 && !ours) return not_cpplan(path, application_id);
  // cpplan sets the application_id before it switches a database to WAL (Store::open), so a WAL
  // database whose file says 0 was made by someone else.
  const bool wal = header[18] == 2 || header[19] == 2;
  if (!ours && wal) return not_cpplan(path, 0);

  const bool sidecars = exists(path + "-wal") || exists(path + "-journal");
  auto contents = read_contents(path, !sidecars);
  // A cpplan process may have written the file between the check above and the read; read our
  // own database again with locks (the -wal/-shm that may create belong to cpplan anyway).
  if (!contents && !sidecars && ours) contents = read_contents(path, false);
  if (!contents) return contents.error();

  if (contents->application_id != kApplicationId) {
    if (contents->application_id != 0) return not_cpplan(path, static_cast<std::uint32_t>(contents->application_id));
    if (!contents->objects.empty() || contents->user_version != 0) {
      return foreign_tables(path, contents->objects, contents->user_version);
    }
    return Probe{true, 0};  // an SQLite database nobody has put anything in
  }
  if (contents->user_version > current_version()) return newer(path, contents->user_version);
  if (contents->user_version < 0) {
    return Error{fmt::format("{}: schema version {} was never written by cpplan; left unchanged", path,
                             contents->user_version)};
  }
  return Probe{false, static_cast<int>(contents->user_version)};
}

Result<int> migrate(sqlite3* db, const std::string& path) {
  return sql::write_transaction<int>(db, path, "cannot set up the schema", [&]() -> Result<int> {
    auto app = sql::query_integer(db, "PRAGMA application_id", path);
    if (!app) return app.error();
    auto version = sql::query_integer(db, "PRAGMA user_version", path);
    if (!version) return version.error();
    if (*app != kApplicationId) {
      if (*app != 0) return not_cpplan(path, static_cast<std::uint32_t>(*app));
      auto objects = user_objects(db, path);
      if (!objects) return objects.error();
      if (!objects->empty() || *version != 0) return foreign_tables(path, *objects, *version);
      // PRAGMA takes no bound parameters; the value is this file's constant.
      auto claimed = sql::exec(db, fmt::format("PRAGMA application_id = {}", kApplicationId), path,
                               "cannot set the application_id");
      if (!claimed) return claimed.error();
    }
    if (*version > current_version()) return newer(path, *version);
    for (int v = static_cast<int>(*version); v < current_version(); ++v) {
      const Migration& m = migrations()[static_cast<std::size_t>(v)];
      auto applied = sql::exec(db, m.sql, path, fmt::format("migration to schema {} ({})", m.to_version, m.summary));
      if (!applied) return applied.error();
      auto stamped = sql::exec(db, fmt::format("PRAGMA user_version = {}", m.to_version), path,
                               "cannot set the user_version");
      if (!stamped) return stamped.error();
    }
    return current_version();
  });
}

Result<ReadOnly> open_read_only(const std::string& path) {
  auto found = probe(path);
  if (!found) return found.error();
  if (found->fresh) {
    if (!exists(path)) return Error{fmt::format("{}: no such file", path)};
    return Error{fmt::format("{}: not a cpplan database (empty, no schema); left unchanged", path)};
  }
  const bool sidecars = exists(path + "-wal") || exists(path + "-journal");
  auto db = sql::open(file_uri(path) + (sidecars ? "?mode=ro" : "?mode=ro&immutable=1"),
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, path);
  if (!db) return db.error();
  // Checked again through this connection: a cpplan process may have migrated it since probe().
  auto app = sql::query_integer(db->get(), "PRAGMA application_id", path);
  if (!app) return app.error();
  if (*app != kApplicationId) return not_cpplan(path, static_cast<std::uint32_t>(*app));
  auto version = sql::query_integer(db->get(), "PRAGMA user_version", path);
  if (!version) return version.error();
  if (*version > current_version()) return newer(path, *version);
  if (*version < 1) return Error{fmt::format("{}: schema version {} was never written by cpplan; left unchanged", path, *version)};
  return ReadOnly{std::move(db).value(), static_cast<int>(*version)};
}

}  // namespace cpplan::data::schema
