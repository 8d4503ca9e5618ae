// cache-dit's script, SGLang Diffusion's and vLLM-Omni's commands: each parses (Python through a real
// `python3` ast.parse, a command through a real `bash -n`) and carries the plan's degrees. Expected
// lines are written by hand from the plan and shared/reference/frameworks.md's calls and flags.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "costmodel/cost_model.h"
#include "planner/framework_scripts.h"
#include "planner/frameworks.h"
#include "planner/planner.h"
#include "planner/snippets.h"
#include "planner/validate.h"
#include "tests/support/fixtures.h"

using cpplan::Framework;
using cpplan::ParallelConfig;
using cpplan::PipelinePlacement;
using cpplan::Query;
using cpplan::TextEncoderPlacement;
using cpplan::VaePlacement;
using cpplan::planner::make_plan;
using cpplan::test::config;
using cpplan::test::make_query;

namespace {

// Runs `command` with `text` in a temporary file named by "{}" in it; its exit status.
int run_on_text(const std::string& text, const std::string& command) {
  static std::atomic<int> counter{0};
  const auto path = std::filesystem::temp_directory_path() /
                    ("cpplan-script-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  std::ofstream(path) << text;
  std::string cmd = command;
  cmd.replace(cmd.find("{}"), 2, path.string());
  const int status = std::system(cmd.c_str());
  std::filesystem::remove(path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool python_parses(const std::string& text) {
  return run_on_text(text, "python3 -c 'import ast,sys; ast.parse(sys.stdin.read())' < {}") == 0;
}
bool bash_parses(const std::string& text) { return run_on_text(text, "bash -n {}") == 0; }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

Query query(const std::string& model, int gpus, int width, int height, int frames = 0) {
  Query q = make_query(model, gpus, width, height, frames);
  q.steps = 28;
  return q;
}

// The plan of `c` on `q`, which must be valid and run by `f` with the placement `where`.
cpplan::Plan runnable(const Query& q, const ParallelConfig& c, Framework f, const PipelinePlacement& where) {
  cpplan::Plan p = make_plan(q, c);
  INFO((p.reasons().empty() ? std::string("valid") : p.reasons().front()));
  REQUIRE(p.valid());
  INFO(cpplan::planner::unsupported_reason(f, q, p, where));
  REQUIRE(cpplan::planner::unsupported_reason(f, q, p, where).empty());
  return p;
}

}  // namespace

TEST_CASE("the parse checks refuse broken Python and broken shell", "[planner][frameworks][scripts]") {
  CHECK(python_parses("x = 1\n"));
  CHECK_FALSE(python_parses("pipe(\"a photo of a cat\", height=1024\n"));
  CHECK(bash_parses("echo \"a\"\n"));
  CHECK_FALSE(bash_parses("sglang generate --prompt \"a photo of a cat\n"));
}

TEST_CASE("cache-dit's script for FLUX.1-dev on Ulysses 4 is Python with its ParallelismConfig",
          "[planner][frameworks][scripts]") {
  const Query q = query("flux.1-dev", 4, 1024, 1024);
  const PipelinePlacement where{};
  const auto p = runnable(q, config(1, 4), Framework::kCacheDit, where);
  const std::string s = cpplan::planner::cache_dit_script(q, p, where);
  INFO(s);
  CHECK(python_parses(s));
  const auto lines = lines_of(s);
  REQUIRE(!lines.empty());
  CHECK(lines.front() == "# torchrun --nproc_per_node=4 run.py");
  CHECK_THAT(s, Catch::Contains("import cache_dit\n"));
  CHECK_THAT(s, Catch::Contains("from cache_dit import ParallelismConfig\n"));
  CHECK_THAT(s, Catch::Contains("from diffusers import FluxPipeline\n"));
  CHECK_THAT(s, Catch::Contains("FluxPipeline.from_pretrained(\"black-forest-labs/FLUX.1-dev\""));
  CHECK_THAT(s, Catch::Contains("cache_dit.enable_cache(pipe, parallelism_config=ParallelismConfig(ulysses_size=4))\n"));
  CHECK_THAT(s, Catch::Contains("height=1024, width=1024, num_inference_steps=28"));
  CHECK_THAT(s, !Catch::Contains("num_frames"));
  CHECK_THAT(s, Catch::Contains("out.images[0].save("));
}

TEST_CASE("cache-dit's script for Wan2.1-14B on Ulysses 2 x TP 2 shards the text encoder and the VAE",
          "[planner][frameworks][scripts]") {
  const Query q = query("wan2.1-t2v-14b", 4, 832, 480, 81);
  const PipelinePlacement where{TextEncoderPlacement::kSharded, VaePlacement::kParallel};
  const auto p = runnable(q, config(1, 2, 2), Framework::kCacheDit, where);
  const std::string s = cpplan::planner::cache_dit_script(q, p, where);
  INFO(s);
  CHECK(python_parses(s));
  CHECK(lines_of(s).front() == "# torchrun --nproc_per_node=4 run.py");
  CHECK_THAT(s, Catch::Contains("WanPipeline.from_pretrained(\"Wan-AI/Wan2.1-T2V-14B-Diffusers\""));
  CHECK_THAT(s, Catch::Contains("parallelism_config=ParallelismConfig(ulysses_size=2, tp_size=2, "
                                "extra_parallel_modules=[pipe.text_encoder, pipe.vae]))"));
  CHECK_THAT(s, Catch::Contains("height=480, width=832, num_frames=81, num_inference_steps=28"));
  CHECK_THAT(s, Catch::Contains("export_to_video(out.frames[0]"));
}

TEST_CASE("cache-dit's script for tensor parallel shards before moving the transformer to the GPU",
          "[planner][frameworks][scripts][load]") {
  // As the diffusers script (issue 35): FLUX.2-dev's transformer (60 GiB) whole on a 45 GiB L20
  // would fail while loading; enable_cache shards it in host memory, then it moves.
  Query q = make_query("flux.2-dev", 8, 1024, 1024, 0, "l20");
  q.steps = 28;
  const PipelinePlacement where{TextEncoderPlacement::kSharded, VaePlacement::kSingle};
  const auto p = runnable(q, config(1, 1, 8), Framework::kCacheDit, where);
  const std::string s = cpplan::planner::cache_dit_script(q, p, where);
  INFO(s);
  CHECK(python_parses(s));
  const auto shard = s.find("cache_dit.enable_cache(pipe, parallelism_config=ParallelismConfig(tp_size=8");
  const auto move = s.find("pipe.transformer.to(\"cuda\")\n");
  REQUIRE(shard != std::string::npos);
  REQUIRE(move != std::string::npos);
  CHECK(shard < move);
  CHECK(s.find("pipe.transformer.to(\"cuda\")", move + 1) == std::string::npos);  // moved once
  CHECK_THAT(s, Catch::Contains("# sharded before moving to the GPU"));
  // Context parallelism replicates the weights: the transformer moves before enable_cache.
  const auto cp = runnable(q, config(1, 8), Framework::kCacheDit, where);
  const std::string c = cpplan::planner::cache_dit_script(q, cp, where);
  CHECK(c.find("pipe.transformer.to(\"cuda\")") < c.find("cache_dit.enable_cache("));
}

TEST_CASE("cache-dit's script names the Ring's rotation and FLUX.1's T5, not its CLIP, as the sharded encoder",
          "[planner][frameworks][scripts]") {
  const Query q = query("flux.1-dev", 4, 1024, 1024);
  const PipelinePlacement where{TextEncoderPlacement::kSharded, VaePlacement::kSingle};
  const auto p = runnable(q, config(2, 2), Framework::kCacheDit, where);
  const std::string s = cpplan::planner::cache_dit_script(q, p, where);
  INFO(s);
  CHECK(python_parses(s));
  CHECK_THAT(s, Catch::Contains("ParallelismConfig(ulysses_size=2, ring_size=2, ring_rotate_method=\"allgather\", "
                                "extra_parallel_modules=[pipe.text_encoder_2])"));
}

TEST_CASE("SGLang Diffusion's command for FLUX.1-dev on Ulysses 4 is a shell line with its degrees, marked unconfirmed",
          "[planner][frameworks][scripts]") {
  const Query q = query("flux.1-dev", 4, 1024, 1024);
  const PipelinePlacement where{};
  const auto p = runnable(q, config(1, 4), Framework::kSglang, where);
  const std::string s = cpplan::planner::sglang_command(q, p, where);
  INFO(s);
  CHECK(bash_parses(s));
  const auto lines = lines_of(s);
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0], Catch::StartsWith("# SGLang Diffusion, unconfirmed: "));
  // frameworks.md: "No per-model parallel table is published"
  CHECK_THAT(lines[0], Catch::Contains("no per-model parallel table"));
  CHECK(lines[1] ==
        "sglang generate --model-path black-forest-labs/FLUX.1-dev --num-gpus 4 --ulysses-degree 4 --ring-degree 1 "
        "--height 1024 --width 1024 --num-inference-steps 28 --prompt \"a photo of a cat\"");
}

TEST_CASE("SGLang Diffusion's command for Wan2.1-14B on 8 GPUs carries TP, CFG and the VAE's sequence parallelism",
          "[planner][frameworks][scripts]") {
  const Query q = query("wan2.1-t2v-14b", 8, 832, 480, 81);
  const PipelinePlacement where{TextEncoderPlacement::kReplicated, VaePlacement::kParallel};
  const auto p = runnable(q, config(1, 2, 2, 2), Framework::kSglang, where);
  const std::string s = cpplan::planner::sglang_command(q, p, where);
  INFO(s);
  CHECK(bash_parses(s));
  CHECK(lines_of(s).back() ==
        "sglang generate --model-path Wan-AI/Wan2.1-T2V-14B-Diffusers --num-gpus 8 --ulysses-degree 2 --ring-degree 1 "
        "--tp-size 2 --cfg-parallel-size 2 --vae-tiling --vae-sp --height 480 --width 832 --num-frames 81 "
        "--num-inference-steps 28 --prompt \"a photo of a cat\"");
}

TEST_CASE("SGLang Diffusion's command shards the DiT weights and runs data parallel as the plan says",
          "[planner][frameworks][scripts]") {
  Query q = query("wan2.1-t2v-14b", 4, 832, 480, 81);
  q.batch = 2;  // one image per data-parallel replica
  ParallelConfig c = config(1, 2, 1, 1, 2);
  c.fs_degree = 2;
  const auto p = runnable(q, c, Framework::kSglang, {});
  const std::string s = cpplan::planner::sglang_command(q, p, {});
  INFO(s);
  CHECK(bash_parses(s));
  CHECK_THAT(s, Catch::Contains(" --num-gpus 4 --ulysses-degree 2 --ring-degree 1 --dp-size 2 --use-fsdp-inference "
                                "--hsdp-shard-dim 2 --hsdp-replicate-dim 2 --height"));
}

TEST_CASE("vLLM-Omni's command for Qwen-Image on Ulysses 2 x Ring 2 serves it with --usp and --ring",
          "[planner][frameworks][scripts]") {
  const Query q = query("qwen-image", 4, 1024, 1024);
  const auto p = runnable(q, config(2, 2), Framework::kVllmOmni, {});
  const std::string s = cpplan::planner::vllm_omni_command(q, p, {});
  INFO(s);
  CHECK(bash_parses(s));
  const auto lines = lines_of(s);
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0], Catch::StartsWith("# vLLM-Omni serves the model; each request asks for 1024x1024, 28 steps"));
  CHECK(lines[1] == "vllm serve Qwen/Qwen-Image --omni --usp 2 --ring 2 --cfg-parallel-size 1 --tensor-parallel-size 1");
}

TEST_CASE("vLLM-Omni's command for Wan2.2-5B on 8 GPUs carries TP, CFG and the VAE's patch parallelism",
          "[planner][frameworks][scripts]") {
  const Query q = query("wan2.2-ti2v-5b", 8, 1280, 704, 121);
  const PipelinePlacement where{TextEncoderPlacement::kReplicated, VaePlacement::kParallel};
  const auto p = runnable(q, config(1, 2, 2, 2), Framework::kVllmOmni, where);
  const std::string s = cpplan::planner::vllm_omni_command(q, p, where);
  INFO(s);
  CHECK(bash_parses(s));
  CHECK_THAT(lines_of(s).front(), Catch::Contains("1280x704, 121 frames, 28 steps"));
  CHECK(lines_of(s).back() ==
        "vllm serve Wan-AI/Wan2.2-TI2V-5B-Diffusers --omni --usp 2 --ring 1 --cfg-parallel-size 2 "
        "--tensor-parallel-size 2 --vae-patch-parallel-size 8 --vae-parallel-mode tile");
}

TEST_CASE("vLLM-Omni's command shards the weights with HSDP as the plan says", "[planner][frameworks][scripts]") {
  const Query q = query("qwen-image", 2, 1024, 1024);
  ParallelConfig c = config(1, 2);
  c.fs_degree = 2;
  const auto p = runnable(q, c, Framework::kVllmOmni, {});
  const std::string s = cpplan::planner::vllm_omni_command(q, p, {});
  INFO(s);
  CHECK(bash_parses(s));
  CHECK(lines_of(s).back() ==
        "vllm serve Qwen/Qwen-Image --omni --usp 2 --ring 1 --cfg-parallel-size 1 --tensor-parallel-size 1 "
        "--use-hsdp --hsdp-shard-size 2");
}

// The ranked answer: each framework's fastest plan, as best_by_framework gives it, parses and
// carries that plan's degrees.
TEST_CASE("each framework's best plan prints a script or command that parses and carries the plan's degrees",
          "[planner][frameworks][scripts]") {
  struct Case {
    const char* model;
    int gpus, width, height, frames;
  };
  const Case cases[] = {{"flux.1-dev", 4, 1024, 1024, 0},
                        {"qwen-image", 4, 1024, 1024, 0},
                        {"wan2.1-t2v-14b", 8, 832, 480, 81},
                        {"wan2.2-ti2v-5b", 4, 1280, 704, 121}};
  int printed[cpplan::kFrameworkCount] = {};
  for (const Case& k : cases) {
    const Query q = query(k.model, k.gpus, k.width, k.height, k.frames);
    const cpplan::costmodel::DatasheetModel hw(*q.hardware);
    const cpplan::costmodel::CostModel cost(hw);
    const auto report = cpplan::planner::Planner(cost).plan(q, {});
    for (const auto& choice : cpplan::planner::best_by_framework(q, report)) {
      if (!choice.plan) continue;
      const ParallelConfig& c = choice.plan->plan.config;
      const std::string& s = choice.snippet;
      INFO(k.model << " | " << to_string(choice.framework) << " | " << cpplan::plan_label(c) << "\n" << s);
      const auto n = [](int v) { return std::to_string(v); };
      switch (choice.framework) {
        case Framework::kDiffusers: CHECK(python_parses(s)); break;
        case Framework::kXdit: CHECK(bash_parses(s)); break;
        case Framework::kCacheDit:
          CHECK(python_parses(s));
          CHECK_THAT(s, Catch::StartsWith("# torchrun --nproc_per_node=" + n(c.ring() * c.ulysses() * c.tp()) + " "));
          if (c.ulysses() > 1) CHECK_THAT(s, Catch::Contains("ulysses_size=" + n(c.ulysses())));
          if (c.ring() > 1) CHECK_THAT(s, Catch::Contains("ring_size=" + n(c.ring())));
          if (c.tp() > 1) CHECK_THAT(s, Catch::Contains("tp_size=" + n(c.tp())));
          break;
        case Framework::kSglang:
          CHECK(bash_parses(s));
          CHECK_THAT(s, Catch::Contains("# SGLang Diffusion, unconfirmed: "));
          CHECK_THAT(s, Catch::Contains("--num-gpus " + n(k.gpus) + " --ulysses-degree " + n(c.ulysses()) +
                                        " --ring-degree " + n(c.ring())));
          if (c.tp() > 1) CHECK_THAT(s, Catch::Contains("--tp-size " + n(c.tp())));
          if (c.cfg_degree > 1) CHECK_THAT(s, Catch::Contains("--cfg-parallel-size 2"));
          if (c.dp_degree > 1) CHECK_THAT(s, Catch::Contains("--dp-size " + n(c.dp_degree)));
          break;
        case Framework::kVllmOmni:
          CHECK(bash_parses(s));
          CHECK_THAT(s, Catch::Contains("--omni --usp " + n(c.ulysses()) + " --ring " + n(c.ring()) +
                                        " --cfg-parallel-size " + n(c.cfg_degree) + " --tensor-parallel-size " +
                                        n(c.tp())));
          break;
      }
      ++printed[static_cast<int>(choice.framework)];
    }
  }
  // Every framework printed something here: the checks above are not vacuous.
  for (int i = 0; i < cpplan::kFrameworkCount; ++i) {
    INFO(to_string(static_cast<Framework>(i)));
    CHECK(printed[i] > 0);
  }
}
