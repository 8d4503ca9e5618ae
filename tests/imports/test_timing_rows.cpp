// End-to-end timings as people publish or record them (imports/timing_rows.h): the published
// object with its sources, CSV with quoted fields, the recorder's JSON lines (docs/calibration.md,
// "Pipeline runs"), unit conversions, and one error per broken rule naming file, row and field.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "imports/timing_rows.h"
#include "tests/support/temp_dir.h"

using cpplan::AttentionBackend;
using cpplan::TextEncoderPlacement;
using cpplan::VaePlacement;
using cpplan::imports::parse_timing_rows;
using cpplan::imports::TimingImportOptions;
using cpplan::costmodel::TimingRow;

namespace {

// Writes `text` to `name` in a fresh temp directory and parses it back from the file, as the
// command does (the path names the file in messages, its extension picks the format).
class TimingFile {
 public:
  TimingFile(const std::string& name, const std::string& text) : path_(dir_.file(name)) {
    std::ofstream(path_, std::ios::binary) << text;
  }
  const std::string& path() const { return path_; }
  cpplan::Result<std::vector<TimingRow>> parse(const TimingImportOptions& o = {}) const {
    std::ifstream in(path_, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return parse_timing_rows(text, path_, o);
  }
  // The error of a file that must not parse.
  std::string error(const TimingImportOptions& o = {}) const {
    auto rows = parse(o);
    REQUIRE_FALSE(rows.ok());
    return rows.error().message;
  }

 private:
  cpplan::test::TempDir dir_{"cpplan-timing-rows-"};
  std::string path_;
};

// 2^30 bytes: published "GB" of peak memory are PyTorch's GiB.
constexpr double kGiBytes = 1073741824.0;

// A minimal valid published point with one field replaced (or removed when `value` is empty).
std::string point_with(const std::string& key, const std::string& value) {
  std::string fields[][2] = {{"model", "\"flux.1-dev\""}, {"hardware", "\"l20\""},        {"runtime", "\"diffusers\""},
                             {"gpus", "2"},               {"resolution", "\"1024x1024\""}, {"ulysses_degree", "2"},
                             {"ms_per_step", "150.5"}};
  std::string out = "{";
  bool replaced = false, first = true;
  for (auto& [k, v] : fields) {
    std::string shown = v;
    if (k == key) {
      replaced = true;
      if (value.empty()) continue;
      shown = value;
    }
    out += (first ? "" : ", ") + ("\"" + k + "\": " + shown);
    first = false;
  }
  if (!replaced && !value.empty()) out += ", \"" + key + "\": " + value;
  return out + "}";
}

std::string published(const std::string& point) { return "{\"points\": [" + point + "]}"; }

}  // namespace

TEST_CASE("a published object takes each point's runtime from itself, --runtime-for or its source's text",
          "[imports][timing_rows]") {
  // Three points: one whose source's description starts with "diffusers", one of a source whose
  // description names no runtime profile ("cache-dit on diffusers") mapped with --runtime-for,
  // and one that names its runtime itself (it wins over its source's text).
  const TimingFile file("published.json", R"json({
  "about": "three published timings, for the test",
  "sources": {
    "guide": {"runtime": "diffusers eager (torch 2.x, flash attention backend)", "where": "a guide"},
    "bench": {"runtime": "cache-dit on diffusers, eager, no caching"}
  },
  "points": [
    {"source": "guide", "model": "flux.1-dev", "hardware": "l20", "gpus": 4, "resolution": "1024x1024",
     "steps": null, "ring_degree": 1, "ulysses_degree": 4, "ulysses_anything": false, "ring_anything": false,
     "ms_per_step": 281.07, "peak_memory_gb": 37.5},
    {"source": "bench", "model": "flux.1-dev", "hardware": "l20", "gpus": 2, "resolution": "1024x1024",
     "steps": 28, "ring_degree": 2, "ulysses_degree": 1, "seconds_per_image": 13.801},
    {"source": "guide", "model": "flux.1-dev", "hardware": "h100-sxm", "runtime": "xdit", "gpus": 4,
     "width": 1008, "height": 1008, "steps": 50, "ring_degree": 2, "ulysses_degree": 2,
     "ulysses_anything": true, "seconds_per_image": 11.0685, "peak_memory_gb": 33.85}
  ]
})json");
  TimingImportOptions o;
  o.runtime_for_source["bench"] = "compiled";
  auto rows = file.parse(o);
  INFO((rows ? std::string() : rows.error().message));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 3);

  const TimingRow& a = (*rows)[0];
  CHECK(a.where == file.path() + ": points[0]");
  CHECK(a.source == "guide");
  CHECK(a.model == "flux.1-dev");
  CHECK(a.hardware == "l20");
  CHECK(a.runtime == "diffusers");  // the first word of "diffusers eager (torch 2.x, ...)"
  CHECK(a.gpus == 4);
  CHECK(a.width == 1024);
  CHECK(a.height == 1024);
  CHECK(a.steps == 0);  // null: a per-step figure
  CHECK(a.config.ring() == 1);
  CHECK(a.config.ulysses() == 4);
  CHECK(a.config.tp() == 1);
  CHECK_FALSE(a.config.context_parallel_config.ulysses_anything);
  REQUIRE(a.step_ms.has_value());
  CHECK(*a.step_ms == Approx(281.07));
  CHECK_FALSE(a.image_ms.has_value());
  REQUIRE(a.peak_mem_bytes.has_value());
  CHECK(*a.peak_mem_bytes == Approx(37.5 * kGiBytes));  // 40 265 318 400 bytes
  CHECK(*a.peak_mem_bytes == Approx(40265318400.0));
  CHECK(a.backend == AttentionBackend::kFlash);
  CHECK_FALSE(a.text_encoder.has_value());
  CHECK_FALSE(a.vae.has_value());

  const TimingRow& b = (*rows)[1];
  CHECK(b.where == file.path() + ": points[1]");
  CHECK(b.source == "bench");
  CHECK(b.runtime == "compiled");  // --runtime-for bench=compiled
  CHECK(b.gpus == 2);
  CHECK(b.steps == 28);
  CHECK(b.config.ring() == 2);
  CHECK(b.config.ulysses() == 1);
  CHECK_FALSE(b.step_ms.has_value());
  REQUIRE(b.image_ms.has_value());
  CHECK(*b.image_ms == Approx(13801.0));  // 13.801 s x 1000
  CHECK_FALSE(b.peak_mem_bytes.has_value());

  const TimingRow& c = (*rows)[2];
  CHECK(c.runtime == "xdit");  // its own runtime, not its source's "diffusers"
  CHECK(c.hardware == "h100-sxm");
  CHECK(c.width == 1008);
  CHECK(c.height == 1008);
  CHECK(c.steps == 50);
  CHECK(c.config.world_size() == 4);
  CHECK(c.config.context_parallel_config.ulysses_anything);
  REQUIRE(c.image_ms.has_value());
  CHECK(*c.image_ms == Approx(11068.5));
  REQUIRE(c.peak_mem_bytes.has_value());
  CHECK(*c.peak_mem_bytes == Approx(33.85 * kGiBytes));
}

TEST_CASE("a source whose text names no runtime keeps that word until --runtime-for maps it",
          "[imports][timing_rows]") {
  const TimingFile file("published.json", R"({"sources": {"bench": {"runtime": "cache-dit on diffusers"}},
  "points": [{"source": "bench", "model": "flux.1-dev", "hardware": "l20", "gpus": 1, "resolution": "1024x1024",
              "steps": 28, "seconds_per_image": 23.559}]})");
  auto rows = file.parse();
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  CHECK((*rows)[0].runtime == "cache-dit");  // resolved (and refused) against the catalog later
}

TEST_CASE("an array of rows takes the file name as source and --runtime for rows without one",
          "[imports][timing_rows]") {
  const TimingFile file("mine.json", R"([
    {"model": "flux.1-dev", "hardware": "l20", "gpus": 2, "resolution": "1024x1024", "ulysses_degree": 2,
     "step_ms": 150.5, "peak_mem_bytes": 1.5e10, "attention_backend": "cudnn", "text_encoder": "sharded", "vae": "parallel"}
  ])");
  TimingImportOptions o;
  o.default_runtime = "xdit";
  auto rows = file.parse(o);
  INFO((rows ? std::string() : rows.error().message));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  const TimingRow& r = (*rows)[0];
  CHECK(r.where == file.path() + ": rows[0]");
  CHECK(r.source == "mine.json");
  CHECK(r.runtime == "xdit");
  REQUIRE(r.step_ms.has_value());
  CHECK(*r.step_ms == 150.5);
  REQUIRE(r.peak_mem_bytes.has_value());
  CHECK(*r.peak_mem_bytes == 1.5e10);  // bytes as given
  CHECK(r.backend == AttentionBackend::kCudnn);
  REQUIRE(r.text_encoder.has_value());
  CHECK(*r.text_encoder == TextEncoderPlacement::kSharded);
  REQUIRE(r.vae.has_value());
  CHECK(*r.vae == VaePlacement::kParallel);
}

TEST_CASE("a CSV file reads quoted fields, doubled quotes and empty cells", "[imports][timing_rows]") {
  const TimingFile file("timings.csv",
                        "source,model,hardware,runtime,gpus,resolution,steps,ring_degree,ulysses_degree,ulysses_anything,"
                        "seconds_per_image,ms_per_step,peak_memory_gb\n"
                        "\"lab, room 2\",flux.1-dev,h100-sxm,diffusers,2,\"1024x1024\",28,1,2,false,4.379,,\n"
                        "\"the \"\"fast\"\" box\",flux.1-dev,l20,xdit,4,1008x1008,,2,2,true,,300.25,36\r\n");
  auto rows = file.parse();
  INFO((rows ? std::string() : rows.error().message));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);

  const TimingRow& a = (*rows)[0];
  CHECK(a.where == file.path() + ":2");
  CHECK(a.source == "lab, room 2");
  CHECK(a.model == "flux.1-dev");
  CHECK(a.hardware == "h100-sxm");
  CHECK(a.runtime == "diffusers");
  CHECK(a.gpus == 2);
  CHECK(a.width == 1024);
  CHECK(a.steps == 28);
  CHECK(a.config.ulysses() == 2);
  REQUIRE(a.image_ms.has_value());
  CHECK(*a.image_ms == Approx(4379.0));
  CHECK_FALSE(a.step_ms.has_value());  // an empty cell is absent
  CHECK_FALSE(a.peak_mem_bytes.has_value());

  const TimingRow& b = (*rows)[1];
  CHECK(b.where == file.path() + ":3");
  CHECK(b.source == "the \"fast\" box");
  CHECK(b.runtime == "xdit");
  CHECK(b.width == 1008);
  CHECK(b.height == 1008);
  CHECK(b.steps == 0);
  CHECK(b.config.ring() == 2);
  CHECK(b.config.ulysses() == 2);
  CHECK(b.config.context_parallel_config.ulysses_anything);
  REQUIRE(b.step_ms.has_value());
  CHECK(*b.step_ms == 300.25);
  REQUIRE(b.peak_mem_bytes.has_value());
  CHECK(*b.peak_mem_bytes == 36 * kGiBytes);  // 38 654 705 664 bytes
}

TEST_CASE("the recorder's JSON lines give the median step, the world size and the GPU name",
          "[imports][timing_rows]") {
  // Every key of the schema (docs/calibration.md, "The line"), as python/cpplan_record.py writes
  // them; a blank line between the two lines.
  const std::string first =
      R"({"cpplan_record": 1, "model": "flux.1-dev", "runtime": "diffusers", "hardware": null, "device": "cuda",)"
      R"( "gpu_name": "NVIDIA H100 80GB HBM3", "gpu_count": 4, "world_size": 4, "torch": "2.5.1", "cuda": "12.4",)"
      R"( "host": "node1", "started_at": "2025-12-01T09:00:00Z", "finished_at": "2025-12-01T09:00:05Z",)"
      R"( "width": 1024, "height": 1024, "frames": 1, "steps": 3, "batch": 1, "ring_degree": 1, "ulysses_degree": 4,)"
      R"( "tp_degree": 1, "cfg_degree": 1, "dp_degree": 1, "ulysses_anything": false, "ring_anything": false,)"
      R"( "text_encoder": "offloaded", "vae": "single", "step_ms": [10, 30, 20], "text_encode_ms": 50.5,)"
      R"( "vae_decode_ms": 80.0, "image_ms": 250.0, "peak_mem_bytes": 35000000000.0, "peak_mem_kind": "cuda_allocated"})";
  const std::string second =
      R"({"cpplan_record": 1, "model": "flux.1-dev", "runtime": "xdit", "hardware": "l20", "device": "cuda",)"
      R"( "gpu_name": "NVIDIA L20", "gpu_count": 2, "world_size": 2, "torch": "2.5.1", "cuda": "12.4",)"
      R"( "host": "node2", "started_at": "2025-12-01T09:00:00Z", "finished_at": "2025-12-01T09:00:09Z",)"
      R"( "width": 1024, "height": 768, "frames": 1, "steps": 4, "batch": 1, "ring_degree": 2, "ulysses_degree": 1,)"
      R"( "tp_degree": 1, "cfg_degree": 1, "dp_degree": 1, "ulysses_anything": false, "ring_anything": false,)"
      R"( "text_encoder": "replicated", "vae": "single", "step_ms": [40, 10, 30, 20], "text_encode_ms": null,)"
      R"( "vae_decode_ms": null, "image_ms": 900.0, "peak_mem_bytes": null, "peak_mem_kind": null})";
  const TimingFile file("runs.jsonl", first + "\n\n" + second + "\n");
  auto rows = file.parse();
  INFO((rows ? std::string() : rows.error().message));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);

  const TimingRow& a = (*rows)[0];
  CHECK(a.where == file.path() + ":1");
  CHECK(a.source == "runs.jsonl");
  CHECK(a.hardware == "gpu:NVIDIA H100 80GB HBM3");  // hardware null: matched by GPU name later
  CHECK(a.runtime == "diffusers");
  CHECK(a.gpus == 4);  // world_size
  CHECK(a.steps == 3);
  CHECK(a.config.ulysses() == 4);
  REQUIRE(a.step_ms.has_value());
  CHECK(*a.step_ms == 20);  // the median of [10, 30, 20]
  REQUIRE(a.image_ms.has_value());
  CHECK(*a.image_ms == 250);
  REQUIRE(a.peak_mem_bytes.has_value());
  CHECK(*a.peak_mem_bytes == 35e9);
  REQUIRE(a.text_encoder.has_value());
  CHECK(*a.text_encoder == TextEncoderPlacement::kOffloaded);
  REQUIRE(a.vae.has_value());
  CHECK(*a.vae == VaePlacement::kSingle);

  const TimingRow& b = (*rows)[1];
  CHECK(b.where == file.path() + ":3");  // line 3: the blank line 2 is skipped but counted
  CHECK(b.hardware == "l20");
  CHECK(b.runtime == "xdit");
  CHECK(b.gpus == 2);
  CHECK(b.height == 768);
  CHECK(b.config.ring() == 2);
  REQUIRE(b.step_ms.has_value());
  CHECK(*b.step_ms == 25);  // the median of [10, 20, 30, 40]: (20 + 30) / 2
  CHECK_FALSE(b.peak_mem_bytes.has_value());
}

TEST_CASE("recorder lines are recognised by their cpplan_record key whatever the extension",
          "[imports][timing_rows]") {
  const TimingFile file(
      "runs.json",
      R"({"cpplan_record": 1, "model": "flux.1-dev", "runtime": "diffusers", "hardware": "h100-sxm", "world_size": 1,)"
      R"( "width": 1024, "height": 1024, "steps": 2, "step_ms": [12.5, 13.5], "image_ms": 100.0})"
      "\n");
  auto rows = file.parse();
  INFO((rows ? std::string() : rows.error().message));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  CHECK((*rows)[0].where == file.path() + ":1");
  REQUIRE((*rows)[0].step_ms.has_value());
  CHECK(*(*rows)[0].step_ms == 13);  // (12.5 + 13.5) / 2
}

TEST_CASE("an unknown key is an error naming file, row and key with the nearest known one",
          "[imports][timing_rows][errors]") {
  const TimingFile file("t.json", published(point_with("modle", "\"flux.1-dev\"")));
  const std::string e = file.error();
  CHECK_THAT(e, Catch::StartsWith(file.path() + ": points[0]: modle = "));
  CHECK_THAT(e, Catch::Contains("unknown field"));
  CHECK_THAT(e, Catch::Contains("did you mean model?"));

  const TimingFile csv("t.csv", "model,hardwre,gpus\nflux.1-dev,l20,1\n");
  const std::string ce = csv.error();
  CHECK_THAT(ce, Catch::StartsWith(csv.path() + ":1: hardwre = "));  // the header is line 1
  CHECK_THAT(ce, Catch::Contains("did you mean hardware?"));

  const TimingFile object("o.json", R"({"points": [], "sorces": {}})");
  CHECK_THAT(object.error(), Catch::StartsWith(object.path() + ": sorces = ...: unknown field"));
}

TEST_CASE("a row without a model is an error naming file, row and field", "[imports][timing_rows][errors]") {
  const TimingFile file("t.json", published(point_with("ulysses_degree", "2") + ", " + point_with("model", "")));
  CHECK(file.error() == file.path() + ": points[1]: model = (missing): is required (or config: a diffusers transformer config)");
}

TEST_CASE("a row without ms_per_step or seconds_per_image is an error", "[imports][timing_rows][errors]") {
  const TimingFile file("t.json", published(point_with("ms_per_step", "")));
  const std::string e = file.error();
  CHECK_THAT(e, Catch::StartsWith(file.path() + ": points[0]: ms_per_step = (missing): "));
  CHECK_THAT(e, Catch::Contains("seconds_per_image"));
}

TEST_CASE("a per-image figure without its steps is an error", "[imports][timing_rows][errors]") {
  std::string point = point_with("ms_per_step", "");
  point.insert(1, "\"seconds_per_image\": 4.2, ");
  const TimingFile file("t.json", "[" + point + "]");
  const std::string e = file.error();
  CHECK_THAT(e, Catch::StartsWith(file.path() + ": rows[0]: steps = (missing): "));
  CHECK_THAT(e, Catch::Contains("per-image figure needs the steps"));
}

TEST_CASE("a degree below 1 or not an integer is an error naming the degree", "[imports][timing_rows][errors]") {
  const TimingFile zero("t.json", published(point_with("ulysses_degree", "0")));
  CHECK_THAT(zero.error(), Catch::StartsWith(zero.path() + ": points[0]: ulysses_degree = 0: must be above 0"));
  const TimingFile half("h.json", published(point_with("ulysses_degree", "1.5")));
  CHECK(half.error() == half.path() + ": points[0]: ulysses_degree = 1.5: must be an integer");
  const TimingFile text("x.json", published(point_with("ring_degree", "\"two\"")));
  CHECK(text.error() == text.path() + ": points[0]: ring_degree = two: must be a number");
}

TEST_CASE("gpus must equal the product of the degrees", "[imports][timing_rows][errors]") {
  // ulysses 2 x ring 2 = 4 GPUs, not 2.
  const TimingFile file("t.json", published(point_with("ring_degree", "2")));
  CHECK(file.error() == file.path() + ": points[0]: gpus = 2: must equal the product of the degrees (4)");
  const TimingFile csv("t.csv", "model,hardware,runtime,gpus,resolution,tp_degree,ms_per_step\n"
                                "flux.1-dev,l20,diffusers,8,1024x1024,2,10\n");
  CHECK(csv.error() == csv.path() + ":2: gpus = 8: must equal the product of the degrees (2)");
}

TEST_CASE("a JSON file that does not parse is an error naming the file", "[imports][timing_rows][errors]") {
  const TimingFile file("t.json", "{\"points\": [ {\"model\": }");
  const std::string e = file.error();
  CHECK_THAT(e, Catch::StartsWith(file.path() + ": invalid JSON: "));
  CHECK_THAT(e, Catch::Contains("line 1"));  // nlohmann's position of the bad token
  CHECK(e.find('\n') == std::string::npos);

  // JSON lines: the line that does not parse (line 2; the blank line 1 counts).
  const TimingFile lines("runs.jsonl", "\n{\"cpplan_record\": 1,\n");
  const std::string le = lines.error();
  CHECK_THAT(le, Catch::StartsWith(lines.path() + ":2: invalid JSON: "));
  CHECK(le.find('\n') == std::string::npos);
}

TEST_CASE("a CSV row with another field count than its header is an error naming the line",
          "[imports][timing_rows][errors]") {
  const TimingFile file("t.csv", "model,hardware,runtime,gpus,resolution,ms_per_step\n"
                                 "flux.1-dev,l20,diffusers,1,1024x1024,10\n"
                                 "flux.1-dev,l20,\"diffusers,xdit\",1,1024x1024\n");
  CHECK(file.error() == file.path() + ":3: 5 fields where the header has 6");
}

TEST_CASE("a recorder line of another schema version is an error naming the line and the key",
          "[imports][timing_rows][errors]") {
  const TimingFile file(
      "runs.jsonl",
      R"({"cpplan_record": 1, "model": "flux.1-dev", "runtime": "diffusers", "hardware": "h100-sxm", "world_size": 1,)"
      R"( "width": 1024, "height": 1024, "steps": 2, "step_ms": [12.5, 13.5], "image_ms": 100.0})"
      "\n"
      R"({"cpplan_record": 2, "model": "flux.1-dev", "runtime": "diffusers", "hardware": "h100-sxm", "world_size": 1,)"
      R"( "width": 1024, "height": 1024, "steps": 2, "step_ms": [12.5, 13.5], "image_ms": 100.0})"
      "\n");
  CHECK(file.error() == file.path() + ":2: cpplan_record = 2: must be 1");
}

TEST_CASE("a recorder line whose world_size disagrees with its degrees is an error", "[imports][timing_rows][errors]") {
  const TimingFile file(
      "runs.jsonl",
      R"({"cpplan_record": 1, "model": "flux.1-dev", "runtime": "diffusers", "hardware": "h100-sxm", "world_size": 4,)"
      R"( "width": 1024, "height": 1024, "steps": 2, "ulysses_degree": 2, "step_ms": [12.5, 13.5], "image_ms": 100.0})"
      "\n");
  CHECK(file.error() == file.path() + ":1: gpus = 4: must equal the product of the degrees (2)");
}

// Bad input is a value, not a crash (STYLE.md): a key of the wrong JSON type must come back as
// an error naming the row and the field, as every other bad value does.
TEST_CASE("a source of the wrong type is an error, not an exception", "[imports][timing_rows][errors]") {
  const TimingFile file("s.json", published(point_with("source", "5")));
  cpplan::Result<std::vector<TimingRow>> r = std::vector<TimingRow>{};
  REQUIRE_NOTHROW(r = file.parse());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == file.path() + ": points[0]: source = 5: must be a string");
}

TEST_CASE("a hardware of the wrong type is an error, not an exception", "[imports][timing_rows][errors]") {
  const TimingFile file("h.json", published(point_with("hardware", "5")));
  cpplan::Result<std::vector<TimingRow>> r = std::vector<TimingRow>{};
  REQUIRE_NOTHROW(r = file.parse());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == file.path() + ": points[0]: hardware = 5: must be a string");
}

TEST_CASE("a gpu_name of the wrong type is an error, not an exception", "[imports][timing_rows][errors]") {
  const TimingFile file("g.json", published(point_with("hardware", "").insert(1, "\"gpu_name\": [1], ")));
  cpplan::Result<std::vector<TimingRow>> r = std::vector<TimingRow>{};
  REQUIRE_NOTHROW(r = file.parse());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == file.path() + ": points[0]: gpu_name = [1]: must be a string");
}

TEST_CASE("a recorder line whose world_size is not a number is an error, not an exception",
          "[imports][timing_rows][errors]") {
  const TimingFile file(
      "runs.jsonl",
      R"({"cpplan_record": 1, "model": "flux.1-dev", "runtime": "diffusers", "hardware": "h100-sxm", "world_size": null,)"
      R"( "width": 1024, "height": 1024, "steps": 2, "step_ms": [12.5, 13.5], "image_ms": 100.0})"
      "\n");
  cpplan::Result<std::vector<TimingRow>> r = std::vector<TimingRow>{};
  REQUIRE_NOTHROW(r = file.parse());
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::StartsWith(file.path() + ":1: "));
  CHECK_THAT(r.error().message, Catch::Contains("world_size") || Catch::Contains("gpus"));
}

TEST_CASE("fs_degree reads xDiT's fully sharded weights without counting it in the GPUs", "[imports][timing_rows]") {
  // 2 GPUs of ulysses 2, their block weights sharded over both: still 2 GPUs (docs/usage.md).
  const TimingFile file("t.json", published(point_with("fs_degree", "2")));
  auto rows = file.parse();
  INFO((rows ? std::string() : rows.error().message));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  CHECK((*rows)[0].config.fs() == 2);
  CHECK((*rows)[0].config.world_size() == 2);
  const TimingFile zero("z.json", published(point_with("fs_degree", "0")));
  CHECK_THAT(zero.error(), Catch::StartsWith(zero.path() + ": points[0]: fs_degree = 0: must be above 0"));
}

TEST_CASE("a PipeFusion row reads its degree, patches and warm-up, xDiT's defaults where absent or null",
          "[imports][timing_rows]") {
  // Two points as published-xdit-pixart.json writes them: warm-up 2 stated, then null (xDiT's
  // default, 1) with the patch count not stated (xDiT's default: one patch per stage).
  const std::string stated =
      R"({"model": "flux.1-dev", "hardware": "l20", "runtime": "xdit", "gpus": 8, "resolution": "1024x1024",
          "pipefusion_degree": 8, "pipefusion_warmup_steps": 2, "pipefusion_patches": 16, "seconds_per_image": 1.35, "steps": 20})";
  const std::string unstated =
      R"({"model": "flux.1-dev", "hardware": "l20", "runtime": "xdit", "gpus": 4, "resolution": "1024x1024",
          "pipefusion_degree": 4, "pipefusion_warmup_steps": null, "seconds_per_image": 0.87, "steps": 20})";
  const TimingFile file("pf.json", "{\"points\": [" + stated + ", " + unstated + "]}");
  auto rows = file.parse();
  INFO((rows ? std::string() : rows.error().message));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  CHECK((*rows)[0].config.pipefusion == cpplan::PipeFusionConfig{8, 16, 2});
  CHECK((*rows)[1].config.pipefusion == cpplan::PipeFusionConfig{4, 4, cpplan::kXditWarmupSteps});
  CHECK((*rows)[1].config.pipefusion.warmup_steps == 1);
}

TEST_CASE("calibrate's --warmup-for sets the warm-up of a source's PipeFusion rows that state none, and only theirs",
          "[imports][timing_rows]") {
  // Four points of source "pf": warm-up 2 stated, null, absent, and a row without PipeFusion.
  const std::string base = R"("model": "flux.1-dev", "hardware": "l20", "runtime": "xdit", "gpus": 4, "resolution": "1024x1024",
                              "seconds_per_image": 1.0, "steps": 20, "source": "pf")";
  const std::string points = "{\"points\": [{" + base + R"(, "pipefusion_degree": 4, "pipefusion_warmup_steps": 2}, {)" + base +
                             R"(, "pipefusion_degree": 4, "pipefusion_warmup_steps": null}, {)" + base +
                             R"(, "pipefusion_degree": 4}, {)" + base + R"(, "ulysses_degree": 4}]})";
  const TimingFile file("w.json", points);
  TimingImportOptions o;
  o.warmup_for_source["pf"] = 3;
  auto rows = file.parse(o);
  INFO((rows ? std::string() : rows.error().message));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 4);
  CHECK((*rows)[0].config.pipefusion.warmup_steps == 2);  // stated: kept
  CHECK((*rows)[1].config.pipefusion.warmup_steps == 3);
  CHECK((*rows)[2].config.pipefusion.warmup_steps == 3);
  CHECK((*rows)[3].config.pipefusion.warmup_steps == 0);  // no PipeFusion: none
  // Another source's rows keep xDiT's default.
  o.warmup_for_source = {{"other", 3}};
  auto kept = file.parse(o);
  REQUIRE(kept.ok());
  CHECK((*kept)[1].config.pipefusion.warmup_steps == cpplan::kXditWarmupSteps);
}

TEST_CASE("a row's box names its topology through --topology-for and --model-for names a source's model",
          "[imports][timing_rows]") {
  const std::string box = point_with("box", "\"4 x A100 on PCIe\"");
  const std::string described = point_with("model", "\"PixArt-alpha XL-2-1024-MS (Transformer2DModel)\"");
  const TimingFile file("b.json", "{\"points\": [" + box + ", " + described + "]}");
  TimingImportOptions o;
  o.topology_for_box["4 x A100 on PCIe"] = "4x-a100-pcie";
  o.model_for_source["b.json"] = "pixart-alpha";
  auto rows = file.parse(o);
  INFO((rows ? std::string() : rows.error().message));
  REQUIRE(rows.ok());
  CHECK((*rows)[0].box == "4 x A100 on PCIe");
  CHECK((*rows)[0].topology == "4x-a100-pcie");
  CHECK((*rows)[0].model == "pixart-alpha");  // the source is the file's name: every row of it
  CHECK((*rows)[1].model == "pixart-alpha");
  CHECK((*rows)[1].box.empty());
  CHECK((*rows)[1].topology.empty());
  // Without --model-for the row keeps the model it says (the fit then names it an unknown profile).
  TimingImportOptions boxes_only;
  boxes_only.topology_for_box = o.topology_for_box;
  auto plain = file.parse(boxes_only);
  REQUIRE(plain.ok());
  CHECK((*plain)[1].model == "PixArt-alpha XL-2-1024-MS (Transformer2DModel)");
}

TEST_CASE("a box no --topology-for names is an error naming the row and the box", "[imports][timing_rows][errors]") {
  const TimingFile file("b.json", published(point_with("box", "\"4 x A100 on PCIe\"")));
  CHECK(file.error() == file.path() +
                            ": points[0]: box = 4 x A100 on PCIe: names no topology (give --topology-for BOX=TOPOLOGY, "
                            "or the row a \"topology\")");
}

TEST_CASE("PipeFusion patches or warm-up without PipeFusion stay as given, for the plan check to refuse",
          "[imports][timing_rows]") {
  const TimingFile file("p.json", published(point_with("pipefusion_patches", "4")));
  auto rows = file.parse();
  REQUIRE(rows.ok());
  CHECK((*rows)[0].config.pipefusion == cpplan::PipeFusionConfig{1, 4, 0});
}

TEST_CASE("a warm-up below 0 is an error naming the field", "[imports][timing_rows][errors]") {
  const TimingFile file("w.json", published(point_with("pipefusion_warmup_steps", "-1")));
  CHECK(file.error() == file.path() + ": points[0]: pipefusion_warmup_steps = -1: must be above -1 and at most 100000");
}

namespace {

// A timings file in a fresh folder with a configs/ folder beside it holding `configs` (empty
// files: the importer only finds them; the calibration derives their profiles).
class FamiliesFile {
 public:
  FamiliesFile(const std::string& points, const std::vector<std::string>& configs = {"sd3-medium.json"}) {
    std::filesystem::create_directories(dir_.path() / "configs");
    for (const std::string& c : configs) std::ofstream(dir_.path() / "configs" / c) << "{}";
    std::ofstream(dir_.file("families.json")) << "{\"about\": \"for the test\", \"points\": [" << points << "]}";
  }
  std::string path() const { return dir_.file("families.json"); }
  std::string folder() const { return dir_.path().string(); }
  cpplan::Result<std::vector<TimingRow>> parse(const TimingImportOptions& o = {}) const {
    std::ifstream in(path(), std::ios::binary);
    return parse_timing_rows(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), path(), o);
  }
  std::string error(const TimingImportOptions& o = {}) const {
    auto rows = parse(o);
    REQUIRE_FALSE(rows.ok());
    return rows.error().message;
  }

 private:
  cpplan::test::TempDir dir_{"cpplan-families-"};
};

// The families file names no runtime: --runtime xdit, as scripts/published-sets.sh gives it.
TimingImportOptions xdit() {
  TimingImportOptions o;
  o.default_runtime = "xdit";
  return o;
}

// `text` with its first `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// One row of ../shared/reference/published-xdit-families.json's schema, with `extra` fields added.
std::string families_row(const std::string& extra = "") {
  return R"({"src": "xdit-project/xdit_assets", "path": "performance/sd3/L40-SD3.png", "commit": "abc",
    "raw_model": "SD3-medium", "config": "sd3-medium.json", "hw": "l40", "gpus": 4, "res": "1024x1024",
    "frames": null, "steps": 20, "ulysses": 1, "ring": 1, "tp": 1, "cfg": 2, "pipefusion": 2, "compiled": true,
    "seconds": 1.41, "step_ms": null, "mem_gb": 20.5, "oom": false, "from_figure": true,
    "quote": "bar labelled 1.41")" + extra + "}";
}

}  // namespace

TEST_CASE("a row of the families schema reads its short names, its config and compiled as the long schema",
          "[imports][timing_rows][families]") {
  const FamiliesFile file(families_row());
  TimingImportOptions o;
  o.default_runtime = "xdit";
  auto rows = file.parse(o);
  INFO((rows ? std::string() : rows.error().message));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  const TimingRow& r = (*rows)[0];
  CHECK(r.source == "xdit-project/xdit_assets");
  CHECK(r.hardware == "l40");
  CHECK(r.model == "sd3-medium");  // the config's stem: the profile the calibration derives from it
  CHECK(r.model_config == (std::filesystem::path(file.folder()) / "configs" / "sd3-medium.json").string());
  CHECK(r.width == 1024);
  CHECK(r.height == 1024);
  CHECK(r.frames == 1);  // null: an image
  CHECK(r.steps == 20);
  CHECK(r.config.cfg_degree == 2);
  CHECK(r.config.pp() == 2);
  CHECK(r.config.pipefusion.patches == 2);  // xDiT's default: one patch per stage
  CHECK(r.compiled);
  CHECK(r.runtime == "compiled");  // compiled = true over --runtime
  CHECK_FALSE(r.step_ms.has_value());
  REQUIRE(r.image_ms.has_value());
  CHECK(*r.image_ms == Approx(1410));  // seconds per output
  REQUIRE(r.peak_mem_bytes.has_value());
  CHECK(*r.peak_mem_bytes == Approx(20.5 * kGiBytes));
  CHECK_FALSE(r.oom);
}

TEST_CASE("a families row runs --runtime unless compiled, and --runtime-for its source wins over both",
          "[imports][timing_rows][families]") {
  TimingImportOptions o;
  o.default_runtime = "xdit";
  const FamiliesFile eager(replaced(families_row(), "\"compiled\": true", "\"compiled\": false"));
  auto rows = eager.parse(o);
  REQUIRE(rows.ok());
  CHECK((*rows)[0].runtime == "xdit");
  CHECK_FALSE((*rows)[0].compiled);
  const FamiliesFile compiled(families_row());
  o.runtime_for_source["xdit-project/xdit_assets"] = "diffusers";
  rows = compiled.parse(o);
  REQUIRE(rows.ok());
  CHECK((*rows)[0].runtime == "diffusers");
  CHECK((*rows)[0].compiled);
}

TEST_CASE("a families row with oom = true needs no timing and is kept, flagged, for the fit to skip",
          "[imports][timing_rows][families]") {
  const std::string row = replaced(replaced(families_row(), "\"seconds\": 1.41", "\"seconds\": null"),
                                   "\"oom\": false", "\"oom\": true");
  const FamiliesFile file(row);
  auto rows = file.parse(xdit());
  INFO((rows ? std::string() : rows.error().message));
  REQUIRE(rows.ok());
  CHECK((*rows)[0].oom);
  CHECK_FALSE((*rows)[0].image_ms.has_value());
  CHECK_THAT(FamiliesFile(replaced(row, "\"oom\": true", "\"oom\": false")).error(xdit()),
             Catch::Contains("points[0]: ms_per_step = (missing): a row needs ms_per_step (step_ms) or seconds_per_image"));
}

TEST_CASE("a families row's config, model and short names are refused with one line naming the rule",
          "[imports][timing_rows][families][errors]") {
  const FamiliesFile missing(families_row(), {});
  CHECK_THAT(missing.error(xdit()), Catch::Contains("points[0]: config = sd3-medium.json: no such file ("));
  CHECK_THAT(missing.error(xdit()), Catch::Contains("relative to the timings file's folder or its configs/"));
  const FamiliesFile both(families_row(R"(, "model": "flux.1-dev")"));
  CHECK_THAT(both.error(xdit()),
             Catch::Contains("points[0]: model = flux.1-dev: a row names a model profile or a config (sd3-medium.json), not both"));
  const FamiliesFile twice(families_row(R"(, "hardware": "l20")"));
  CHECK_THAT(twice.error(xdit()), Catch::Contains("points[0]: hw = \"l40\": names the field hardware too (given as \"l20\")"));
  const std::string row = replaced(families_row(), "\"config\": \"sd3-medium.json\"", "\"model\": \"hunyuanvideo\"");
  auto rows = FamiliesFile(row).parse(xdit());
  REQUIRE(rows.ok());
  CHECK((*rows)[0].model == "hunyuanvideo");
  CHECK((*rows)[0].model_config.empty());
  CHECK_THAT(FamiliesFile(replaced(row, "\"model\": \"hunyuanvideo\", ", "")).error(xdit()),
             Catch::Contains("points[0]: model = (missing): is required (or config: a diffusers transformer config)"));
}
