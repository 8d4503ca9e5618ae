// `cpplan --cache any --dtype any` (issue 56): plan x cache x dtype ranked, each row's frameworks
// and scripts with its own flags, the fleet in images per hour per GPU, bad input in one line.
// The flags expected in the scripts are the frameworks' own (their sources, cited in
// profiles/frameworks/*.toml); the rows are checked against the queries of one format and cache.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli/run_cli.h"

using cpplan::test::run_cli;
using nlohmann::json;

namespace {

const std::vector<std::string> kFlux8{"--gpus", "8", "--res", "1024x1024", "--hardware", "h100-sxm"};

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

std::string out_of(const std::vector<std::string>& args) {
  const auto r = run_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return r.out;
}

// Each framework's launch-text flag for a cache policy and a format, from its source
// (profiles/frameworks/*.toml cites it): xDiT's runner flags.
const std::map<std::string, std::string> kXditCache{{"fbcache", "--use_fbcache"}, {"teacache", "--use_teacache"}};

}  // namespace

TEST_CASE("cpplan --gpus 8 --cache any --dtype any ranks plan x cache x dtype with a column for each",
          "[cli][any]") {
  const std::string out = out_of(with(kFlux8, {"--cache", "any", "--dtype", "any"}));
  CHECK_THAT(out, Catch::Contains("dtype bf16|fp8|fp8-row|fp8-weight-only|int8|int8-weight-only, cache "
                                  "none|fbcache|dbcache|teacache|taylorseer|magcache"));
  CHECK_THAT(out, Catch::Contains("CP variant        dtype            cache        step ms"));
  CHECK_THAT(out, Catch::Contains("valid plans with a dtype and cache"));
  // The top plan names its own format and cache.
  CHECK_THAT(out, Catch::Matches("(.|\n)*\ntop plan: [^\n]*; dtype [a-z0-9-]+, cache [a-z]+[^\n]*(.|\n)*"));
  // Without the axes the table has no such column.
  const std::string plain = out_of(kFlux8);
  CHECK(plain.find("dtype ") == std::string::npos);
  CHECK(plain.find("CP variant          step ms") != std::string::npos);
}

// A plan's python_hooks (what plan.apply(pipe) runs) are its own script's lines: for diffusers each
// import and statement, for cache-dit each import and "keyword=value" of its enable_cache call; one
// line for the format when it is quantized and one for the cache when it has one.
namespace {
void python_hooks_are_the_scripts_lines(const json& p, int& hooked) {
  for (const char* f : {"diffusers", "cache-dit"}) {
    if (!p["snippets"][f].is_string()) {
      CHECK_FALSE(p["python_hooks"].contains(f));
      continue;
    }
    const std::string script = p["snippets"][f];
    const json& hooks = p["python_hooks"][f];
    CHECK(hooks.size() == (p["dtype"] != "bf16" ? 1u : 0u) + (p["cache"].is_null() ? 0u : 1u));
    for (const json& h : hooks) {
      const std::string keyword = h["keyword"], code = h["code"];
      CHECK(script.find(h["import"].get<std::string>() + "\n") != std::string::npos);
      CHECK(keyword.empty() == (std::string(f) == "diffusers"));
      CHECK(script.find(keyword.empty() ? code + "\n" : keyword + "=" + code) != std::string::npos);
      ++hooked;
    }
  }
}
}  // namespace

TEST_CASE("Each row's frameworks and scripts are those of its own format and cache, in the JSON too",
          "[cli][any][json]") {
  const json j = json::parse(out_of(with(kFlux8, {"--cache", "any", "--dtype", "any", "--json"})));
  CHECK(j["dtype"].is_null());
  CHECK(j["cache"].is_null());
  CHECK(j["dtypes"] == json({"bf16", "fp8", "fp8-row", "fp8-weight-only", "int8", "int8-weight-only"}));
  REQUIRE(j["caches"].size() == 6);
  CHECK(j["caches"][0].is_null());  // none
  CHECK(j["caches"][1]["policy"] == "fbcache");
  int xdit_cached = 0, hooked = 0;
  for (const json& p : j["plans"]) {
    REQUIRE(p.contains("dtype"));
    REQUIRE(p.contains("cache"));
    const json& snippets = p["snippets"];
    if (snippets["xdit"].is_string()) {
      const std::string xdit = snippets["xdit"];
      const std::string policy = p["cache"].is_null() ? "none" : p["cache"]["policy"].get<std::string>();
      if (kXditCache.count(policy)) {
        CHECK(xdit.find(kXditCache.at(policy)) != std::string::npos);
        ++xdit_cached;
      }
      CHECK((xdit.find("--use_fp8_gemms") != std::string::npos) == (p["dtype"] == "fp8"));
    }
    if (snippets["cache-dit"].is_string()) {
      const std::string cache_dit = snippets["cache-dit"];
      CHECK((cache_dit.find("DBCacheConfig(") != std::string::npos) == !p["cache"].is_null());
      if (p["dtype"] == "fp8-row") CHECK(cache_dit.find("quant_type=\"float8_per_row\"") != std::string::npos);
    }
    python_hooks_are_the_scripts_lines(p, hooked);
  }
  CHECK(xdit_cached > 0);
  CHECK(hooked > 0);
  // A row of the fp8 / fbcache pair is the row of the query --dtype fp8 --cache fbcache.
  const json one = json::parse(out_of(with(kFlux8, {"--cache", "fbcache", "--dtype", "fp8", "--json"})));
  int matched = 0;
  for (const json& p : j["plans"])
    if (p["dtype"] == "fp8" && !p["cache"].is_null() && p["cache"]["policy"] == "fbcache")
      for (const json& q : one["plans"])
        if (q["label"] == p["label"] && q["cp_variant"] == p["cp_variant"]) {
          CHECK(q["predicted"]["image_ms"] == p["predicted"]["image_ms"]);
          CHECK(q["snippets"] == p["snippets"]);
          ++matched;
        }
  CHECK(matched > 0);
}

TEST_CASE("The fleet objective with any axes reports each split's format, cache and images per hour per GPU",
          "[cli][any][fleet]") {
  const std::string out = out_of(with(kFlux8, {"--cache", "any", "--dtype", "any", "--objective", "throughput"}));
  CHECK_THAT(out, Catch::Matches("(.|\n)*\n   1  [0-9]+ x [^\n]* \\([a-z0-9-]+, [a-z]+\\) [^\n]*(.|\n)*"));
  CHECK_THAT(out, Catch::Contains("images per hour per GPU)"));
  const json j =
      json::parse(out_of(with(kFlux8, {"--cache", "any", "--dtype", "any", "--objective", "throughput", "--json"})));
  for (const json& row : j["plans"]) {
    CHECK(row["images_per_hour_per_gpu"].get<double>() == Approx(row["images_per_hour"].get<double>() / 8));
    CHECK(row.contains("dtype"));
  }
}

TEST_CASE("Bad axes: an unknown policy in a list, any with a name, a format the GPU lacks: one line each, exit 3",
          "[cli][any][errors]") {
  const auto refused = [](std::vector<std::string> more) {
    const auto r = run_cli(with(kFlux8, more));
    CHECK(r.code == 3);
    CHECK(r.out.empty());
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    return r.err;
  };
  CHECK(refused({"--cache", "fbcache,lru"}).rfind("cpplan: --cache = lru: must be none, fbcache, dbcache,", 0) == 0);
  CHECK(refused({"--cache", "any,dbcache"}) ==
        "cpplan: --cache = any,dbcache: any stands alone (it lists every choice that runs here)\n");
  CHECK(refused({"--dtype", "fp8,any"}) ==
        "cpplan: --dtype = fp8,any: any stands alone (it lists every choice that runs here)\n");
  CHECK(refused({"--dtype", "bf16,mxfp4"}).rfind("cpplan: --dtype = mxfp4: mxfp4 GEMMs do not run on h100-sxm", 0) == 0);
  CHECK(refused({"--cache", "any", "--cache-hit-rate", "1.5"}) ==
        "cpplan: --cache-hit-rate = 1.5: must be above 0 and at most 0.99\n");
  CHECK(refused({"--dtype", "any", "--framework", "cpplan", "--cache", "fbcache"}) ==
        "cpplan: --cache = fbcache: --framework cpplan runs the fixed schedule only (--cache fixed)\n");
}
