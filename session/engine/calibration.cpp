#include "session/engine/calibration.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "core/diffusers_config.h"
#include "core/text.h"
#include "core/version.h"
#include "data/pipeline_timings.h"
#include "imports/timing_rows.h"
#include "session/engine/local_model.h"
#include "session/query/query.h"

namespace cpplan::session {

namespace fs = std::filesystem;

namespace {

// Whether a stored run measures this machine's executor as calibrate fits it: ok, timed, an
// executor run (a pipeline's runs fit the runtimes instead), not --sync-collectives (serialised
// communication and computation are not this machine's speed), not a step cache's (its steps are
// not all full steps), not one with int8 weights (its matmuls dequantize them first), not one its
// host's hypervisor slowed (kMaxStealFraction).
bool calibrates(const data::StoredRun& r, const std::string& machine_key) {
  if (r.run.status != "ok" || !r.run.step_ms || r.hardware.key() != machine_key || r.run.source != "executor")
    return false;
  if (const auto steal = steal_fraction(r.run); steal && *steal > kMaxStealFraction) return false;
  const auto& metrics = r.run.metrics;
  return std::none_of(metrics.begin(), metrics.end(), [](const auto& m) {
    return m.first == kSyncCollectivesMetric || m.first == kStepCacheMetric || m.first == kInt8WeightsMetric;
  });
}

// The query a stored run answered; nothing when its model or size is unknown here.
std::optional<Query> query_of(const data::StoredRun& r, const ProfileCatalog& catalog) {
  const ModelProfile* m = catalog.find_model(r.run.model);
  if (!m) return std::nullopt;
  auto seq = compute_sequence(*m, {r.run.width, r.run.height}, r.run.frames, m->text_tokens);
  if (!seq) return std::nullopt;
  Query q;
  q.model = m;
  q.gpus = r.run.world_size;
  q.resolution = {r.run.width, r.run.height};
  q.frames = r.run.frames;
  q.steps = r.run.steps;
  // The images the run generated (stored since schema v3); a run recorded before that reads
  // batch 1, which a dp > 1 plan could not have run: its least batch, one image per replica.
  q.batch = r.run.batch % std::max(1, r.run.dp) == 0 ? r.run.batch : r.run.dp;
  q.sequence = *seq;
  return q;
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw InvalidInput{fmt::format("--import = {}: not a readable file", path)};
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  if (!in && !in.eof()) throw InvalidInput{fmt::format("--import = {}: cannot be read", path)};
  return s.str();
}

// The output must be a new or existing .toml file in an existing directory, named after the fit
// (the catalog checks that name = stem when it loads it).
void check_output(const std::string& output, const std::string& name) {
  if (output.empty()) return;
  const fs::path out(output);
  std::error_code ec;
  if (out.extension() != ".toml") throw InvalidInput{fmt::format("-o = {}: must end in .toml", output)};
  if (!out.parent_path().empty() && !fs::is_directory(out.parent_path(), ec))
    throw InvalidInput{fmt::format("-o = {}: directory {} does not exist", output, out.parent_path().string())};
  if (out.stem().string() != name)
    throw InvalidInput{fmt::format("--name = {}: must equal the output file's stem \"{}\"", name, out.stem().string())};
}

}  // namespace

std::string contended_line(double steal_fraction, std::string_view during, std::string_view consequence) {
  if (steal_fraction <= kMaxStealFraction) return {};
  return fmt::format("contended: the hypervisor gave {:.0f}% of this host's CPU time to other guests {} (more than "
                     "{:.0f}%): {}",
                     100 * steal_fraction, during, 100 * kMaxStealFraction, consequence);
}

std::optional<double> steal_fraction(const data::RunRecord& run) {
  for (const auto& [name, value] : run.metrics)
    if (name == kStealMetric && value >= 0) return value;
  return std::nullopt;
}

std::string contended_run_line(double steal_fraction) {
  return contended_line(steal_fraction, "during the steps", "calibrate leaves this run out");
}

LocalCalibration calibrate_local(const std::string& db, const ProfileCatalog& catalog, const Machine& machine,
                                 int folds) {
  data::Store store = open_store(db);
  const data::HardwareFingerprint& hw = machine.fingerprint;
  auto local = load_local_model(store, machine);
  if (!local)
    throw InvalidInput{fmt::format("{}: no probe of this machine ({}); run cpplan probe first", store.path(), hw.key())};
  attach_runtime(*local, catalog);
  auto runs = store.runs();
  if (!runs) throw InvalidInput{runs.error().message};
  local->calibration.reset();  // the features are those of the uncalibrated model
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<costmodel::Observation> observations;
  for (const data::StoredRun& r : runs.value()) {
    if (!calibrates(r, hw.key())) continue;
    const auto q = query_of(r, catalog);
    if (!q) continue;
    const LocalPrediction pred = predict_local(*local, *q, data::parallel_config(r.run));
    observations.push_back({costmodel::features_of(pred.raw, r.run.world_size / cores - 1), pred.raw.step_ms, *r.run.step_ms});
  }
  if (observations.size() < 4)
    throw InvalidInput{fmt::format("{}: {} measured runs on this machine; calibration needs at least 4 (cpplan run or cpplan sweep)",
                                   store.path(), observations.size())};
  LocalCalibration result;
  result.calibration = costmodel::fit_calibration(observations, folds);
  result.calibration.fingerprint = hw.key();
  result.calibration.fitted_at = now_utc();
  auto version = store.record_calibration(hw, result.calibration);
  if (!version) throw std::runtime_error(version.error().message);
  result.version = *version;
  result.db = store.path();
  return result;
}

void complete_fit_request(RuntimeFitRequest& request) {
  if (request.name.empty()) request.name = request.output.empty() ? "fit" : fs::path(request.output).stem().string();
  check_output(request.output, request.name);
}

namespace {

// "dir/a.json, dir/b.json" -> "a.json, b.json": the files a fit was made from, without their folders.
std::string file_names(const std::string& sources) {
  std::string out;
  std::size_t start = 0;
  while (start <= sources.size()) {
    const std::size_t end = std::min(sources.find(", ", start), sources.size());
    if (!out.empty()) out += ", ";
    out += fs::path(sources.substr(start, end - start)).filename().string();
    start = end + 2;
  }
  return out;
}

// The model profiles the rows' diffusers configs derive (diffusers::import_profile, as --model-config),
// added to `catalog` under the names the import gave the rows (the config's stem), before any row is
// resolved. InvalidInput names the row: a config that does not map to a profile, or whose name is a
// profile's of the catalog already or another config's.
void add_config_models(const std::vector<costmodel::TimingRow>& rows, ProfileCatalog& catalog) {
  std::map<std::string, std::string> added;  // profile name -> its config
  for (const costmodel::TimingRow& row : rows) {
    if (row.model_config.empty()) continue;
    if (auto it = added.find(row.model); it != added.end()) {
      if (it->second == row.model_config) continue;
      throw InvalidInput{printable(fmt::format("{}: config = {}: names the model {} as {} does; rename one file",
                                               row.where, row.model_config, row.model, it->second))};
    }
    if (catalog.find_model(row.model))
      throw InvalidInput{printable(fmt::format("{}: config = {}: names the model {}, a profile of the catalog; rename "
                                               "the file", row.where, row.model_config, row.model))};
    auto m = diffusers::import_profile(row.model_config, catalog, {row.model, ""});
    if (!m) throw InvalidInput{printable(fmt::format("{}: config = {}: {}", row.where, row.model_config, m.error().message))};
    catalog.add_model(std::move(m).value());
    added.emplace(row.model, row.model_config);
  }
}

}  // namespace

planner::RuntimeCalibration fit_runtimes(const std::vector<costmodel::TimingRow>& rows, RuntimeFitRequest request) {
  complete_fit_request(request);
  // The fit starts from the priors: the profiles without any fit applied.
  auto priors = ProfileCatalog::load(profile_search_path(request.profiles, request.exe), CatalogOptions{.apply_fits = false});
  if (!priors) throw InvalidInput{priors.error().message};
  add_config_models(rows, priors.value());
  planner::RuntimeCalibrationOptions o;
  o.name = request.name;
  o.description = fmt::format("runtime and hardware defaults fitted to {}", file_names(request.source));
  o.source = request.source;
  o.folds = request.folds;
  o.repeats = request.repeats;
  o.shrinkage_by_groups = request.shrinkage_by_groups;
  auto calibrated = planner::calibrate_runtimes(*priors, rows, o);
  if (!calibrated) throw InvalidInput{calibrated.error().message};
  planner::RuntimeCalibration result = std::move(calibrated).value();
  result.fit.provenance.cpplan_version = kVersion;
  if (!request.output.empty()) {
    std::ofstream f(request.output, std::ios::binary | std::ios::trunc);
    f << to_toml(result.fit);
    if (!f) throw InvalidInput{fmt::format("-o = {}: cannot be written", request.output)};
  }
  return result;
}

planner::RuntimeCalibration check_shipped(const std::vector<costmodel::TimingRow>& rows, const RuntimeFitRequest& request) {
  auto shipped = ProfileCatalog::load(profile_search_path(request.profiles, request.exe));
  if (!shipped) throw InvalidInput{shipped.error().message};
  add_config_models(rows, shipped.value());
  auto checked = planner::check_timings(*shipped, rows);
  if (!checked) throw InvalidInput{checked.error().message};
  return std::move(checked).value();
}

namespace {

// KEY=VALUE pairs of a repeatable option into `out`; InvalidInput names the option and the rule.
void read_pairs(const std::vector<std::string>& pairs, const char* option, const char* form,
                std::map<std::string, std::string>& out) {
  for (const std::string& m : pairs) {
    const auto eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == m.size())
      throw InvalidInput{fmt::format("{} = {}: must be {}", option, m, form)};
    out[m.substr(0, eq)] = m.substr(eq + 1);
  }
}

// The import options the mappings spell: each KEY=VALUE pair read once, W as a count of steps.
imports::TimingImportOptions import_options(const TimingMappings& mappings) {
  imports::TimingImportOptions o;
  o.default_runtime = mappings.runtime;
  read_pairs(mappings.runtime_for, "--runtime-for", "SOURCE=RUNTIME", o.runtime_for_source);
  read_pairs(mappings.model_for, "--model-for", "SOURCE=MODEL", o.model_for_source);
  read_pairs(mappings.topology_for, "--topology-for", "BOX=TOPOLOGY", o.topology_for_box);
  std::map<std::string, std::string> warmups;
  read_pairs(mappings.warmup_for, "--warmup-for", "SOURCE=W", warmups);
  for (const auto& [source, w] : warmups) {
    try {
      o.warmup_for_source[source] = parse_int("--warmup-for", w, 0, 100000);
    } catch (const InvalidInput&) {
      throw InvalidInput{printable(fmt::format("--warmup-for = {}={}: W must be an integer from 0 to 100000", source, w))};
    }
  }
  return o;
}

// A --model-for or --warmup-for SOURCE or a --topology-for BOX no row of `rows` has: a mistyped
// name would otherwise leave its rows as they were, silently.
void check_mappings_used(const std::vector<costmodel::TimingRow>& rows, const TimingMappings& mappings) {
  auto check = [&](const std::vector<std::string>& pairs, const char* option, const char* what,
                   std::string costmodel::TimingRow::*field) {
    std::map<std::string, std::string> named;
    read_pairs(pairs, option, "KEY=VALUE", named);
    std::set<std::string> present;
    for (const auto& r : rows)
      if (!(r.*field).empty()) present.insert(r.*field);
    for (const auto& [key, value] : named)
      if (!present.count(key))
        throw InvalidInput{printable(fmt::format("{} = {}={}: no row has {} {} (the rows': {})", option, key, value, what,
                                                 key, fmt::join(present, "; ")))};
  };
  check(mappings.model_for, "--model-for", "source", &costmodel::TimingRow::source);
  check(mappings.topology_for, "--topology-for", "box", &costmodel::TimingRow::box);
  check(mappings.warmup_for, "--warmup-for", "source", &costmodel::TimingRow::source);
}

}  // namespace

std::vector<costmodel::TimingRow> import_timings(const std::vector<std::string>& files, const TimingMappings& mappings) {
  const imports::TimingImportOptions o = import_options(mappings);
  std::vector<costmodel::TimingRow> rows;
  for (const std::string& path : files) {
    auto more = imports::parse_timing_rows(read_file(path), path, o);
    if (!more) throw InvalidInput{more.error().message};
    rows.insert(rows.end(), std::make_move_iterator(more->begin()), std::make_move_iterator(more->end()));
  }
  check_mappings_used(rows, mappings);
  return rows;
}

std::vector<costmodel::TimingRow> pipeline_timing_rows(const std::string& db, std::string& store_path) {
  const std::string path = db.empty() ? data::Store::default_path() : db;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InvalidInput{fmt::format("--db = {}: no database (cpplan import-runs writes one)", path)};
  const data::Store store = open_store(path);
  auto runs = store.runs();
  if (!runs) throw InvalidInput{runs.error().message};
  auto rows = data::pipeline_timings(runs.value(), store.path());
  if (rows.size() < 2)
    throw InvalidInput{fmt::format("--db = {}: {} pipeline runs; a fit needs at least 2 (cpplan import-runs)", path,
                                   rows.size())};
  store_path = store.path();
  return rows;
}

}  // namespace cpplan::session
