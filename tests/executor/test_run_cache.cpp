// `cpplan run --cache fixed` as a real process, one rank and two over loopback (Gloo): the schedule
// the ranks follow is the hand-derived one, the store keeps it with the median computed and cached
// steps (and their predictions) beside the run, under a key of its own; calibrate leaves cached
// runs out; what no fixed schedule runs is refused in one line before anything is recorded.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "data/store.h"
#include "exec/machine.h"
#include "tests/executor/process.h"

// Last: LibTorch (above) defines glog's CHECK, which would replace Catch's and go uncounted.
#undef CHECK
#include <catch2/catch.hpp>

#include "tests/executor/calibrate_exclusion.h"

namespace fs = std::filesystem;
using cpplan::test::record_probe;
using cpplan::test::run_process;
using nlohmann::json;

namespace {

fs::path work_dir() { return cpplan::test::process_temp_dir("cpplan-run-cache-"); }

// A probe of this machine in `db` (a few kernels and collectives: enough for its measured model),
// so that every run there carries a prediction.
// `cpplan run --json` of flux-tiny (2 double + 2 single blocks) at 128x128, 5 steps after one
// warm-up pass, with `flags`; it must succeed.
json run_json(const std::string& db, const std::vector<std::string>& flags) {
  std::vector<std::string> args = {CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--steps", "5",
                                   "--warmup", "1", "--db", db, "--json", "--timeout", "30"};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto p = run_process(args);
  INFO("stderr: " << p.err);
  REQUIRE(p.code == 0);
  return json::parse(p.out);
}

std::map<std::string, double> metrics_of(const cpplan::data::RunRecord& r) {
  return {r.metrics.begin(), r.metrics.end()};
}

// The median of `ms` at the steps `at` (two values: their mean).
double median_at(const std::vector<double>& ms, const std::vector<int>& at) {
  std::vector<double> v;
  for (int i : at) v.push_back(ms.at(i));
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A cached run's record against its hand-derived schedule: `computed` and `cached` the 0-based
// steps of each kind, the cache's parameters F, B, warm-up and every.
void check_record(const cpplan::data::StoredRun& s, const json& j, const std::vector<int>& computed,
                  const std::vector<int>& cached, int f, int b, int warmup, int every) {
  const cpplan::data::RunRecord& r = s.run;
  CHECK(s.id == j["run_id"].get<long long>());
  CHECK(r.status == "ok");
  REQUIRE(r.step_times_ms.size() == 5);
  std::vector<bool> expected(5, false);
  for (int i : computed) expected[i] = true;
  CHECK(j["cache"]["computed"].get<std::vector<bool>>() == expected);
  auto m = metrics_of(r);
  CHECK(m["cache.first_blocks"] == f);
  CHECK(m["cache.last_blocks"] == b);
  CHECK(m["cache.warmup_steps"] == warmup);
  CHECK(m["cache.every"] == every);
  CHECK(m["cache.computed_steps"] == computed.size());
  CHECK(m["cache.cached_steps"] == cached.size());
  CHECK(m["cache.computed_step_ms"] == Approx(median_at(r.step_times_ms, computed)));
  CHECK(m["cache.cached_step_ms"] == Approx(median_at(r.step_times_ms, cached)));
  CHECK(m["cache.denoise_ms"] == Approx(std::accumulate(r.step_times_ms.begin(), r.step_times_ms.end(), 0.0)));
  CHECK(j["measured"]["cache"]["computed_steps"] == computed.size());
  CHECK(j["measured"]["cache"]["cached_step_ms"].get<double>() == Approx(m["cache.cached_step_ms"]));
  // The prediction: each kind of step, the whole denoising the schedule's counts of them, and the
  // record's step the median of the predicted steps in the schedule's order.
  REQUIRE(m.count("predicted.computed_step_ms"));
  const double c = m["predicted.computed_step_ms"], k = m["predicted.cached_step_ms"];
  CHECK(k > 0);
  CHECK(k < c);  // the first and last blocks of four and the rest of the step
  CHECK(m["predicted.denoise_ms"] == Approx(computed.size() * c + cached.size() * k));
  CHECK(*r.predicted_step_ms == Approx(computed.size() > cached.size() ? c : k));
  CHECK(j["predicted"]["cache"]["cached_step_ms"].get<double>() == Approx(k));
}

}  // namespace

TEST_CASE("cpplan run --cache fixed on one rank records its schedule and both medians apart from the uncached run",
          "[executor][cache][store]") {
  const std::string db = (work_dir() / "one.db").string();
  record_probe(db);
  const json plain = run_json(db, {});
  // Warm-up 2, every 2nd: steps 0 and 1 computed, then step i when (i - 2 + 1) % 2 == 0: 3.
  const json cached = run_json(db, {"--cache", "fixed", "--cache-fn", "1", "--cache-bn", "0", "--cache-warmup", "2",
                                    "--cache-every", "2"});
  auto store = cpplan::data::Store::open(db);
  auto runs = store.value().runs("flux-tiny");
  REQUIRE(runs.ok());
  REQUIRE(runs.value().size() == 2);  // newest first
  const auto& c = runs.value()[0];
  const auto& u = runs.value()[1];
  check_record(c, cached, {0, 1, 3}, {2, 4}, 1, 0, 2, 2);
  // Its own key: the uncached run of the same plan is another run, kept as it was.
  CHECK(u.id == plain["run_id"].get<long long>());
  CHECK(c.run.run_key == u.run.run_key + "|cache-fixed-f1b0w2e2");
  CHECK(metrics_of(u.run).count("cache.cached_steps") == 0);
  CHECK_FALSE(plain.contains("cache"));
}

TEST_CASE("cpplan run --cache fixed on 2 ranks over loopback records its schedule and both medians",
          "[executor][cache][store]") {
  const std::string db = (work_dir() / "two.db").string();
  record_probe(db);
  // Ulysses 2, F1B1, warm-up 1, every 3rd: step 0 computed, then step i when (i - 1 + 1) % 3 == 0: 3.
  const json cached = run_json(db, {"--ulysses", "2", "--cache", "fixed", "--cache-fn", "1", "--cache-bn", "1",
                                    "--cache-warmup", "1", "--cache-every", "3"});
  auto store = cpplan::data::Store::open(db);
  auto runs = store.value().runs("flux-tiny");
  REQUIRE(runs.ok());
  REQUIRE(runs.value().size() == 1);
  const auto& c = runs.value()[0];
  CHECK(c.run.world_size == 2);
  CHECK(c.run.ulysses == 2);
  check_record(c, cached, {0, 3}, {1, 2, 4}, 1, 1, 1, 3);
}

// --dry-run with --json: the prediction a run of the same flags records, made from the same probe,
// with nothing run or recorded; at a database that does not exist, none is created.
TEST_CASE("cpplan run --dry-run prints the prediction its run records and records nothing", "[executor][cache][store]") {
  const fs::path dir = work_dir();
  const std::string db = (dir / "dry.db").string();
  record_probe(db);
  const std::vector<std::string> cache = {"--cache", "fixed", "--cache-fn", "1", "--cache-bn", "0",
                                          "--cache-warmup", "2", "--cache-every", "2"};
  std::vector<std::string> args = {CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--steps", "5",
                                   "--warmup", "1", "--json", "--dry-run"};
  args.insert(args.end(), cache.begin(), cache.end());
  std::vector<std::string> at_db = args;
  at_db.insert(at_db.end(), {"--db", db});
  const auto dry = run_process(at_db);
  INFO(dry.err);
  REQUIRE(dry.code == 0);
  const json p = json::parse(dry.out)["predicted"];
  REQUIRE(p.is_object());
  // Warm-up 2, every 2nd over 5 steps: 0, 1 and 3 computed, 2 and 4 cached.
  const double c = p["cache"]["computed_step_ms"].get<double>(), k = p["cache"]["cached_step_ms"].get<double>();
  CHECK(p["cache"]["denoise_ms"].get<double>() == Approx(3 * c + 2 * k));
  CHECK(p["step_ms"].get<double>() == Approx(c));
  REQUIRE(cpplan::data::Store::open(db).value().runs("flux-tiny").value().empty());

  const json ran = run_json(db, cache);
  auto runs = cpplan::data::Store::open(db).value().runs("flux-tiny");
  REQUIRE(runs.value().size() == 1);
  auto m = metrics_of(runs.value()[0].run);
  CHECK(m["predicted.computed_step_ms"] == Approx(c));
  CHECK(m["predicted.cached_step_ms"] == Approx(k));
  CHECK(ran["predicted"]["hardware"] == p["hardware"]);

  // No database there: none is made; the prediction is the --hardware profile's, else none.
  const std::string none = (dir / "none.db").string();
  std::vector<std::string> at_none = args;
  at_none.insert(at_none.end(), {"--db", none});
  const auto bare = run_process(at_none);
  REQUIRE(bare.code == 0);
  CHECK(json::parse(bare.out)["predicted"].is_null());
  at_none.insert(at_none.end(), {"--hardware", "h100-sxm"});
  const auto sheet = run_process(at_none);
  REQUIRE(sheet.code == 0);
  CHECK(json::parse(sheet.out)["predicted"]["hardware"] == "h100-sxm");
  CHECK_FALSE(fs::exists(none));
}

TEST_CASE("calibrate leaves out the runs made with a step cache", "[executor][cache][store]") {
  cpplan::test::check_calibrate_leaves_out((work_dir() / "calibrate.db").string(), "cache", {"cache.cached_steps", 2});
}

TEST_CASE("calibrate leaves out the runs whose host's hypervisor took more than 5% of its CPU time",
          "[executor][store]") {
  // 18% stolen: left out; 2% (under the 5% line): fitted.
  cpplan::test::check_calibrate_leaves_out((work_dir() / "steal.db").string(), "contended",
                                           {"host.steal_fraction", 0.18}, {{"host.steal_fraction", 0.02}});
}

TEST_CASE("cpplan run refuses what no fixed schedule runs in one line with exit 3 and records nothing",
          "[executor][cache]") {
  const std::string db = (work_dir() / "refused.db").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--cache", "teacache"},
       "--cache = teacache: cpplan run runs a fixed schedule only (--cache fixed); teacache decides each step by a "
       "threshold, so which steps it caches is not known ahead"},
      {{"--cache", "fbcache", "--cache-hit-rate", "0.3"},
       "--cache = fbcache: cpplan run runs a fixed schedule only (--cache fixed); fbcache decides each step by a "
       "threshold, so which steps it caches is not known ahead"},
      {{"--cache", "fixed", "--cache-fn", "2", "--cache-bn", "2"},
       "--cache-fn + --cache-bn = 2 + 2: must leave at least one of the model's 4 blocks to cache"},
      {{"--cache", "fixed", "--cache-warmup", "0"},
       "--cache-warmup = 0: must be at least 1 for cpplan run (the first step is computed: nothing is cached before "
       "it)"},
      {{"--cache", "fixed", "--pipefusion", "2", "--num-pipeline-patch", "2"},
       "plan pipefusion 2 (2 patches) (none) is invalid: pipefusion_degree = 2: must be 1 with --cache fixed (a "
       "cached step skips the middle blocks every stage's patches run; xDiT disables its caches under PipeFusion)"},
  };
  for (const auto& [flags, line] : cases) {
    std::vector<std::string> args = {CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--steps", "4",
                                     "--db", db};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto p = run_process(args);
    INFO(flags[1] << ": " << p.err);
    CHECK(p.code == 3);
    CHECK(p.err == "cpplan: " + line + "\n");
    CHECK(p.out.empty());
  }
  // A model whose long skips cross the middle blocks: the ranks' own rule, before any starts.
  const auto p = run_process({CPPLAN_BINARY, "run", "--model", "hunyuandit-tiny", "--steps", "4", "--cache", "fixed",
                              "--db", db});
  CHECK(p.code == 3);
  CHECK(p.err == "cpplan: cache on hunyuandit-tiny: its blocks with skip = true run no step cache (the long skips its "
                 "middle blocks leave have no residual)\n");
  CHECK_FALSE(fs::exists(db));  // no database, no row
}
