// cpplan --objective throughput: replicas of one plan (and a mixed split) ranked by images per
// hour under a latency target; the JSON fields; one line and exit 3 for bad input.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/cli/run_cli.h"

using cpplan::test::run_cli;

namespace {
const std::vector<std::string> kAcceptance = {"--gpus",      "16",         "--model",  "flux.1-dev", "--hardware",
                                              "h100-sxm",    "--objective", "throughput", "--slo-ms", "3000"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}
}  // namespace

TEST_CASE("throughput on 16 GPUs prints the replica splits and the best one with its images per hour",
          "[cli][fleet]") {
  const auto r = run_cli(kAcceptance);
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("throughput: 16 GPUs as replicas of one image at a time, SLO 3.00 s per image"));
  CHECK_THAT(r.out, Catch::Contains("replicas x plan"));
  CHECK_THAT(r.out, Catch::Contains("images/hour"));
  // The closing line: the best usable split, or (the SLO out of reach) the fastest replica; which
  // one the JSON's first row says.
  const auto j = nlohmann::json::parse(run_cli(with(kAcceptance, {"--json"})).out);
  const auto& first = j["plans"][0];
  if (first["meets_slo"].get<bool>() && first["fits_memory"].get<bool>()) {
    CHECK_THAT(r.out, Catch::Contains(fmt::format("best uniform split: {} x {}: {:.0f} images per hour at {:.2f} s per "
                                                  "image",
                                                  first["replicas"].get<int>(), first["label"].get<std::string>(),
                                                  first["images_per_hour"].get<double>(),
                                                  first["predicted"]["image_ms"].get<double>() / 1e3)));
  } else {
    double fastest = 1e300;
    for (const auto& p : j["plans"])
      if (p["fits_memory"].get<bool>()) fastest = std::min(fastest, p["predicted"]["image_ms"].get<double>());
    CHECK_THAT(r.out, Catch::Contains("no split meets the SLO and fits in memory: the fastest replica, "));
    CHECK_THAT(r.out, Catch::Contains(fmt::format("takes {:.2f} s per image; try a looser --slo-ms", fastest / 1e3)));
    double most = 0;
    for (const auto& p : j["plans"])
      if (p["fits_memory"].get<bool>()) most = std::max(most, p["images_per_hour"].get<double>());
    CHECK_THAT(r.out, Catch::Contains(fmt::format("without the SLO, the most images per hour: ")));
    CHECK_THAT(r.out, Catch::Contains(fmt::format(": {:.0f} images per hour at ", most)));
  }
}

TEST_CASE("throughput with a reachable SLO names the best split and its images per hour", "[cli][fleet]") {
  // 1.5 x the fastest replica's latency: some split meets it.
  const auto all = nlohmann::json::parse(
      run_cli({"--gpus", "16", "--hardware", "h100-sxm", "--objective", "throughput", "--json"}).out);
  double fastest = 1e300;
  for (const auto& p : all["plans"])
    if (p["fits_memory"].get<bool>()) fastest = std::min(fastest, p["predicted"]["image_ms"].get<double>());
  const std::string slo = fmt::format("{:.0f}", fastest * 1.5);
  const auto r = run_cli({"--gpus", "16", "--hardware", "h100-sxm", "--objective", "throughput", "--slo-ms", slo});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("best uniform split: "));
  CHECK_THAT(r.out, Catch::Contains(" images per hour at "));
  CHECK_THAT(r.out, Catch::Contains("  met\n"));
}

TEST_CASE("throughput JSON: each row is a replica's plan with replicas, GPUs, images per hour and the SLO verdict",
          "[cli][fleet][json]") {
  const auto r = run_cli(with(kAcceptance, {"--json"}));
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["objective"] == "throughput");
  CHECK(j["slo_ms"] == 3000.0);
  CHECK(j["gpus"] == 16);
  REQUIRE(j.contains("mixed"));
  REQUIRE(j["plans"].size() >= 4);  // at least the sizes 1, 2, 4, 8 and 16 have valid plans
  bool usable_part = true;
  for (const auto& p : j["plans"]) {
    const int replicas = p["replicas"], k = p["gpus_per_replica"];
    INFO(p["label"].get<std::string>() << " on " << k << " GPUs");
    CHECK(replicas == (k <= 8 ? 2 * (8 / k) : 1));  // two H100 nodes of 8: no replica of 8 or less across them
    CHECK(p["dp_degree"] == 1);
    const double image_ms = p["predicted"]["image_ms"];
    CHECK(p["images_per_hour"].get<double>() == Approx(replicas * 3.6e6 / image_ms));
    CHECK(p["meets_slo"] == (image_ms <= 3000));
    const bool usable = p["meets_slo"].get<bool>() && p["fits_memory"].get<bool>();
    if (usable) CHECK(usable_part);  // the usable rows come first
    usable_part = usable_part && usable;
  }
  if (!j["mixed"].is_null()) {
    double total = 0;
    int gpus = 0;
    for (const auto& part : j["mixed"]) {
      total += part["images_per_hour"].get<double>();
      gpus += part["replicas"].get<int>() * part["gpus_per_replica"].get<int>();
      CHECK(!part["label"].get<std::string>().empty());
    }
    CHECK(gpus <= 16);
    CHECK(total == Approx(j["mixed_images_per_hour"].get<double>()));
    CHECK(total > j["plans"][0]["images_per_hour"].get<double>());
  }
}

TEST_CASE("without --slo-ms every fitting split counts and slo_ms is null", "[cli][fleet][json]") {
  const auto r = run_cli({"--gpus", "4", "--hardware", "h100-sxm", "--objective", "throughput", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["slo_ms"].is_null());
  for (const auto& p : j["plans"]) CHECK(p["meets_slo"] == true);
}

TEST_CASE("the latency objective stays the default output", "[cli][fleet]") {
  const auto plain = run_cli({"--gpus", "4", "--hardware", "h100-sxm"});
  const auto latency = run_cli({"--gpus", "4", "--hardware", "h100-sxm", "--objective", "latency"});
  REQUIRE(plain.code == 0);
  CHECK(latency.code == 0);
  CHECK(latency.out == plain.out);
}

TEST_CASE("bad --objective and --slo-ms values are one line naming the flag, exit 3", "[cli][fleet][errors]") {
  const std::vector<std::string> base = {"--gpus", "16", "--hardware", "h100-sxm"};
  struct Case {
    std::vector<std::string> args;
    std::string line;
  };
  const std::vector<Case> cases = {
      {{"--objective", "fast"}, "cpplan: --objective = fast: must be latency or throughput\n"},
      {{"--objective", "throughput", "--slo-ms", "0"}, "cpplan: --slo-ms = 0: must be above 0 and at most 1000000000\n"},
      {{"--objective", "throughput", "--slo-ms", "-5"}, "cpplan: --slo-ms = -5: must be above 0 and at most 1000000000\n"},
      {{"--objective", "throughput", "--slo-ms", "3s"}, "cpplan: --slo-ms = 3s: must be a number\n"},
      {{"--slo-ms", "3000"},
       "cpplan: --slo-ms = 3000: needs --objective throughput (a latency target of replicas)\n"},
      {{"check", "--objective", "throughput"},
       "cpplan: --objective = throughput: not for check (one plan); rank replicas with recommend\n"},
  };
  for (const Case& c : cases) {
    const auto r = run_cli(with(base, c.args));
    INFO(c.line);
    CHECK(r.code == 3);
    CHECK(r.out.empty());
    CHECK(r.err == c.line);
  }
}

TEST_CASE("throughput with a topology is refused in one line as not done", "[cli][fleet][errors]") {
  const auto r = run_cli({"--topology", "dgx-h100", "--objective", "throughput"});
  CHECK(r.code == 3);
  CHECK(r.err ==
        "cpplan: --objective = throughput: with --topology or --nodes is not done (replicas are planned without "
        "placement); leave the topology out\n");
}

TEST_CASE("throughput with --framework diffusers on 11 GPUs: every replica is a plan diffusers runs, none with CFG",
          "[cli][fleet][frameworks]") {
  const std::vector<std::string> args = {"--gpus",       "11",         "--model",     "wan2.1-t2v-14b", "--hardware",
                                         "h100-sxm",     "--objective", "throughput", "--slo-ms",      "110000",
                                         "--framework", "diffusers",  "--all"};
  const auto r = run_cli(with(args, {"--json"}));
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(!j["plans"].empty());
  for (const auto& p : j["plans"]) {
    INFO(p["label"].get<std::string>());
    CHECK(p["cfg_degree"] == 1);
    const auto& fw = p["frameworks"];
    CHECK(std::find(fw.begin(), fw.end(), "diffusers") != fw.end());
    const int k = p["gpus_per_replica"];
    CHECK(p["replicas"] == (k <= 8 ? 8 / k + 3 / k : 1));  // nodes of 8 and 3 GPUs
  }
  if (!j["mixed"].is_null())
    for (const auto& part : j["mixed"]) CHECK(part["label"].get<std::string>().find("cfg") == std::string::npos);
  const auto text = run_cli(args);
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, !Catch::Contains(" x cfg 2"));
}
