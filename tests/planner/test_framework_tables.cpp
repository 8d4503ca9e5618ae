// Which plans each framework file runs, model by model, against shared/reference/frameworks.md.
// The expected verdicts are written by hand from frameworks.md (the line each comes from is quoted
// above its rows), not from profiles/frameworks/*.toml: a mismatch means the file and the reference
// disagree. Where frameworks.md says nothing, the cell is kUnstated and is not checked (what the
// file says there is its own assumption). Rows are built-in profiles, and models from a diffusers
// config ("config:NAME": tests/data/diffusers/NAME/config.json; "class:NAME": a config naming only
// `_class_name`, the constructor's defaults), which frameworks match by transformer class.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/diffusers_config.h"
#include "planner/frameworks.h"
#include "planner/validate.h"
#include "tests/planner/framework_table.h"
#include "tests/support/fixtures.h"

using cpplan::FrameworkProfile;
using cpplan::ParallelConfig;
using cpplan::planner::make_plan;
using cpplan::planner::unsupported_reason;
using cpplan::test::catalog;
using cpplan::test::config;

namespace {

using namespace cpplan::test;  // Verdict, kRun ..., Cells, PlanKind, plan_kinds


// A row's model: a built-in profile's name, "config:NAME" (tests/data/diffusers/NAME/config.json) or
// "class:NAME" (a config of class NAME with the constructor's defaults); loaded once.
const cpplan::ModelProfile& model_of(const std::string& key) {
  static std::map<std::string, cpplan::ModelProfile> derived;
  if (const cpplan::ModelProfile* m = catalog().find_model(key)) return *m;
  if (auto it = derived.find(key); it != derived.end()) return it->second;
  cpplan::Result<cpplan::ModelProfile> m = cpplan::Error{"unknown row model " + key};
  if (key.rfind("config:", 0) == 0) {
    const auto dir = std::filesystem::path(CPPLAN_TEST_PROFILES).parent_path() / "tests" / "data" / "diffusers";
    m = cpplan::diffusers::import_profile((dir / key.substr(7) / "config.json").string(), catalog());
  } else if (key.rfind("class:", 0) == 0) {
    m = cpplan::diffusers::profile_from_config_text("{\"_class_name\": \"" + key.substr(6) + "\"}", catalog(),
                                                    {key.substr(6), key});
  }
  if (!m) throw std::runtime_error(key + ": " + m.error().message);
  return derived.emplace(key, *m).first->second;
}

struct Row {
  const char* model;  // model_of's key
  int width, height;  // 0: the model's default
  Cells cells;        // in plan_kinds() order
};

// The rows as the shared check takes them (tests/planner/framework_table.h).
void check_table(const std::string& file, const std::vector<Row>& rows) {
  std::vector<cpplan::test::TableRow> table;
  for (const Row& r : rows) table.push_back({&model_of(r.model), r.model, r.width, r.height, r.cells});
  cpplan::test::check_table(file, table);
}

// Every model profile the file lists has a row, and so does at least one it does not list.
void check_coverage(const std::string& file, const std::vector<Row>& rows) {
  const FrameworkProfile* fw = catalog().find_framework(file);
  REQUIRE(fw);
  const auto has_row = [&](const std::string& m) {
    return std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return m == r.model; });
  };
  for (const auto& entry : fw->models)
    for (const std::string& m : entry.profiles) {
      INFO(file << " lists " << m);
      CHECK(has_row(m));
    }
  const bool unlisted_row = std::any_of(rows.begin(), rows.end(), [&](const Row& r) {
    const cpplan::ModelProfile* m = catalog().find_model(r.model);
    return m && !fw->model_for(*m);
  });
  INFO(file);
  CHECK(unlisted_row);
}

// Plans no model of a row can have are kInvalid whatever the framework: cfg 2 on the
// guidance-distilled FLUX.1-dev, FLUX.2-dev, HunyuanVideo and the unguided FLUX.1-schnell; ulysses 2
// x tp 2 on SD3.5-Large (38 heads / tp 2 = 19 per rank). Qwen-Image runs at 1024x1024 (its default
// 1328x1328 has 83 x 83 image tokens, odd) and CogVideoX-5B and -2B at 768x480 (at 720x480, 17550
// tokens do not split over 4 ranks). Models from configs: CogVideoX-2B and Z-Image have 30
// heads (15 per TP rank: ulysses 2 x tp 2 cannot split them), SANA-1600M 70 (35); Z-Image Turbo
// runs without guidance (no cfg 2); Latte's temporal blocks attend across frames (Ulysses only, no
// anything mode, no PipeFusion); HunyuanDiT's long skips and SANA's linear attention rule out
// PipeFusion (and SANA's the anything modes); HunyuanVideo-1.5 runs at 832x480 (at its default
// 848x480, 49290 image tokens do not split over 4 ranks).
// Columns:      ulysses 2 | ring 2 | u2 x r2 | u3 anything | tp 2 | u2 x tp 2 | cfg 2 | pipefusion 2 | u2 x fs 2 | dp 2

// diffusers (frameworks.md, "diffusers (main, commit 58eb52c, 2026)"):
//  CP   "a transformer runs CP only if it declares a `_cp_plan`. Classes with one:
//       `FluxTransformer2DModel`, `Flux2Transformer2DModel`, `QwenImageTransformer2DModel`,
//       `WanTransformer3DModel`, `LTXVideoTransformer3DModel`, `LTX2VideoTransformer3DModel`, ...
//       Not HunyuanVideo, SD3/SD3.5, CogVideoX, PixArt." Ulysses, Ring, Unified and the anything
//       modes are all ContextParallelConfig's (its `ulysses_anything` argument).
//  TP   "Tensor parallelism: classes with a `_tp_plan`: `FluxTransformer2DModel`,
//       `Flux2Transformer2DModel`, `QwenImageTransformer2DModel`"
//  UxTP "`ParallelConfig` rejects a context and a tensor parallel config together on main"
//  CFG, PipeFusion "Entry: `pipe.transformer.enable_parallelism(config=ContextParallelConfig(...))`
//       (or `TensorParallelConfig`) ...; no CFG parallelism." (no other parallel config)
//  Unstated: fully sharded weights (the plan is checked only where its Ulysses is refused) and data
//  parallelism (one process per image: the file's `common`).
// A plan on a model without a _cp_plan is refused by its CP part (u2 x fs 2 too). A model from a
// config has its class's plans: the class, not the pipeline it borrows, decides (Chroma runs in
// FLUX.1-schnell's pipeline and Wan-Animate 2 in Wan2.1's, but neither class is in the list).
const std::vector<Row> kDiffusersRows = {
    //                         u2    r2    u2xr2 u3any tp2   u2xtp2 cfg2 pf2   u2xfs2 dp2
    {"flux.1-dev", 0, 0,      {kRun, kRun, kRun, kRun, kRun, kRef, kInv, kRef, kSil, kSil}},
    {"flux.1-schnell", 0, 0,  {kRun, kRun, kRun, kRun, kRun, kRef, kInv, kRef, kSil, kSil}},
    {"flux.2-dev", 0, 0,      {kRun, kRun, kRun, kRun, kRun, kRef, kInv, kRef, kSil, kSil}},
    {"qwen-image", 1024, 1024, {kRun, kRun, kRun, kRun, kRun, kRef, kRef, kRef, kSil, kSil}},
    {"wan2.1-t2v-14b", 0, 0,  {kRun, kRun, kRun, kRun, kRef, kRef, kRef, kRef, kSil, kSil}},
    {"wan2.1-t2v-1.3b", 0, 0, {kRun, kRun, kRun, kRun, kRef, kRef, kRef, kRef, kSil, kSil}},
    {"wan2.2-ti2v-5b", 0, 0,  {kRun, kRun, kRun, kRun, kRef, kRef, kRef, kRef, kSil, kSil}},
    {"ltx-video-2b", 0, 0,    {kRun, kRun, kRun, kRun, kRef, kRef, kRef, kRef, kSil, kSil}},
    // from configs of classes with a _cp_plan (and, FLUX.1, a _tp_plan)
    {"config:flux.1-schnell", 0, 0, {kRun, kRun, kRun, kRun, kRun, kRef, kInv, kRef, kSil, kSil}},
    {"config:wan2.2-ti2v-5b", 0, 0, {kRun, kRun, kRun, kRun, kRef, kRef, kRef, kRef, kSil, kSil}},
    {"class:LTX2VideoTransformer3DModel", 0, 0, {kRun, kRun, kRun, kRun, kRef, kRef, kRef, kRef, kSil, kSil}},
    // not listed: "Not HunyuanVideo, SD3/SD3.5, CogVideoX, PixArt."
    {"sd3.5-large", 0, 0,     {kRef, kRef, kRef, kRef, kRef, kInv, kRef, kRef, kRef, kSil}},
    {"sd3.5-medium", 0, 0,    {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil}},
    {"hunyuanvideo", 0, 0,    {kRef, kRef, kRef, kRef, kRef, kRef, kInv, kRef, kRef, kSil}},
    {"cogvideox-5b", 768, 480, {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil}},
    {"pixart-sigma", 0, 0,    {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil}},
    {"config:sd3-medium", 0, 0, {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil}},
    {"config:cogvideox-2b", 768, 480, {kRef, kRef, kRef, kRef, kRef, kInv, kRef, kRef, kRef, kSil}},
    {"config:pixart-alpha", 0, 0, {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil}},
    {"config:hunyuanvideo", 0, 0, {kRef, kRef, kRef, kRef, kRef, kRef, kInv, kRef, kRef, kSil}},
    // classes in neither list, in the pipeline of a built-in that has a _cp_plan
    {"class:ChromaTransformer2DModel", 0, 0, {kRef, kRef, kRef, kRef, kRef, kRef, kSil, kRef, kRef, kSil}},
    {"class:WanAnimate2Transformer3DModel", 0, 0, {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil}},
};

// xDiT main (frameworks.md, "xDiT (main, commit 175e0bf, 2026)"): the runner's capability table
// for runner models ("the runner's capabilities are what it accepts at the commit"), the README's
// "Supported DiTs" row for the others.
//  runner "What the runner offers per model (ModelCapabilities; data parallel is on for all)":
//       "FLUX.1-dev | ulysses, ring, pipefusion, fully shard, parallel VAE",
//       "FLUX.2-dev | ulysses, ring, pipefusion, fully shard, parallel VAE",
//       "stable-diffusion-3.5-large | ulysses, ring, pipefusion, CFG parallel, fully shard",
//       "HunyuanVideo, HunyuanVideo-1.5 | ulysses, ring", "LTX-2 | ulysses, ring",
//       "Qwen-Image-2512, Qwen-Image-Edit-2511 | ulysses, ring, fully shard",
//       "Wan2.1-T2V-14B, Wan2.2-TI2V-5B | ulysses, ring, fully shard, parallel VAE (no CFG parallel)",
//       "Z-Image | CFG parallel, fully shard"
//  README rows with runner "yes" for the other checkpoints of those classes: "FLUX.1 (dev, schnell)
//       | n/a | yes | yes | no | yes", "Stable Diffusion 3 | yes | yes | yes | no | yes" (SD3.5
//       Medium, SD3 Medium), "Wan2.1, Wan2.2 (incl. LightX2V 4-step) | no | yes | no | no | yes"
//       (Wan2.1-1.3B), "Qwen-Image, Qwen-Image-Edit, Krea2 | no | yes | no | no | yes".
//  u x r "xdit --model NAME ... --ulysses_degree U --ring_degree R ..." (both degrees in one line)
//  u3 anything: that line has no flag for an uneven split (diffusers' ulysses_anything); for the
//       example scripts frameworks.md does not say.
//  TP   "No runner model offers tensor parallelism"; the README's TP column is "no" for every model
//       cpplan plans.
//  examples (README rows, runner "no"): "CogVideoX, CogVideoX1.5 | yes | yes | no | no",
//       "`cogvideox_usp_example.py` refuses PipeFusion and parallel VAE"; "ConsisID-Preview | yes |
//       yes | no | no"; "Latte | no | yes | no | no"; "HunyuanDiT-v1.2 | yes | yes | yes | no";
//       "PixArt-alpha, PixArt-Sigma | yes | yes | yes | no"; "SANA | yes | yes | yes | no". Fully
//       sharded weights and data parallelism of a script: not stated.
//  unlisted "Mochi-1 | ... | no (separate mochi-xdit repo)"; LTX-Video (ltx-video-2b,
//       LTXVideoTransformer3DModel) is in neither table (LTX-2 is another class), nor are Chroma or
//       Wan-Animate 2: xDiT runs nothing of these.
const std::vector<Row> kXditRows = {
    //                         u2    r2    u2xr2 u3any tp2   u2xtp2 cfg2 pf2   u2xfs2 dp2
    {"flux.1-dev", 0, 0,      {kRun, kRun, kRun, kRef, kRef, kRef, kInv, kRun, kRun, kRun}},
    {"flux.1-schnell", 0, 0,  {kRun, kRun, kRun, kRef, kRef, kRef, kInv, kRun, kRun, kRun}},
    {"flux.2-dev", 0, 0,      {kRun, kRun, kRun, kRef, kRef, kRef, kInv, kRun, kRun, kRun}},
    {"sd3.5-large", 0, 0,     {kRun, kRun, kRun, kRef, kRef, kInv, kRun, kRun, kRun, kRun}},
    {"sd3.5-medium", 0, 0,    {kRun, kRun, kRun, kRef, kRef, kRef, kRun, kRun, kRun, kRun}},
    {"hunyuanvideo", 0, 0,    {kRun, kRun, kRun, kRef, kRef, kRef, kInv, kRef, kRef, kRun}},
    {"qwen-image", 1024, 1024, {kRun, kRun, kRun, kRef, kRef, kRef, kRef, kRef, kRun, kRun}},
    {"wan2.1-t2v-14b", 0, 0,  {kRun, kRun, kRun, kRef, kRef, kRef, kRef, kRef, kRun, kRun}},
    {"wan2.1-t2v-1.3b", 0, 0, {kRun, kRun, kRun, kRef, kRef, kRef, kRef, kRef, kRun, kRun}},
    {"wan2.2-ti2v-5b", 0, 0,  {kRun, kRun, kRun, kRef, kRef, kRef, kRef, kRef, kRun, kRun}},
    {"cogvideox-5b", 768, 480, {kRun, kRun, kRun, kSil, kRef, kRef, kRun, kRef, kSil, kSil}},
    {"pixart-sigma", 0, 0,    {kRun, kRun, kRun, kSil, kRef, kRef, kRun, kRun, kSil, kSil}},
    // from configs: the runner's models by class
    {"config:sd3-medium", 0, 0, {kRun, kRun, kRun, kRef, kRef, kRef, kRun, kRun, kRun, kRun}},
    {"config:flux.1-schnell", 0, 0, {kRun, kRun, kRun, kRef, kRef, kRef, kInv, kRun, kRun, kRun}},
    {"config:wan2.2-ti2v-5b", 0, 0, {kRun, kRun, kRun, kRef, kRef, kRef, kRef, kRef, kRun, kRun}},
    {"config:hunyuanvideo", 0, 0, {kRun, kRun, kRun, kRef, kRef, kRef, kInv, kRef, kRef, kRun}},
    {"class:HunyuanVideo15Transformer3DModel", 832, 480, {kRun, kRun, kRun, kRef, kRef, kRef, kRef, kRef, kRef, kRun}},
    {"class:LTX2VideoTransformer3DModel", 0, 0, {kRun, kRun, kRun, kRef, kRef, kRef, kRef, kRef, kRef, kRun}},
    {"class:ZImageTransformer2DModel", 0, 0, {kRef, kRef, kRef, kRef, kRef, kInv, kInv, kRef, kRef, kRun}},
    // from configs: the example scripts' models by class
    {"config:cogvideox-2b", 768, 480, {kRun, kRun, kRun, kSil, kRef, kInv, kRun, kRef, kSil, kSil}},
    {"config:consisid", 768, 480, {kRun, kRun, kRun, kSil, kRef, kRef, kRun, kRef, kSil, kSil}},
    {"config:latte-1", 0, 0,  {kRun, kRun, kRun, kInv, kRef, kRef, kRef, kInv, kSil, kSil}},  // Ring: the split is over spatial tokens
    {"config:hunyuandit-v1.2", 0, 0, {kRun, kRun, kRun, kSil, kRef, kRef, kRun, kRun, kSil, kSil}},
    {"config:pixart-alpha", 0, 0, {kRun, kRun, kRun, kSil, kRef, kRef, kRun, kRun, kSil, kSil}},
    {"config:pixart-sigma", 0, 0, {kRun, kRun, kRun, kSil, kRef, kRef, kRun, kRun, kSil, kSil}},
    {"config:sana-1600m-4k", 0, 0, {kRun, kRun, kRun, kInv, kRef, kInv, kRun, kRun, kSil, kSil}},
    // not listed
    {"ltx-video-2b", 0, 0,    {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef}},
    {"config:mochi-1", 0, 0,  {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef}},
    {"class:ChromaTransformer2DModel", 0, 0, {kRef, kRef, kRef, kRef, kRef, kRef, kSil, kRef, kRef, kRef}},
    {"class:WanAnimate2Transformer3DModel", 0, 0, {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef}},
};

// xDiT before February 2026 (--framework-version xdit-2025): frameworks.md gives only which
// scripts there were: "The per-model example scripts for FLUX.1, FLUX.1-Kontext, SD3, Wan,
// HunyuanVideo (USP), HunyuanVideo-1.5 and Z-Image were removed in February 2026 (pull request
// #641). Remaining examples: cogvideox(_usp), consisid(_usp), flux2, ..., pixartsigma, ...".
//  HunyuanVideo (USP) and cogvideox_usp run Ulysses and Ring; no other feature of a 2025 script is
//  stated. Qwen-Image and LTX-Video had no script in either list: refused. A model from a config
//  takes the script of its class (CogVideoX-2B: the CogVideoX script; a HunyuanVideo config: the
//  HunyuanVideo one).
const std::vector<Row> kXdit2025Rows = {
    //                         u2    r2    u2xr2 u3any tp2   u2xtp2 cfg2 pf2   u2xfs2 dp2
    {"flux.1-dev", 0, 0,      {kSil, kSil, kSil, kSil, kSil, kSil, kInv, kSil, kSil, kSil}},
    {"flux.1-schnell", 0, 0,  {kSil, kSil, kSil, kSil, kSil, kSil, kInv, kSil, kSil, kSil}},
    {"sd3.5-large", 0, 0,     {kSil, kSil, kSil, kSil, kSil, kInv, kSil, kSil, kSil, kSil}},
    {"sd3.5-medium", 0, 0,    {kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil}},
    {"wan2.1-t2v-14b", 0, 0,  {kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil}},
    {"wan2.1-t2v-1.3b", 0, 0, {kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil}},
    {"hunyuanvideo", 0, 0,    {kRun, kRun, kRun, kSil, kSil, kSil, kInv, kSil, kSil, kSil}},
    {"cogvideox-5b", 768, 480, {kRun, kRun, kRun, kSil, kSil, kSil, kSil, kSil, kSil, kSil}},
    {"pixart-sigma", 0, 0,    {kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil}},
    {"config:hunyuanvideo", 0, 0, {kRun, kRun, kRun, kSil, kSil, kSil, kInv, kSil, kSil, kSil}},
    {"config:cogvideox-2b", 768, 480, {kRun, kRun, kRun, kSil, kSil, kInv, kSil, kSil, kSil, kSil}},
    // not listed
    {"qwen-image", 1024, 1024, {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef}},
    {"ltx-video-2b", 0, 0,    {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef}},
    {"config:qwen-image", 1024, 1024, {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef}},
};

// cache-dit main (frameworks.md, "cache-dit (main, f86744af, 2026-08)"):
//  "Per-model (docs/supported_matrix/NVIDIA_GPU.md): CP and TP: FLUX.1-dev/Fill/Kontext, FLUX.2-dev,
//  FLUX.2-klein, Qwen-Image family, Wan 2.1/2.2, LTX-2, Z-Image, LongCat-Image, Ovis-Image, Helios.
//  TP only: GLM-Image, HunyuanDiT, SD3.5-large, Mochi-1, Lumina-Image-2.0. CP only: DiT-XL-2.
//  Neither: HunyuanVideo-1.5, LongCat-Video, SANA-1600M, HiDream-I1, Allegro, OmniGen-2, AuraFlow."
//  FLUX.1-schnell and SD3.5-Medium (and SD3-Medium) share FLUX.1-dev's and SD3.5-Large's classes.
//  A model absent from the matrix (HunyuanVideo, LTX-Video, CogVideoX, PixArt) runs neither.
//  CP covers Ulysses and Ring and the anything modes ("Ulysses handles head counts that do not
//  divide (automatic); uneven sequences need `ulysses_anything=True`"); "Mesh (ring, ulysses, tp);
//  hybrids need >= 4 processes": ulysses 2 x tp 2 on 4 runs where both do. The mesh has no CFG,
//  PipeFusion or weight-sharding dimension: those are refused. Data parallelism: unstated.
const std::vector<Row> kCacheDitRows = {
    //                         u2    r2    u2xr2 u3any tp2   u2xtp2 cfg2 pf2   u2xfs2 dp2
    {"flux.1-dev", 0, 0,      {kRun, kRun, kRun, kRun, kRun, kRun, kInv, kRef, kRef, kSil}},
    {"flux.1-schnell", 0, 0,  {kRun, kRun, kRun, kRun, kRun, kRun, kInv, kRef, kRef, kSil}},
    {"flux.2-dev", 0, 0,      {kRun, kRun, kRun, kRun, kRun, kRun, kInv, kRef, kRef, kSil}},
    {"qwen-image", 1024, 1024, {kRun, kRun, kRun, kRun, kRun, kRun, kRef, kRef, kRef, kSil}},
    {"wan2.1-t2v-14b", 0, 0,  {kRun, kRun, kRun, kRun, kRun, kRun, kRef, kRef, kRef, kSil}},
    {"wan2.1-t2v-1.3b", 0, 0, {kRun, kRun, kRun, kRun, kRun, kRun, kRef, kRef, kRef, kSil}},
    {"wan2.2-ti2v-5b", 0, 0,  {kRun, kRun, kRun, kRun, kRun, kRun, kRef, kRef, kRef, kSil}},
    {"class:LTX2VideoTransformer3DModel", 0, 0, {kRun, kRun, kRun, kRun, kRun, kRun, kRef, kRef, kRef, kSil}},
    {"class:ZImageTransformer2DModel", 0, 0, {kRun, kRun, kRun, kRun, kRun, kInv, kInv, kRef, kRef, kSil}},
    // TP only
    {"sd3.5-large", 0, 0,     {kRef, kRef, kRef, kRef, kRun, kInv, kRef, kRef, kRef, kSil}},
    {"sd3.5-medium", 0, 0,    {kRef, kRef, kRef, kRef, kRun, kRef, kRef, kRef, kRef, kSil}},
    {"config:sd3-medium", 0, 0, {kRef, kRef, kRef, kRef, kRun, kRef, kRef, kRef, kRef, kSil}},
    {"config:hunyuandit-v1.2", 0, 0, {kRef, kRef, kRef, kRef, kRun, kRef, kRef, kRef, kRef, kSil}},
    {"config:mochi-1", 0, 0,  {kRef, kRef, kRef, kRef, kRun, kRef, kRef, kRef, kRef, kSil}},
    // neither
    {"config:sana-1600m-4k", 0, 0, {kRef, kRef, kRef, kInv, kRef, kInv, kRef, kRef, kRef, kSil}},
    {"class:HunyuanVideo15Transformer3DModel", 832, 480, {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil}},
    // absent from the matrix
    {"ltx-video-2b", 0, 0,    {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil}},
    {"hunyuanvideo", 0, 0,    {kRef, kRef, kRef, kRef, kRef, kRef, kInv, kRef, kRef, kSil}},
    {"cogvideox-5b", 768, 480, {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil}},
    {"pixart-sigma", 0, 0,    {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil}},
    {"config:cogvideox-2b", 768, 480, {kRef, kRef, kRef, kRef, kRef, kInv, kRef, kRef, kRef, kSil}},
};

// The verdict of `file` on `model`'s plan `c` on `gpus` GPUs with the text encoders and VAE placed
// as `where` ("" : runs).
std::string verdict(const std::string& file, const std::string& model, int gpus, const ParallelConfig& c,
                    const cpplan::PipelinePlacement& where, int width = 0, int height = 0) {
  const FrameworkProfile* fw = catalog().find_framework(file);
  REQUIRE(fw);
  auto q = cpplan::test::make_query(model_of(model), gpus, width, height);
  q.frameworks = catalog().frameworks_for_query({file}).value();
  const cpplan::Plan p = make_plan(q, c);
  INFO(file << " | " << model << " | " << cpplan::plan_label(c));
  REQUIRE(p.valid());
  return std::string(unsupported_reason(fw->framework, q, p, where));
}

}  // namespace

TEST_CASE("diffusers runs the plans frameworks.md gives it, model by model", "[planner][frameworks][table]") {
  check_coverage("diffusers", kDiffusersRows);
  check_table("diffusers", kDiffusersRows);
}

TEST_CASE("xDiT's runner and examples run the plans frameworks.md gives them, model by model",
          "[planner][frameworks][table][xdit]") {
  check_coverage("xdit", kXditRows);
  check_table("xdit", kXditRows);
}

TEST_CASE("xDiT's 2025 scripts run the plans frameworks.md gives them, model by model",
          "[planner][frameworks][table][xdit]") {
  check_coverage("xdit-2025", kXdit2025Rows);
  check_table("xdit-2025", kXdit2025Rows);
}

TEST_CASE("cache-dit runs the plans of its supported matrix, model by model", "[planner][frameworks][table]") {
  check_coverage("cache-dit", kCacheDitRows);
  check_table("cache-dit", kCacheDitRows);
}

// cache-dit: "Text-encoder parallel (TE-P) for T5, UMT5, Llama, Gemma 1-3, Mistral(-3), Qwen-3,
// Qwen-2.5-VL, GLM; VAE parallel for AutoencoderKL, AutoencoderKLQwenImage, AutoencoderKLWan,
// AutoencoderKLHunyuanVideo." The pipelines' encoders and VAEs (models.md, "VAEs and text encoders",
// and the pipelines' model_index.json): FLUX.1 T5-XXL + AutoencoderKL; FLUX.2-dev
// Mistral-Small-3.2 + AutoencoderKLFlux2; Qwen-Image Qwen2.5-VL + AutoencoderKLQwenImage; Wan umT5 +
// AutoencoderKLWan; SD3.5 T5-XXL + AutoencoderKL; LTX-2 Gemma-3 + AutoencoderKLLTX2Video; Mochi-1
// T5-XXL + AutoencoderKLMochi.
TEST_CASE("cache-dit shards the text encoders and decodes in parallel where its lists name them",
          "[planner][frameworks][table]") {
  using cpplan::TextEncoderPlacement;
  using cpplan::VaePlacement;
  const cpplan::PipelinePlacement sharded{TextEncoderPlacement::kSharded, VaePlacement::kSingle};
  const cpplan::PipelinePlacement parallel_vae{TextEncoderPlacement::kReplicated, VaePlacement::kParallel};
  struct Case {
    const char* model;
    ParallelConfig plan;
    bool te_p, vae_p;
  };
  const Case cases[] = {
      {"flux.1-dev", config(1, 2), true, true},
      {"flux.2-dev", config(1, 2), true, false},
      {"wan2.1-t2v-14b", config(1, 2), true, true},
      {"sd3.5-large", config(1, 1, 2), true, true},
      {"config:sd3-medium", config(1, 1, 2), true, true},
      {"class:LTX2VideoTransformer3DModel", config(1, 2), true, false},
      {"config:mochi-1", config(1, 1, 2), true, false},
  };
  for (const Case& c : cases) {
    INFO(c.model);
    const std::string te = verdict("cache-dit", c.model, 2, c.plan, sharded);
    const std::string vae = verdict("cache-dit", c.model, 2, c.plan, parallel_vae);
    CHECK(te.empty() == c.te_p);
    if (!c.te_p) CHECK(te == "cache-dit does not shard text encoders");
    CHECK(vae.empty() == c.vae_p);
    if (!c.vae_p) CHECK(vae == "cache-dit decodes on one GPU");
  }
  // Qwen-Image at 1024x1024 (see the tables' note).
  CHECK(verdict("cache-dit", "qwen-image", 2, config(1, 2), sharded, 1024, 1024).empty());
  CHECK(verdict("cache-dit", "qwen-image", 2, config(1, 2), parallel_vae, 1024, 1024).empty());
}

// xDiT: "`cogvideox_usp_example.py` refuses PipeFusion and parallel VAE (VAE tiling/slicing
// instead)"; the runner's "FLUX.1-dev | ..., parallel VAE" and "Wan2.1-T2V-14B, Wan2.2-TI2V-5B |
// ..., parallel VAE" decode in parallel, "stable-diffusion-3.5-large | ulysses, ring, pipefusion, CFG
// parallel, fully shard" does not.
TEST_CASE("xDiT decodes in parallel where its tables say so, for built-in and config models",
          "[planner][frameworks][table][xdit]") {
  const cpplan::PipelinePlacement parallel_vae{cpplan::TextEncoderPlacement::kReplicated,
                                               cpplan::VaePlacement::kParallel};
  CHECK(verdict("xdit", "cogvideox-5b", 2, config(1, 2), parallel_vae, 768, 480) == "xDiT decodes this model on one GPU");
  CHECK(verdict("xdit", "config:cogvideox-2b", 2, config(1, 2), parallel_vae, 768, 480) ==
        "xDiT decodes this model on one GPU");
  CHECK(verdict("xdit", "config:sd3-medium", 2, config(1, 2), parallel_vae) == "xDiT decodes this model on one GPU");
  CHECK(verdict("xdit", "flux.1-dev", 2, config(1, 2), parallel_vae).empty());
  CHECK(verdict("xdit", "config:wan2.2-ti2v-5b", 2, config(1, 2), parallel_vae).empty());
}

// xDiT's runner wraps with FSDP every component its model's fsdp_strategy names whenever
// fully_shard_degree > 1 (base_model.py, _shard_model_with_fsdp): flux.py names FLUX.1-dev's
// "text_encoder_2" (T5) and FLUX.2-dev's "text_encoder" with offload_policy "cpu"; stable_diffusion.py
// SD3.5's "text_encoder_3"; wan.py's COMMON_FSDP_STRATEGY Wan's "text_encoder" with "cpu"; the
// example scripts (PixArt, HunyuanDiT) have no fully shard at all.
TEST_CASE("xDiT shards the largest text encoder with fully sharded weights, as each runner model's fsdp_strategy says",
          "[planner][frameworks][table][xdit]") {
  using cpplan::TextEncoderPlacement;
  using cpplan::VaePlacement;
  const cpplan::PipelinePlacement replicated{TextEncoderPlacement::kReplicated, VaePlacement::kSingle};
  const cpplan::PipelinePlacement on_gpu{TextEncoderPlacement::kFullySharded, VaePlacement::kSingle};
  const cpplan::PipelinePlacement on_host{TextEncoderPlacement::kFullyShardedHost, VaePlacement::kSingle};
  ParallelConfig fs2 = config(1, 2);
  fs2.fs_degree = 2;
  const std::string with_fs = catalog().find_framework("xdit")->with_fully_shard_reason;
  REQUIRE_THAT(with_fs, Catch::Contains("xDiT"));
  struct Case {
    const char* model;
    const cpplan::PipelinePlacement* runs;
  };
  for (const Case& c : {Case{"flux.1-dev", &on_gpu}, Case{"sd3.5-large", &on_gpu}, Case{"flux.2-dev", &on_host},
                        Case{"wan2.1-t2v-14b", &on_host}, Case{"config:wan2.2-ti2v-5b", &on_host}}) {
    INFO(c.model);
    CHECK(verdict("xdit", c.model, 2, fs2, *c.runs).empty());
    CHECK(verdict("xdit", c.model, 2, fs2, replicated) == with_fs);
    CHECK(verdict("xdit", c.model, 2, fs2, c.runs == &on_gpu ? on_host : on_gpu) != "");
    // Without fully sharded weights the encoders stay whole.
    CHECK(verdict("xdit", c.model, 2, config(1, 2), replicated).empty());
    CHECK(verdict("xdit", c.model, 2, config(1, 2), *c.runs) == with_fs);
  }
  // Unasked, xDiT runs the plan with the placement it uses: the sharded encoder.
  auto q = cpplan::test::make_query(model_of("flux.1-dev"), 2);
  q.frameworks = catalog().frameworks_for_query({"xdit"}).value();
  CHECK(unsupported_reason(cpplan::Framework::kXdit, q, make_plan(q, fs2)).empty());
  // The launch line says what the flag does to the encoder (FLUX.1-dev's T5-XXL, not its CLIP-L).
  CHECK_THAT(cpplan::planner::xdit_command(q, make_plan(q, fs2), on_gpu),
             Catch::StartsWith("# --fully_shard_degree 2 shards t5-xxl with the transformer (the runner's fsdp_strategy): "
                               "1/2 of its weights per GPU, each layer gathered to run\nxdit --model FLUX.1-dev "));
  // diffusers shards no text encoder with fully sharded weights (it has none).
  CHECK(verdict("diffusers", "flux.1-dev", 2, config(1, 2), on_gpu) ==
        "diffusers shards no text encoder with the transformer's weights");
}

TEST_CASE("A framework file's with_fully_shard is checked field by field", "[planner][frameworks][xdit]") {
  const auto error = [](const std::string& from, const std::string& to) { return framework_file_error("xdit", from, to); };
  // FLUX.1-dev's entry is the first with one.
  const std::string flux = "with_fully_shard = \"fully_sharded_text_encoder\"";
  CHECK_THAT(error(flux, "with_fully_shard = \"tp\""),
             Catch::Contains("with_fully_shard = \"tp\": must be fully_sharded_text_encoder or fully_sharded_host_text_encoder"));
  CHECK_THAT(error(flux, "with_fully_shard = \"fully_sharded_host_text_encoder\""),
             Catch::Contains("with_fully_shard = \"fully_sharded_host_text_encoder\": features must list it and fully_shard"));
  CHECK_THAT(error("with_fully_shard_reason = ", "# "),
             Catch::Contains("with_fully_shard = \"fully_sharded_text_encoder\": needs the framework's with_fully_shard_reason"));
}

// The launch line of a model xDiT serves by class: the runner's model name, or the example script
// of its class with the checkpoint (the user's folder when the config names no hub id).
TEST_CASE("xDiT launches a model from a config by its class's runner model or example script",
          "[planner][frameworks][xdit]") {
  const auto command = [](const std::string& model, int width = 0, int height = 0) {
    auto q = cpplan::test::make_query(model_of(model), 2, width, height);
    return cpplan::planner::xdit_command(q, make_plan(q, config(1, 2)));
  };
  CHECK_THAT(command("config:sd3-medium"), Catch::StartsWith("xdit --model stable-diffusion-3.5-large --height 1024"));
  CHECK_THAT(command("class:HunyuanVideo15Transformer3DModel"), Catch::StartsWith("xdit --model HunyuanVideo-1.5 "));
  CHECK_THAT(command("config:wan2.2-ti2v-5b"), Catch::StartsWith("xdit --model Wan2.2-TI2V-5B "));
  CHECK_THAT(command("config:cogvideox-2b", 768, 480),
             Catch::StartsWith("torchrun --nproc_per_node=2 examples/cogvideox_usp_example.py --model "
                               "<path to cogvideox-2b> --height 480 --width 768 --num_frames 49"));
  CHECK_THAT(command("config:consisid", 768, 480),
             Catch::StartsWith("torchrun --nproc_per_node=2 examples/consisid_usp_example.py --model <path to consisid>"));
  // PixArt-alpha's config names Transformer2DModel and runs in PixArt-Sigma's pipeline: its own script.
  CHECK_THAT(command("config:pixart-alpha"),
             Catch::StartsWith("torchrun --nproc_per_node=2 examples/pixartalpha_example.py --model "));
  CHECK_THAT(command("config:sana-1600m-4k"), Catch::StartsWith("torchrun --nproc_per_node=2 examples/sana_example.py "));
}
