// The ids of the validity rules (core/violation.h): each round-trips through its kebab-case
// string, and invalid plans taken from shared/spec/parallelism.md break the rule derived by hand.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "core/sequence.h"
#include "planner/validate.h"
#include "tests/support/fixtures.h"
#include "tests/support/rule_ids.h"

using cpplan::test::config;
using cpplan::test::make_query;
using Id = cpplan::RuleId;

TEST_CASE("Every rule id round-trips through its kebab-case string", "[core][violation][rule_id]") {
  std::set<std::string> seen;
  for (int i = 0; i < cpplan::kRuleIdCount; ++i) {
    const auto id = static_cast<Id>(i);
    const std::string text(cpplan::to_string(id));
    INFO(i << ": " << text);
    CHECK(cpplan::parse_rule_id(text) == id);
    CHECK(seen.insert(text).second);  // unique
    CHECK(text.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos);
    CHECK(text.front() != '-');
    CHECK(text.back() != '-');
  }
  CHECK(cpplan::to_string(Id::kUlyssesHeadsDivisible) == "ulysses-heads-divisible");
  CHECK_FALSE(cpplan::parse_rule_id("").has_value());
  CHECK_FALSE(cpplan::parse_rule_id("Ulysses-Heads-Divisible").has_value());
  CHECK_FALSE(cpplan::parse_rule_id("ulysses_heads_divisible").has_value());
}

namespace {

// An invalid plan from the spec and the one rule it breaks.
struct SpecCase {
  const char* what;  // the spec's sentence it comes from
  cpplan::Query query;
  cpplan::ParallelConfig config;
  Id expected;
};

cpplan::Query with_backend(cpplan::Query q, cpplan::AttentionBackend b) {
  q.backend = b;
  return q;
}

cpplan::Query with_text(cpplan::Query q, int text_tokens) {
  q.sequence = *cpplan::compute_sequence(*q.model, q.resolution, q.frames, text_tokens);
  return q;
}

cpplan::ParallelConfig with_fs(cpplan::ParallelConfig c, int fs) {
  c.fs_degree = fs;
  return c;
}

// FLUX.1-dev with 30 heads: the spec's Ulysses Anything example.
const cpplan::ModelProfile& thirty_heads() {
  static const cpplan::ModelProfile m = [] {
    cpplan::ModelProfile p = *cpplan::test::catalog().find_model("flux.1-dev");
    p.heads = 30;
    return p;
  }();
  return m;
}

std::vector<SpecCase> spec_cases() {
  using cpplan::AttentionBackend;
  return {
      {"neither [r nor u] may be < 1", make_query("flux.1-dev", 4), config(0, 4), Id::kDegreeAtLeastOne},
      {"the product r*u*t*c*d must equal the GPU count", make_query("flux.1-dev", 4), config(2, 1),
       Id::kGpuCountProduct},
      // 1008x1008: S_img = 63 x 63 = 3969, odd.
      {"Ring, Ulysses and Unified fail on divisibility", make_query("flux.1-dev", 4, 1008, 1008), config(2, 2),
       Id::kEvenSplitImageTokens},
      // 1536x1024: S_img = 96 x 64 = 6144 = 3 x 2048, S_txt = 512 is not a multiple of 3.
      {"S_img AND S_txt must each be divisible (FLUX.1-dev: S_txt = 512)", make_query("flux.1-dev", 3, 1536, 1024),
       config(3, 1), Id::kEvenSplitTextTokens},
      // 1280x1024 with 510 text tokens: 5120 and 510 divide by 5, 24 heads do not.
      {"Ulysses: heads divisible by u", with_text(make_query("flux.1-dev", 5, 1280, 1024), 510), config(1, 5),
       Id::kUlyssesHeadsDivisible},
      {"ulysses_anything and ring_anything are mutually exclusive", make_query("flux.1-dev", 4),
       config(1, 4, 1, 1, 1, true, true), Id::kAnythingModesExclusive},
      {"neither combines with Unified", make_query("flux.1-dev", 4), config(2, 2, 1, 1, 1, false, true),
       Id::kAnythingModeNotUnified},
      {"30 heads on 16 is not [fine]", make_query(thirty_heads(), 16), config(1, 16, 1, 1, 1, true),
       Id::kUlyssesAnythingHeadPadding},
      // Qwen-Image passes a text mask.
      {"Ring Anything: no attention mask", make_query("qwen-image", 2), config(2, 1, 1, 1, 1, false, true),
       Id::kRingAnythingNoMask},
      // SD3.5-large: 38 heads; ffn_hidden = 9728 = 4 x 2432 divides.
      {"t must divide the number of attention heads", make_query("sd3.5-large", 4), config(1, 1, 4),
       Id::kTpHeadsDivisible},
      {"Guidance-distilled models (FLUX.1-dev) have nothing to split", make_query("flux.1-dev", 2),
       config(1, 1, 1, 2), Id::kCfgNeedsGuidance},
      {"cfg_degree (c): 1 or 2", make_query("wan2.1-t2v-14b", 3), config(1, 1, 1, 3), Id::kCfgDegreeAtMostTwo},
      {"fully sharded weights (fs_degree) and TP are exclusive", make_query("flux.1-dev", 4),
       with_fs(config(1, 2, 2), 2), Id::kFullyShardExcludesTp},
  };
}

}  // namespace

TEST_CASE("Invalid plans from the spec break the rule derived by hand, and only it", "[planner][validate][rule_id]") {
  for (const SpecCase& c : spec_cases()) {
    INFO(c.what);
    CHECK(cpplan::test::rule_ids(cpplan::planner::validate(c.query, c.config)) == std::vector<Id>{c.expected});
  }
  // The spec's valid counterpart: 30 heads on 8 ranks pad 2 to 32, and 2 < 32 / 8.
  CHECK(cpplan::planner::validate(make_query(thirty_heads(), 8), config(1, 8, 1, 1, 1, true)).empty());
}
