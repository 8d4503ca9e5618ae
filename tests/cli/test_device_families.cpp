// Device families in the CLI, on the built-in profiles: what each framework runs on a TPU and on
// AWS Neuron (shared/reference/frameworks.md), the xla runtime's warm-up, and the JSON snippets
// being the text the CLI prints.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/run_cli.h"

using cpplan::test::run_cli;
using nlohmann::json;

namespace {

std::string text_of(const std::vector<std::string>& args) {
  const auto r = run_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return r.out;
}

json json_of(std::vector<std::string> args) {
  args.push_back("--json");
  return json::parse(text_of(args));
}

// Each line of `snippet` as the CLI prints it under its framework: indented by two spaces.
bool printed(const std::string& snippet, const std::string& out) {
  std::istringstream lines(snippet);
  for (std::string line; std::getline(lines, line);)
    if (out.find("\n  " + line + "\n") == std::string::npos) return false;
  return true;
}

}  // namespace

TEST_CASE("a TPU plan is diffusers' compiled one-chip pipeline, warmed up at the query's size", "[cli][families]") {
  const std::vector<std::string> query{"--gpus", "1", "--hardware", "tpu-v6e", "--res", "1024x1024"};
  const std::string out = text_of(query);
  CHECK_THAT(out, Catch::Contains("runtime xla"));
  CHECK_THAT(out, Catch::Contains("\n  import torch_tpu\n"));
  CHECK_THAT(out, Catch::Contains("\n  pipe.enable_tpu_compile()\n"));
  CHECK_THAT(out, Catch::Contains("height=1024, width=1024, num_inference_steps=28)\n"));
  CHECK_THAT(out, Catch::Contains("  pipe.tpu_warmup("));
  CHECK_THAT(out, !Catch::Contains("nccl") && !Catch::Contains("\"cuda\"") && !Catch::Contains("torchrun"));
  CHECK_THAT(out, Catch::Contains("cache-dit: cannot run the top plan: cache-dit runs on CUDA GPUs only; nor any other "
                                  "plan here"));
  CHECK_THAT(out, Catch::Contains("xDiT: cannot run the top plan: xDiT runs on CUDA and ROCm GPUs only; nor any other plan here"));
  // profiles/runtimes/xla.toml: 60 s + 2 s x 57 FLUX.1 blocks (19 double, 38 single) = 174 s.
  CHECK_THAT(out, Catch::Contains("warm-up: 174 s XLA compile for 1024x1024, batch 1 + one image"));
  CHECK_THAT(out, Catch::Contains("a second resolution, frame count or batch in the same process compiles again: "
                                  "174 s more"));

  const json plan = json_of(query)["plans"][0];
  CHECK(plan["frameworks"] == json({"diffusers"}));
  const json& p = plan["predicted"];
  CHECK(p["compile_ms"] == Approx(174000));
  CHECK(p["warmup_ms"] == Approx(174000 + p["image_ms"].get<double>()));
  CHECK(p["steps_per_sec"] == Approx(1000 / p["step_ms"].get<double>()));  // the warm-up is not in it

  // Several chips: diffusers runs a TPU pipeline on one, and nobody else runs a TPU at all.
  const json four = json_of({"--gpus", "4", "--hardware", "tpu-v6e", "--res", "1024x1024"});
  for (const json& q : four["plans"])
    if (q["ulysses_degree"].get<int>() * q["ring_degree"].get<int>() * q["tp_degree"].get<int>() > 1)
      CHECK(q["frameworks_unavailable"]["diffusers"] ==
            "diffusers runs a TPU pipeline on one chip (enable_tpu_compile), without parallelism");
}

TEST_CASE("the xla runtime counts the classic attention processor's score matrices", "[cli][families]") {
  const auto activations = [](const char* runtime) {
    return json_of({"--gpus", "1", "--hardware", "tpu-v6e", "--res", "1024x1024", "--runtime", runtime})["plans"][0]
                  ["predicted"]["memory"]["activations"]
                      .get<double>();
  };
  // FLUX.1 at 1024x1024: 4608 tokens, 24 heads, bf16: scores and softmax 2 x 4608^2 x 24 x 2 B
  // = 2,038,431,744 B per call, live instead of the FFN's 4608 x 12288 x 2 x 2 = 226,492,416 B.
  CHECK(activations("xla") - activations("compiled") >= 2038431744.0 - 226492416.0);
}

TEST_CASE("Neuron profiles plan tensor parallelism with diffusers on device neuron", "[cli][families]") {
  const std::string listed = text_of({"list", "hardware"});
  for (const char* name : {"trn1", "trn2", "trn3", "inf2"}) CHECK_THAT(listed, Catch::Contains(name));

  const std::vector<std::string> query{"--gpus", "16", "--hardware", "trn2", "--model", "flux.2-dev", "--res",
                                       "1024x1024"};
  const json plans = json_of({"--gpus", "16", "--hardware", "trn2", "--model", "flux.2-dev", "--res", "1024x1024",
                              "--top", "1000"})["plans"];
  bool tp16 = false;
  for (const json& p : plans) {
    if (p["label"] == "tp 16") {
      tp16 = true;
      CHECK(p["frameworks"] == json({"diffusers"}));
      const std::string s = p["snippets"]["diffusers"];
      CHECK_THAT(s, Catch::Contains("pipe.transformer.enable_parallelism(config=TensorParallelConfig(tp_degree=16))"));
      CHECK_THAT(s, Catch::Contains(".to(\"neuron\")"));
      CHECK_THAT(s, !Catch::Contains("cuda") && !Catch::Contains("nccl"));
    }
    if (p["ulysses_degree"].get<int>() * p["ring_degree"].get<int>() > 1)
      CHECK(p["frameworks_unavailable"]["diffusers"] == "diffusers offers tensor parallelism on Neuron, not context parallelism");
    CHECK(p["vae"] == "single");  // nobody decodes in parallel on Neuron
  }
  CHECK(tp16);
  // The fastest plans (Ring x TP) run in no framework on Neuron: tp 16, which diffusers runs, ranks
  // first with its script, and they follow it, labelled as only `cpplan run` executes them.
  const std::string out = text_of(query);
  CHECK_THAT(out, Catch::Contains("top plan: tp 16 (none)"));
  CHECK_THAT(out, Catch::Contains("ring 4 x tp 4                Ring/Anything"));
  CHECK_THAT(out, Catch::Contains("cpplan run only"));
  CHECK_THAT(out, !Catch::Contains("diffusers: cannot run the top plan"));
  CHECK_THAT(out, Catch::Contains("TensorParallelConfig(tp_degree=16)"));
}

TEST_CASE("the JSON snippets are the text the CLI prints, for five queries", "[cli][families]") {
  const std::vector<std::vector<std::string>> queries{
      {"--gpus", "4", "--res", "1008x1008", "--hardware", "h100-sxm"},
      {"--gpus", "1", "--hardware", "tpu-v6e", "--res", "1024x1024"},
      {"--gpus", "16", "--hardware", "trn2", "--model", "flux.2-dev", "--res", "1024x1024"},
      {"--gpus", "8", "--model", "wan2.1-t2v-14b", "--res", "1280x720", "--frames", "81", "--hardware", "h200-sxm"},
      {"--gpus", "2", "--model", "sd3.5-large", "--hardware", "l40s", "--offload-text-encoders"}};
  for (const auto& q : queries) {
    INFO(q[1] << " " << q[3]);
    const std::string out = text_of(q);
    const json top = json_of(q)["plans"][0];
    int scripts = 0;
    for (const char* f : {"diffusers", "cache-dit", "xdit", "sglang", "vllm-omni"}) {
      const json& s = top["snippets"][f];
      if (s.is_null()) {
        CHECK_THAT(out, Catch::Contains("cannot run the top plan: " + top["frameworks_unavailable"][f].get<std::string>()));
      } else {
        CHECK(top["frameworks_unavailable"].count(f) == 0);
        CHECK(printed(s.get<std::string>(), out));  // every answer is a script or command below its heading
        ++scripts;
      }
    }
    CHECK(scripts == static_cast<int>(top["frameworks"].size()));
  }
}
