// The phases of a job's memory as the CLI tells them: the peak's phase in the table, the JSON's
// memory_phases and host_load, the host verdict under the top plan and --host-mem.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli/run_cli.h"

using cpplan::test::run_cli;
using nlohmann::json;

TEST_CASE("FLUX.1 at 4096 x 4096 on one A100 80GB does not fit in a single decode, and fits tiled", "[cli][memory][phases]") {
  const std::vector<std::string> q{"--gpus", "1", "--model", "flux.1-schnell", "--hardware", "a100-sxm-80g", "--res",
                                   "4096x4096"};
  auto single_args = q;
  single_args.insert(single_args.end(), {"--vae", "single"});
  const auto single = run_cli(single_args);
  REQUIRE(single.code == 0);
  CHECK_THAT(single.out, Catch::Contains(" dec    NO  "));
  CHECK_THAT(single.out, Catch::Contains("in the decode (does NOT fit: the VAE decode: try --vae tiled"));
  auto tiled_args = q;
  tiled_args.insert(tiled_args.end(), {"--vae", "tiled", "--json"});
  const auto tiled = run_cli(tiled_args);
  REQUIRE(tiled.code == 0);
  const json top = json::parse(tiled.out)["plans"][0];
  CHECK(top["vae"] == "tiled");
  CHECK(top["fits_memory"] == true);
  for (const char* phase : {"load", "encode", "denoise", "decode"}) CHECK(top["predicted"]["memory_phases"].contains(phase));
  CHECK_THAT(top["snippets"]["diffusers"].get<std::string>(), Catch::Contains("pipe.vae.enable_tiling()"));
  // Unasked, the planner tiles the decode that does not fit otherwise, and says so.
  auto unforced_args = q;
  unforced_args.emplace_back("--json");
  const auto unforced = run_cli(unforced_args);
  REQUIRE(unforced.code == 0);
  const json chosen = json::parse(unforced.out)["plans"][0];
  CHECK(chosen["vae"] == "tiled");
  CHECK(chosen["fits_memory"] == true);
  CHECK(chosen["predicted"]["image_ms"] == top["predicted"]["image_ms"]);
}

TEST_CASE("At 2048 x 2048 a single decode fits: the planner does not tile it", "[cli][memory][phases]") {
  const auto r = run_cli({"--gpus", "1", "--model", "flux.1-schnell", "--hardware", "a100-sxm-80g", "--res", "2048x2048",
                          "--json"});
  REQUIRE(r.code == 0);
  const json top = json::parse(r.out)["plans"][0];
  CHECK(top["vae"] == "single");
  CHECK(top["fits_memory"] == true);
}

TEST_CASE("FLUX.2-dev on 8 L20s of one node gets a host-memory verdict that --host-mem changes", "[cli][memory][host]") {
  const std::vector<std::string> q{"--gpus", "8", "--model", "flux.2-dev", "--hardware", "l20", "--framework", "diffusers"};
  const auto typical = run_cli(q);  // the l20 profile's node: 1024 GiB
  REQUIRE(typical.code == 0);
  // 8 ranks x 2 x (32,223,281,152 + 24,011,361,280 + 84,000,000) bytes = 839.2 GiB
  CHECK_THAT(typical.out, Catch::Contains("host memory while loading: 8 ranks x 104.9 GiB = 839.2 GiB per node of 1024.0 (fits)"));
  auto small = q;
  small.insert(small.end(), {"--host-mem", "256"});
  const auto r = run_cli(small);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("of 256.0: fits only when the ranks of a node load in turn"));
  // The diffusers script carries the recipe, and that tensor parallelism limits it.
  CHECK_THAT(r.out, Catch::Contains("#   for turn in range(int(os.environ[\"LOCAL_WORLD_SIZE\"])):"));
  CHECK_THAT(r.out, Catch::Contains("the turns spare the other components only"));
  CHECK_THAT(typical.out, !Catch::Contains("for turn in range"));
  auto bad = q;
  bad.insert(bad.end(), {"--host-mem", "lots"});
  const auto refused = run_cli(bad);
  CHECK(refused.code == 3);
  CHECK(refused.err == "cpplan: --host-mem = lots: must be a number\n");
}
