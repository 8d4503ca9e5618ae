// The plans the newer models' structure refuses (planner/validate.cpp, model_structure;
// docs/usage.md, "Models with other math"), each with its rule; and what it leaves valid.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "core/sequence.h"
#include "planner/validate.h"
#include "tests/support/fixtures.h"

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

bool any_contains(const std::vector<std::string>& messages, const std::string& text) {
  return std::any_of(messages.begin(), messages.end(),
                     [&](const std::string& m) { return m.find(text) != std::string::npos; });
}

cpplan::ParallelConfig pipefusion(int degree) {
  auto c = config(1, 1);
  c.pipefusion.degree = degree;
  return c;
}

}  // namespace

TEST_CASE("linear attention runs Ulysses and Ring, not the Anything modes nor PipeFusion", "[planner][rules][model_math]") {
  ModelProfile m = from("pixart-sigma");
  m.attention = cpplan::AttentionKind::kLinear;
  const auto q = cpplan::test::make_query(m, 4, 1024, 1024);
  CHECK(rules_of(q, config(1, 4)).empty());
  CHECK(rules_of(q, config(4, 1)).empty());
  CHECK(rules_of(q, config(2, 2)).empty());
  CHECK(any_contains(rules_of(q, config(1, 4, 1, 1, 1, true)),
                     "ulysses_anything = true: linear attention runs with Ulysses and Ring only"));
  CHECK(any_contains(rules_of(q, config(4, 1, 1, 1, 1, false, true)), "ring_anything = true"));
  CHECK(any_contains(rules_of(q, pipefusion(4)),
                     "pipefusion_degree = 4: must be 1: PipeFusion's stale K/V patches assume softmax attention"));
}

TEST_CASE("the conv-GLU FFN needs a latent row on every CP rank", "[planner][rules][model_math]") {
  ModelProfile m = from("pixart-sigma");
  m.ffn_kind = cpplan::FfnKind::kConvGlu;
  // 128 x 128 px: 8 x 8 = 64 latent tokens. 8 CP ranks hold 8 tokens each (one row): valid;
  // 16 hold 4, less than a row of 8.
  CHECK(rules_of(cpplan::test::make_query(m, 8, 128, 128), config(2, 4)).empty());
  CHECK(any_contains(rules_of(cpplan::test::make_query(m, 16, 128, 128), config(4, 4)),
                     "ring_degree x ulysses_degree = 16: leaves a rank fewer than one latent row (8 tokens)"));
}

TEST_CASE("temporal blocks run Ulysses only", "[planner][rules][model_math]") {
  ModelProfile m = from("wan2.1-t2v-1.3b");
  m.blocks = {BlockGroup{BlockKind::kCross, 15}, BlockGroup{BlockKind::kCross, 15, false, false, true}};
  const auto q = cpplan::test::make_query(m, 4, 832, 480, 81);
  CHECK(rules_of(q, config(1, 4)).empty());
  CHECK(any_contains(rules_of(q, config(2, 2)), "ring_degree = 2: must be 1: temporal blocks attend across frames"));
  CHECK(any_contains(rules_of(q, pipefusion(4)), "PipeFusion's row patches cut the temporal blocks' frames"));
}

TEST_CASE("long skips refuse PipeFusion only", "[planner][rules][model_math]") {
  ModelProfile m = from("pixart-sigma");
  m.blocks = {BlockGroup{BlockKind::kCross, 15}, BlockGroup{BlockKind::kCross, 13, false, false, false, true}};
  const auto q = cpplan::test::make_query(m, 4, 1024, 1024);
  CHECK(rules_of(q, config(2, 2)).empty());
  CHECK(rules_of(q, config(1, 1, 4)).empty());
  CHECK(any_contains(rules_of(q, pipefusion(4)), "long skip connections cross PipeFusion's stages"));
}
