// The cost model's context-parallel registry (costmodel/cp_cost_registry.cpp) and the facts each
// variant's CpCostStrategy states beside its attention cost (CpCostTraits, main_collective),
// derived by hand from shared/spec/parallelism.md.
#include <catch2/catch.hpp>

#include "costmodel/cost_model.h"
#include "costmodel/cp_cost.h"

using cpplan::CpVariant;
using cpplan::RotateMethod;
using cpplan::costmodel::all_cp_cost_strategies;
using cpplan::costmodel::Collective;
using cpplan::costmodel::CpAxis;
using cpplan::costmodel::cp_cost_strategy;

TEST_CASE("Every CP variant has its own cost strategy, at its index", "[costmodel][cp_registry]") {
  REQUIRE(all_cp_cost_strategies().size() == static_cast<std::size_t>(cpplan::kCpVariantCount));
  for (int i = 0; i < cpplan::kCpVariantCount; ++i) {
    const auto v = static_cast<CpVariant>(i);
    CHECK(cp_cost_strategy(v).variant() == v);
    CHECK(all_cp_cost_strategies()[i] == &cp_cost_strategy(v));
  }
}

TEST_CASE("A CP variant pays the host ops of the axes its attention runs over", "[costmodel][cp_registry]") {
  struct Row {
    CpVariant v;
    bool ulysses, ring, anything;
  };
  for (const Row& r : {Row{CpVariant::kNone, false, false, false}, Row{CpVariant::kRing, false, true, false},
                       Row{CpVariant::kUlysses, true, false, false}, Row{CpVariant::kUnified, true, true, false},
                       Row{CpVariant::kUlyssesAnything, true, false, true},
                       Row{CpVariant::kRingAnything, false, true, true}}) {
    INFO(to_string(r.v));
    const auto t = cp_cost_strategy(r.v).traits();
    CHECK(t.ulysses_ops == r.ulysses);
    CHECK(t.ring_ops == r.ring);
    CHECK(t.anything_ops == r.anything);
  }
}

TEST_CASE("A CP variant's main collective: all-to-all over Ulysses, the K/V exchange over Ring",
          "[costmodel][cp_registry]") {
  CHECK(cp_cost_strategy(CpVariant::kUlyssesAnything).main_collective(CpAxis::kUlysses, RotateMethod::kAllGather) ==
        Collective::kAllToAll);
  CHECK(cp_cost_strategy(CpVariant::kUnified).main_collective(CpAxis::kUlysses, RotateMethod::kP2P) ==
        Collective::kAllToAll);
  for (const CpVariant v : {CpVariant::kRing, CpVariant::kUnified}) {
    CHECK(cp_cost_strategy(v).main_collective(CpAxis::kRing, RotateMethod::kAllGather) == Collective::kAllGather);
    CHECK(cp_cost_strategy(v).main_collective(CpAxis::kRing, RotateMethod::kP2P) == Collective::kSendRecv);
  }
  // Ring Anything gathers its padded K/V whatever the rotate method.
  CHECK(cp_cost_strategy(CpVariant::kRingAnything).traits().ring_always_gathers);
  CHECK(cp_cost_strategy(CpVariant::kRingAnything).main_collective(CpAxis::kRing, RotateMethod::kP2P) ==
        Collective::kAllGather);

  // The step model's per-axis answer reads the same strategy.
  cpplan::ParallelConfig c;
  c.context_parallel_config.ring_degree = 4;
  c.context_parallel_config.rotate_method = RotateMethod::kP2P;
  using cpplan::costmodel::CommAxis;
  CHECK(cpplan::costmodel::main_collective(CommAxis::kRing, c, CpVariant::kRing) == Collective::kSendRecv);
  c.context_parallel_config.ring_anything = true;
  CHECK(cpplan::costmodel::main_collective(CommAxis::kRing, c, CpVariant::kRingAnything) == Collective::kAllGather);
  CHECK(cpplan::costmodel::main_collective(CommAxis::kTp, c, CpVariant::kRingAnything) == Collective::kAllReduce);
}
