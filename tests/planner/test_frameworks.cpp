// Which external frameworks can run a plan, and the configuration cpplan prints for them
// (shared/spec/parallelism.md, "The ecosystem's API surface").
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "planner/frameworks.h"
#include "planner/validate.h"
#include "tests/support/fixtures.h"

using cpplan::planner::Framework;
using cpplan::planner::frameworks_for;
using cpplan::planner::make_plan;
using cpplan::planner::unsupported_reason;
using cpplan::test::config;
using cpplan::test::make_query;
using Names = std::vector<std::string>;

namespace {
// A valid plan for the query (fails the test otherwise).
cpplan::Plan valid_plan(const cpplan::Query& q, const cpplan::ParallelConfig& c) {
  cpplan::Plan p = make_plan(q, c);
  INFO(cpplan::plan_label(c) << ": " << (p.reasons().empty() ? std::string() : p.reasons().front()));
  REQUIRE(p.valid());
  return p;
}
}  // namespace

TEST_CASE("Framework names", "[planner][frameworks]") {
  CHECK(cpplan::planner::to_string(Framework::kDiffusers) == "diffusers");
  CHECK(cpplan::planner::to_string(Framework::kXdit) == "xdit");
  CHECK(cpplan::planner::to_string(Framework::kCacheDit) == "cache-dit");
  cpplan::planner::FrameworkSet s;
  CHECK(s.names().empty());
  s.add(Framework::kCacheDit);
  s.add(Framework::kDiffusers);
  CHECK(s.has(Framework::kDiffusers));
  CHECK_FALSE(s.has(Framework::kXdit));
  CHECK(s.names() == Names{"diffusers", "cache-dit"});
}

// SGLang Diffusion offers its flags' features to every model (its per-model support is unconfirmed:
// profiles/frameworks/sglang.toml); vLLM-Omni's table gives FLUX.1-dev "CFG, TP, HSDP", no SP.
TEST_CASE("Every framework but vLLM-Omni runs plain Ulysses on FLUX.1-dev", "[planner][frameworks]") {
  const auto q = make_query("flux.1-dev", 4);
  const auto p = valid_plan(q, config(1, 4));
  CHECK(frameworks_for(q, p).names() == Names{"diffusers", "xdit", "cache-dit", "sglang"});
  CHECK(unsupported_reason(Framework::kVllmOmni, q, p) == "vLLM-Omni offers no sequence parallelism for this model");
  CHECK(unsupported_reason(Framework::kDiffusers, q, p).empty());
  CHECK(unsupported_reason(Framework::kXdit, q, p).empty());
  CHECK(unsupported_reason(Framework::kCacheDit, q, p).empty());
}

TEST_CASE("diffusers refuses CP and TP together but cache-dit runs the hybrid", "[planner][frameworks][diffusers]") {
  const auto q = make_query("flux.1-dev", 4);
  const auto p = valid_plan(q, config(1, 2, 2));
  CHECK(unsupported_reason(Framework::kDiffusers, q, p) == "diffusers refuses context and tensor parallelism together");
  CHECK(unsupported_reason(Framework::kCacheDit, q, p).empty());
  CHECK(unsupported_reason(Framework::kXdit, q, p) == "xDiT does not offer tensor parallelism for this pipeline");
  CHECK(frameworks_for(q, p).names() == Names{"cache-dit", "sglang"});
  // TP alone is fine for diffusers.
  const auto tp = valid_plan(q, config(1, 1, 4));
  CHECK(unsupported_reason(Framework::kDiffusers, q, tp).empty());
}

TEST_CASE("Of the first three only xDiT runs CFG parallelism, for the models its runner offers it",
          "[planner][frameworks][cfg]") {
  // profiles/frameworks/xdit.toml (shared/reference/frameworks.md): SD3.5-Large has CFG parallel,
  // Wan2.1-T2V-14B does not (the I2V-720P model does).
  const auto sd = make_query("sd3.5-large", 4);
  const auto p = valid_plan(sd, config(1, 2, 1, 2));
  CHECK(unsupported_reason(Framework::kDiffusers, sd, p) == "diffusers has no context-parallel plan for this transformer");
  CHECK(unsupported_reason(Framework::kCacheDit, sd, p) == "cache-dit has no context-parallel plan for this transformer");
  CHECK(unsupported_reason(Framework::kXdit, sd, p).empty());
  CHECK(frameworks_for(sd, p).names() == Names{"xdit", "sglang"});  // vLLM-Omni: "SD3.5: CFG, TP", no SP
  const auto wan = make_query("wan2.1-t2v-14b", 4);
  const auto w = valid_plan(wan, config(1, 2, 1, 2));
  CHECK(unsupported_reason(Framework::kDiffusers, wan, w) == "diffusers has no CFG parallelism");
  CHECK(unsupported_reason(Framework::kXdit, wan, w) == "xDiT offers no CFG parallelism for this model");
  CHECK(frameworks_for(wan, w).names() == Names{"sglang"});  // vLLM-Omni's table lists Wan2.2, not Wan2.1
}

TEST_CASE("xDiT refuses the anything modes and models it has no pipeline for", "[planner][frameworks][xdit]") {
  const auto q = make_query("flux.1-dev", 4, 1008, 1008);
  const auto ua = valid_plan(q, config(1, 4, 1, 1, 1, true));
  const auto ra = valid_plan(q, config(4, 1, 1, 1, 1, false, true));
  CHECK(unsupported_reason(Framework::kXdit, q, ua) == "xDiT needs even splits (no anything modes)");
  CHECK(unsupported_reason(Framework::kXdit, q, ra) == "xDiT needs even splits (no anything modes)");
  CHECK(frameworks_for(q, ua).names() == Names{"diffusers", "cache-dit"});

  // The runner serves FLUX.2-dev (2026) and FLUX.1-schnell ("FLUX.1 (dev, schnell) | ... | yes"), but
  // not LTX-Video (its LTX-2 is another transformer class; cache-dit's matrix lists LTX-2 only).
  const auto schnell = make_query("flux.1-schnell", 4);
  // SGLang Diffusion: no per-model table (frameworks.md: "unconfirmed which models run TP or SP"),
  // so its file offers its flags' features to every model, marked unconfirmed.
  CHECK(frameworks_for(schnell, valid_plan(schnell, config(1, 4))).names() == Names{"diffusers", "xdit", "cache-dit", "sglang"});
  const auto ltx = make_query("ltx-video-2b", 2);
  const auto p = valid_plan(ltx, config(1, 2));
  CHECK(unsupported_reason(Framework::kXdit, ltx, p) == "xDiT has no pipeline for this model");
  CHECK(frameworks_for(ltx, p).names() == Names{"diffusers", "sglang"});
  const auto flux2 = make_query("flux.2-dev", 4);
  CHECK(frameworks_for(flux2, valid_plan(flux2, config(1, 4))).names() ==
        Names{"diffusers", "xdit", "cache-dit", "sglang"});
}

TEST_CASE("Only xDiT runs Ring with p2p K/V rotation", "[planner][frameworks][ring]") {
  const auto q = make_query("flux.1-dev", 4);
  auto c = config(4, 1);
  c.context_parallel_config.rotate_method = cpplan::RotateMethod::kP2P;
  const auto p = valid_plan(q, c);
  CHECK(unsupported_reason(Framework::kDiffusers, q, p) == "diffusers' Ring only all-gathers K/V");
  CHECK(unsupported_reason(Framework::kCacheDit, q, p) == "cache-dit's Ring only all-gathers K/V");
  CHECK(frameworks_for(q, p).names() == Names{"xdit"});
}

TEST_CASE("Models without a diffusers CP plan run CP only in xDiT (and, unconfirmed, SGLang Diffusion)",
          "[planner][frameworks]") {
  const auto q = make_query("sd3.5-large", 2);
  const auto p = valid_plan(q, config(1, 2));
  CHECK(unsupported_reason(Framework::kDiffusers, q, p) ==
        "diffusers has no context-parallel plan for this transformer");
  CHECK(unsupported_reason(Framework::kCacheDit, q, p) ==
        "cache-dit has no context-parallel plan for this transformer");
  CHECK(frameworks_for(q, p).names() == Names{"xdit", "sglang"});
}

TEST_CASE("No framework runs an invalid plan", "[planner][frameworks]") {
  const auto q = make_query("flux.1-dev", 4, 1008, 1008);
  const auto p = make_plan(q, config(4, 1));
  REQUIRE_FALSE(p.valid());
  for (auto f : {Framework::kDiffusers, Framework::kXdit, Framework::kCacheDit})
    CHECK(unsupported_reason(f, q, p) == "the plan is invalid");
  CHECK(frameworks_for(q, p).bits == 0u);
}

TEST_CASE("The diffusers snippet for the 1008x1008 top plan enables Ulysses Anything", "[planner][frameworks][snippet]") {
  const auto q = make_query("flux.1-dev", 4, 1008, 1008);
  const auto p = valid_plan(q, config(1, 4, 1, 1, 1, true));
  const std::string s = cpplan::planner::diffusers_snippet(q, p);
  CHECK_THAT(s, Catch::StartsWith("# torchrun --nproc-per-node 4 run.py\n"));
  CHECK_THAT(s, Catch::Contains("from diffusers import FluxPipeline, ContextParallelConfig\n"));
  CHECK_THAT(s, Catch::Contains(
                    "pipe = FluxPipeline.from_pretrained(\"black-forest-labs/FLUX.1-dev\", torch_dtype=torch.bfloat16)"));
  CHECK_THAT(s, Catch::Contains("pipe.transformer.set_attention_backend(\"flash\")"));
  CHECK_THAT(s, Catch::Contains(
                    "pipe.transformer.enable_parallelism(config=ContextParallelConfig(ulysses_degree=4, "
                    "ulysses_anything=True))"));
  CHECK_THAT(s, Catch::Contains("height=1008, width=1008, num_inference_steps=28"));
  CHECK_THAT(s, Catch::Contains("out.images[0].save(\"output.png\")"));
  CHECK_THAT(s, !Catch::Contains("num_frames"));
}

TEST_CASE("Snippets spell out each config form", "[planner][frameworks][snippet]") {
  const auto flux = make_query("flux.1-dev", 4);
  SECTION("Ring Anything") {
    const auto s = cpplan::planner::diffusers_snippet(
        make_query("flux.1-dev", 4, 1008, 1008), valid_plan(make_query("flux.1-dev", 4, 1008, 1008),
                                                            config(4, 1, 1, 1, 1, false, true)));
    CHECK_THAT(s, Catch::Contains("ContextParallelConfig(ring_degree=4, ring_anything=True)"));
  }
  SECTION("Unified") {
    const auto s = cpplan::planner::diffusers_snippet(flux, valid_plan(flux, config(2, 2)));
    CHECK_THAT(s, Catch::Contains("ContextParallelConfig(ring_degree=2, ulysses_degree=2)"));
  }
  SECTION("CP with TP uses ParallelConfig") {
    const auto s = cpplan::planner::diffusers_snippet(flux, valid_plan(flux, config(1, 2, 2)));
    CHECK_THAT(s, Catch::Contains("from diffusers import FluxPipeline, ParallelConfig, ContextParallelConfig, "
                                  "TensorParallelConfig\n"));
    CHECK_THAT(s, Catch::Contains("enable_parallelism(config=ParallelConfig(context_parallel_config="
                                  "ContextParallelConfig(ulysses_degree=2), tensor_parallel_config="
                                  "TensorParallelConfig(tp_degree=2)))"));
  }
  SECTION("TP alone") {
    const auto s = cpplan::planner::diffusers_snippet(flux, valid_plan(flux, config(1, 1, 4)));
    CHECK_THAT(s, Catch::Contains("enable_parallelism(config=TensorParallelConfig(tp_degree=4))"));
  }
  SECTION("convert_to_fp32 off is written out") {
    auto c = config(4, 1);
    c.context_parallel_config.convert_to_fp32 = false;
    const auto s = cpplan::planner::diffusers_snippet(flux, valid_plan(flux, c));
    CHECK_THAT(s, Catch::Contains("ContextParallelConfig(ring_degree=4, convert_to_fp32=False)"));
  }
  SECTION("a single GPU enables nothing") {
    const auto one = make_query("flux.1-dev", 1);
    const auto s = cpplan::planner::diffusers_snippet(one, valid_plan(one, config(1, 1)));
    CHECK_THAT(s, !Catch::Contains("enable_parallelism"));
    CHECK_THAT(s, Catch::Contains("from diffusers import FluxPipeline\n"));
  }
  SECTION("the cuDNN backend uses diffusers' name") {
    auto q = flux;
    q.backend = cpplan::AttentionBackend::kCudnn;
    const auto s = cpplan::planner::diffusers_snippet(q, valid_plan(q, config(1, 4)));
    CHECK_THAT(s, Catch::Contains("set_attention_backend(\"_native_cudnn\")"));
  }
  SECTION("video models pass frames and export a video") {
    const auto wan = make_query("wan2.1-t2v-14b", 4);
    const auto s = cpplan::planner::diffusers_snippet(wan, valid_plan(wan, config(1, 4)));
    CHECK_THAT(s, Catch::Contains("from diffusers.utils import export_to_video"));
    CHECK_THAT(s, Catch::Contains("height=480, width=832, num_frames=81, num_inference_steps=50"));
    CHECK_THAT(s, Catch::Contains("export_to_video(out.frames[0], \"output.mp4\""));
  }
}

TEST_CASE("The xDiT command names the degrees", "[planner][frameworks][xdit]") {
  const auto q = make_query("flux.1-dev", 4);
  const std::string cmd = cpplan::planner::xdit_command(q, valid_plan(q, config(1, 4)));
  // xDiT's model runner (the per-model example scripts were removed in February 2026).
  CHECK(cmd == "xdit --model FLUX.1-dev --height 1024 --width 1024 --num_inference_steps 28 --ulysses_degree 4 "
               "--ring_degree 1 --prompt \"a photo of a cat\"");
  CHECK_THAT(cmd, Catch::Contains("--ulysses_degree 4 --ring_degree 1"));

  const std::string unified = cpplan::planner::xdit_command(q, valid_plan(q, config(2, 2)));
  CHECK_THAT(unified, Catch::Contains("--ulysses_degree 2 --ring_degree 2"));

  // Wan with data parallelism on 8 GPUs, batch 2; PixArt-Sigma from its example script.
  auto wan = make_query("wan2.1-t2v-14b", 8);
  wan.batch = 2;
  const std::string w = cpplan::planner::xdit_command(wan, valid_plan(wan, config(1, 4, 1, 1, 2)));
  CHECK_THAT(w, Catch::StartsWith("xdit --model Wan2.1-T2V-14B --height 480 --width 832 --num_frames 81"));
  CHECK_THAT(w, Catch::Contains("--ulysses_degree 4 --ring_degree 1 --data_parallel_degree 2"));
  const auto pixart = make_query("pixart-sigma", 2);
  CHECK_THAT(cpplan::planner::xdit_command(pixart, valid_plan(pixart, config(1, 2))),
             Catch::StartsWith("torchrun --nproc_per_node=2 examples/pixartsigma_example.py --model "
                               "PixArt-alpha/PixArt-Sigma-XL-2-1024-MS"));
}

TEST_CASE("PipeFusion plans run on xDiT alone, where its runner offers PipeFusion, with its flags", "[planner][frameworks][pipefusion]") {
  const auto q = make_query("flux.1-dev", 8, 1024, 1024);
  cpplan::ParallelConfig c = config(1, 2);
  c.pipefusion = {4, 8, 1};
  const cpplan::Plan p = valid_plan(q, c);
  CHECK(frameworks_for(q, p).names() == Names{"xdit"});
  CHECK(unsupported_reason(Framework::kDiffusers, q, p) == "diffusers has no PipeFusion");
  CHECK(unsupported_reason(Framework::kCacheDit, q, p) == "cache-dit has no PipeFusion");
  CHECK_THAT(cpplan::planner::xdit_command(q, p),
             Catch::Contains("--ulysses_degree 2 --ring_degree 1 --pipefusion_parallel_degree 4 --num_pipeline_patch 8 "
                             "--warmup_steps 1"));
  // xDiT's runner has no PipeFusion for Wan (shared/reference/frameworks.md)
  const auto wan = make_query("wan2.1-t2v-14b", 2);
  cpplan::ParallelConfig w;
  w.pipefusion = {2, 2, 1};
  const cpplan::Plan wp = valid_plan(wan, w);
  CHECK(unsupported_reason(Framework::kXdit, wan, wp) == "xDiT offers no PipeFusion for this model");
  CHECK(frameworks_for(wan, wp).names().empty());
}

TEST_CASE("Every xDiT line names an entry point of its framework file, for every model it runs", "[planner][frameworks][xdit]") {
  // profiles/frameworks/xdit.toml and xdit-2025.toml: the runner `xdit`, or an example script the
  // version ships; never a script of another version (the 2025 scripts were removed in 2026).
  for (const std::string version : {"xdit", "xdit-2025"}) {
    const cpplan::FrameworkProfile* fw = cpplan::test::catalog().find_framework(version);
    REQUIRE(fw);
    for (const cpplan::ModelProfile& m : cpplan::test::catalog().models()) {
      const cpplan::FrameworkModel* entry = fw->model_for(m);
      if (!entry) continue;
      auto q = make_query(m.name, 2);
      q.frameworks[static_cast<int>(Framework::kXdit)] = fw;
      // The first words name the entry, whatever the plan (ulysses 2 does not split every default size).
      const std::string cmd = cpplan::planner::xdit_command(q, make_plan(q, config(1, 2)));
      const std::string first = cmd.substr(0, cmd.find(' '));
      INFO(version << " " << m.name << ": " << cmd);
      CHECK(std::find(fw->entry_points.begin(), fw->entry_points.end(), first) != fw->entry_points.end());
      if (first == "torchrun") {
        const std::string script = cmd.substr(cmd.find(' ', cmd.find(' ') + 1) + 1);
        CHECK(std::find(fw->entry_points.begin(), fw->entry_points.end(), script.substr(0, script.find(' '))) !=
              fw->entry_points.end());
      }
    }
  }
}

TEST_CASE("diffusers' script sets up both transformers of a two-transformer pipeline", "[planner][frameworks]") {
  // Wan2.2 A14B's pipeline holds `transformer` and `transformer_2` (the low-noise expert): each must
  // get the attention backend and the parallel config, or the second runs on one GPU.
  const auto wan22 = make_query("wan22-tiny", 2);
  const std::string s = cpplan::planner::diffusers_snippet(wan22, valid_plan(wan22, config(1, 2)));
  CHECK_THAT(s, Catch::Contains("pipe.transformer.enable_parallelism(config=ContextParallelConfig(ulysses_degree=2))\n"));
  CHECK_THAT(s, Catch::Contains("pipe.transformer_2.enable_parallelism(config=ContextParallelConfig(ulysses_degree=2))\n"));
  CHECK_THAT(s, Catch::Contains("pipe.transformer_2.set_attention_backend(\"flash\")\n"));
  const auto wan = make_query("wan-tiny", 2);
  CHECK_THAT(cpplan::planner::diffusers_snippet(wan, valid_plan(wan, config(1, 2))), !Catch::Contains("transformer_2"));
}

TEST_CASE("The diffusers script for FLUX.2-dev tensor parallel 8 on L20 shards before moving the transformer",
          "[planner][frameworks][snippet][load]") {
  // The whole transformer (60 GiB) would not fit on a 45 GiB L20: enable_parallelism comes first,
  // then the transformer moves to the GPU; the rest of the pipeline moves before.
  const auto q = make_query("flux.2-dev", 8, 1024, 1024, 0, "l20");
  const auto p = valid_plan(q, config(1, 1, 8));
  for (const auto te : {cpplan::TextEncoderPlacement::kOffloaded, cpplan::TextEncoderPlacement::kReplicated}) {
    const std::string s = cpplan::planner::diffusers_snippet(q, p, {te, cpplan::VaePlacement::kSingle});
    INFO(s);
    const auto shard = s.find("pipe.transformer.enable_parallelism(config=TensorParallelConfig(tp_degree=8))\n");
    const auto move = s.find("pipe.transformer.to(\"cuda\")\n");
    REQUIRE(shard != std::string::npos);
    REQUIRE(move != std::string::npos);
    CHECK(shard < move);
    CHECK(s.find("pipe.transformer.to(\"cuda\")", move + 1) == std::string::npos);  // moved once
    CHECK_THAT(s, !Catch::Contains("torch_dtype=torch.bfloat16).to("));
    CHECK_THAT(s, Catch::Contains("# shard before moving to the GPU"));
  }
  // Context parallelism replicates the weights: the pipeline moves to the GPU as before.
  const auto cp = cpplan::planner::diffusers_snippet(q, valid_plan(q, config(1, 8)));
  CHECK_THAT(cp, Catch::Contains("torch_dtype=torch.bfloat16).to(\"cuda\")\n"));
}

TEST_CASE("Tiled and sliced decodes enable diffusers' VAE tiling and slicing", "[planner][frameworks][snippet][vae]") {
  const auto q = make_query("flux.1-dev", 1);
  const auto p = valid_plan(q, config(1, 1));
  using cpplan::TextEncoderPlacement;
  using cpplan::VaePlacement;
  CHECK_THAT(cpplan::planner::diffusers_snippet(q, p, {TextEncoderPlacement::kReplicated, VaePlacement::kTiled}),
             Catch::Contains("pipe.vae.enable_tiling()"));
  CHECK_THAT(cpplan::planner::diffusers_snippet(q, p, {TextEncoderPlacement::kReplicated, VaePlacement::kSliced}),
             Catch::Contains("pipe.vae.enable_slicing()"));
  CHECK_THAT(cpplan::planner::diffusers_snippet(q, p), !Catch::Contains("enable_tiling"));
}
