// Which plans SGLang Diffusion's and vLLM-Omni's files run, model by model, against
// shared/reference/frameworks.md. The expected verdicts are written by hand from frameworks.md (the
// line each comes from is quoted above its rows), not from profiles/frameworks/*.toml. Where
// frameworks.md says nothing, the cell is kUnstated and is not checked.
#include <catch2/catch.hpp>


#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "planner/frameworks.h"
#include "planner/validate.h"
#include "tests/planner/framework_table.h"
#include "tests/support/fixtures.h"

using cpplan::Feature;
using cpplan::FrameworkProfile;
using cpplan::ModelProfile;
using cpplan::ParallelConfig;
using cpplan::planner::make_plan;
using cpplan::planner::unsupported_reason;
using cpplan::test::catalog;
using cpplan::test::config;

namespace {

using namespace cpplan::test;  // Verdict, kRun ..., Cells, PlanKind, plan_kinds


struct Row {
  const ModelProfile* model;
  int width, height;  // 0: the model's default
  Cells cells;
};

const ModelProfile* builtin(const char* name) {
  const ModelProfile* m = catalog().find_model(name);
  REQUIRE(m);
  return m;
}

// A built-in profile under another name and transformer class, with no base: it can match a
// framework entry only by its class (as a model planned from a diffusers config does).
const ModelProfile* as_class(const char* from, const char* name, const char* cls) {
  static std::vector<std::unique_ptr<ModelProfile>> made;
  auto m = std::make_unique<ModelProfile>(*builtin(from));
  m->name = name;
  m->base.clear();
  m->transformer_class = cls;
  made.push_back(std::move(m));
  return made.back().get();
}

// The rows as the shared check takes them (tests/planner/framework_table.h).
void check_table(const std::string& file, const std::vector<Row>& rows) {
  std::vector<cpplan::test::TableRow> table;
  for (const Row& r : rows) table.push_back({r.model, r.model->name, r.width, r.height, r.cells});
  cpplan::test::check_table(file, table);
}

// Invalid whatever the framework (as tests/planner/test_framework_tables.cpp): cfg 2 on the
// guidance-distilled FLUX.1-dev and FLUX.2-dev and the unguided FLUX.1-schnell, HunyuanVideo; ulysses
// 2 x tp 2 on SD3.5-Large (38 heads / tp 2 = 19 per rank). Qwen-Image at 1024x1024.
// Columns:      ulysses 2 | ring 2 | u2 x r2 | u3 anything | tp 2 | u2 x tp 2 | cfg 2 | pipefusion 2 | u2 x fs 2 | dp 2

// vLLM-Omni (frameworks.md, "vLLM-Omni (vllm-project/vllm-omni, 2026)"):
//  "Per-model (docs/user_guide/diffusion_features.md, one 2026 version; SP / CFG / TP / HSDP / VAE
//  patch): Qwen-Image family and Wan2.2: all five; ... Z-Image: SP, TP (2 only), HSDP, VAE; LTX-2:
//  SP, CFG, TP; ... FLUX.1-dev: CFG, TP, HSDP; FLUX.2-dev and FLUX.1-Kontext: TP, HSDP; ...
//  SD3.5: CFG, TP; ..."
//  SP is Ulysses and Ring: "sequence parallel = ulysses x ring"; HSDP shards the weights (u2 x fs 2).
//  "world = pp x dp x tp x sp x cfg": SP, TP and CFG combine (u2 x tp 2 runs where both are listed).
//  Unstated: uneven (anything) splits ("Ulysses needs heads divisible (or ulysses_mode=
//  "advanced_uaa")" speaks of heads, not of the sequence), PipeFusion (vLLM-Omni's pp is not said
//  to be it), data parallelism (in the world, but no flag is named).
//  A model in no row of the table has no parallel feature there: refused.
std::vector<Row> vllm_omni_rows() {
  return {
      //                                         u2    r2    u2xr2 u3any tp2   u2xtp2 cfg2 pf2   u2xfs2 dp2
      {builtin("qwen-image"), 1024, 1024,       {kRun, kRun, kRun, kSil, kRun, kRun, kRun, kSil, kRun, kSil}},
      {builtin("wan2.2-ti2v-5b"), 0, 0,         {kRun, kRun, kRun, kSil, kRun, kRun, kRun, kSil, kRun, kSil}},
      {builtin("flux.1-dev"), 0, 0,             {kRef, kRef, kRef, kRef, kRun, kRef, kInv, kSil, kRef, kSil}},
      {builtin("flux.2-dev"), 0, 0,             {kRef, kRef, kRef, kRef, kRun, kRef, kInv, kSil, kRef, kSil}},
      {builtin("sd3.5-large"), 0, 0,            {kRef, kRef, kRef, kRef, kRun, kInv, kRun, kSil, kRef, kSil}},
      {builtin("sd3.5-medium"), 0, 0,           {kRef, kRef, kRef, kRef, kRun, kRef, kRun, kSil, kRef, kSil}},
      // by transformer class: "Z-Image: SP, TP (2 only), HSDP, VAE" (no CFG); "LTX-2: SP, CFG, TP"
      {as_class("qwen-image", "z-image-like", "ZImageTransformer2DModel"), 1024, 1024,
                                                {kRun, kRun, kRun, kSil, kRun, kRun, kRef, kSil, kRun, kSil}},
      {as_class("wan2.1-t2v-14b", "ltx-2-like", "LTX2VideoTransformer3DModel"), 0, 0,
                                                {kRun, kRun, kRun, kSil, kRun, kRun, kRun, kSil, kRef, kSil}},
      // not in the table: Wan2.1 (only "Wan2.2" is), FLUX.1-schnell, HunyuanVideo (only "-1.5" is),
      // LTX-Video (only "LTX-2" is), CogVideoX, PixArt
      {builtin("wan2.1-t2v-14b"), 0, 0,         {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil, kRef, kSil}},
      {builtin("flux.1-schnell"), 0, 0,         {kRef, kRef, kRef, kRef, kRef, kRef, kInv, kSil, kRef, kSil}},
      {builtin("hunyuanvideo"), 0, 0,           {kRef, kRef, kRef, kRef, kRef, kRef, kInv, kSil, kRef, kSil}},
      {builtin("ltx-video-2b"), 0, 0,           {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil, kRef, kSil}},
      {builtin("cogvideox-5b"), 768, 480,       {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil, kRef, kSil}},
      {builtin("pixart-sigma"), 0, 0,           {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil, kRef, kSil}},
  };
}

// SGLang Diffusion (frameworks.md, "SGLang Diffusion (sgl-project/sglang, multimodal_gen, 2026)"):
//  "No per-model parallel table is published; per-model support is in its pipeline configs
//  (unconfirmed which models run TP or SP)": no per-model verdict is stated. Stated for every model
//  only: "Parallel flags: `--num-gpus` ..., `--tp-size`, `--sp-degree` ..., `--ulysses-degree`,
//  `--ring-degree`, `--cfg-parallel-size` ..., `--dp-size`, `--use-fsdp-inference` ...,
//  `--hsdp-replicate-dim`, `--hsdp-shard-dim`, `--encoder-parallel {...}`, `--vae-sp`": no PipeFusion.
std::vector<Row> sglang_rows() {
  return {
      //                                         u2    r2    u2xr2 u3any tp2   u2xtp2 cfg2 pf2   u2xfs2 dp2
      {builtin("flux.1-dev"), 0, 0,             {kSil, kSil, kSil, kSil, kSil, kSil, kInv, kRef, kSil, kSil}},
      {builtin("qwen-image"), 1024, 1024,       {kSil, kSil, kSil, kSil, kSil, kSil, kSil, kRef, kSil, kSil}},
      {builtin("wan2.1-t2v-14b"), 0, 0,         {kSil, kSil, kSil, kSil, kSil, kSil, kSil, kRef, kSil, kSil}},
      {builtin("sd3.5-large"), 0, 0,            {kSil, kSil, kSil, kSil, kSil, kInv, kSil, kRef, kSil, kSil}},
      {builtin("hunyuanvideo"), 0, 0,           {kSil, kSil, kSil, kSil, kSil, kSil, kInv, kRef, kSil, kSil}},
  };
}

}  // namespace

TEST_CASE("vLLM-Omni runs the plans its per-model table gives it, model by model",
          "[planner][frameworks][table][vllm-omni]") {
  check_table("vllm-omni", vllm_omni_rows());
  // Every built-in profile the file lists has a row above.
  const FrameworkProfile* fw = catalog().find_framework("vllm-omni");
  REQUIRE(fw);
  const auto rows = vllm_omni_rows();
  for (const auto& entry : fw->models)
    for (const std::string& m : entry.profiles) {
      INFO("vllm-omni lists " << m);
      CHECK(std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.model->name == m; }));
    }
}

TEST_CASE("SGLang Diffusion's file marks its per-model support unconfirmed and offers the features of its flags",
          "[planner][frameworks][table][sglang]") {
  const FrameworkProfile* fw = catalog().find_framework("sglang");
  REQUIRE(fw);
  CHECK(fw->title == "SGLang Diffusion");
  CHECK(fw->launcher == "command");
  CHECK(!fw->unconfirmed.empty());
  CHECK(fw->models.empty());  // "No per-model parallel table is published"
  // The features of the flags frameworks.md names, for every model: --ulysses-degree, --ring-degree,
  // --tp-size, --cfg-parallel-size, --dp-size, --use-fsdp-inference, --vae-sp.
  for (const Feature f : {Feature::kUlysses, Feature::kRing, Feature::kTp, Feature::kCfg, Feature::kDataParallel,
                          Feature::kFullyShard, Feature::kParallelVae}) {
    INFO(to_string(f));
    CHECK(fw->common.has(f));
  }
  check_table("sglang", sglang_rows());
}

TEST_CASE("vLLM-Omni refuses HSDP with data parallelism, as frameworks.md says", "[planner][frameworks][vllm-omni]") {
  // "HSDP is incompatible with TP/DP/PP" (HSDP with TP is already an invalid plan: fs_degree is
  // exclusive with tensor parallelism).
  const FrameworkProfile* fw = catalog().find_framework("vllm-omni");
  REQUIRE(fw);
  const auto conflicts = [&](Feature a, Feature b) {
    return std::any_of(fw->conflicts.begin(), fw->conflicts.end(),
                       [&](const auto& c) { return (c.a == a && c.b == b) || (c.a == b && c.b == a); });
  };
  CHECK(conflicts(Feature::kFullyShard, Feature::kTp));
  CHECK(conflicts(Feature::kFullyShard, Feature::kDataParallel));
}

TEST_CASE("vLLM-Omni runs Z-Image's TP at degree 2 only", "[planner][frameworks][vllm-omni]") {
  // frameworks.md: "Z-Image: SP, TP (2 only), HSDP, VAE".
  const ModelProfile* z = as_class("qwen-image", "z-image-like", "ZImageTransformer2DModel");
  const auto q2 = cpplan::test::make_query(*z, 2, 1024, 1024), q4 = cpplan::test::make_query(*z, 4, 1024, 1024);
  const auto tp2 = make_plan(q2, config(1, 1, 2)), tp4 = make_plan(q4, config(1, 1, 4));
  REQUIRE(tp2.valid());
  REQUIRE(tp4.valid());
  CHECK(unsupported_reason(cpplan::Framework::kVllmOmni, q2, tp2).empty());
  CHECK(unsupported_reason(cpplan::Framework::kVllmOmni, q4, tp4) == "vLLM-Omni runs tp only up to degree 2 for this model");
  // Qwen-Image ("Qwen-Image family ...: all five") has no such limit.
  const auto qwen = cpplan::test::make_query("qwen-image", 4, 1024, 1024);
  CHECK(unsupported_reason(cpplan::Framework::kVllmOmni, qwen, make_plan(qwen, config(1, 1, 4))).empty());
}

TEST_CASE("SGLang Diffusion runs Ring only with the fa or sage attention backend", "[planner][frameworks][sglang]") {
  // frameworks.md: "ring needs the fa or sage attention backend" (cpplan's flash and sage).
  auto q = cpplan::test::make_query("flux.1-dev", 2, 1024, 1024);
  const auto ring = make_plan(q, config(2, 1)), ulysses = make_plan(q, config(1, 2));
  REQUIRE(ring.valid());
  REQUIRE(q.hardware);
  // Without --attention-backend each framework runs its own pick on the GPU: SGLang's on an H100 is
  // FA3 (profiles/frameworks/sglang.toml), which runs Ring, whatever kernel prices the query.
  q.backend = cpplan::AttentionBackend::kCudnn;
  REQUIRE(q.hardware->name == "h100-sxm");
  CHECK(unsupported_reason(cpplan::Framework::kSglang, q, ring).empty());
  q.backend_asked = true;  // --attention-backend: every framework runs the kernel asked for
  for (const auto backend : {cpplan::AttentionBackend::kFlash, cpplan::AttentionBackend::kSage}) {
    q.backend = backend;
    CHECK(unsupported_reason(cpplan::Framework::kSglang, q, ring).empty());
  }
  q.backend = cpplan::AttentionBackend::kCudnn;
  REQUIRE(make_plan(q, config(2, 1)).valid());
  CHECK(unsupported_reason(cpplan::Framework::kSglang, q, make_plan(q, config(2, 1))) ==
        "SGLang Diffusion's Ring needs the fa (FA2/FA3/FA4) or sage attention backend");
  CHECK(unsupported_reason(cpplan::Framework::kSglang, q, make_plan(q, config(1, 2))).empty());  // Ulysses: any backend
}

TEST_CASE("A framework file's backend rule and degree limit are checked field by field", "[planner][frameworks]") {
  using cpplan::test::framework_file_error;
  CHECK_THAT(framework_file_error("sglang", "backends = [\"flash\", \"fa3\", \"fa4\", \"sage\"]",
                                  "backends = [\"flash\", \"xformers\"]"),
             Catch::Contains("backends = \"xformers\": must be one of flash | cudnn | sage | native | fa3 | fa4 | aiter | splash"));
  CHECK_THAT(framework_file_error("vllm-omni", "max_degree = { tp = 2 }", "max_degree = { parallel_vae = 2 }"),
             Catch::Contains("parallel_vae = ...: not a feature with a degree"));
  CHECK_THAT(framework_file_error("vllm-omni", "max_degree = { tp = 2 }", "max_degree = { tp = 1 }"),
             Catch::Contains("tp = 1: must be between 2 and"));
}
