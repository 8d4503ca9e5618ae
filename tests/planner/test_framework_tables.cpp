// Which plans each framework file runs, model by model, against shared/reference/frameworks.md.
// The expected verdicts are written by hand from frameworks.md (the line each comes from is quoted
// above its rows), not from profiles/frameworks/*.toml: a mismatch means the file and the reference
// disagree. Where frameworks.md says nothing, the cell is kUnstated and is not checked (what the
// file says there is its own assumption).
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "planner/frameworks.h"
#include "planner/validate.h"
#include "tests/support/fixtures.h"

using cpplan::FrameworkProfile;
using cpplan::ParallelConfig;
using cpplan::planner::make_plan;
using cpplan::planner::unsupported_reason;
using cpplan::test::catalog;
using cpplan::test::config;

namespace {

enum class Verdict {
  kRuns,      // the framework runs the plan
  kRefused,   // it cannot
  kUnstated,  // frameworks.md says nothing: not checked
  kInvalid,   // the plan is invalid for the model (e.g. CFG on a guidance-distilled model)
};
// Table shorthand.
constexpr Verdict kRun = Verdict::kRuns, kRef = Verdict::kRefused, kSil = Verdict::kUnstated,
                  kInv = Verdict::kInvalid;

// One plan kind: a column of the tables.
struct PlanKind {
  const char* name;
  int gpus;
  int batch;
  ParallelConfig config;
};

constexpr int kPlanKinds = 10;
using Cells = std::array<Verdict, kPlanKinds>;

std::array<PlanKind, kPlanKinds> plan_kinds() {
  ParallelConfig pipefusion;
  pipefusion.pipefusion = {2, 2, 1};
  ParallelConfig fully_shard = config(1, 2);
  fully_shard.fs_degree = 2;
  return {{
      {"ulysses 2", 2, 1, config(1, 2)},
      {"ring 2", 2, 1, config(2, 1)},
      {"ulysses 2 x ring 2", 4, 1, config(2, 2)},
      {"ulysses 3 anything (uneven split)", 3, 1, config(1, 3, 1, 1, 1, true)},
      {"tp 2", 2, 1, config(1, 1, 2)},
      {"ulysses 2 x tp 2", 4, 1, config(1, 2, 2)},
      {"cfg 2", 2, 1, config(1, 1, 1, 2)},
      {"pipefusion 2 (2 patches)", 2, 1, pipefusion},
      {"ulysses 2 x fs 2", 2, 1, fully_shard},
      {"dp 2, batch 2", 2, 2, config(1, 1, 1, 1, 2)},
  }};
}

struct Row {
  const char* model;
  int width, height;  // 0: the model's default
  Cells cells;        // in plan_kinds() order
};

// The lines of the file a refusal may quote: a missing feature, a conflict, an unlisted model, a
// device family.
bool is_line_of(const FrameworkProfile& fw, std::string_view reason) {
  std::vector<std::string_view> lines(std::begin(fw.missing), std::end(fw.missing));
  for (const auto& c : fw.conflicts) lines.push_back(c.reason);
  for (const auto& f : fw.families) lines.push_back(f.reason);
  lines.push_back(fw.unlisted);
  lines.push_back(fw.family_reason);
  return std::find(lines.begin(), lines.end(), reason) != lines.end();
}

// Checks every stated cell of `rows` against the verdict of framework file `file` (selected as
// --framework-version selects it), naming the cell that differs.
void check_table(const std::string& file, const std::vector<Row>& rows) {
  const FrameworkProfile* fw = catalog().find_framework(file);
  REQUIRE(fw);
  const auto frameworks = catalog().frameworks_for_query({file});
  REQUIRE(frameworks);
  const auto kinds = plan_kinds();
  for (const Row& row : rows) {
    for (int i = 0; i < kPlanKinds; ++i) {
      const PlanKind& kind = kinds[i];
      const Verdict expected = row.cells[i];
      auto q = cpplan::test::make_query(row.model, kind.gpus, row.width, row.height);
      q.batch = kind.batch;
      q.frameworks = *frameworks;
      const cpplan::Plan p = make_plan(q, kind.config);
      const std::string_view reason = unsupported_reason(fw->framework, q, p);
      INFO(file << " | " << row.model << " | " << kind.name << " (" << cpplan::plan_label(kind.config) << ")");
      INFO("plan: " << (p.reasons().empty() ? std::string("valid") : p.reasons().front()));
      INFO("verdict: " << (reason.empty() ? std::string_view("runs") : reason));
      if (expected == Verdict::kInvalid) {
        CHECK_FALSE(p.valid());
        continue;
      }
      CHECK(p.valid());  // else the table picked a plan the model cannot have
      if (expected == Verdict::kUnstated || !p.valid()) continue;
      CHECK(reason.empty() == (expected == Verdict::kRuns));
      if (expected == Verdict::kRefused && !reason.empty()) {
        CHECK(is_line_of(*fw, reason));
        CHECK_THAT(std::string(reason), Catch::Contains(fw->title));
      }
    }
  }
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
// 1328x1328 has 83 x 83 image tokens, odd) and CogVideoX-5B at 768x480 (at 720x480, 17550 tokens do
// not split over 4 ranks).
// Columns:      ulysses 2 | ring 2 | u2 x r2 | u3 anything | tp 2 | u2 x tp 2 | cfg 2 | pipefusion 2 | u2 x fs 2 | dp 2

// diffusers (frameworks.md, "diffusers (main, commit 58eb52c, 2026)"):
//  CP   "a transformer runs CP only if it declares a `_cp_plan`. Classes with one:
//       `FluxTransformer2DModel`, `Flux2Transformer2DModel`, `QwenImageTransformer2DModel`,
//       `WanTransformer3DModel`, `LTXVideoTransformer3DModel`, ... Not HunyuanVideo, SD3/SD3.5,
//       CogVideoX, PixArt." Ulysses, Ring, Unified and the anything modes are all
//       ContextParallelConfig's (its `ulysses_anything` argument: spec/parallelism.md, API surface).
//  TP   "Tensor parallelism: classes with a `_tp_plan`: `FluxTransformer2DModel`,
//       `Flux2Transformer2DModel`, `QwenImageTransformer2DModel`"
//  UxTP "`ParallelConfig` rejects a context and a tensor parallel config together on main"
//  CFG, PipeFusion "Entry: `pipe.transformer.enable_parallelism(config=ContextParallelConfig(...))`
//       (or `TensorParallelConfig`) ...; no CFG parallelism." (no other parallel config)
//  Unstated: fully sharded weights (the plan is checked only where its Ulysses is refused) and data
//  parallelism (one process per image: the file's `common`).
// A plan on a model without a _cp_plan is refused by its CP part (u2 x fs 2 too).
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
    // not listed: "Not HunyuanVideo, SD3/SD3.5, CogVideoX, PixArt."
    {"sd3.5-large", 0, 0,     {kRef, kRef, kRef, kRef, kRef, kInv, kRef, kRef, kRef, kSil}},
    {"sd3.5-medium", 0, 0,    {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil}},
    {"hunyuanvideo", 0, 0,    {kRef, kRef, kRef, kRef, kRef, kRef, kInv, kRef, kRef, kSil}},
    {"cogvideox-5b", 768, 480, {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil}},
    {"pixart-sigma", 0, 0,    {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kSil}},
};

// xDiT main (frameworks.md, "xDiT (main, commit 175e0bf, 2026)"):
//  runner "What the runner offers per model (ModelCapabilities; data parallel is on for all)":
//       "FLUX.1-dev | ulysses, ring, pipefusion, fully shard, parallel VAE",
//       "FLUX.2-dev | ulysses, ring, pipefusion, fully shard, parallel VAE",
//       "stable-diffusion-3.5-large | ulysses, ring, pipefusion, CFG parallel, fully shard",
//       "HunyuanVideo, HunyuanVideo-1.5 | ulysses, ring",
//       "Wan2.1-T2V-14B, Wan2.2-TI2V-5B | ulysses, ring, fully shard, parallel VAE (no CFG parallel)"
//  u x r "xdit --model NAME ... --ulysses_degree U --ring_degree R ..." (both degrees in one line)
//  u3 anything: that line has no flag for an uneven split (diffusers' ulysses_anything).
//  TP   "No runner model offers tensor parallelism"
//  examples "Remaining examples: cogvideox(_usp), ..., pixartsigma, ...": the _usp script runs USP
//       (Ulysses and Ring); what else the example scripts offer frameworks.md does not say.
//  unlisted "The per-model example scripts for FLUX.1, ..., SD3, Wan, ... were removed in February
//       2026" and the runner has no FLUX.1-schnell, SD3.5-Medium, Wan2.1-1.3B; its LTX-2 is not
//       LTX-Video (LTX2VideoTransformer3DModel vs LTXVideoTransformer3DModel) and its
//       Qwen-Image-2512 is not the Qwen/Qwen-Image checkpoint: xDiT runs nothing of these.
const std::vector<Row> kXditRows = {
    //                         u2    r2    u2xr2 u3any tp2   u2xtp2 cfg2 pf2   u2xfs2 dp2
    {"flux.1-dev", 0, 0,      {kRun, kRun, kRun, kRef, kRef, kRef, kInv, kRun, kRun, kRun}},
    {"flux.2-dev", 0, 0,      {kRun, kRun, kRun, kRef, kRef, kRef, kInv, kRun, kRun, kRun}},
    {"sd3.5-large", 0, 0,     {kRun, kRun, kRun, kRef, kRef, kInv, kRun, kRun, kRun, kRun}},
    {"hunyuanvideo", 0, 0,    {kRun, kRun, kRun, kRef, kRef, kRef, kInv, kRef, kRef, kRun}},
    {"wan2.1-t2v-14b", 0, 0,  {kRun, kRun, kRun, kRef, kRef, kRef, kRef, kRef, kRun, kRun}},
    {"wan2.2-ti2v-5b", 0, 0,  {kRun, kRun, kRun, kRef, kRef, kRef, kRef, kRef, kRun, kRun}},
    {"cogvideox-5b", 768, 480, {kRun, kRun, kRun, kSil, kSil, kSil, kSil, kSil, kSil, kSil}},
    {"pixart-sigma", 0, 0,    {kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil}},
    // not listed
    {"flux.1-schnell", 0, 0,  {kRef, kRef, kRef, kRef, kRef, kRef, kInv, kRef, kRef, kRef}},
    {"sd3.5-medium", 0, 0,    {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef}},
    {"wan2.1-t2v-1.3b", 0, 0, {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef}},
    {"ltx-video-2b", 0, 0,    {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef}},
    {"qwen-image", 1024, 1024, {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef}},
};

// xDiT before February 2026 (--framework-version xdit-2025): frameworks.md gives only which
// scripts there were: "The per-model example scripts for FLUX.1, FLUX.1-Kontext, SD3, Wan,
// HunyuanVideo (USP), HunyuanVideo-1.5 and Z-Image were removed in February 2026 (pull request
// #641). Remaining examples: cogvideox(_usp), consisid(_usp), flux2, ..., pixartsigma, ...".
//  HunyuanVideo (USP) and cogvideox_usp run Ulysses and Ring; no other feature of a 2025 script is
//  stated. Qwen-Image and LTX-Video had no script in either list: refused.
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
    // not listed
    {"qwen-image", 1024, 1024, {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef}},
    {"ltx-video-2b", 0, 0,    {kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef, kRef}},
};

// cache-dit: frameworks.md has no section on it, so every cell is the file's own assumption
// (spec/parallelism.md only says "cache-dit and xDiT run Ulysses x TP hybrids"). The rows check
// that each plan is valid for the model, nothing more.
const std::vector<Row> kCacheDitRows = {
    //                         u2    r2    u2xr2 u3any tp2   u2xtp2 cfg2 pf2   u2xfs2 dp2
    {"flux.1-dev", 0, 0,      {kSil, kSil, kSil, kSil, kSil, kSil, kInv, kSil, kSil, kSil}},
    {"flux.1-schnell", 0, 0,  {kSil, kSil, kSil, kSil, kSil, kSil, kInv, kSil, kSil, kSil}},
    {"flux.2-dev", 0, 0,      {kSil, kSil, kSil, kSil, kSil, kSil, kInv, kSil, kSil, kSil}},
    {"qwen-image", 1024, 1024, {kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil}},
    {"wan2.1-t2v-14b", 0, 0,  {kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil}},
    {"wan2.1-t2v-1.3b", 0, 0, {kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil}},
    {"wan2.2-ti2v-5b", 0, 0,  {kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil}},
    {"ltx-video-2b", 0, 0,    {kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil, kSil}},
    // not listed
    {"sd3.5-large", 0, 0,     {kSil, kSil, kSil, kSil, kSil, kInv, kSil, kSil, kSil, kSil}},
};

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

TEST_CASE("cache-dit's table covers its models (frameworks.md states none of its verdicts)",
          "[planner][frameworks][table]") {
  check_coverage("cache-dit", kCacheDitRows);
  check_table("cache-dit", kCacheDitRows);
}
