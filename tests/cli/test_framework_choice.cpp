// Answers a user can act on (issue 21): each framework's best plan after the table, --framework,
// no data-parallel noise for one image, the rejected plans by rule, and the GPUs nvidia-smi lists.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/run_cli.h"

using cpplan::test::run_cli;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kQwen{"--gpus", "4", "--model", "qwen-image", "--res", "1328x1328", "--hardware",
                                     "h100-sxm"};

std::string out_of(std::vector<std::string> args) {
  const auto r = run_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return r.out;
}

// PATH with a folder holding a fake nvidia-smi (a real executable script) first; restored after.
struct FakeNvidiaSmi {
  fs::path dir = fs::temp_directory_path() / "cpplan-test-nvidia-smi";
  std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  explicit FakeNvidiaSmi(const std::string& lines) {
    fs::create_directories(dir);
    std::ofstream(dir / "nvidia-smi") << "#!/bin/sh\nprintf '" << lines << "'\n";
    fs::permissions(dir / "nvidia-smi", fs::perms::owner_all);
    setenv("PATH", (dir.string() + ":" + old_path).c_str(), 1);
  }
  ~FakeNvidiaSmi() {
    setenv("PATH", old_path.c_str(), 1);
    fs::remove_all(dir);
  }
};

}  // namespace

TEST_CASE("qwen-image on 4 GPUs: diffusers' best plan follows the table, 2% slower", "[cli][frameworks]") {
  const std::string out = out_of(kQwen);
  // The fastest plan (ulysses 2 x cfg 2, 2% faster) runs in no framework: ulysses 4 (Ulysses
  // Anything), which diffusers runs, ranks first, and ulysses 2 x cfg 2 follows the plans some
  // framework runs, labelled as only `cpplan run` executes it.
  CHECK_THAT(out, Catch::Contains("   1  ulysses 4 "));
  CHECK_THAT(out, Catch::Matches("(.|\n)*\n +[5-9]  ulysses 2 x cfg 2 [^\n]*cpplan run only\n(.|\n)*"));
  CHECK_THAT(out, Catch::Contains("diffusers:\n"));
  CHECK_THAT(out, Catch::Contains("  pipe.transformer.enable_parallelism(config=ContextParallelConfig(ulysses_degree=4, "
                                  "ulysses_anything=True))\n"));
  // xDiT's runner serves Qwen-Image ("Qwen-Image-2512 ... | ulysses, ring, fully shard"), but 6889 image
  // tokens (83 x 83) split evenly over no degree and it has no anything modes nor CFG parallelism.
  CHECK_THAT(out, Catch::Contains("xDiT: cannot run the top plan: xDiT needs even splits (no anything modes); nor any "
                                  "other plan here\n"));
  auto args = kQwen;
  args.push_back("--json");
  const json j = json::parse(out_of(args));
  // SGLang Diffusion and vLLM-Omni split no sequence unevenly (6889 tokens: no even CP split here), so
  // their fastest plan is one without CP: TP x CFG (vLLM-Omni: "Qwen-Image family ...: all five").
  CHECK(j["best_by_framework"] == json::parse(R"({"diffusers": "ulysses 4", "cache-dit": "ulysses 4", "xdit": null,
                                                  "sglang": "tp 2 x cfg 2", "vllm-omni": "tp 2 x cfg 2"})"));
  CHECK(j["framework"] == "any");
}

TEST_CASE("cogvideox-5b on 4 x L40: xDiT's command for ulysses 2 x cfg 2, the VAE on one GPU", "[cli][frameworks]") {
  // xDiT's examples/cogvideox_usp_example.py runs USP and CFG parallel and refuses the parallel VAE
  // (shared/reference/frameworks.md); the plan's own placement decodes in parallel (SGLang's --vae-sp).
  const std::string out = out_of({"--model", "cogvideox-5b", "--gpus", "4", "--hardware", "l40"});
  CHECK_THAT(out, Catch::Contains("   1  ulysses 2 x cfg 2 "));
  CHECK_THAT(out, Catch::Contains("\nxDiT (its placement: replicated/single "));
  CHECK_THAT(out, Catch::Contains("  torchrun --nproc_per_node=4 examples/cogvideox_usp_example.py --model THUDM/CogVideoX-5b "
                                  "--height 480 --width 720 --num_frames 49 --num_inference_steps 50 --ulysses_degree 2 "
                                  "--ring_degree 1 --use_cfg_parallel --prompt"));
  CHECK_THAT(out, !Catch::Contains("xDiT: cannot run"));
}

TEST_CASE("framework cpplan: every valid plan by its time, ulysses 2 x cfg 2 first", "[cli][frameworks]") {
  auto args = kQwen;
  args.insert(args.end(), {"--framework", "cpplan"});
  const std::string out = out_of(args);
  // 245.08 ms per step against pipefusion 2 x cfg 2's 248.08 and ulysses 4's 250.11: the time alone
  // orders them here.
  CHECK_THAT(out, Catch::Matches("(.|\n)*\n   1  ulysses 2 x cfg 2 [^\n]*cpplan run only\n"
                                 "   2  pipefusion 2 \\(2 patches\\) x cfg 2 [^\n]*cpplan run only\n   3  ulysses 4 (.|\n)*"));
  CHECK_THAT(out, Catch::Contains("\"cpplan run only\": no framework runs those plans (6), `cpplan run` does\n"));
  CHECK_THAT(out, !Catch::Contains("left out"));  // nothing is hidden
}

TEST_CASE("framework diffusers: ranks the plans diffusers runs, ulysses 4 first", "[cli][frameworks]") {
  auto args = kQwen;
  args.insert(args.end(), {"--framework", "diffusers"});
  const std::string out = out_of(args);
  CHECK_THAT(out, Catch::Contains("   1  ulysses 4 "));
  CHECK_THAT(out, Catch::Contains("top plan: ulysses 4 (Ulysses Anything)"));
  CHECK_THAT(out, Catch::Contains("valid plans that diffusers cannot run are left out (--framework any shows them)"));
  CHECK_THAT(out, !Catch::Contains("xDiT:"));  // the other frameworks' answers are not asked for
  args.push_back("--json");
  const json j = json::parse(out_of(args));
  CHECK(j["framework"] == "diffusers");
  CHECK(j["hidden_plans"].get<int>() > 0);
  for (const json& p : j["plans"]) CHECK(p["frameworks"].dump().find("diffusers") != std::string::npos);
  const auto bad = run_cli({"--gpus", "4", "--framework", "deepspeed"});
  CHECK(bad.code == 3);
  CHECK(bad.err == "cpplan: --framework = deepspeed: must be diffusers, xdit, cache-dit, sglang, vllm-omni, cpplan or any\n");
}

TEST_CASE("one image lists no data-parallel plan, a batch of 4 does", "[cli][frameworks]") {
  const std::string one = out_of({"--gpus", "4", "--res", "1024x1024", "--hardware", "h100-sxm", "--top", "100"});
  CHECK_THAT(one, !Catch::Contains(" dp ") && !Catch::Contains("dp_degree"));
  const std::string four =
      out_of({"--gpus", "4", "--res", "1024x1024", "--hardware", "h100-sxm", "--batch", "4", "--top", "100"});
  CHECK_THAT(four, Catch::Contains("   1  dp 4 "));  // four replicas of one image each
  const std::string three =
      out_of({"--gpus", "4", "--res", "1024x1024", "--hardware", "h100-sxm", "--batch", "3"});
  CHECK_THAT(three, Catch::Contains("must divide the batch = 3"));
  const std::string all = out_of({"--gpus", "4", "--res", "1024x1024", "--hardware", "h100-sxm", "--all"});
  CHECK_THAT(all, Catch::Contains("dp 4 (none): dp_degree = 4: must divide the batch = 1"));
}

TEST_CASE("the rejected summary leads with the resolution and groups by rule", "[cli][frameworks]") {
  const std::string out = out_of({"--gpus", "8", "--res", "1008x1008", "--hardware", "h100-sxm"});
  const auto rejected = out.find("rejected (");
  REQUIRE(rejected != std::string::npos);
  const auto first_line = out.substr(out.find('\n', rejected) + 1, out.find('\n', out.find('\n', rejected) + 1) -
                                                                       out.find('\n', rejected) - 1);
  CHECK_THAT(first_line, Catch::Contains("must divide image tokens = 3969 (change --res), e.g. "));
}

TEST_CASE("without --gpus, the GPUs nvidia-smi lists, on their hardware", "[cli][frameworks]") {
  {
    FakeNvidiaSmi smi("NVIDIA H200, 143771\\nNVIDIA H200, 143771\\n");
    const auto r = run_cli({"--res", "1024x1024"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.err == "note: planning for the 2 GPUs nvidia-smi lists (NVIDIA H200); set --gpus for another count\n");
    CHECK_THAT(r.out, Catch::Contains("flux.1-dev on 2 x h200-sxm, 1024x1024"));
  }
  {
    FakeNvidiaSmi none("");
    const auto r = run_cli({"--res", "1024x1024"});
    CHECK(r.code == 3);
    CHECK(r.err == "cpplan: --gpus: required (the number of GPUs; nvidia-smi lists none here), e.g. cpplan --gpus 4 "
                   "--res 1024x1024\n");
  }
}

// xDiT's runner shards FLUX.2-dev's Mistral with the transformer whenever --fully_shard_degree > 1
// (flux.py's fsdp_strategy: "text_encoder", offload_policy "cpu"): `check --framework xdit` prices
// the plan so, and says why xDiT cannot run it with the encoder forced whole on every GPU.
TEST_CASE("check --framework prices the plan as the framework runs it, or says why it cannot",
          "[cli][frameworks][fs]") {
  const std::vector<std::string> plan{"check", "--gpus", "8", "--model", "flux.2-dev", "--hardware", "l20",
                                      "--res", "1024x1024", "--ring", "8", "--fully-shard", "2", "--runtime",
                                      "xdit", "--framework", "xdit"};
  const std::string xdit = out_of(plan);
  CHECK_THAT(xdit, Catch::Contains("text encoder fully-sharded-host, VAE single"));
  CHECK_THAT(xdit, Catch::Contains("(fits)"));
  CHECK_THAT(xdit, !Catch::Contains("cannot run it"));
  std::vector<std::string> forced = plan;
  forced.insert(forced.end(), {"--text-encoder", "replicated"});
  const std::string whole = out_of(forced);
  // Mistral-Small-3.2's 48 GB on each 48 GB L20 besides the transformer's shards: out of memory.
  CHECK_THAT(whole, Catch::Contains("does NOT fit"));
  CHECK_THAT(whole, Catch::Contains("xDiT cannot run it: xDiT's fully_shard shards the largest text encoder too "
                                    "(the runner's fsdp_strategy), and only with it"));
}

// Without --runtime, --framework xdit prices its plans as xDiT runs them: the xdit runtime its
// framework profile names (profiles/frameworks/xdit.toml), as --runtime xdit would; an explicit
// --runtime still wins, and the other frameworks keep diffusers'.
TEST_CASE("Without --runtime, --framework xdit prices with xDiT's runtime, and --runtime still wins",
          "[cli][frameworks][runtime]") {
  const std::vector<std::string> q{"--gpus", "4", "--model", "flux.1-dev", "--hardware", "l20", "--res", "1024x1024",
                                   "--top", "3", "--json"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = q;
    a.insert(a.end(), extra.begin(), extra.end());
    return json::parse(out_of(a));
  };
  auto steps = [](const json& j) {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& p : j["plans"]) out.emplace_back(p["label"].get<std::string>(), p["predicted"]["step_ms"].get<double>());
    return out;
  };
  const json framework = with({"--framework", "xdit"});
  const json explicit_xdit = with({"--framework", "xdit", "--runtime", "xdit"});
  const json forced = with({"--framework", "xdit", "--runtime", "diffusers"});
  CHECK(framework["runtime"] == "xdit");
  CHECK(framework["plans"][0]["predicted"]["runtime"] == "xdit");
  CHECK(forced["runtime"] == "diffusers");
  CHECK(steps(framework) == steps(explicit_xdit));
  CHECK(steps(framework) != steps(forced));  // xDiT's host costs are not diffusers'
  for (const char* name : {"diffusers", "cache-dit", "sglang", "any"})
    CHECK(with({"--framework", name})["runtime"] == "diffusers");
  CHECK_THAT(out_of({"--gpus", "4", "--model", "flux.1-dev", "--hardware", "l20", "--framework", "xdit"}),
             Catch::Contains("runtime xdit"));
}

TEST_CASE("The --dtype flag reaches each framework's launch text with its flag, and list frameworks shows the flags",
          "[cli][frameworks][precision]") {
  const std::vector<std::string> flux{"--gpus", "2", "--res", "1024x1024", "--hardware", "h100-sxm", "--top", "1"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = flux;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const std::string xdit = out_of(with({"--dtype", "fp8", "--framework", "xdit"}));
  CHECK(xdit.find("attention cudnn, dtype fp8, runtime xdit") != std::string::npos);
  CHECK(xdit.find(" --use_fp8_gemms") != std::string::npos);
  const std::string cache_dit = out_of(with({"--dtype", "fp8-row", "--framework", "cache-dit"}));
  CHECK(cache_dit.find("from cache_dit import QuantizeConfig") != std::string::npos);
  CHECK(cache_dit.find("quantize_config=QuantizeConfig(quant_type=\"float8_per_row\")") != std::string::npos);
  const std::string diffusers = out_of(with({"--dtype", "int8-weight-only", "--framework", "diffusers"}));
  CHECK(diffusers.find("quantize_(pipe.transformer, Int8WeightOnlyConfig())") != std::string::npos);
  const std::string sglang = out_of(with({"--dtype", "fp8", "--framework", "sglang"}));
  CHECK(sglang.find("--transformer-path <an FP8 checkpoint of the transformer>") != std::string::npos);
  // The JSON names the format; BF16 needs no flag.
  const json j = json::parse(out_of(with({"--dtype", "fp8", "--json"})));
  CHECK(j["dtype"] == "fp8");
  CHECK(out_of(with({"--framework", "xdit"})).find("--use_fp8_gemms") == std::string::npos);
  // A format the framework does not offer: one line, exit 3.
  const auto refused = run_cli(with({"--dtype", "fp8-row", "--framework", "xdit"}));
  CHECK(refused.code == 3);
  CHECK(refused.err == "cpplan: --dtype = fp8-row: xDiT runs the DiT's linears in bf16, fp8, int8, nvfp4, mxfp4 only\n");

  const std::string list = out_of({"list", "frameworks"});
  CHECK(list.find("  --dtype fp8: --use_fp8_gemms\n") != std::string::npos);
  CHECK(list.find("  --dtype nvfp4, mxfp4: --use_fp4_gemms\n") != std::string::npos);
  CHECK(list.find("  --dtype fp8: --quantization fp8\n") != std::string::npos);
  CHECK(list.find("  --dtype int8: --use_int8_gemms (on CUDA)\n") != std::string::npos);
  // xDiT decides per model (its runner's ModelCapabilities); the model rows say which formats.
  CHECK(list.find("  (runner FLUX.1-dev; --dtype bf16, fp8)\n") != std::string::npos);
  CHECK(list.find("  (runner FLUX.2-dev; --dtype bf16, fp8, nvfp4, mxfp4)\n") != std::string::npos);
  CHECK(list.find("  (examples/pixartsigma_example.py; --dtype bf16)\n") != std::string::npos);
  CHECK(list.find("  --dtype int8: --quantization int8 (on CUDA sm89 or newer)\n") != std::string::npos);
  // Each framework's caches, the flag at the policy's defaults (core/cache.h: FBCache F1B0, warm-up
  // 4, at most 3 cached in a row) and the parallelism it does not run with (profiles/frameworks/).
  CHECK(list.find("  --cache fbcache: --use_fbcache (not with TP, CFG parallel)\n") != std::string::npos);
  CHECK(list.find("  --cache teacache: --cache-backend tea_cache") != std::string::npos);
  CHECK(list.find("SGLANG_CACHE_DIT_ENABLED=true SGLANG_CACHE_DIT_FN=1 SGLANG_CACHE_DIT_BN=0 SGLANG_CACHE_DIT_WARMUP=4 "
                  "SGLANG_CACHE_DIT_MC=3") != std::string::npos);
  // A hook that fixes its own schedule says so under its flag (diffusers' FirstBlockCacheConfig
  // takes the threshold alone; MagCacheConfig's retention_ratio 0.2).
  CHECK(list.find("FirstBlockCacheConfig(threshold=0.05)) (not with Ulysses or Ring, TP)\n    its own schedule: diffusers "
                  "runs --cache fbcache with no warm-up and no cap on cached steps in a row\n") != std::string::npos);
  CHECK(list.find("    its own schedule: diffusers runs --cache magcache with the first 20% of the steps computed\n") !=
        std::string::npos);
  // A hook that attaches to some classes only names them (TaylorSeer's module-name identifiers).
  CHECK(list.find("max_order=1)) (not with Ulysses or Ring, TP)\n    its hook: diffusers hooks --cache taylorseer only "
                  "into FluxTransformer2DModel, Flux2Transformer2DModel,") != std::string::npos);
  CHECK(list.find("WanAnimate2Transformer3DModel: on another class every step is computed\n") != std::string::npos);
}

TEST_CASE("The frameworks column prices each framework's own cache schedule, and --framework prices the plans with it",
          "[cli][frameworks][cache]") {
  // One H100, FLUX.1-dev, 28 steps, fbcache at the stated hit rate 0.5: cache-dit's F1B0 computes
  // its 4 warm-up steps and 12 of the other 24 (16); diffusers' FirstBlockCache, no warm-up, 14.
  const std::vector<std::string> q = {"--gpus", "1", "--res", "1024x1024", "--cache", "fbcache", "--hardware", "h100-sxm"};
  const std::string any = out_of(q);
  CHECK(any.find("cache fbcache F1B0 (16 of 28 steps computed)") != std::string::npos);
  CHECK(any.find("diffusers (replicated/single 14 steps cached ") != std::string::npos);
  CHECK(any.find("diffusers (its cache schedule: replicated/single 14 steps cached ") != std::string::npos);
  std::vector<std::string> named = q;
  named.insert(named.end(), {"--framework", "diffusers"});
  CHECK(out_of(named).find("cache fbcache F1B0 (14 of 28 steps computed)") != std::string::npos);
  const auto j = nlohmann::json::parse(out_of([&] {
    auto v = q;
    v.push_back("--json");
    return v;
  }()));
  CHECK(j["plans"][0]["framework_runs"]["diffusers"]["cached_steps"] == 14);
  CHECK(j["plans"][0]["framework_runs"]["cache-dit"]["cached_steps"] == 12);
  named.insert(named.end(), {"--cache-warmup", "4"});
  const auto refused = run_cli(named);
  CHECK(refused.code == 3);
  CHECK(refused.err == "cpplan: --cache-warmup = 4: diffusers runs --cache fbcache with no warm-up and no cap on cached "
                       "steps in a row (a warm-up of 0 of 28 steps)\n");
  // diffusers' TaylorSeer attaches to no module of Wan (attn1, attn2): the query's schedule caches
  // 37 of 50 steps (3 warm-up, then the step after and every 5th: 13 computed), diffusers' run none.
  // Storing no factor either, its run needs what the plan without a cache needs: it fits with the
  // text encoder resident, where the plan's factors do not.
  std::vector<std::string> wan_args = {"--model", "wan2.1-t2v-14b", "--gpus", "1", "--hardware", "h100-sxm"};
  std::vector<std::string> cached_args = wan_args;
  cached_args.insert(cached_args.end(), {"--cache", "taylorseer"});
  const std::string wan = out_of(cached_args);
  CHECK(wan.find("cache taylorseer F0B0 (13 of 50 steps computed)") != std::string::npos);
  CHECK(wan.find("diffusers (replicated/single every step computed ") != std::string::npos);
  CHECK(wan.find("diffusers (its placement and cache schedule: replicated/single every step computed ") !=
        std::string::npos);
  wan_args.push_back("--json");
  cached_args.push_back("--json");
  const json none = json::parse(out_of(wan_args))["plans"][0], taylor = json::parse(out_of(cached_args))["plans"][0];
  const json& run = taylor["framework_runs"]["diffusers"];
  CHECK(run["cached_steps"] == 0);
  CHECK(run == none["framework_runs"]["diffusers"]);
  CHECK(run["fits_memory"] == true);
  CHECK(taylor["fits_memory"] == false);  // the plan's own 37 cached steps hold 2 factors a block
}

TEST_CASE("A cache and FP8 together: the plans with both, each framework's launch text or its reason",
          "[cli][frameworks][cache]") {
  const std::string out = out_of({"--gpus", "2", "--res", "1024x1024", "--cache", "fbcache", "--dtype", "fp8",
                                  "--hardware", "h100-sxm"});
  CHECK(out.find("dtype fp8, cache fbcache F1B0 (16 of 28 steps computed)") != std::string::npos);
  CHECK(out.find("16 computed steps + 12 cached at") != std::string::npos);
  CHECK(out.find("--use_fp8_gemms --use_fbcache") != std::string::npos);
  CHECK(out.find("cache_config=DBCacheConfig(Fn_compute_blocks=1, Bn_compute_blocks=0, max_warmup_steps=4, "
                 "max_continuous_cached_steps=3)") != std::string::npos);
  CHECK(out.find("diffusers runs --cache fbcache only without Ulysses or Ring") != std::string::npos);
  // PipeFusion runs no step cache: rejected with its rule.
  CHECK(out.find("must be 1 with --cache fbcache") != std::string::npos);
  // The JSON: the query's cache, each plan's cached steps and cached-step time.
  const json j = json::parse(out_of({"--gpus", "1", "--res", "1024x1024", "--cache", "taylorseer", "--hardware",
                                     "h100-sxm", "--json", "--top", "1"}));
  CHECK(j["cache"]["policy"] == "taylorseer");
  CHECK(j["cache"]["computed_steps"] == 8);  // steps 0-2, then 4, 9, 14, 19, 24 (tests/session/test_cache.cpp)
  CHECK(j["plans"][0]["predicted"]["cached_steps"] == 20);
  const auto refused = run_cli({"--gpus", "1", "--hardware", "h100-sxm", "--cache", "fbcache", "--cache-fn", "2"});
  CHECK(refused.code == 3);
  CHECK(refused.err == "cpplan: --cache-fn = 2: --cache fbcache runs the first block alone (F1B0; dbcache sets others)\n");
}
