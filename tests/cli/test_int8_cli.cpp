// `cpplan --dtype int8` (issue 56): INT8 W8A8 planned on the INT8 tensor peak, each framework's
// launch text with its INT8 flag, and a GPU without an INT8 peak refused in one line.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli/run_cli.h"

using cpplan::test::run_cli;
using nlohmann::json;

namespace {
const std::vector<std::string> kA100{"--gpus", "2", "--res", "1024x1024", "--dtype", "int8", "--hardware",
                                     "a100-sxm-80g"};

std::string out_of(std::vector<std::string> args) {
  const auto r = run_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return r.out;
}

std::vector<std::string> with(std::vector<std::string> more) {
  std::vector<std::string> args = kA100;
  args.insert(args.end(), more.begin(), more.end());
  return args;
}
}  // namespace

TEST_CASE("cpplan --gpus 2 --dtype int8 on an A100 prints plans and the launch texts with each framework's INT8 flag",
          "[cli][precision][int8]") {
  const std::string out = out_of(kA100);
  CHECK_THAT(out, Catch::Contains("dtype int8"));
  // xDiT's runner declares use_int8_gemms for Z-Image alone: FLUX.1-dev (the default model) is not its.
  CHECK_THAT(out, Catch::Contains("xDiT: cannot run the top plan: xDiT runs FLUX.1-dev in bf16, fp8 only ("));
  CHECK(out.find("--use_int8_gemms") == std::string::npos);
  CHECK_THAT(out, Catch::Contains("quantize_config=QuantizeConfig(quant_type=\"int8_per_row\")"));  // cache-dit
  CHECK_THAT(out, Catch::Contains("from torchao.quantization import quantize_, Int8DynamicActivationInt8WeightConfig"));
  CHECK_THAT(out, Catch::Contains("quantize_(pipe.transformer, Int8DynamicActivationInt8WeightConfig())"));
  // vLLM-Omni's INT8 needs sm89: no launch text here; named, it is refused in one line.
  CHECK_THAT(out, Catch::Contains("vLLM-Omni: cannot run the top plan"));
  CHECK(out.find("--quantization int8") == std::string::npos);
  const auto omni = run_cli(with({"--framework", "vllm-omni"}));
  CHECK(omni.code == 3);
  CHECK_THAT(omni.err, Catch::StartsWith("cpplan: --dtype = int8: vLLM-Omni runs --dtype int8 on CUDA sm89 or newer only"));
  const json j = json::parse(out_of(with({"--json"})));
  CHECK(j["dtype"] == "int8");
  REQUIRE(!j["plans"].empty());
  for (const json& p : j["plans"]) CHECK(p["dtype"] == "int8");
  // On an L40S (sm89) vLLM-Omni runs it with --quantization int8.
  CHECK_THAT(out_of({"--gpus", "2", "--res", "1024x1024", "--dtype", "int8", "--hardware", "l40s", "--framework",
                     "vllm-omni"}),
             Catch::Contains("--quantization int8"));
}

TEST_CASE("cpplan --dtype int8 is faster than BF16 on an A100 and refused on a B300 in one line with exit 3",
          "[cli][precision][int8][errors]") {
  auto top_ms = [](const json& j) { return j["plans"][0]["predicted"]["step_ms"].get<double>(); };
  const json int8 = json::parse(out_of(with({"--json", "--top", "1"})));
  std::vector<std::string> bf16_args = kA100;
  bf16_args[5] = "bf16";
  bf16_args.insert(bf16_args.end(), {"--json", "--top", "1"});
  const json bf16 = json::parse(out_of(bf16_args));
  CHECK(top_ms(int8) < top_ms(bf16));
  const auto refused = run_cli({"--gpus", "2", "--res", "1024x1024", "--dtype", "int8", "--hardware", "b300"});
  CHECK(refused.code == 3);
  CHECK(refused.out.empty());
  CHECK_THAT(refused.err, Catch::StartsWith("cpplan: --dtype = int8: int8 GEMMs do not run on b300"));
  CHECK_THAT(refused.err, Catch::Contains("no INT8 tensor peak"));
  CHECK(refused.err.find('\n') == refused.err.size() - 1);
}

TEST_CASE("xDiT runs --dtype int8 for Z-Image, whose runner declares use_int8_gemms, and refuses it for FLUX.1-dev",
          "[cli][precision][int8][framework]") {
  // Z-Image from its class's defaults (profiles/classes/ZImageTransformer2DModel.toml: diffusers'
  // constructor, 30 layers x 3840), one GPU (its runner offers CFG parallelism and fully_shard only).
  const auto dir = std::filesystem::temp_directory_path() / "cpplan-int8-zimage";
  std::filesystem::create_directories(dir);
  const std::string config = (dir / "config.json").string();
  std::ofstream(config) << R"({"_class_name": "ZImageTransformer2DModel"})";
  const std::string out = out_of({"--gpus", "1", "--res", "1024x1024", "--dtype", "int8", "--hardware", "a100-sxm-80g",
                                  "--framework", "xdit", "--model-config", config});
  CHECK_THAT(out, Catch::Contains("xdit --model Z-Image "));
  CHECK_THAT(out, Catch::Contains(" --use_int8_gemms "));
  const auto flux = run_cli(with({"--framework", "xdit"}));
  CHECK(flux.code == 3);
  CHECK(flux.err ==
        "cpplan: --dtype = int8: xDiT runs FLUX.1-dev in bf16, fp8 only (xfuser/model_executor/models/runner_models/"
        "flux.py 175e0bf: xFuserFluxModel's ModelCapabilities use_fp8_gemms)\n");
  // Its example scripts run bf16: PixArt-Sigma's FP8 is refused on an H100, which has FP8 tensor cores.
  const auto pixart = run_cli({"--gpus", "1", "--model", "pixart-sigma", "--dtype", "fp8", "--hardware", "h100-sxm",
                               "--framework", "xdit"});
  CHECK(pixart.code == 3);
  CHECK_THAT(pixart.err, Catch::StartsWith("cpplan: --dtype = fp8: xDiT runs examples/pixartsigma_example.py in bf16 only"));
  std::filesystem::remove_all(dir);
}
