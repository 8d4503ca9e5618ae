// The planner's context-parallel registry (planner/cp_rules_registry.cpp) and the facts each
// variant's CpRules states beside its rules (CpRulesTraits), derived by hand from
// shared/spec/parallelism.md.
#include <catch2/catch.hpp>

#include "planner/cp_rules.h"

using cpplan::CpVariant;
using cpplan::planner::all_cp_rules;
using cpplan::planner::cp_rules;

TEST_CASE("Every CP variant has its own planner rules, at its index", "[planner][cp_registry]") {
  REQUIRE(all_cp_rules().size() == static_cast<std::size_t>(cpplan::kCpVariantCount));
  for (int i = 0; i < cpplan::kCpVariantCount; ++i) {
    const auto v = static_cast<CpVariant>(i);
    CHECK(cp_rules(v).variant() == v);
    CHECK(all_cp_rules()[i] == &cp_rules(v));
  }
}

TEST_CASE("Only the anything modes are anything modes, and they do not join PipeFusion",
          "[planner][cp_registry]") {
  for (const auto* r : all_cp_rules()) {
    const bool anything = r->variant() == CpVariant::kUlyssesAnything || r->variant() == CpVariant::kRingAnything;
    CHECK(r->traits().anything_mode == anything);
    CHECK(r->traits().joins_pipefusion == !anything);
  }
}

TEST_CASE("An anything mode's even form is the variant it equals over an even split, the others are their own",
          "[planner][cp_registry]") {
  CHECK(cp_rules(CpVariant::kUlyssesAnything).traits().even_form == CpVariant::kUlysses);
  CHECK(cp_rules(CpVariant::kRingAnything).traits().even_form == CpVariant::kRing);
  for (const CpVariant v : {CpVariant::kNone, CpVariant::kRing, CpVariant::kUlysses, CpVariant::kUnified})
    CHECK(cp_rules(v).traits().even_form == v);
  // An even form is itself an even variant.
  for (const auto* r : all_cp_rules()) CHECK_FALSE(cp_rules(r->traits().even_form).traits().anything_mode);
}
