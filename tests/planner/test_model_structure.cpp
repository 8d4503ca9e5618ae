// The plans the newer models' structure refuses (planner/validate.cpp, model_structure;
// docs/usage.md, "Models with other math"), each with its rule; and what it leaves valid.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <filesystem>

#include "core/diffusers_config.h"
#include "core/sequence.h"
#include "planner/frameworks.h"
#include "planner/validate.h"
#include "tests/support/fixtures.h"
#include "tests/support/rule_ids.h"

using cpplan::BlockGroup;
using cpplan::BlockKind;
using cpplan::ModelProfile;
using cpplan::test::config;

namespace {

ModelProfile from(const std::string& base) { return *cpplan::test::catalog().find_model(base); }

std::vector<std::string> rules_of(const cpplan::Query& q, const cpplan::ParallelConfig& c) {
  std::vector<std::string> out;
  for (const auto& v : cpplan::planner::validate(q, c)) out.push_back(v.message());
  return out;
}

// Whether `c` breaks the rule `id`.
bool breaks(const cpplan::Query& q, const cpplan::ParallelConfig& c, cpplan::RuleId id) {
  const auto ids = cpplan::test::rule_ids(cpplan::planner::validate(q, c));
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

cpplan::ParallelConfig pipefusion(int degree) {
  auto c = config(1, 1);
  c.pipefusion.degree = degree;
  return c;
}

// A published checkpoint's transformer (tests/data/diffusers/NAME/config.json) or pipeline folder
// (tests/data/diffusers/pipelines/NAME).
ModelProfile checkpoint(const std::string& path) {
  const auto dir = std::filesystem::path(CPPLAN_TEST_PROFILES).parent_path() / "tests" / "data" / "diffusers";
  auto m = cpplan::diffusers::import_profile((dir / path).string(), cpplan::test::catalog());
  INFO(path << ": " << (m ? std::string() : m.error().message));
  REQUIRE(m.ok());
  return std::move(m).value();
}

bool xdit_runs(const cpplan::Query& q, const cpplan::ParallelConfig& c) {
  const cpplan::Plan p = cpplan::planner::make_plan(q, c);
  INFO(cpplan::planner::unsupported_reason(cpplan::Framework::kXdit, q, p));
  return p.valid() && cpplan::planner::frameworks_for(q, p).has(cpplan::Framework::kXdit);
}

cpplan::ParallelConfig pipefusion_of(int degree, int patches) {
  auto c = pipefusion(degree);
  c.pipefusion.patches = patches;
  return c;
}

}  // namespace

// Plans a framework's source runs are valid, and that framework runs them. xDiT's README, "Supported
// DiTs" (shared/reference/frameworks.md): "| SANA | yes | yes | yes | no | no (sana example) |" (CFG,
// USP, PipeFusion), "| HunyuanDiT-v1.2 | yes | yes | yes | no | no (hunyuandit example) |", "| Latte |
// no | yes | no | no | no (latte example) |"; the examples pass the parser's degrees through,
// sana_example.py and hunyuandit_example.py: f"pp{engine_args.pipefusion_parallel_degree}_patch
// {engine_args.num_pipeline_patch}", latte_example.py: f"ulysses{engine_args.ulysses_degree}_ring
// {engine_args.ring_degree}_".

TEST_CASE("linear attention runs Ulysses, Ring and PipeFusion, not the Anything modes (xDiT runs SANA so)",
          "[planner][rules][model_math]") {
  const ModelProfile m = checkpoint("pipelines/sana-1600m-1024px");
  REQUIRE(m.attention == cpplan::AttentionKind::kLinear);
  // SANA-1600M's 70 heads: Ulysses 2, not 4 (heads must divide).
  CHECK(rules_of(cpplan::test::make_query(m, 2, 1024, 1024), config(1, 2)).empty());
  const auto q = cpplan::test::make_query(m, 4, 1024, 1024);
  CHECK(rules_of(q, config(4, 1)).empty());
  CHECK(rules_of(q, config(2, 2)).empty());
  CHECK(rules_of(q, pipefusion_of(4, 4)).empty());
  CHECK(xdit_runs(q, pipefusion_of(4, 4)));
  CHECK(xdit_runs(q, config(4, 1)));
  CHECK(breaks(q, config(1, 4, 1, 1, 1, true), cpplan::RuleId::kStructureNeedsEvenSplit));
  CHECK(breaks(q, config(4, 1, 1, 1, 1, false, true), cpplan::RuleId::kStructureNeedsEvenSplit));
}

TEST_CASE("the conv-GLU FFN needs a latent row on every CP rank", "[planner][rules][model_math]") {
  ModelProfile m = from("pixart-sigma");
  m.ffn_kind = cpplan::FfnKind::kConvGlu;
  // 128 x 128 px: 8 x 8 = 64 latent tokens. 8 CP ranks hold 8 tokens each (one row): valid;
  // 16 hold 4, less than a row of 8.
  CHECK(rules_of(cpplan::test::make_query(m, 8, 128, 128), config(2, 4)).empty());
  CHECK(breaks(cpplan::test::make_query(m, 16, 128, 128), config(4, 4), cpplan::RuleId::kConvGluLatentRow));
}

// Latte splits over spatial tokens: each rank holds every frame of its rows, so Ring runs the
// spatial blocks within each frame and the temporal blocks attend locally.
TEST_CASE("temporal blocks run Ulysses and Ring, not PipeFusion (xDiT runs Latte with Ring)",
          "[planner][rules][model_math]") {
  const ModelProfile m = checkpoint("latte-1/config.json");
  const auto q = cpplan::test::make_query(m, 4, 512, 512, 16);
  CHECK(rules_of(q, config(1, 4)).empty());
  CHECK(rules_of(q, config(4, 1)).empty());
  CHECK(rules_of(q, config(2, 2)).empty());
  CHECK(xdit_runs(q, config(4, 1)));
  CHECK(xdit_runs(q, config(2, 2)));
  CHECK(breaks(q, pipefusion_of(4, 4), cpplan::RuleId::kTemporalExcludesPipeFusion));
}

TEST_CASE("long skips run every plan, PipeFusion too (xDiT runs HunyuanDiT so)", "[planner][rules][model_math]") {
  const ModelProfile m = checkpoint("hunyuandit-v1.2/config.json");
  const auto q = cpplan::test::make_query(m, 4, 1024, 1024);
  CHECK(rules_of(q, config(2, 2)).empty());
  CHECK(rules_of(q, config(1, 1, 4)).empty());
  CHECK(rules_of(q, pipefusion_of(4, 4)).empty());
  CHECK(xdit_runs(q, pipefusion_of(4, 4)));
  CHECK(xdit_runs(q, config(2, 2)));
}
