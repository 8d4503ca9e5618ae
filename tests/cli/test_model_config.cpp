// --model-config and `cpplan profile import` end to end, in-process: a published config ranks
// exactly as its built-in profile; bad configs are one line with exit 3; an imported file loads
// back and is not overwritten.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/run_cli.h"
#include "tests/support/temp_dir.h"

using cpplan::test::run_cli;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& profile) {
  return (fs::path(CPPLAN_TEST_PROFILES).parent_path() / "tests" / "data" / "diffusers" / profile / "config.json")
      .string();
}

json ranking(std::vector<std::string> args) {
  args.insert(args.end(), {"--gpus", "4", "--res", "1008x1008", "--hardware", "h100-sxm", "--json", "--all"});
  const auto r = run_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return json::parse(r.out);
}

// A scratch folder of its own (mkdtemp: tests run in parallel, in other checkouts too), removed
// when the test ends.
struct Scratch {
  cpplan::test::TempDir temp{"cpplan-test-model-config-"};
  fs::path dir = temp.path();
  Scratch() { fs::create_directories(dir / "models"); }
};

void expect_one_line_error(const std::vector<std::string>& args, const std::string& part) {
  const auto r = run_cli(args);
  INFO(r.err);
  CHECK(r.code == 3);
  CHECK(r.out.empty());
  CHECK(r.err.find(part) != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

}  // namespace

TEST_CASE("model config: FLUX.1-dev's config ranks exactly as --model flux.1-dev", "[cli][diffusers]") {
  const json derived = ranking({"--model-config", fixture("flux.1-dev")});
  const json builtin = ranking({"--model", "flux.1-dev"});
  REQUIRE(derived["plans"].size() == builtin["plans"].size());
  for (std::size_t i = 0; i < builtin["plans"].size(); ++i) {
    const json& d = derived["plans"][i];
    const json& b = builtin["plans"][i];
    INFO(b["label"]);
    CHECK(d["label"] == b["label"]);
    CHECK(d["valid"] == b["valid"]);
    // The reasons name the model: the derived profile's name is the config's folder's, plus "-config".
    std::string reasons = d["reasons"].dump();
    for (std::size_t at; (at = reasons.find("flux.1-dev-config")) != std::string::npos;) reasons.erase(at + 10, 7);
    CHECK(reasons == b["reasons"].dump());
    CHECK(d["predicted"] == b["predicted"]);
    CHECK(d["frameworks"] == b["frameworks"]);
  }
  CHECK(derived["sequence"] == builtin["sequence"]);
}

TEST_CASE("the top plan's diffusers config and xDiT arguments are in the JSON", "[cli][diffusers]") {
  const json top = ranking({"--model", "flux.1-dev"})["plans"][0];
  REQUIRE(top["label"] == "ulysses 4");
  CHECK(top["diffusers_config"]["class"] == "ContextParallelConfig");
  CHECK(top["diffusers_config"]["kwargs"] == json::parse(R"([["ulysses_degree", 4], ["ulysses_anything", true]])"));
  CHECK(top["diffusers_config"]["expression"] == "ContextParallelConfig(ulysses_degree=4, ulysses_anything=True)");
  CHECK(top["xdit_args"].is_null());  // xDiT needs even splits: 3969 tokens do not split 4 ways
  CHECK(top["frameworks_unavailable"]["xdit"] == "xDiT needs even splits (no anything modes)");
}

TEST_CASE("a derivative config plans without a profile", "[cli][diffusers]") {
  Scratch s;
  std::ifstream in(fixture("flux.1-dev"));
  json config = json::parse(in);
  config["joint_attention_dim"] = 2048;
  config["guidance_embeds"] = false;
  const fs::path path = s.dir / "my-flux.json";
  std::ofstream(path) << config.dump();
  const json r = ranking({"--model-config", path.string()});
  CHECK(r["model"] == "my-flux");
  CHECK(r["valid_plans"].get<int>() > 0);
}

TEST_CASE("an unknown class or a missing num_attention_heads: one line, exit 3", "[cli][diffusers]") {
  Scratch s;
  std::ifstream in(fixture("flux.1-dev"));
  const json config = json::parse(in);
  json unknown = config;
  unknown["_class_name"] = "UNet2DConditionModel";
  std::ofstream(s.dir / "unknown.json") << unknown.dump();
  json missing = config;
  missing.erase("num_attention_heads");
  std::ofstream(s.dir / "missing.json") << missing.dump();
  expect_one_line_error({"--model-config", (s.dir / "unknown.json").string(), "--gpus", "4"},
                        "_class_name = UNet2DConditionModel: not a diffusers transformer class cpplan knows; ");
  expect_one_line_error({"--model-config", (s.dir / "missing.json").string(), "--gpus", "4"},
                        "num_attention_heads: missing (FluxTransformer2DModel needs it)");
  expect_one_line_error({"profile", "import", (s.dir / "missing.json").string()}, "num_attention_heads: missing");
}

TEST_CASE("profile import writes a profile that loads back, and never overwrites one", "[cli][diffusers]") {
  Scratch s;
  const std::string out = (s.dir / "models" / "my-sd35.toml").string();
  const auto r = run_cli({"profile", "import", fixture("sd3.5-medium"), "-o", out});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("wrote " + out) != std::string::npos);
  CHECK(r.out.find("plan with it: cpplan --profiles " + s.dir.string() + " --model my-sd35") != std::string::npos);
  // The written profile plans as the built-in sd3.5-medium's transformer does.
  const auto plan = run_cli({"--profiles", s.dir.string(), "--model", "my-sd35", "--gpus", "2", "--hardware",
                             "h100-sxm", "--json"});
  INFO(plan.err);
  REQUIRE(plan.code == 0);
  const auto builtin = run_cli({"--model", "sd3.5-medium", "--gpus", "2", "--hardware", "h100-sxm", "--json"});
  CHECK(json::parse(plan.out)["sequence"] == json::parse(builtin.out)["sequence"]);
  const auto before = fs::last_write_time(out);
  expect_one_line_error({"profile", "import", fixture("sd3.5-medium"), "-o", out}, "exists; cpplan does not overwrite");
  CHECK(fs::last_write_time(out) == before);
  expect_one_line_error({"profile", "import", fixture("sd3.5-medium"), "-o", (s.dir / "a.toml").string(), "--name", "b"},
                        "--name = b: must equal the --output file's name \"a\"");
  CHECK_FALSE(fs::exists(s.dir / "a.toml"));
}

TEST_CASE("model config: a Wan2.2 A14B pipeline folder plans, stating what it took from the template",
          "[cli][diffusers]") {
  const std::string folder =
      (fs::path(CPPLAN_TEST_PROFILES).parent_path() / "tests" / "data" / "diffusers" / "pipelines" / "wan2.2-t2v-a14b")
          .string();
  const auto r = run_cli({"--model-config", folder, "--gpus", "8", "--hardware", "h100-sxm"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_FALSE(r.out.empty());
  // The folder's VAE is read and counted, its decode cost the template's: said on the error stream.
  CHECK(r.err.find("note: wan2.2-t2v-a14b: VAE (AutoencoderKLWan): spatial 8, temporal 4, 126.9M parameters "
                   "counted; decode cost derived from its structure (8.44 MFLOP per pixel per frame)") != std::string::npos);
  // The encoder is the folder's (counted), so no template encoder is assumed.
  CHECK(r.err.find("text encoders: the template's") == std::string::npos);
}

TEST_CASE("model config: --offload-idle-transformer holds one of Wan2.2 A14B's transformers, one-transformer models refuse it",
          "[cli][diffusers]") {
  const std::string folder =
      (fs::path(CPPLAN_TEST_PROFILES).parent_path() / "tests" / "data" / "diffusers" / "pipelines" / "wan2.2-t2v-a14b")
          .string();
  const std::vector<std::string> query = {"--model-config", folder, "--gpus", "8", "--hardware", "h100-sxm", "--json"};
  auto offload = query;
  offload.push_back("--offload-idle-transformer");
  const auto held = run_cli(query), off = run_cli(offload);
  REQUIRE(held.code == 0);
  REQUIRE(off.code == 0);
  const json h = json::parse(held.out)["plans"][0], o = json::parse(off.out)["plans"][0];
  CHECK(json::parse(off.out)["offload_idle_transformer"] == true);
  // The same plan holds half the transformer weights and pays two loads per image.
  CHECK(h["label"] == o["label"]);
  CHECK(o["predicted"]["memory"]["transformer_weights"].get<double>() ==
        Approx(h["predicted"]["memory"]["transformer_weights"].get<double>() / 2));
  CHECK(h["predicted"]["pipeline"]["transformer_load_ms"] == 0);
  CHECK(o["predicted"]["pipeline"]["transformer_load_ms"].get<double>() > 0);
  const auto one = run_cli({"--model", "wan2.1-t2v-14b", "--gpus", "8", "--offload-idle-transformer"});
  CHECK(one.code == 3);
  CHECK(one.err == "cpplan: --offload-idle-transformer: wan2.1-t2v-14b has one transformer: nothing is idle to offload\n");
  CHECK(one.out.empty());
}

TEST_CASE("profile import of a bare config writes what it assumed as comments", "[cli][diffusers]") {
  const auto r = run_cli({"profile", "import", fixture("wan2.1-t2v-14b")});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("\n# assumed: text encoders: the template's (umt5-xxl 5.68B): no pipeline folder") != std::string::npos);
  CHECK(r.out.find("\n# assumed: VAE: the template's wan2.1-vae") != std::string::npos);
}

// Issue 33's acceptance line, through the real CLI: for a CogVideoX-2B and an SD3-medium config,
// xDiT is offered for the USP, CFG and (SD3) PipeFusion plans its tables give, and diffusers only
// where the class has a _cp_plan: neither CogVideoXTransformer3DModel nor SD3Transformer2DModel has
// one ("Not HunyuanVideo, SD3/SD3.5, CogVideoX, PixArt."), so diffusers runs none of these plans.
// shared/reference/frameworks.md, xDiT: "CogVideoX, CogVideoX1.5 | yes | yes | no | no | no
// (cogvideox(_usp) example)", "`cogvideox_usp_example.py` refuses PipeFusion and parallel VAE";
// "stable-diffusion-3.5-large | ulysses, ring, pipefusion, CFG parallel, fully shard" (the runner,
// which serves "Stable Diffusion 3"); "No runner model offers tensor parallelism"; the runner's line
// has no flag for an uneven (anything) split. Neither decodes in parallel in xDiT: its placement
// there is one decoder, whatever the plan's own (SGLang Diffusion's --vae-sp decodes in parallel).
TEST_CASE("model config: xDiT and diffusers offer CogVideoX-2B's and SD3-medium's plans as their tables say",
          "[cli][diffusers][frameworks]") {
  const auto plans = [](const std::string& folder) {
    const auto r = run_cli({"--model-config", fixture(folder), "--gpus", "4", "--hardware", "a100-sxm-80g", "--json",
                            "--all"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const json report = json::parse(r.out);
    json valid = json::array();
    for (const json& p : report["plans"])
      if (p["valid"] == true) valid.push_back(p);
    return valid;
  };
  const auto offers = [](const json& p, const std::string& framework) {
    const auto& f = p["frameworks"];
    return std::find(f.begin(), f.end(), framework) != f.end();
  };
  const auto even = [](const json& p) { return p["ulysses_anything"] == false && p["ring_anything"] == false; };
  // The plans xDiT must offer, by label (even splits only).
  const auto offered = [&](const json& all, const std::string& label) {
    for (const json& p : all)
      if (p["label"] == label && even(p))
        return offers(p, "xdit") && p["framework_runs"]["xdit"]["vae"] == "single";
    FAIL("no plan " << label);
    return false;
  };

  const json cogvideox = plans("cogvideox-2b");
  CHECK(offered(cogvideox, "ulysses 2 x cfg 2"));
  CHECK(offered(cogvideox, "ring 2 x cfg 2"));
  for (const json& p : cogvideox) {
    INFO("cogvideox-2b: " << p["label"] << " " << p["frameworks"].dump());
    CHECK_FALSE(offers(p, "diffusers"));
    if (p["pipefusion_degree"] > 1 || p["tp_degree"] > 1 || !even(p)) CHECK_FALSE(offers(p, "xdit"));
  }

  const json sd3 = plans("sd3-medium");
  for (const std::string label : {"ulysses 4", "ring 4", "ring 2 x ulysses 2", "ulysses 2 x cfg 2", "ring 2 x cfg 2",
                                  "pipefusion 4 (4 patches)", "ulysses 2 x pipefusion 2 (2 patches)",
                                  "pipefusion 2 (2 patches) x cfg 2"}) {
    INFO("sd3-medium: " << label);
    CHECK(offered(sd3, label));
  }
  for (const json& p : sd3) {
    INFO("sd3-medium: " << p["label"] << " " << p["frameworks"].dump());
    CHECK_FALSE(offers(p, "diffusers"));
    if (p["tp_degree"] > 1 || !even(p)) CHECK_FALSE(offers(p, "xdit"));
  }
}
