// Golden JSON of a few CLI queries: the whole output is compared, numbers to a relative 1e-9.
// Regenerate after an intended change with: CPPLAN_UPDATE_GOLDEN=1 ctest -L cli (then review the diff).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/run_cli.h"
#include "tests/support/fixtures.h"
#include "tests/support/skip.h"

using nlohmann::json;

namespace {

std::string golden_path(const std::string& name) {
  return std::string(CPPLAN_TEST_PROFILES) + "/../tests/cli/golden/" + name + ".json";
}

// Structural comparison; the first difference is reported with its JSON path.
bool same(const json& a, const json& b, const std::string& path, std::string& where) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    if (std::abs(x - y) <= 1e-9 * std::max({1.0, std::abs(x), std::abs(y)})) return true;
    where = path + ": " + a.dump() + " != " + b.dump();
    return false;
  }
  if (a.type() != b.type()) {
    where = path + ": type " + a.type_name() + " != " + b.type_name();
    return false;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) {
      where = path + ": keys differ";
      return false;
    }
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key())) {
        where = path + "." + it.key() + ": missing";
        return false;
      }
      if (!same(*it, b[it.key()], path + "." + it.key(), where)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) {
      where = path + ": " + std::to_string(a.size()) + " != " + std::to_string(b.size()) + " elements";
      return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same(a[i], b[i], path + "[" + std::to_string(i) + "]", where)) return false;
    return true;
  }
  if (a != b) where = path + ": " + a.dump() + " != " + b.dump();
  return a == b;
}

void check_golden(const std::string& name, const std::vector<std::string>& args, int expected_code) {
  const auto r = cpplan::test::run_cli(args);
  REQUIRE(r.code == expected_code);
  const json actual = json::parse(r.out);
  const std::string path = golden_path(name);
  if (std::getenv("CPPLAN_UPDATE_GOLDEN")) {
    std::ofstream(path) << actual.dump(2) << '\n';
    CPPLAN_SKIP("CPPLAN_UPDATE_GOLDEN is set: rewrote " << path << " instead of comparing");
  }
  std::ifstream in(path);
  REQUIRE(in.good());
  const json expected = json::parse(in);
  std::string where;
  const bool equal = same(actual, expected, "$", where);
  INFO("first difference: " << where);
  CHECK(equal);
}

}  // namespace

TEST_CASE("golden: flux.1-dev on 4 x h100-sxm at 1008x1008", "[cli][golden]") {
  check_golden("flux-4gpu-1008", {"--gpus", "4", "--res", "1008x1008", "--hardware", "h100-sxm", "--json"}, 0);
}

TEST_CASE("golden: every flux.1-dev plan on 4 x h100-sxm at 1024x1024, invalid ones too", "[cli][golden]") {
  check_golden("flux-4gpu-1024-all",
               {"--gpus", "4", "--res", "1024x1024", "--hardware", "h100-sxm", "--json", "--all"}, 0);
}

TEST_CASE("golden: wan2.1-t2v-14b 720p 81 frames on 8 x h200-sxm", "[cli][golden]") {
  check_golden("wan14b-8gpu-720p",
               {"--gpus", "8", "--model", "wan2.1-t2v-14b", "--res", "1280x720", "--frames", "81", "--hardware",
                "h200-sxm", "--json"},
               0);
}

TEST_CASE("golden: sd3.5-large on 2 x l40s with offloaded text encoders", "[cli][golden]") {
  check_golden("sd35-2gpu-l40s",
               {"--gpus", "2", "--model", "sd3.5-large", "--hardware", "l40s", "--offload-text-encoders", "--json"}, 0);
}

TEST_CASE("golden: check of an invalid Ring plan", "[cli][golden][check]") {
  check_golden("check-ring4-1008",
               {"check", "--gpus", "4", "--res", "1008x1008", "--hardware", "h100-sxm", "--ring", "4", "--json"}, 3);
}
