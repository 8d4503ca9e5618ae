// `cpplan import-runs` end to end with real processes: the recorder (python/cpplan_record.py
// --selftest, a real torch loop on the CPU) writes JSON lines, the cpplan binary imports them
// into a real SQLite file, read back with data::Store; bad lines are one line on stderr, exit 3,
// and the database as it was.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/store.h"
#include "tests/executor/process.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using cpplan::test::Process;
using cpplan::test::run_process;
using cpplan::test::slurp;
using nlohmann::ordered_json;

namespace {

// Temp directories named cpplan-import-runs-XXXXXX.
struct TempDir : cpplan::test::TempDir {
  TempDir() : cpplan::test::TempDir("cpplan-import-runs-") {}
};

// The recorder's keys in its schema's order (docs/calibration.md, "Pipeline runs").
const std::vector<std::string> kKeys = {
    "cpplan_record", "model",          "runtime",     "hardware",      "device",         "gpu_name",
    "gpu_count",     "world_size",     "torch",       "cuda",          "host",           "started_at",
    "finished_at",   "width",          "height",      "frames",        "steps",          "batch",
    "ring_degree",   "ulysses_degree", "tp_degree",   "cfg_degree",    "dp_degree",      "ulysses_anything",
    "ring_anything", "text_encoder",   "vae",         "step_ms",       "text_encode_ms", "vae_decode_ms",
    "image_ms",      "peak_mem_bytes", "peak_mem_kind", "phase_mem", "cache_probe", "cache_computed_steps",
    "cache_cached_steps", "cache_warmup_steps", "cache_hit_rate"};

Process run_cpplan(std::vector<std::string> args) {
  args.insert(args.begin(), CPPLAN_BINARY);
  return run_process(args);
}

Process recorder_selftest(const std::string& out) {
  return run_process({CPPLAN_PYTHON, CPPLAN_RECORDER, "--selftest", "--out", out});
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  for (std::size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
    lines.push_back(text.substr(begin, end - begin));
  }
  if (begin < text.size()) lines.push_back(text.substr(begin));  // a last line without '\n'
  return lines;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// Every file under `dir` with its bytes.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files[entry.path().string()] = slurp(entry.path().string());
  }
  return files;
}

cpplan::data::Store open_store(const std::string& path) {
  auto store = cpplan::data::Store::open(path);
  INFO(path << ": " << (store ? std::string() : store.error().message));
  REQUIRE(store.ok());
  return std::move(store).value();
}

std::vector<cpplan::data::StoredRun> runs_in(const std::string& db) {
  auto store = open_store(db);
  auto runs = store.runs();
  REQUIRE(runs.ok());
  return std::move(runs).value();
}

// A GPU run as the recorder would write it, with round numbers to check by hand.
ordered_json gpu_line() {
  return ordered_json::parse(R"({"cpplan_record":1,"model":"flux.1-dev","runtime":"xdit","hardware":"h100-sxm",
    "device":"cuda","gpu_name":"NVIDIA H100 80GB HBM3","gpu_count":8,"world_size":8,"torch":"2.5.1","cuda":"12.4",
    "host":"node-3","started_at":"2025-12-01T09:00:00Z","finished_at":"2025-12-01T09:00:09Z","width":1024,
    "height":1024,"frames":1,"steps":4,"batch":2,"ring_degree":2,"ulysses_degree":2,"tp_degree":1,"cfg_degree":2,
    "dp_degree":1,"ulysses_anything":false,"ring_anything":true,"text_encoder":"sharded","vae":"parallel",
    "step_ms":[400.0,200.0,300.0,100.0],"text_encode_ms":50.5,"vae_decode_ms":120.25,"image_ms":1500.0,
    "peak_mem_bytes":4.0e10,"peak_mem_kind":"cuda_allocated"})");
}

// The recorder's line must hold every key, in order, each of its type.
void check_schema(const ordered_json& j) {
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  CHECK(keys == kKeys);
  CHECK(j["cpplan_record"] == 1);
  for (const char* key : {"model", "runtime", "device", "gpu_name", "torch", "host", "started_at", "finished_at",
                          "text_encoder", "vae"}) {
    INFO(key);
    CHECK(j[key].is_string());
  }
  for (const char* key : {"gpu_count", "world_size", "width", "height", "frames", "steps", "batch", "ring_degree",
                          "ulysses_degree", "tp_degree", "cfg_degree", "dp_degree"}) {
    INFO(key);
    CHECK(j[key].is_number_integer());
  }
  CHECK(j["ulysses_anything"].is_boolean());
  CHECK(j["ring_anything"].is_boolean());
  CHECK((j["hardware"].is_null() || j["hardware"].is_string()));
  CHECK((j["cuda"].is_null() || j["cuda"].is_string()));
  CHECK(j["step_ms"].is_array());
  CHECK(j["image_ms"].is_number());
}

}  // namespace

TEST_CASE("the recorder's selftest lines import as pipeline runs, and a second import adds nothing",
          "[cli][import_runs]") {
  TempDir dir;
  const std::string jsonl = dir.file("runs.jsonl");
  for (int run = 0; run < 2; ++run) {
    const Process p = recorder_selftest(jsonl);
    INFO(p.out << p.err);
    REQUIRE(p.code == 0);
    CHECK_THAT(p.out, Catch::StartsWith("cpplan_record selftest: 4 steps"));
    CHECK(lines_of(p.out).size() == 1);
  }
  const std::string text = slurp(jsonl);
  REQUIRE(!text.empty());
  CHECK(text.back() == '\n');
  const std::vector<std::string> lines = lines_of(text);
  REQUIRE(lines.size() == 2);

  std::vector<ordered_json> recorded;
  for (const std::string& line : lines) {
    INFO(line);
    const ordered_json j = ordered_json::parse(line);
    check_schema(j);
    // The selftest: flux-tiny at 128x128, 4 steps, one CPU process, nothing parallel.
    CHECK(j["model"] == "flux-tiny");
    CHECK(j["runtime"] == "diffusers");
    CHECK(j["device"] == "cpu");
    CHECK(j["steps"] == 4);
    CHECK(j["width"] == 128);
    CHECK(j["frames"] == 1);
    CHECK(j["batch"] == 1);
    CHECK(j["world_size"] == 1);
    CHECK(j["peak_mem_kind"] == "cpu_maxrss");
    CHECK(j["peak_mem_bytes"].get<double>() > 0);
    for (const char* degree : {"ring_degree", "ulysses_degree", "tp_degree", "cfg_degree", "dp_degree"}) CHECK(j[degree] == 1);
    const auto steps = j["step_ms"].get<std::vector<double>>();
    REQUIRE(steps.size() == 4);
    for (double ms : steps) CHECK(ms > 0);
    const double text_ms = j["text_encode_ms"].get<double>(), vae_ms = j["vae_decode_ms"].get<double>();
    CHECK(text_ms > 0);
    CHECK(vae_ms > 0);
    // The whole call holds the text encoding, every step and the decode (batch 1: one image).
    CHECK(j["image_ms"].get<double>() >= std::accumulate(steps.begin(), steps.end(), 0.0) + text_ms + vae_ms);
    recorded.push_back(j);
  }

  const std::string db = dir.file("x.db");
  const Process first = run_cpplan({"import-runs", jsonl, "--db", db});
  INFO(first.err);
  REQUIRE(first.code == 0);
  CHECK(first.out == "imported 2 runs from " + jsonl + " into " + db + " (0 already there)\n");
  CHECK(first.err.empty());

  const auto runs = runs_in(db);
  REQUIRE(runs.size() == 2);
  for (const ordered_json& j : recorded) {
    const auto steps = j["step_ms"].get<std::vector<double>>();
    const auto it = std::find_if(runs.begin(), runs.end(), [&](const auto& s) { return s.run.step_times_ms == steps; });
    REQUIRE(it != runs.end());
    const cpplan::data::RunRecord& r = it->run;
    CHECK(r.source == "pipeline");
    CHECK(r.runtime == "diffusers");
    CHECK(r.status == "ok");
    CHECK(r.model == "flux-tiny");
    CHECK(r.dtype == "fp32");
    CHECK((r.ring == 1 && r.ulysses == 1 && r.tp == 1 && r.cfg == 1 && r.dp == 1));
    CHECK(r.text_encoder == "replicated");
    CHECK(r.vae == "single");
    CHECK(r.batch == 1);
    CHECK(r.world_size == 1);
    CHECK(r.steps == 4);
    // Four sorted times s0..s3: the median is (s1 + s2) / 2, p10 at rank 0.3, p90 at rank 2.7.
    std::vector<double> s = steps;
    std::sort(s.begin(), s.end());
    CHECK(*r.step_ms == Approx((s[1] + s[2]) / 2).epsilon(1e-12));
    CHECK(*r.step_ms_p10 == Approx(s[0] + 0.3 * (s[1] - s[0])).epsilon(1e-12));
    CHECK(*r.step_ms_p90 == Approx(s[2] + 0.7 * (s[3] - s[2])).epsilon(1e-12));
    CHECK(*r.steps_per_sec == Approx(2000 / (s[1] + s[2])).epsilon(1e-12));
    CHECK(*r.image_ms == j["image_ms"].get<double>());
    CHECK(*r.text_encode_ms == j["text_encode_ms"].get<double>());
    CHECK(*r.vae_decode_ms == j["vae_decode_ms"].get<double>());
    CHECK(*r.peak_mem_bytes == j["peak_mem_bytes"].get<double>());
    // Each phase's memory (the selftest measures all four) into the run's metrics.
    for (const char* phase : {"load", "encode", "denoise", "decode"})
      for (const char* figure : {"peak_bytes", "start_bytes"}) {
        const std::string name = std::string("phase.") + phase + "." + figure;
        INFO(name);
        const auto m = std::find_if(r.metrics.begin(), r.metrics.end(), [&](const auto& kv) { return kv.first == name; });
        REQUIRE(m != r.metrics.end());
        CHECK(m->second == j["phase_mem"][phase][figure].get<double>());
      }
    // The selftest caches no step: its middle block (TinyPipeline's blocks[1]) ran in each of the 4.
    const std::vector<std::pair<std::string, double>> cache = {
        {"cache.computed_steps", 4}, {"cache.cached_steps", 0}, {"cache.warmup_steps", 0}, {"cache.hit_rate", 0}};
    for (const auto& kv : cache) CHECK(std::find(r.metrics.begin(), r.metrics.end(), kv) != r.metrics.end());
    CHECK(r.started_at == j["started_at"].get<std::string>());
    CHECK(it->hardware.device_kind == "cpu");
    CHECK(it->hardware.cpu_name == j["gpu_name"].get<std::string>());
    CHECK(it->hardware.host == j["host"].get<std::string>());
    CHECK(it->hardware.gpu_count == 0);
  }

  const Process again = run_cpplan({"import-runs", jsonl, "--db", db});
  REQUIRE(again.code == 0);
  CHECK(again.out == "imported 0 runs from " + jsonl + " into " + db + " (2 already there)\n");
  const Process as_json = run_cpplan({"import-runs", jsonl, "--db", db, "--json"});
  REQUIRE(as_json.code == 0);
  const auto j = nlohmann::json::parse(as_json.out);
  CHECK(j == nlohmann::json{{"added", 0}, {"skipped", 2}, {"db", db}});
  CHECK(runs_in(db).size() == 2);
}

TEST_CASE("a GPU line imports with its median, percentiles, plan and fingerprint", "[cli][import_runs]") {
  TempDir dir;
  const std::string jsonl = dir.file("gpu.jsonl"), db = dir.file("x.db");
  write(jsonl, gpu_line().dump() + "\n\n");  // a blank line is skipped
  const Process p = run_cpplan({"import-runs", jsonl, "--db", db});
  INFO(p.err);
  REQUIRE(p.code == 0);
  const auto runs = runs_in(db);
  REQUIRE(runs.size() == 1);
  const cpplan::data::RunRecord& r = runs[0].run;
  // Sorted 100, 200, 300, 400: median 250, p10 100 + 0.3 x 100, p90 300 + 0.7 x 100, 1000 / 250 steps/s.
  CHECK(*r.step_ms == 250.0);
  CHECK(*r.step_ms_p10 == Approx(130.0).epsilon(1e-12));
  CHECK(*r.step_ms_p90 == Approx(370.0).epsilon(1e-12));
  CHECK(*r.steps_per_sec == 4.0);
  CHECK(r.step_times_ms == std::vector<double>{400.0, 200.0, 300.0, 100.0});
  CHECK((r.ring == 2 && r.ulysses == 2 && r.tp == 1 && r.cfg == 2 && r.dp == 1));
  CHECK_FALSE(r.ulysses_anything);
  CHECK(r.ring_anything);
  CHECK(r.world_size == 8);
  CHECK(r.runtime == "xdit");
  CHECK(r.text_encoder == "sharded");
  CHECK(r.vae == "parallel");
  CHECK(r.batch == 2);
  CHECK(*r.image_ms == 1500.0);
  CHECK(*r.text_encode_ms == 50.5);
  CHECK(*r.vae_decode_ms == 120.25);
  CHECK(*r.peak_mem_bytes == 4.0e10);
  CHECK(r.dtype == "bf16");
  CHECK(r.predicted_hardware == "h100-sxm");
  CHECK_FALSE(r.predicted_step_ms.has_value());
  CHECK(r.warmup == 0);
  CHECK(r.seed == 0);
  CHECK(r.attention_backend.empty());
  CHECK(r.cpplan_version == "0.1.0");
  CHECK(r.finished_at == "2025-12-01T09:00:09Z");
  CHECK_THAT(r.run_key, Catch::Matches("pipeline-[0-9a-f]{16}"));
  const cpplan::data::HardwareFingerprint& hw = runs[0].hardware;
  CHECK(hw.device_kind == "cuda");
  CHECK(hw.gpu_name == "NVIDIA H100 80GB HBM3");
  CHECK(hw.gpu_count == 8);
  CHECK(hw.cpu_name.empty());
  CHECK(hw.cpu_count == 0);
  CHECK(hw.torch == "2.5.1");
  CHECK(hw.cuda == "12.4");
  CHECK(hw.host == "node-3");

  // The same content with other spacing is the same run; another start time is another run.
  ordered_json later = gpu_line();
  later["started_at"] = "2025-12-01T10:00:00Z";
  later["finished_at"] = "2025-12-01T10:00:09Z";
  std::string spaced = gpu_line().dump();
  for (std::size_t at = 0; (at = spaced.find(',', at)) != std::string::npos; at += 2) spaced.insert(at + 1, " ");
  write(jsonl, spaced + "\n" + later.dump() + "\n");
  const Process again = run_cpplan({"import-runs", jsonl, "--db", db});
  REQUIRE(again.code == 0);
  CHECK_THAT(again.out, Catch::StartsWith("imported 1 runs from "));
  CHECK_THAT(again.out, Catch::EndsWith("(1 already there)\n"));
}

TEST_CASE("bad recorder lines exit 3 with one line naming the file, line and field, the database untouched",
          "[cli][import_runs]") {
  TempDir dir;
  fs::create_directories(dir.path() / "db");
  const std::string existing = (dir.path() / "db" / "old.db").string();
  const std::string fresh = (dir.path() / "db" / "new.db").string();
  const std::string good = dir.file("good.jsonl");
  write(good, gpu_line().dump() + "\n");
  REQUIRE(run_cpplan({"import-runs", good, "--db", existing}).code == 0);

  ordered_json missing = gpu_line();
  missing.erase("vae");
  ordered_json bad_degree = gpu_line();
  bad_degree["ulysses_degree"] = 0;
  ordered_json newer = gpu_line();
  newer["cpplan_record"] = 2;
  ordered_json typo = gpu_line();
  typo["stepms"] = typo["step_ms"];
  typo.erase("step_ms");
  ordered_json float_degree = gpu_line();
  float_degree["ring_degree"] = 2.5;
  ordered_json wrong_count = gpu_line();
  wrong_count["steps"] = 5;
  ordered_json bad_phase = gpu_line();
  bad_phase["phase_mem"] = {{"load", {{"peak_bytes", -1.0}, {"start_bytes", 0.0}}}};
  ordered_json unknown_phase = gpu_line();
  unknown_phase["phase_mem"] = {{"warmup", nullptr}};
  ordered_json cache_counts = gpu_line();  // 4 steps: 3 computed, 1 cached
  cache_counts.update({{"cache_probe", "blocks.1.norm"}, {"cache_computed_steps", 3}, {"cache_cached_steps", 2},
                       {"cache_warmup_steps", 1}, {"cache_hit_rate", 1 / 3.0}});
  ordered_json counts_unwatched = gpu_line();
  counts_unwatched.update({{"cache_probe", nullptr}, {"cache_cached_steps", 1}});
  ordered_json high_hit_rate = cache_counts;
  high_hit_rate.update({{"cache_cached_steps", 1}, {"cache_hit_rate", 1.5}});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {missing.dump(), "bad.jsonl:2: vae: missing"},
      {bad_degree.dump(), "bad.jsonl:2: ulysses_degree = 0: must be at least 1"},
      {R"({"cpplan_record": 1, "model": )", "bad.jsonl:2: not JSON: parse error"},
      {newer.dump(), "bad.jsonl:2: cpplan_record = 2: must be 1"},
      {typo.dump(), "bad.jsonl:2: stepms = [400.0,200.0,300.0,100.0]: unknown key (did you mean "},
      {float_degree.dump(), "bad.jsonl:2: ring_degree = 2.5: must be an integer"},
      {wrong_count.dump(), "bad.jsonl:2: step_ms = [400.0,200.0,300.0,100.0]: must hold steps = 5 times, holds 4"},
      {"[1, 2]", "bad.jsonl:2: [1,2]: must be a JSON object"},
      {bad_phase.dump(), "bad.jsonl:2: phase_mem.load.peak_bytes = -1.0: must be a number of bytes (>= 0) or null"},
      {unknown_phase.dump(), "bad.jsonl:2: phase_mem.warmup = null: not a phase (load, encode, denoise, decode)"},
      {cache_counts.dump(), "bad.jsonl:2: cache_cached_steps = 2: must be steps = 4 less cache_computed_steps = 3"},
      {counts_unwatched.dump(), "bad.jsonl:2: cache_cached_steps = 1: must be null when cache_probe is null"},
      {high_hit_rate.dump(), "bad.jsonl:2: cache_hit_rate = 1.5: must be at most 1"},
  };
  const std::string bad = dir.file("bad.jsonl");
  for (const auto& [line, expected] : cases) {
    INFO(line);
    // A good first line: nothing of the file is written when a later line is bad.
    write(bad, gpu_line().dump() + "\n" + line + "\n");
    const auto before = snapshot(dir.path() / "db");
    for (const std::string& db : {existing, fresh}) {
      const Process p = run_cpplan({"import-runs", bad, "--db", db});
      CHECK(p.code == 3);
      CHECK(p.out.empty());
      CHECK(lines_of(p.err).size() == 1);
      CHECK_THAT(p.err, Catch::StartsWith("cpplan import-runs: " + bad + ":2: "));
      CHECK_THAT(p.err, Catch::Contains(expected));
    }
    CHECK(snapshot(dir.path() / "db") == before);
    CHECK_FALSE(fs::exists(fresh));
  }
  CHECK(runs_in(existing).size() == 1);
}

TEST_CASE("import-runs refuses a --db in a missing directory and creates nothing", "[cli][import_runs]") {
  TempDir dir;
  const std::string good = dir.file("good.jsonl");
  write(good, gpu_line().dump() + "\n");
  const std::string db = (dir.path() / "missing" / "dir" / "x.db").string();
  const Process p = run_cpplan({"import-runs", good, "--db", db});
  CHECK(p.code == 3);
  CHECK(p.out.empty());
  CHECK(p.err == "cpplan import-runs: --db " + db + ": the directory " + (dir.path() / "missing" / "dir").string() +
                     " does not exist\n");
  CHECK_FALSE(fs::exists(dir.path() / "missing"));

  const Process unreadable = run_cpplan({"import-runs", dir.file("nope.jsonl"), "--db", dir.file("x.db")});
  CHECK(unreadable.code == 3);
  CHECK(lines_of(unreadable.err).size() == 1);
  CHECK_THAT(unreadable.err, Catch::Contains("nope.jsonl: cannot read"));
  write(dir.file("empty.jsonl"), "\n \n");
  const Process empty = run_cpplan({"import-runs", dir.file("empty.jsonl"), "--db", dir.file("x.db")});
  CHECK(empty.code == 3);
  CHECK_THAT(empty.err, Catch::Contains("empty.jsonl: no runs"));
  CHECK_FALSE(fs::exists(dir.file("x.db")));
}

TEST_CASE("calibrate --pipeline-runs fits the runtimes to the imported runs of a pipeline", "[cli][import_runs][calibrate]") {
  TempDir dir;
  const std::string jsonl = dir.file("runs.jsonl"), db = dir.file("runs.db");
  // Six diffusers runs of FLUX.1-dev on 4 x L20 as the diffusers guide published them (ms per
  // step), recorded as the recorder writes lines: Ulysses 4, Ring 4 and Unified 2 x 2 at 1024 px,
  // Ulysses Anything at 1024 and 1008 px; and one on 4 x RTX 4090 48GB.
  struct Run {
    const char* hardware;
    int width, ring, ulysses;
    bool anything;
    double step_ms;
  };
  const Run runs[] = {{"l20", 1024, 1, 4, false, 281.07},       {"l20", 1024, 4, 1, false, 351.34},
                      {"l20", 1024, 2, 2, false, 324.37},       {"l20", 1024, 1, 4, true, 280.94},
                      {"l20", 1008, 1, 4, true, 278.40},        {"rtx4090-48g", 1024, 1, 4, false, 259.07}};
  std::string text;
  for (const Run& r : runs) {
    ordered_json j = gpu_line();
    j["runtime"] = "diffusers";
    j["hardware"] = r.hardware;
    j["gpu_count"] = j["world_size"] = 4;
    j["width"] = j["height"] = r.width;
    j["batch"] = 1;
    j["ring_degree"] = r.ring;
    j["ulysses_degree"] = r.ulysses;
    j["cfg_degree"] = 1;
    j["ulysses_anything"] = r.anything;
    j["ring_anything"] = false;
    j["text_encoder"] = "replicated";
    j["vae"] = "single";
    j["step_ms"] = {r.step_ms, r.step_ms, r.step_ms, r.step_ms};
    text += j.dump() + "\n";
  }
  write(jsonl, text);
  REQUIRE(run_cpplan({"import-runs", jsonl, "--db", db}).code == 0);

  const std::string fit = dir.file("mine.toml");
  const Process p = run_cpplan({"calibrate", "--pipeline-runs", "--db", db, "--json", "-o", fit});
  INFO(p.out << p.err);
  REQUIRE(p.code == 0);
  const auto report = nlohmann::json::parse(p.out);
  REQUIRE(report["rows"].size() == 6);
  for (const auto& row : report["rows"]) {
    CHECK(row["source"] == "pipeline");
    CHECK(row["runtime"] == "diffusers");
    CHECK_FALSE(row["per_image"].get<bool>());
  }
  // The median step of each run is what is fitted; the fit predicts them better than the priors.
  std::vector<double> measured;
  for (const auto& row : report["rows"]) measured.push_back(row["measured_ms"].get<double>());
  std::sort(measured.begin(), measured.end());
  CHECK(measured == std::vector<double>{259.07, 278.40, 280.94, 281.07, 324.37, 351.34});
  CHECK(report["fitted_mape"].get<double>() < report["prior_mape"].get<double>());
  CHECK(report["fitted_mape"].get<double>() < 0.10);
  CHECK_THAT(slurp(fit), Catch::Contains("[runtimes.diffusers]"));
  CHECK_THAT(slurp(fit), Catch::Contains("[architectures.ada]"));

  // Runs of the executor (or no pipeline runs at all) leave nothing to fit: one line, exit 3.
  const std::string empty = dir.file("empty.db");
  REQUIRE(open_store(empty).schema_version() > 0);
  const Process none = run_cpplan({"calibrate", "--pipeline-runs", "--db", empty});
  CHECK(none.code == 3);
  CHECK(lines_of(none.err).size() == 1);
  CHECK_THAT(none.err, Catch::Contains("0 pipeline runs"));
}
