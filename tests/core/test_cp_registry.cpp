// The one registry form of the context-parallel variants (core/cp_registry.h): a line per
// CpVariant in the enum's order, checked at compile time; each strategy's variant() checked when
// the table is built; lookup by index.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "core/cp_registry.h"

using cpplan::CpRegistryLines;
using cpplan::CpVariant;

namespace {
struct Fake {
  CpVariant v;
  CpVariant variant() const { return v; }
};
const Fake& none() { static const Fake f{CpVariant::kNone}; return f; }
const Fake& ring() { static const Fake f{CpVariant::kRing}; return f; }
const Fake& ulysses() { static const Fake f{CpVariant::kUlysses}; return f; }
const Fake& unified() { static const Fake f{CpVariant::kUnified}; return f; }
const Fake& ulysses_anything() { static const Fake f{CpVariant::kUlyssesAnything}; return f; }
const Fake& ring_anything() { static const Fake f{CpVariant::kRingAnything}; return f; }

constexpr CpRegistryLines<Fake> kGood = {{
    {CpVariant::kNone, none},
    {CpVariant::kRing, ring},
    {CpVariant::kUlysses, ulysses},
    {CpVariant::kUnified, unified},
    {CpVariant::kUlyssesAnything, ulysses_anything},
    {CpVariant::kRingAnything, ring_anything},
}};
static_assert(cpplan::one_line_per_variant(kGood));
// Two lines swapped.
constexpr CpRegistryLines<Fake> kSwapped = {{
    {CpVariant::kNone, none},
    {CpVariant::kUlysses, ulysses},
    {CpVariant::kRing, ring},
    {CpVariant::kUnified, unified},
    {CpVariant::kUlyssesAnything, ulysses_anything},
    {CpVariant::kRingAnything, ring_anything},
}};
static_assert(!cpplan::one_line_per_variant(kSwapped));
// A variant's line left out: the last entry stays {kNone, nullptr}.
constexpr CpRegistryLines<Fake> kMissing = {{
    {CpVariant::kNone, none},
    {CpVariant::kRing, ring},
    {CpVariant::kUlysses, ulysses},
    {CpVariant::kUnified, unified},
    {CpVariant::kUlyssesAnything, ulysses_anything},
}};
static_assert(!cpplan::one_line_per_variant(kMissing));
// The right variant on the line, the wrong strategy behind it: only the build can tell.
constexpr CpRegistryLines<Fake> kWrongStrategy = {{
    {CpVariant::kNone, none},
    {CpVariant::kRing, ring_anything},
    {CpVariant::kUlysses, ulysses},
    {CpVariant::kUnified, unified},
    {CpVariant::kUlyssesAnything, ulysses_anything},
    {CpVariant::kRingAnything, ring_anything},
}};
static_assert(cpplan::one_line_per_variant(kWrongStrategy));
}  // namespace

TEST_CASE("A CP registry has each variant's strategy at the variant's index", "[core][cp_registry]") {
  const auto registry = cpplan::build_cp_registry(kGood, "test");
  for (int i = 0; i < cpplan::kCpVariantCount; ++i) {
    const auto v = static_cast<CpVariant>(i);
    CHECK(cpplan::cp_registry_entry(registry, v).variant() == v);
  }
  CHECK(&cpplan::cp_registry_entry(registry, CpVariant::kRingAnything) == &ring_anything());
}

TEST_CASE("A CP registry line whose strategy is another variant's is refused when the table is built",
          "[core][cp_registry]") {
  CHECK_THROWS_WITH(cpplan::build_cp_registry(kWrongStrategy, "test"),
                    "test registry: the line of ring returns the strategy of ring_anything");
}

TEST_CASE("A CP registry has no fallback for a value outside the enum", "[core][cp_registry]") {
  const auto registry = cpplan::build_cp_registry(kGood, "test");
  CHECK_THROWS_AS(cpplan::cp_registry_entry(registry, static_cast<CpVariant>(cpplan::kCpVariantCount)),
                  std::out_of_range);
}
