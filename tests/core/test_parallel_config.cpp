// The parallel-configuration vocabulary: labels, variant classification, and the string names
// that the CLI and the JSON output use (shared/spec/parallelism.md, "Context-parallel variants").
#include <catch2/catch.hpp>

#include <iterator>
#include <string>
#include <utility>

#include "core/parallel_config.h"
#include "tests/support/fixtures.h"

using cpplan::AttentionBackend;
using cpplan::ContextParallelConfig;
using cpplan::CpVariant;
using cpplan::RotateMethod;
using cpplan::test::config;

namespace {
ContextParallelConfig cp(int ring, int ulysses, bool ulysses_anything = false, bool ring_anything = false) {
  ContextParallelConfig c;
  c.ring_degree = ring;
  c.ulysses_degree = ulysses;
  c.ulysses_anything = ulysses_anything;
  c.ring_anything = ring_anything;
  return c;
}
}  // namespace

TEST_CASE("A default parallel config is one GPU with every degree 1", "[core][parallel_config]") {
  const cpplan::ParallelConfig c;
  CHECK(c.ring() == 1);
  CHECK(c.ulysses() == 1);
  CHECK(c.tp() == 1);
  CHECK(c.cfg_degree == 1);
  CHECK(c.dp_degree == 1);
  CHECK(c.fs() == 1);
  CHECK(c.world_size() == 1);
  CHECK(c.context_parallel_config.convert_to_fp32);
  CHECK(c.context_parallel_config.rotate_method == RotateMethod::kAllGather);
  CHECK_FALSE(c.context_parallel_config.ulysses_anything);
  CHECK_FALSE(c.context_parallel_config.ring_anything);
}

TEST_CASE("world_size is the product of the five degrees", "[core][parallel_config]") {
  // 2 x 3 x 4 x 2 x 5 = 240
  CHECK(config(2, 3, 4, 2, 5).world_size() == 240);
  CHECK(config(2, 2).context_parallel_config.degree() == 4);
  CHECK(config(4, 1, 2).world_size() == 8);
}

TEST_CASE("plan_label names every axis above 1 in ring, ulysses, tp, cfg, dp order", "[core][parallel_config]") {
  CHECK(cpplan::plan_label(config(1, 1)) == "single GPU");
  CHECK(cpplan::plan_label(config(4, 1)) == "ring 4");
  CHECK(cpplan::plan_label(config(1, 4)) == "ulysses 4");
  CHECK(cpplan::plan_label(config(2, 2)) == "ring 2 x ulysses 2");
  CHECK(cpplan::plan_label(config(1, 1, 4)) == "tp 4");
  CHECK(cpplan::plan_label(config(1, 1, 1, 2)) == "cfg 2");
  CHECK(cpplan::plan_label(config(1, 1, 1, 1, 8)) == "dp 8");
  CHECK(cpplan::plan_label(config(1, 2, 2, 2, 2)) == "ulysses 2 x tp 2 x cfg 2 x dp 2");
  CHECK(cpplan::plan_label(config(2, 4, 2, 2, 3)) == "ring 2 x ulysses 4 x tp 2 x cfg 2 x dp 3");
  // The anything flags do not change the label: the variant is reported separately.
  CHECK(cpplan::plan_label(config(1, 4, 1, 1, 1, true)) == "ulysses 4");
}

TEST_CASE("fs_degree is labelled last and is not a factor of the world size", "[core][parallel_config][fs]") {
  cpplan::ParallelConfig c = config(1, 4);
  c.fs_degree = 4;
  CHECK(cpplan::plan_label(c) == "ulysses 4 x fs 4");
  // The fully-shard group is laid over the ulysses ranks: still 4 GPUs.
  CHECK(c.world_size() == 4);
  CHECK_FALSE(c == config(1, 4));
}

TEST_CASE("classify decides the variant from the degrees when no anything flag is set",
          "[core][parallel_config][classify]") {
  CHECK(cpplan::classify(cp(1, 1)) == CpVariant::kNone);
  CHECK(cpplan::classify(cp(2, 1)) == CpVariant::kRing);
  CHECK(cpplan::classify(cp(8, 1)) == CpVariant::kRing);
  CHECK(cpplan::classify(cp(1, 2)) == CpVariant::kUlysses);
  CHECK(cpplan::classify(cp(1, 8)) == CpVariant::kUlysses);
  CHECK(cpplan::classify(cp(2, 2)) == CpVariant::kUnified);
  CHECK(cpplan::classify(cp(4, 2)) == CpVariant::kUnified);
}

TEST_CASE("classify lets ulysses_anything win, then ring_anything, for every degree combination",
          "[core][parallel_config][classify]") {
  // The flags win regardless of the degrees; validity of the combination is the planner's job.
  for (int r : {1, 2}) {
    for (int u : {1, 2}) {
      INFO("ring " << r << " ulysses " << u);
      CHECK(cpplan::classify(cp(r, u, true, false)) == CpVariant::kUlyssesAnything);
      CHECK(cpplan::classify(cp(r, u, true, true)) == CpVariant::kUlyssesAnything);
      CHECK(cpplan::classify(cp(r, u, false, true)) == CpVariant::kRingAnything);
    }
  }
}

TEST_CASE("Variant names round-trip through to_string and cp_variant_from_string", "[core][parallel_config]") {
  const std::pair<CpVariant, const char*> names[] = {
      {CpVariant::kNone, "none"},
      {CpVariant::kRing, "ring"},
      {CpVariant::kUlysses, "ulysses"},
      {CpVariant::kUnified, "unified"},
      {CpVariant::kUlyssesAnything, "ulysses_anything"},
      {CpVariant::kRingAnything, "ring_anything"},
  };
  REQUIRE(std::size(names) == static_cast<std::size_t>(cpplan::kCpVariantCount));
  for (const auto& [v, name] : names) {
    CHECK(cpplan::to_string(v) == name);
    const auto back = cpplan::cp_variant_from_string(name);
    REQUIRE(back.has_value());
    CHECK(*back == v);
  }
  // Display names are for people, not for parsing.
  CHECK_FALSE(cpplan::cp_variant_from_string("Ring").has_value());
  CHECK_FALSE(cpplan::cp_variant_from_string("").has_value());
  CHECK_FALSE(cpplan::cp_variant_from_string("usp").has_value());
}

TEST_CASE("display_name gives the names users see", "[core][parallel_config]") {
  CHECK(cpplan::display_name(CpVariant::kNone) == "none");
  CHECK(cpplan::display_name(CpVariant::kRing) == "Ring");
  CHECK(cpplan::display_name(CpVariant::kUlysses) == "Ulysses");
  CHECK(cpplan::display_name(CpVariant::kUnified) == "Unified");
  CHECK(cpplan::display_name(CpVariant::kUlyssesAnything) == "Ulysses Anything");
  CHECK(cpplan::display_name(CpVariant::kRingAnything) == "Ring Anything");
}

TEST_CASE("Attention kernel names and their aliases round-trip", "[core][parallel_config]") {
  const std::pair<AttentionBackend, const char*> names[] = {
      {AttentionBackend::kFlash, "flash"},
      {AttentionBackend::kCudnn, "cudnn"},
      {AttentionBackend::kSage, "sage"},
      {AttentionBackend::kNative, "native"},
      {AttentionBackend::kFa3, "fa3"},   {AttentionBackend::kFa4, "fa4"},
      {AttentionBackend::kAiter, "aiter"}, {AttentionBackend::kSplash, "splash"},
  };
  REQUIRE(std::size(names) == static_cast<std::size_t>(cpplan::kAttentionBackendCount));
  for (const auto& [b, name] : names) {
    CHECK(cpplan::to_string(b) == name);
    const auto back = cpplan::attention_backend_from_string(name);
    REQUIRE(back.has_value());
    CHECK(*back == b);
  }
  // The aliases people write: diffusers' and SGLang's names of the same kernels.
  CHECK(cpplan::attention_backend_from_string("sdpa") == AttentionBackend::kNative);
  CHECK(cpplan::attention_backend_from_string("fa2") == AttentionBackend::kFlash);
  CHECK_FALSE(cpplan::attention_backend_from_string("fa5").has_value());
}

TEST_CASE("Rotate method names round-trip", "[core][parallel_config]") {
  CHECK(cpplan::to_string(RotateMethod::kAllGather) == "allgather");
  CHECK(cpplan::to_string(RotateMethod::kAllToAll) == "alltoall");
  CHECK(cpplan::rotate_method_from_string("allgather") == RotateMethod::kAllGather);
  CHECK(cpplan::to_string(RotateMethod::kP2P) == "p2p");
  CHECK(cpplan::rotate_method_from_string("alltoall") == RotateMethod::kAllToAll);
  CHECK(cpplan::rotate_method_from_string("p2p") == RotateMethod::kP2P);
  CHECK_FALSE(cpplan::rotate_method_from_string("ring").has_value());
  CHECK_FALSE(cpplan::rotate_method_from_string("AllGather").has_value());
}
