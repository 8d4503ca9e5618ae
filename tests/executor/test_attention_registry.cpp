// The executor's context-parallel registry (executor/attention/registry.cpp): every variant has
// its own AttentionOp, at its index.
#include <catch2/catch.hpp>

#include "executor/attention.h"

using cpplan::CpVariant;

TEST_CASE("Every CP variant has its own attention op, at its index", "[executor][cp_registry]") {
  REQUIRE(cpplan::executor::all_attention_ops().size() == static_cast<std::size_t>(cpplan::kCpVariantCount));
  for (int i = 0; i < cpplan::kCpVariantCount; ++i) {
    const auto v = static_cast<CpVariant>(i);
    CHECK(cpplan::executor::attention_op(v).variant() == v);
    CHECK(cpplan::executor::all_attention_ops()[i] == &cpplan::executor::attention_op(v));
  }
}
