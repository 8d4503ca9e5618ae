// The cpplan command: output of the main job, exit codes, and one clear line for bad input.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/violation.h"
#include "tests/cli/run_cli.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"

using cpplan::test::run_cli;

namespace {
std::string data_dir() { return std::string(CPPLAN_TEST_PROFILES) + "/../tests/data"; }
int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }
// The step ms column of the table row whose plan column reads `plan` (the first such row).
double table_step_ms(const std::string& out, const std::string& plan) {
  const std::regex row("\\n +[0-9]+  " + std::regex_replace(plan, std::regex(R"([()])"), R"(\$&)") +
                       " +[A-Za-z ]+? +([0-9.]+) ");
  std::smatch m;
  return std::regex_search(out, m, row) ? std::stod(m[1]) : -1;
}

// PATH with a folder first whose nvidia-smi finds no GPU, as the real one says on a machine
// without one; the old PATH comes back at scope end.
class NoGpuNvidiaSmi {
 public:
  NoGpuNvidiaSmi() : old_path_(std::getenv("PATH") ? std::getenv("PATH") : "") {
    const std::string script = dir_.file("nvidia-smi");
    std::ofstream(script) << "#!/bin/sh\necho 'No devices were found'\nexit 6\n";
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    setenv("PATH", (dir_.path().string() + ":" + old_path_).c_str(), 1);
  }
  ~NoGpuNvidiaSmi() { setenv("PATH", old_path_.c_str(), 1); }
  NoGpuNvidiaSmi(const NoGpuNvidiaSmi&) = delete;
  NoGpuNvidiaSmi& operator=(const NoGpuNvidiaSmi&) = delete;

 private:
  cpplan::test::TempDir dir_;
  std::string old_path_;
};
}  // namespace

TEST_CASE("the main job ranks only the anything modes and their hybrids at 1008x1008", "[cli][recommend]") {
  const auto r = run_cli({"--gpus", "4", "--res", "1008x1008", "--hardware", "h100-sxm", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["sequence"]["image_tokens"] == 3969);
  CHECK(j["sequence"]["text_tokens"] == 512);
  CHECK(j["sequence"]["total"] == 4481);
  REQUIRE(j["plans"].size() == j["valid_plans"].get<std::size_t>());
  REQUIRE(!j["plans"].empty());
  double last = 0;
  for (const auto& p : j["plans"]) {
    const std::string v = p["cp_variant"];
    CHECK((v == "ulysses_anything" || v == "ring_anything" || v == "none"));
    if (v == "none") CHECK((p["tp_degree"].get<int>() > 1 || p["pipefusion_degree"].get<int>() > 1));  // TP or PipeFusion
    CHECK(p["valid"] == true);
    CHECK(p["predicted"]["step_ms"].get<double>() >= last);  // ranked
    last = p["predicted"]["step_ms"].get<double>();
  }
}

TEST_CASE("the human table names the rejected Ring, Ulysses and Unified plans with reasons", "[cli][recommend]") {
  const auto r = run_cli({"--gpus", "4", "--res", "1008x1008", "--hardware", "h100-sxm"});
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("3969 image + 512 text = 4481 tokens"));
  CHECK_THAT(r.out, Catch::Contains("Ulysses Anything"));
  CHECK_THAT(r.out, Catch::Contains("Ring Anything"));
  // Ring 4, Ulysses 4 and Unified 2 x 2 break one rule: one line, the resolution first.
  CHECK_THAT(r.out, Catch::Contains("rejected (20; --all lists each):\n"
                                    "    13 plans  must divide image tokens = 3969 (change --res), e.g. ring 4\n"));
  CHECK_THAT(r.out, !Catch::Contains("dp_degree"));  // one image: no data-parallel plans
  CHECK_THAT(r.out, Catch::Contains("ContextParallelConfig(ulysses_degree=4, ulysses_anything=True)"));
  // The gap is the two plans' step times in the table.
  const double top = table_step_ms(r.out, "ulysses 4"), xdit = table_step_ms(r.out, "pipefusion 4 (4 patches)");
  REQUIRE(top > 0);
  REQUIRE(xdit > top);
  CHECK_THAT(r.out, Catch::Contains(fmt::format("xDiT: cannot run the top plan: xDiT needs even splits (no anything modes); "
                                                "the fastest plan it runs: pipefusion 4 (4 patches) (none), {:.0f}% slower:\n"
                                                "  xdit --model FLUX.1-dev --height 1008 --width 1008",
                                                (xdit / top - 1) * 100)));
  // The top plan with its runtime and the bound it hits.
  CHECK_THAT(r.out, Catch::Contains("runtime diffusers"));
  CHECK_THAT(r.out, Catch::Contains("top plan: ulysses 4 (Ulysses Anything): "));
  CHECK_THAT(r.out, Catch::Contains("host-bound"));
}

TEST_CASE("the --all flag lists every rejected plan and adds invalid plans to the JSON", "[cli][recommend]") {
  const auto r = run_cli({"--gpus", "4", "--res", "1008x1008", "--hardware", "h100-sxm", "--json", "--all"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["plans"].size() == j["valid_plans"].get<std::size_t>() + j["invalid_plans"].get<std::size_t>());
  bool seen_invalid = false;
  for (const auto& p : j["plans"]) {
    if (p["valid"] == false) {
      seen_invalid = true;
      CHECK(!p["reasons"].empty());
      CHECK(p["violations"].size() == p["reasons"].size());
      CHECK(p["predicted"].is_null());
    } else {
      CHECK_FALSE(seen_invalid);  // valid plans first
    }
  }
  CHECK(seen_invalid);
}

TEST_CASE("check exits 0 for a valid plan and 3 for an invalid one", "[cli][check]") {
  const auto ok = run_cli({"check", "--gpus", "4", "--res", "1008x1008", "--hardware", "h100-sxm", "--ulysses", "4",
                           "--ulysses-anything", "--json"});
  REQUIRE(ok.code == 0);
  const auto j = nlohmann::json::parse(ok.out);
  CHECK(j["cp_variant"] == "ulysses_anything");
  CHECK(j["valid"] == true);
  CHECK(j["predicted"]["step_ms"].get<double>() > 0);

  const auto bad = run_cli({"check", "--gpus", "4", "--res", "1008x1008", "--hardware", "h100-sxm", "--ring", "2",
                            "--ulysses", "2"});
  CHECK(bad.code == 3);
  CHECK_THAT(bad.out, Catch::Contains("ring_degree x ulysses_degree = 4: must divide image tokens = 3969"));
}

TEST_CASE("list prints every profile", "[cli][list]") {
  const auto models = run_cli({"list", "models", "--json"});
  REQUIRE(models.code == 0);
  CHECK(nlohmann::json::parse(models.out).size() == 27);
  const auto hw = run_cli({"list", "hardware"});
  REQUIRE(hw.code == 0);
  CHECK_THAT(hw.out, Catch::Contains("h200-sxm"));
  CHECK_THAT(hw.out, Catch::Contains("rtx4090-48g"));
}

TEST_CASE("no --hardware and no local GPU plans for h100-sxm with a one-line note", "[cli][hardware]") {
  // nvidia-smi as it answers on a machine without a GPU (exit 6, "No devices were found"), first on
  // PATH: the case holds on a GPU machine too.
  const NoGpuNvidiaSmi no_gpu;
  const auto r = run_cli({"--gpus", "2", "--json"});
  REQUIRE(r.code == 0);
  CHECK(lines(r.err) == 1);
  CHECK(r.err == "note: no local GPU found by nvidia-smi; planning for h100-sxm (set --hardware)\n");
  CHECK(nlohmann::json::parse(r.out)["hardware"] == "h100-sxm");
}

TEST_CASE("bad input gets one line naming the field, value and rule, and a non-zero exit", "[cli][bad_input]") {
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--gpus", "0"}, 3, "--gpus = 0: must be between 1 and"},
      {{"--gpus", "-4"}, 3, "--gpus = -4: must be between 1 and"},
      {{"--gpus", "abc"}, 3, "--gpus = abc: must be an integer"},
      {{"--gpus", "2.5"}, 3, "--gpus = 2.5: must be an integer"},
      {{"--gpus", "99999999999"}, 3, "--gpus = 99999999999: must be between 1 and"},
      {{"--res", "1024x1024"}, 3, "--gpus: required"},
      {{"--gpus", "4", "--res", "1024"}, 3, "--res = 1024: must be WIDTHxHEIGHT"},
      {{"--gpus", "4", "--res", "0x1024"}, 3, "--res = 0x1024: width and height must be positive"},
      {{"--gpus", "4", "--res", "99999x99999"}, 3, "--res = 99999x99999: width and height must be at most"},
      {{"--gpus", "4", "--res", "1000x1000"}, 3, "nearest valid sizes: 992x992 or 1008x1008"},
      {{"--gpus", "4", "--model", "flux1-dev"}, 3, "--model = flux1-dev: unknown profile; did you mean flux.1-dev"},
      {{"--gpus", "4", "--hardware", "h100"}, 3, "--hardware = h100: unknown profile; did you mean h100-sxm"},
      {{"--gpus", "4", "--hardware", "../../x"}, 3, "--hardware = ../../x: unknown profile"},
      {{"--gpus", "4", "--attention-backend", "xformers"}, 3, "--attention-backend = xformers: must be flash"},
      {{"--gpus", "4", "--steps", "0"}, 3, "--steps = 0: must be between 1 and"},
      {{"--gpus", "4", "--model", "wan2.1-t2v-14b", "--frames", "3000"}, 3, "--frames = 3000: must be between 1 and 2049"},
      {{"--gpus", "4", "--frames", "5"}, 3, "--frames = 5: flux.1-dev generates images"},
      {{"--gpus", "4", "--text-tokens", "5000"}, 3, "--text-tokens = 5000: must be between 1 and 512"},
      {{"--gpus", "4", "--top", "0"}, 3, "--top = 0: must be between 1 and"},
      {{"--gpus", "4", "--profiles", data_dir() + "/profiles-broken-catalog"}, 3, "heads"},
      {{"check", "--gpus", "4", "--ring", "x"}, 3, "--ring = x: must be an integer"},
      {{"check", "--gpus", "4", "--rotate-method", "ring"}, 3, "--rotate-method = ring: must be allgather"},
      {{"check", "--gpus", "4", "--pipefusion", "two"}, 3, "--pipefusion = two: must be an integer"},
      {{"check", "--gpus", "4", "--pipefusion", "2", "--num-pipeline-patch", "1.5"}, 3,
       "--num-pipeline-patch = 1.5: must be an integer"},
      {{"--gpus", "4", "--num-pipeline-patch", "0"}, 3, "--num-pipeline-patch = 0: must be between 1 and"},
      {{"--gpus", "4", "--pipefusion-warmup-steps", "-1"}, 3, "--pipefusion-warmup-steps = -1: must be between 0 and"},
      {{"list", "gpus"}, 3, "list gpus: must be models, hardware, topologies, frameworks or classes"},
      {{"--gpus", "4", "--bogus"}, 2, "--bogus"},
      {{"frobnicate"}, 2, "frobnicate"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    if (std::find(args.begin(), args.end(), "--hardware") == args.end() && args.front() != "list" &&
        args.front() != "frobnicate") {
      args.push_back("--hardware");
      args.push_back("h100-sxm");
    }
    INFO("cpplan " << fmt::format("{}", fmt::join(args, " ")));
    const auto r = run_cli(args);
    CHECK(r.code == c.code);
    CHECK(lines(r.err) == 1);
    CHECK_THAT(r.err, Catch::Contains(c.message));
    CHECK(r.out.empty());
  }
}

TEST_CASE("check prints a PipeFusion plan's stage and patch split, invalid ones every broken rule", "[cli][pipefusion]") {
  // FLUX.1-dev's 19 + 38 = 57 blocks in stages of ceil(57 / 4) = 15: 15+15+15+12; 1024 / 16 = 64
  // latent rows in 4 patches of 16 rows x 64 columns = 1024 tokens; xDiT's default warm-up 1.
  const auto r = run_cli({"check", "--gpus", "8", "--res", "1024x1024", "--pipefusion", "4", "--ulysses", "2",
                          "--hardware", "h100-sxm"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("plan: ulysses 2 x pipefusion 4 (4 patches) (Ulysses)"));
  CHECK_THAT(r.out, Catch::Contains("valid: "));
  CHECK_THAT(r.out, Catch::Contains("frameworks: xdit"));
  CHECK_THAT(r.out, Catch::Contains("pipefusion: 4 stages of 15+15+15+12 blocks (57 in all); 4 patches of 16 latent "
                                    "rows (1024 image tokens); 1 warm-up step of 28 synchronous"));

  const std::vector<std::string> bad_args = {"check", "--gpus", "8", "--res", "1024x1024", "--pipefusion", "4",
                                             "--tp", "2", "--num-pipeline-patch", "2", "--pipefusion-warmup-steps",
                                             "30", "--hardware", "h100-sxm"};
  const auto bad = run_cli(bad_args);
  CHECK(bad.code == 3);
  CHECK_THAT(bad.out, Catch::Contains("INVALID:"));
  auto json_args = bad_args;
  json_args.push_back("--json");
  const auto bad_json = run_cli(json_args);
  CHECK(bad_json.code == 3);
  const auto violations = nlohmann::json::parse(bad_json.out).at("violations");
  std::vector<std::string> ids;
  for (const auto& v : violations) ids.push_back(v.at("rule_id"));
  CHECK(ids == std::vector<std::string>{"pipefusion-patches-at-least-degree", "pipefusion-warmup-at-most-steps",
                                        "pipefusion-excludes-tp"});
}

TEST_CASE("check and --all with --json name the rule each violation breaks by its id", "[cli][json][rule_id]") {
  // 1008x1008: 3969 image tokens, odd. Ring 4 breaks the even split (shared/spec/parallelism.md's
  // worked example); its only violation carries the id, the parts of its message and its lever.
  const auto bad = run_cli({"check", "--gpus", "4", "--res", "1008x1008", "--hardware", "h100-sxm", "--ring", "4",
                            "--json"});
  CHECK(bad.code == 3);
  const auto v = nlohmann::json::parse(bad.out).at("violations");
  REQUIRE(v.size() == 1);
  CHECK(v[0].at("rule_id") == "even-split-image-tokens");
  CHECK(v[0].at("field") == "ring_degree");
  CHECK(v[0].at("value") == "4");
  CHECK(v[0].at("lever") == "resolution");

  // Every invalid plan of --all: one id per reason, each one cpplan knows.
  const auto all = run_cli({"--gpus", "4", "--res", "1008x1008", "--hardware", "h100-sxm", "--json", "--all"});
  REQUIRE(all.code == 0);
  const auto plans = nlohmann::json::parse(all.out).at("plans");
  for (const auto& p : plans) {
    REQUIRE(p.at("violations").size() == p.at("reasons").size());
    for (const auto& x : p.at("violations"))
      CHECK(cpplan::parse_rule_id(x.at("rule_id").get<std::string>()).has_value());
  }

  // A valid plan breaks nothing.
  const auto ok = run_cli({"check", "--gpus", "4", "--res", "1008x1008", "--hardware", "h100-sxm", "--ring", "4",
                           "--ring-anything", "--json"});
  CHECK(ok.code == 0);
  CHECK(nlohmann::json::parse(ok.out).at("violations").empty());
}

TEST_CASE("every plan in the JSON carries the PipeFusion keys: 1, 1, 0 when unused", "[cli][pipefusion][json]") {
  const auto r = run_cli({"--gpus", "4", "--res", "1024x1024", "--hardware", "h100-sxm", "--json", "--all"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  int with_pipefusion = 0;
  for (const auto& p : j["plans"]) {
    const int degree = p["pipefusion_degree"], patches = p["num_pipeline_patch"], warmup = p["pipefusion_warmup_steps"];
    if (degree == 1) {
      CHECK((patches == 1 && warmup == 0));
      continue;
    }
    ++with_pipefusion;
    CHECK((patches == degree || patches == 2 * degree || patches == 4 * degree));
    CHECK(warmup == 1);
    CHECK(p["tp_degree"] == 1);
  }
  CHECK(with_pipefusion == 15);  // tests/planner/test_enumerate.cpp counts them
}
