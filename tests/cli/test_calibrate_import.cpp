// `cpplan calibrate --import` end to end on the 26 published FLUX.1-dev timings
// (profiles/reference/published-flux.json): the fit's accuracy, the fit file it writes and a
// query planning with it, bad input (one line, exit 3, no file written); and the runtime and
// placement flags of a query.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fit.h"
#include "tests/cli/run_cli.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using cpplan::test::CliResult;
using cpplan::test::run_cli;
using cpplan::test::TempDir;
using nlohmann::json;

namespace {

std::string published() { return std::string(CPPLAN_TEST_PROFILES) + "/reference/published-flux.json"; }
int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

// The calibration of the published timings, run once for the checks that only read it.
const json& published_fit() {
  static const json j = [] {
    const CliResult r = run_cli({"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers", "--json"});
    if (r.code != 0) throw std::runtime_error("calibrate --import failed: " + r.err);
    return json::parse(r.out);
  }();
  return j;
}

// A bad invocation: exit 3, one line on stderr, nothing on stdout.
void check_refused(const CliResult& r) {
  INFO("stdout: " << r.out);
  INFO("stderr: " << r.err);
  CHECK(r.code == 3);
  CHECK(lines(r.err) == 1);
  CHECK_THAT(r.err, Catch::StartsWith("cpplan: "));
  CHECK(r.out.empty());
}

json query(std::vector<std::string> args) {
  const CliResult r = run_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("calibrate --import fits the 26 published timings within the acceptance thresholds",
          "[cli][calibrate_import]") {
  const json& j = published_fit();
  REQUIRE(j["rows"].size() == 26);
  // The issue's acceptance: in-sample time MAPE at most 12%.
  CHECK(j["fitted_mape"].get<double>() <= 0.12);
  CHECK(j["cv_mape"].get<double>() > 0);
  CHECK(j["folds"] == 5);
  // Every pair of one source, GPU kind and size more than 5% apart ordered right, and there are
  // many: the L20 and RTX 4090 per-step tables alone give dozens.
  CHECK(j["pairs"].get<int>() > 30);
  CHECK(j["pairs_ordered"] == j["pairs"]);
  CHECK(j["misordered"].empty());
  // Points 0-14 report a peak (the diffusers guide's tables); at least 14 within 10%.
  CHECK(j["memory_rows"] == 15);
  CHECK(j["memory_within_10"].get<int>() >= 14);
  // The issue's "memory within 10%": the mean absolute error of the 15 published peaks.
  CHECK(j["memory_mape"].get<double>() <= 0.10);
  std::set<std::string> held;
  for (const auto& [k, v] : j["held_out"].items()) {
    held.insert(k);
    CHECK(v.get<double>() >= 0);
  }
  CHECK(held == std::set<std::string>{"hardware=h100-sxm", "hardware=l20", "hardware=rtx4090-48g",
                                      "resolution=1008x1008", "resolution=1024x1024", "source=cache-dit",
                                      "source=diffusers-cp-guide", "source=xdit-flux"});
  CHECK(j["output"].is_null());
}

TEST_CASE("calibrate --import reports each row against its source's unit and runtime", "[cli][calibrate_import]") {
  const json& rows = published_fit()["rows"];
  REQUIRE(rows.size() == 26);
  // Points 0-11: ms per step (L20, RTX 4090 48GB); 12-25: seconds per image with their steps.
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO("points[" << i << "]");
    CHECK(rows[i]["per_image"] == (i >= 12));
    CHECK(rows[i]["where"].get<std::string>() == published() + ": points[" + std::to_string(i) + "]");
  }
  CHECK(rows[0]["measured_ms"].get<double>() == Approx(281.07));
  CHECK(rows[12]["measured_ms"].get<double>() == Approx(6671.0));   // 6.671 s
  CHECK(rows[21]["measured_ms"].get<double>() == Approx(23559.0));  // 23.559 s
  CHECK(rows[0]["runtime"] == "diffusers");   // "diffusers eager (torch 2.x, ...)"
  CHECK(rows[15]["runtime"] == "xdit");       // "xDiT eager (no torch.compile)"
  CHECK(rows[21]["runtime"] == "diffusers");  // --runtime-for cache-dit=diffusers
  CHECK(rows[0]["measured_mem_bytes"].get<double>() == Approx(37.11 * 1073741824.0));
  CHECK(rows[15]["measured_mem_bytes"].is_null());
}

TEST_CASE("calibrate --import -o writes a fit file that loads and that a query plans with", "[cli][calibrate_import]") {
  TempDir dir("cpplan-calibrate-import-");
  const std::string out = dir.file("mine.toml");
  const CliResult r = run_cli({"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers", "-o", out,
                               "--name", "mine", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  CHECK(json::parse(r.out)["output"] == out);
  REQUIRE(fs::is_regular_file(out));

  auto fit = cpplan::load_runtime_fit(out);
  INFO((fit ? std::string() : fit.error().message));
  REQUIRE(fit.ok());
  CHECK(fit->name == "mine");
  CHECK(fit->provenance.source == published());
  CHECK(fit->provenance.rows == 26);
  CHECK(fit->provenance.folds == 5);
  CHECK(fit->provenance.mape <= 0.12);
  CHECK(fit->provenance.held_out.size() == 8);  // 3 GPU kinds, 3 sources, 2 sizes
  CHECK(fit->runtimes.count("diffusers") == 1);
  CHECK(fit->runtimes.count("xdit") == 1);
  CHECK(fit->architectures.count("ada") == 1);     // L20, RTX 4090 48GB
  CHECK(fit->architectures.count("hopper") == 1);  // H100 SXM

  // The fit in a profile directory of its own: the catalog loads and applies it.
  fs::create_directories(dir.path() / "p" / "fits");
  fs::copy_file(out, dir.path() / "p" / "fits" / "mine.toml");
  for (const char* hardware : {"l20", "h100-sxm"}) {
    INFO(hardware);
    const json plain = query({"--gpus", "4", "--res", "1024x1024", "--hardware", hardware, "--json"});
    const json mine = query({"--gpus", "4", "--res", "1024x1024", "--hardware", hardware, "--json", "--profiles",
                             (dir.path() / "p").string()});
    REQUIRE(!plain["plans"].empty());
    REQUIRE(!mine["plans"].empty());
    CHECK(mine["plans"][0]["label"] == plain["plans"][0]["label"]);
    CHECK(mine["plans"][0]["predicted"]["step_ms"].get<double>() > 0);
  }
}

// The shipped fit (profiles/fits/published-flux.toml) was made by this very command from this
// very file: a copy of it under another name in --profiles changes no prediction, since every
// fit loaded is applied "in load order, later values winning" (docs/profiles.md).
TEST_CASE("calibrate --import --shrinkage-by groups records how its ridge was chosen, in the report and the fit file",
          "[cli][calibrate_import]") {
  CHECK(published_fit()["shrinkage_by"] == "rows");  // the default
  TempDir dir("cpplan-calibrate-import-");
  const std::string out = dir.file("by-groups.toml");
  const CliResult r = run_cli({"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers", "-o", out,
                               "--shrinkage-by", "groups", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  CHECK(j["shrinkage_by"] == "groups");
  auto fit = cpplan::load_runtime_fit(out);
  INFO((fit ? std::string() : fit.error().message));
  REQUIRE(fit.ok());
  CHECK(fit->provenance.shrinkage_by_groups);
  CHECK(fit->provenance.shrinkage == Approx(j["shrinkage"].get<double>()));
  const CliResult text = run_cli({"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers",
                                  "--shrinkage-by", "groups"});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains(", chosen by leaving groups out)"));
}

TEST_CASE("a query with a refit of the shipped timings in --profiles predicts what it predicts without",
          "[cli][calibrate_import]") {
  TempDir dir("cpplan-calibrate-import-");
  fs::create_directories(dir.path() / "p" / "fits");
  const std::string out = (dir.path() / "p" / "fits" / "mine.toml").string();
  const CliResult r = run_cli({"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers", "-o", out});
  INFO(r.err);
  REQUIRE(r.code == 0);
  for (const char* hardware : {"l20", "h100-sxm"}) {
    INFO(hardware);
    const json plain = query({"--gpus", "4", "--res", "1024x1024", "--hardware", hardware, "--json"});
    const json mine = query({"--gpus", "4", "--res", "1024x1024", "--hardware", hardware, "--json", "--profiles",
                             (dir.path() / "p").string()});
    REQUIRE(!plain["plans"].empty());
    REQUIRE(mine["plans"][0]["label"] == plain["plans"][0]["label"]);
    CHECK(mine["plans"][0]["predicted"]["step_ms"].get<double>() ==
          Approx(plain["plans"][0]["predicted"]["step_ms"].get<double>()).epsilon(1e-4));
  }
}

// The fit file carries the timings' path and file name (provenance.source, description): a
// quote in them must not make a file the catalog then refuses.
// A fit to timings a thousand times shorter than the published ones asks for efficiencies far past
// any a GPU reaches: the solver stops each multiplier at the largest a fit file may hold
// (kMaxFitMultiplier), so the file it writes loads and the catalog that holds it still plans.
TEST_CASE("calibrate --import keeps every multiplier within what the profile loader accepts", "[cli][calibrate_import]") {
  TempDir dir("cpplan-calibrate-import-");
  json doc = json::parse(std::ifstream(published()));
  for (json& p : doc["points"]) {
    if (p.contains("seconds_per_image")) p["seconds_per_image"] = p["seconds_per_image"].get<double>() * 1e-3;
    if (p.contains("ms_per_step")) p["ms_per_step"] = p["ms_per_step"].get<double>() * 1e-3;
  }
  const std::string scaled = dir.file("scaled.json");
  std::ofstream(scaled) << doc.dump();
  fs::create_directories(dir.path() / "p" / "fits");
  const std::string out = (dir.path() / "p" / "fits" / "scaled.toml").string();
  const CliResult r = run_cli({"calibrate", "--import", scaled, "--runtime-for", "cache-dit=diffusers", "-o", out});
  INFO(r.err);
  REQUIRE(r.code == 0);
  auto fit = cpplan::load_runtime_fit(out);
  INFO((fit ? std::string() : fit.error().message));
  REQUIRE(fit.ok());
  for (const auto& [name, a] : fit->architectures)
    for (double m : {a.gemm, a.attention, a.memory, a.conv}) {
      INFO(name);
      CHECK(m > 0);
      CHECK(m <= cpplan::kMaxFitMultiplier);
    }
  const CliResult q = run_cli({"--gpus", "2", "--hardware", "l20", "--profiles", (dir.path() / "p").string()});
  INFO(q.err);
  CHECK(q.code == 0);
}

TEST_CASE("a fit written from a file whose name holds a quote loads back", "[cli][calibrate_import]") {
  TempDir dir("cpplan-calibrate-import-");
  const std::string in = dir.file("lab \"2\".json");
  fs::copy_file(published(), in);
  const std::string out = dir.file("lab.toml");
  const CliResult r = run_cli({"calibrate", "--import", in, "--runtime-for", "cache-dit=diffusers", "-o", out});
  INFO(r.err);
  REQUIRE(r.code == 0);
  auto fit = cpplan::load_runtime_fit(out);
  INFO((fit ? std::string() : fit.error().message));
  REQUIRE(fit.ok());
  CHECK(fit->provenance.source == in);
}

// Bad input is exit 3 with one line (STYLE.md), whatever the JSON type of the bad value.
TEST_CASE("calibrate --import refuses a row whose source is not a string with one line",
          "[cli][calibrate_import][errors]") {
  TempDir dir("cpplan-calibrate-import-");
  const std::string in = dir.file("typed.json");
  std::ofstream(in) << R"([{"source": 5, "model": "flux.1-dev", "hardware": "l20", "runtime": "diffusers", "gpus": 1,
    "resolution": "1024x1024", "ms_per_step": 500}])";
  const CliResult r = run_cli({"calibrate", "--import", in, "-o", dir.file("out.toml")});
  check_refused(r);
  CHECK_THAT(r.err, Catch::Contains(in + ": rows[0]: source = 5: must be a string"));
  CHECK_FALSE(fs::exists(dir.file("out.toml")));
}

TEST_CASE("calibrate --import without -o writes no file and names its fit 'fit'", "[cli][calibrate_import]") {
  const std::string toml = published_fit()["fit"];
  CHECK_THAT(toml, Catch::Contains("name = \"fit\""));
  auto parsed = cpplan::parse_runtime_fit(toml, "/somewhere/fit.toml");
  INFO((parsed ? std::string() : parsed.error().message));
  CHECK(parsed.ok());
}

TEST_CASE("calibrate --import refuses a missing file with one line", "[cli][calibrate_import][errors]") {
  TempDir dir("cpplan-calibrate-import-");
  const CliResult r = run_cli({"calibrate", "--import", dir.file("nope.json"), "-o", dir.file("out.toml")});
  check_refused(r);
  CHECK_THAT(r.err, Catch::Contains(dir.file("nope.json")));
  CHECK_FALSE(fs::exists(dir.file("out.toml")));
}

TEST_CASE("calibrate --import refuses a JSON row with an unknown key, naming file, row and key",
          "[cli][calibrate_import][errors]") {
  TempDir dir("cpplan-calibrate-import-");
  const std::string in = dir.file("bad.json");
  std::ofstream(in) << R"([{"model": "flux.1-dev", "hardware": "l20", "runtime": "diffusers", "gpus": 1,
    "resolution": "1024x1024", "ms_per_step": 500},
   {"model": "flux.1-dev", "hardware": "l20", "runtime": "diffusers", "gpus": 1,
    "resolution": "1024x1024", "ms_per_stepp": 500}])";
  const CliResult r = run_cli({"calibrate", "--import", in, "-o", dir.file("out.toml")});
  check_refused(r);
  CHECK_THAT(r.err, Catch::Contains(in + ": rows[1]: ms_per_stepp = "));
  CHECK_THAT(r.err, Catch::Contains("did you mean ms_per_step?"));
  CHECK_FALSE(fs::exists(dir.file("out.toml")));
}

TEST_CASE("calibrate --import refuses a source that names no runtime and suggests --runtime-for",
          "[cli][calibrate_import][errors]") {
  TempDir dir("cpplan-calibrate-import-");
  const CliResult r = run_cli({"calibrate", "--import", published(), "-o", dir.file("out.toml")});
  check_refused(r);
  // The first cache-dit point: its source's runtime is "cache-dit on diffusers, eager, no caching".
  CHECK_THAT(r.err, Catch::Contains("points[21]"));
  CHECK_THAT(r.err, Catch::Contains("runtime = cache-dit"));
  CHECK_THAT(r.err, Catch::Contains("--runtime-for cache-dit="));
  CHECK_FALSE(fs::exists(dir.file("out.toml")));
}

TEST_CASE("calibrate --import refuses an output that is not a .toml in an existing directory named after the fit",
          "[cli][calibrate_import][errors]") {
  TempDir dir("cpplan-calibrate-import-");
  const std::vector<std::string> base = {"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  };
  {
    const CliResult r = with({"-o", dir.file("x.txt")});
    check_refused(r);
    CHECK_THAT(r.err, Catch::Contains("-o = " + dir.file("x.txt") + ": must end in .toml"));
  }
  {
    const std::string missing = (dir.path() / "missing" / "out.toml").string();
    const CliResult r = with({"-o", missing});
    check_refused(r);
    CHECK_THAT(r.err, Catch::Contains("does not exist"));
    CHECK_FALSE(fs::exists(dir.path() / "missing"));
  }
  {
    const CliResult r = with({"--name", "a", "-o", dir.file("b.toml")});
    check_refused(r);
    CHECK_THAT(r.err, Catch::Contains("--name = a"));
    CHECK_THAT(r.err, Catch::Contains("\"b\""));
  }
  // Nothing was written by any of them.
  CHECK(fs::is_empty(dir.path()));
}

TEST_CASE("calibrate --import refuses a malformed --runtime-for or --warmup-for and --folds below 2", "[cli][calibrate_import][errors]") {
  TempDir dir("cpplan-calibrate-import-");
  {
    const CliResult r =
        run_cli({"calibrate", "--import", published(), "-o", dir.file("out.toml"), "--runtime-for", "oops"});
    check_refused(r);
    CHECK_THAT(r.err, Catch::Contains("--runtime-for = oops: must be SOURCE=RUNTIME"));
  }
  {  // a --model-for or --topology-for no row uses: a typo, refused rather than left unapplied
    const CliResult m = run_cli({"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers", "-o",
                                 dir.file("out.toml"), "--model-for", "xdit-flx=flux.1-dev"});
    check_refused(m);
    CHECK_THAT(m.err, Catch::StartsWith("cpplan: --model-for = xdit-flx=flux.1-dev: no row has source xdit-flx (the rows': "));
    const CliResult t = run_cli({"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers", "-o",
                                 dir.file("out.toml"), "--topology-for", "my box=dgx-a100"});
    check_refused(t);
    CHECK_THAT(t.err, Catch::Contains("--topology-for = my box=dgx-a100: no row has box my box"));
    const CliResult w = run_cli({"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers", "-o",
                                 dir.file("out.toml"), "--warmup-for", "xdit-flx=2"});
    check_refused(w);
    CHECK_THAT(w.err, Catch::StartsWith("cpplan: --warmup-for = xdit-flx=2: no row has source xdit-flx (the rows': "));
  }
  for (const char* bad : {"xdit-flux=two", "xdit-flux=-1"}) {  // W: a count of steps
    INFO(bad);
    const CliResult r = run_cli({"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers", "-o",
                                 dir.file("out.toml"), "--warmup-for", bad});
    check_refused(r);
    CHECK(r.err == "cpplan: --warmup-for = " + std::string(bad) + ": W must be an integer from 0 to 100000\n");
  }
  {
    const CliResult r = run_cli({"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers", "-o",
                                 dir.file("out.toml"), "--folds", "1"});
    check_refused(r);
    CHECK_THAT(r.err, Catch::Contains("--folds = 1"));
    const CliResult z = run_cli({"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers", "-o",
                                 dir.file("out.toml"), "--repeats", "0"});
    check_refused(z);
    CHECK(z.err == "cpplan: --repeats = 0: must be between 1 and 100\n");
    const CliResult s = run_cli({"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers", "-o",
                                 dir.file("out.toml"), "--shrinkage-by", "columns"});
    check_refused(s);
    CHECK(s.err == "cpplan: --shrinkage-by = columns: must be rows or groups\n");
    const CliResult k = run_cli({"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers", "--check",
                                 "--shrinkage-by", "groups"});
    check_refused(k);
    CHECK(k.err == "cpplan: --shrinkage-by = groups: --check fits nothing, so there is no ridge to choose\n");
    const CliResult l = run_cli({"calibrate", "--db", dir.file("runs.db"), "--shrinkage-by", "groups"});
    check_refused(l);
    CHECK_THAT(l.err, Catch::StartsWith("cpplan: --shrinkage-by = groups: needs --import FILE or --pipeline-runs"));
  }
  CHECK(fs::is_empty(dir.path()));
}

TEST_CASE("a compiled transformer predicts a shorter step than eager diffusers, mostly from host time",
          "[cli][runtime]") {
  const std::vector<std::string> q = {"--gpus", "4", "--res", "1024x1024", "--hardware", "h100-sxm", "--json"};
  auto with = [&](const std::string& runtime) {
    std::vector<std::string> args = q;
    args.insert(args.end(), {"--runtime", runtime});
    return query(args);
  };
  const json eager = with("diffusers"), compiled = with("compiled");
  REQUIRE(!eager["plans"].empty());
  REQUIRE(!compiled["plans"].empty());
  const json& e = eager["plans"][0]["predicted"];
  const json& c = compiled["plans"][0]["predicted"];
  CHECK(e["runtime"] == "diffusers");
  CHECK(c["runtime"] == "compiled");
  const double e_step = e["step_ms"], c_step = c["step_ms"];
  CHECK(c_step < e_step);
  const double host_gain = e["host_ms"].get<double>() - c["host_ms"].get<double>();
  const double compute_gain = e["compute_ms"].get<double>() - c["compute_ms"].get<double>();
  INFO("host " << e["host_ms"] << " -> " << c["host_ms"] << ", compute " << e["compute_ms"] << " -> "
               << c["compute_ms"]);
  CHECK(host_gain > 0);
  CHECK(host_gain > std::abs(compute_gain));
}

TEST_CASE("unknown runtimes and placements, and contradicting placement flags, are refused with one line",
          "[cli][runtime][errors]") {
  const std::vector<std::string> q = {"--gpus", "4", "--res", "1024x1024", "--hardware", "h100-sxm"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = q;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  };
  {
    const CliResult r = with({"--runtime", "nope"});
    check_refused(r);
    CHECK_THAT(r.err, Catch::Contains("--runtime = nope: unknown profile"));
  }
  {
    const CliResult r = with({"--text-encoder", "nope"});
    check_refused(r);
    CHECK_THAT(r.err, Catch::Contains("--text-encoder = nope: must be replicated, offloaded, sequential, sharded, fully-sharded or fully-sharded-host"));
  }
  {
    const CliResult r = with({"--vae", "nope"});
    check_refused(r);
    CHECK_THAT(r.err, Catch::Contains("--vae = nope: must be single, parallel, tiled or sliced"));
  }
  {
    const CliResult r = with({"--offload-text-encoders", "--text-encoder", "sharded"});
    check_refused(r);
    CHECK_THAT(r.err, Catch::Contains("--offload-text-encoders"));
    CHECK_THAT(r.err, Catch::Contains("sharded"));
  }
}

TEST_CASE("FLUX.2-dev on 8 L20s fits only with its weights split (TP, PipeFusion stages or fully sharded) and a text encoder that is not replicated",
          "[cli][runtime][placement][fs]") {
  // The 32.2e9-parameter transformer is 64 GB in bf16 and the 24e9-parameter Mistral encoder
  // 48 GB, against 48 GB of an L20: neither fits on one GPU whole. The transformer's blocks split
  // over tensor-parallel ranks, over PipeFusion's stages (weights / P) or over a fully-shard group
  // (weights / F plus two gathered blocks).
  const json j = query({"--gpus", "8", "--model", "flux.2-dev", "--hardware", "l20", "--res", "1024x1024", "--json"});
  int fitting = 0, sharded = 0;
  for (const auto& p : j["plans"]) {
    if (p["valid"] != true || p["fits_memory"] != true) continue;
    ++fitting;
    INFO(p["label"]);
    CHECK(p["text_encoder"] != "replicated");
    CHECK((p["tp_degree"].get<int>() > 1 || p["pipefusion_degree"].get<int>() > 1 || p["fs_degree"].get<int>() > 1));
    if (p["fs_degree"].get<int>() > 1) ++sharded;
  }
  CHECK(fitting > 0);
  CHECK(sharded > 0);  // the acceptance query of issue 22: fully-sharded plans are listed
}

namespace {

std::string pixart() { return std::string(CPPLAN_TEST_PROFILES) + "/reference/published-xdit-pixart.json"; }

std::vector<std::string> pixart_args() {
  return {"calibrate", "--import", pixart(), "--runtime-for", "xdit-pixart-legacy=xdit", "--model-for",
          "xdit-pixart-legacy=pixart-alpha", "--topology-for", "8 x A100 80GB SXM (NVLink, NVSwitch)=dgx-a100",
          "--topology-for", "4 x A100 80GB on PCIe Gen4 under one switch, no NVLink=4x-a100-pcie", "--topology-for",
          "8 x L20 48GB on PCIe=8x-l20-pcie", "--warmup-for", "xdit-pixart-legacy=2", "--json"};
}

}  // namespace

// The 61 PixArt-alpha points of xDiT's legacy page: every row resolves (the pixart-alpha profile,
// each box's topology, PipeFusion with xDiT's defaults where the chart states none), the boxes are
// left out in turn, and the PipeFusion rows, which the fit sees as patch slots, a synchronous
// warm-up and a fill and drain once per image, come out within the issue's 15%.
TEST_CASE("calibrate --import fits xDiT's PixArt-alpha set on its three boxes", "[cli][calibrate_import]") {
  const CliResult r = run_cli(pixart_args());
  INFO(r.err);
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  REQUIRE(j["rows"].size() == 61);
  double pf_error = 0;
  int pf_rows = 0;
  std::set<std::string> boxes;
  for (const auto& row : j["rows"]) {
    boxes.insert(row["box"].get<std::string>());
    CHECK(row["steps"] == 20);  // the published file: 20 DPM-Solver steps on every bar
    if (row["pipefusion_degree"].get<int>() > 1) {
      ++pf_rows;
      pf_error += row["held_out_error"].get<double>();
    }
  }
  CHECK(boxes.size() == 3);
  CHECK(pf_rows == 14);
  CHECK(pf_error / pf_rows <= 0.15);
  // A row is flagged unreconciled when the fit and the fits without it both miss it by over 25%,
  // the same way; each such row is one "not reconciled" line.
  int flagged = 0, lines = 0;
  for (const auto& row : j["rows"]) {
    const double m = row["measured_ms"].get<double>();
    const double fitted = row["fitted_ms"].get<double>() / m - 1, held = row["held_out_ms"].get<double>() / m - 1;
    const bool missed = std::abs(fitted) > 0.25 && std::abs(held) > 0.25 && (fitted > 0) == (held > 0);
    CHECK(row["unreconciled"].get<bool>() == missed);
    flagged += missed ? 1 : 0;
  }
  for (const auto& d : j["disagreements"]) lines += d.get<std::string>().find("not reconciled") != std::string::npos ? 1 : 0;
  CHECK(flagged == lines);
  CHECK(flagged > 0);
  for (const std::string& box : boxes) CHECK(j["held_out"].contains("box=" + box));
}

// One configuration measured twice, 10% apart (more than twice the 2% reading error): the fit
// says so instead of hiding it in its error.
TEST_CASE("calibrate --import reports one configuration measured twice beyond the reading error",
          "[cli][calibrate_import]") {
  TempDir dir("cpplan-calibrate-import-");
  json doc = json::parse(std::ifstream(published()));
  json twin = doc["points"][0];
  for (const char* key : {"ms_per_step", "seconds_per_image"})
    if (twin.contains(key)) twin[key] = twin[key].get<double>() * 1.10;
  doc["points"].push_back(twin);
  const std::string file = dir.file("twice.json");
  std::ofstream(file) << doc.dump();
  const CliResult r = run_cli({"calibrate", "--import", file, "--runtime-for", "cache-dit=diffusers"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("cannot settle: ") != std::string::npos);
  CHECK(r.out.find("one configuration measured 10% apart") != std::string::npos);
}

// --check fits nothing: the shipped profiles (profiles/fits/published-flux.toml applied) predict
// the rows. The fit file records the in-sample MAPE it had when it was written from these rows
// ([provenance] mape); the shipped profiles' predictions of them must give that MAPE again.
TEST_CASE("calibrate --import --check predicts the published rows with the shipped fit applied",
          "[cli][calibrate_import]") {
  const json j = query({"calibrate", "--import", published(), "--runtime-for", "cache-dit=diffusers", "--check", "--json"});
  REQUIRE(j["rows"].size() == 26);
  const auto fit = cpplan::parse_runtime_fit(
      [] {
        std::ifstream in(std::string(CPPLAN_TEST_PROFILES) + "/fits/published-flux.toml");
        return std::string(std::istreambuf_iterator<char>(in), {});
      }(),
      "published-flux.toml");
  REQUIRE(fit.ok());
  CHECK(j["mape"].get<double>() == Approx(fit->provenance.mape).epsilon(1e-4));
  for (const json& r : j["rows"]) CHECK(r["fitted_ms"].get<double>() == r["prior_ms"].get<double>());
  CHECK(j["pairs"].get<int>() >= j["pairs_ordered"].get<int>());
}

TEST_CASE("calibrate --check refuses -o (nothing is fitted) and a run without --import, in one line",
          "[cli][calibrate_import][errors]") {
  TempDir dir("cpplan-calibrate-check-");
  const CliResult with_output = run_cli({"calibrate", "--import", published(), "--check", "-o", dir.file("out.toml")});
  check_refused(with_output);
  CHECK_THAT(with_output.err, Catch::Contains("-o = " + dir.file("out.toml") + ": --check fits nothing"));
  CHECK_FALSE(fs::exists(dir.file("out.toml")));
  const CliResult alone = run_cli({"calibrate", "--check"});
  check_refused(alone);
  CHECK_THAT(alone.err, Catch::Contains("--check: needs --import FILE"));
}

namespace {

std::string families() { return std::string(CPPLAN_TEST_PROFILES) + "/reference/published-xdit-families.json"; }

// Rows `first`..`last` of published-xdit-families.json, with `extra` rows after them, in a file of a
// fresh folder that holds the configs they name (configs/, as profiles/reference/ does).
std::string families_subset(const TempDir& dir, std::vector<std::pair<int, int>> ranges, const std::vector<json>& extra) {
  const json doc = json::parse(std::ifstream(families()));
  json out = {{"about", "rows of published-xdit-families.json, for the test"}, {"points", json::array()}};
  fs::create_directories(dir.path() / "configs");
  for (auto [first, last] : ranges)
    for (int i = first; i <= last; ++i) out["points"].push_back(doc["points"][i]);
  for (const json& row : extra) out["points"].push_back(row);
  for (const json& row : out["points"])
    if (row.contains("config"))
      fs::copy_file(fs::path(families()).parent_path() / "configs" / row["config"].get<std::string>(),
                    dir.path() / "configs" / row["config"].get<std::string>(), fs::copy_options::skip_existing);
  const std::string file = dir.file("families.json");
  std::ofstream(file) << out.dump(1);
  return file;
}

}  // namespace

// The 108 published runs of seven checkpoints other than FLUX.1-dev: every row resolves, each
// diffusers config as the profile cpplan derives from it (named by its stem), its compiled rows on
// the compiled runtime and the others on --runtime's, none skipped.
TEST_CASE("calibrate --import --check reads published-xdit-families.json, each config as a derived profile",
          "[cli][calibrate_import][families]") {
  const json j = query({"calibrate", "--import", families(), "--runtime", "xdit", "--check", "--json"});
  REQUIRE(j["rows"].size() == 108);
  CHECK(j["oom_skipped"] == 0);
  CHECK(j["rejected"].empty());
  std::set<std::string> models;
  int compiled = 0, videos = 0;
  for (const json& r : j["rows"]) {
    models.insert(r["model"].get<std::string>());
    CHECK(r["compiled"].get<bool>() == (r["runtime"] == "compiled"));
    compiled += r["compiled"].get<bool>() ? 1 : 0;
    videos += r["frames"].get<int>() > 1 ? 1 : 0;
    CHECK(r["config"].is_null() == (r["model"] == "hunyuanvideo"));
  }
  CHECK(models == std::set<std::string>{"cogvideox-2b", "consisid", "hunyuandit-v1.2", "hunyuanvideo", "latte-1",
                                        "mochi-1-preview", "sana-1600m-4k", "sd3-medium"});
  CHECK(compiled == 19);
  CHECK(videos == 57);
}

// An oom run is no timing and a plan cpplan rejects is cpplan's bug, not the file's: both are
// skipped, the first counted, the second listed with its row and rule, and the rest is fitted,
// each checkpoint left out in turn.
TEST_CASE("calibrate --import skips oom rows, lists rejected plans by row, and leaves each checkpoint out",
          "[cli][calibrate_import][families]") {
  TempDir dir("cpplan-calibrate-families-");
  const json doc = json::parse(std::ifstream(families()));
  json oom = doc["points"][53], bad = doc["points"][53];
  oom["oom"] = true;
  oom["seconds"] = nullptr;
  bad["gpus"] = 5;
  bad["ulysses"] = 5;  // SD3-medium's 24 heads do not split 5 ways
  const std::string file = families_subset(dir, {{53, 60}, {69, 76}}, {oom, bad});

  const CliResult check = run_cli({"calibrate", "--import", file, "--runtime", "xdit", "--check"});
  INFO(check.err);
  REQUIRE(check.code == 0);
  CHECK_THAT(check.out, Catch::Contains("skipped 1 rows with oom = true (the run did not fit: no timing)"));
  CHECK_THAT(check.out, Catch::Contains("skipped 1 rows whose published plan cpplan rejects"));
  CHECK_THAT(check.out, Catch::Contains("rejected: " + file + ": points[17]: xdit-project/xdit_assets sd3-medium on 5 x l40: "
                                        "plan ulysses 5"));

  const json j = query({"calibrate", "--import", file, "--runtime", "xdit", "--folds", "2", "--repeats", "1", "--json"});
  CHECK(j["rows"].size() == 16);
  CHECK(j["oom_skipped"] == 1);
  REQUIRE(j["rejected"].size() == 1);
  CHECK_THAT(j["rejected"][0].get<std::string>(), Catch::Contains("points[17]") && Catch::Contains("is invalid: "));
  CHECK(j["held_out"].contains("model=sd3-medium"));
  CHECK(j["held_out"].contains("model=hunyuandit-v1.2"));
  for (const json& r : j["rows"]) {
    CHECK(r["left_out_ms"].contains("model"));
    CHECK(r["left_out_ms"]["model"].get<double>() > 0);
  }
}
