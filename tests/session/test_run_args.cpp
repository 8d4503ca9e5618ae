// What a ranked row hands `cpplan run` (session::run_argv: `cpplan --json`'s "run_args", the GUI's
// Run tab) and a query's own flags (session::query_options: the GUI's tune and query commands). A
// fixed cache schedule is what the executor runs (executor/cache.h), so it travels with the plan;
// the planning --dtype and the threshold caches do not (`cpplan run --dtype` is the executor's fp32
// or bf16), and the row says why it does not run them. The flags expected are the ones the user
// typed: they must give the same query back.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sstream>
#include <string>
#include <vector>

#include "core/cache.h"
#include "core/precision.h"
#include "session/engine/executor_support.h"
#include "session/engine/recommend.h"
#include "tests/session/engine_support.h"

using cpplan::CachePolicy;
using cpplan::session::Options;

namespace {

Options flux_tiny() {
  Options o;
  o.model = "flux-tiny";
  o.gpus = "2";
  o.res = "128x128";
  o.steps = "5";
  return o;
}

cpplan::Query query_of(const Options& o) {
  std::ostringstream err;
  return cpplan::session::build_query(o, cpplan::test::fitted_catalog(), err).query;
}

// Whether `argv` holds `flag` followed by `value`.
bool has_pair(const std::vector<std::string>& argv, const std::string& flag, const std::string& value) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == flag && argv[i + 1] == value) return true;
  return false;
}

bool has_flag(const std::vector<std::string>& argv, const std::string& flag) {
  return std::find(argv.begin(), argv.end(), flag) != argv.end();
}

// The first row of `o`'s ranking and its cpplan run arguments (run_args).
struct TopRow {
  std::shared_ptr<const cpplan::session::Recommendation> rec;
  const cpplan::planner::RankedPlan* top = nullptr;
  std::vector<std::string> argv;
};
TopRow top_row(const Options& o) {
  TopRow r;
  auto rec = cpplan::test::recommend(o);
  r.top = rec->top();
  REQUIRE(r.top != nullptr);
  r.argv = cpplan::session::plan_scripts(rec->query(), *r.top).run_args;
  r.rec = std::move(rec);
  return r;
}

}  // namespace

TEST_CASE("A fixed cache schedule's row hands cpplan run its schedule", "[session][cache][run_args]") {
  Options o = flux_tiny();
  o.framework = "cpplan";
  o.cache = "fixed";
  o.cache_fn = "1";
  o.cache_bn = "0";
  o.cache_warmup = "2";
  o.cache_every = "2";
  const TopRow row = top_row(o);
  const cpplan::planner::RankedPlan* top = row.top;
  const std::vector<std::string>& argv = row.argv;
  INFO(fmt::format("{}", fmt::join(argv, " ")));
  CHECK(has_pair(argv, "--cache", "fixed"));
  CHECK(has_pair(argv, "--cache-fn", "1"));
  CHECK(has_pair(argv, "--cache-bn", "0"));
  CHECK(has_pair(argv, "--cache-warmup", "2"));
  CHECK(has_pair(argv, "--cache-every", "2"));
  CHECK_FALSE(has_flag(argv, "--cache-hit-rate"));  // a fixed schedule has none
  CHECK(cpplan::session::unsupported_run_choice(top->precision, top->cache).empty());
}

TEST_CASE("A row the executor cannot run in its format or cache hands cpplan run neither, and says why",
          "[session][cache][precision][run_args]") {
  Options o = flux_tiny();
  o.hardware = "h100-sxm";
  o.cache = "fbcache";
  o.precision = "fp8";
  const TopRow row = top_row(o);
  const cpplan::planner::RankedPlan* top = row.top;
  const std::vector<std::string>& argv = row.argv;
  INFO(fmt::format("{}", fmt::join(argv, " ")));
  CHECK_FALSE(has_flag(argv, "--cache"));
  CHECK_FALSE(has_flag(argv, "--dtype"));  // cpplan run's --dtype is fp32 or bf16
  CHECK(cpplan::session::unsupported_run_choice(top->precision, cpplan::CacheSpec{}) ==
        "--dtype fp8: the executor runs fp32 or bf16 weights (cpplan run --dtype) or int8-weight-only "
        "(cpplan run --weights int8)");
  CHECK(cpplan::session::unsupported_run_choice(cpplan::Precision{}, top->cache) ==
        "--cache fbcache: the executor runs the fixed schedule only (cpplan run --cache fixed)");
}

TEST_CASE("An int8-weight-only row hands cpplan run --weights int8, and --framework cpplan plans it",
          "[session][precision][run_args]") {
  Options o = flux_tiny();
  o.hardware = "h100-sxm";
  o.framework = "cpplan";  // the executor's own plans: int8 weights are what `cpplan run --weights int8` holds
  o.precision = "int8-weight-only";
  const TopRow row = top_row(o);
  const cpplan::planner::RankedPlan* top = row.top;
  const std::vector<std::string>& argv = row.argv;
  INFO(fmt::format("{}", fmt::join(argv, " ")));
  CHECK(cpplan::to_string(top->precision) == "int8-weight-only");
  CHECK(has_pair(argv, "--weights", "int8"));
  CHECK_FALSE(has_flag(argv, "--dtype"));
  CHECK(cpplan::session::unsupported_run_choice(top->precision, top->cache).empty());
  // W8A8 formats quantize the activations too, which the executor does not.
  o.precision = "fp8";
  auto resolved = cpplan::test::engine().resolve(o);
  REQUIRE_FALSE(resolved.ok());
  CHECK(resolved.error().message ==
        "--dtype = fp8: cpplan's executor runs BF16 (FP32 on CPU) or int8-weight-only (cpplan run --weights int8) only");
}

TEST_CASE("A query's own flags give its format and cache back", "[session][cache][precision][run_args]") {
  Options o = flux_tiny();
  o.hardware = "h100-sxm";
  o.precision = "fp8-row";
  o.cache = "dbcache";
  o.cache_fn = "1";
  o.cache_bn = "1";
  o.cache_warmup = "1";
  o.cache_hit_rate = "0.25";
  o.cache_max_cached = "2";
  const cpplan::Query q = query_of(o);
  const Options back = cpplan::session::query_options(q);
  CHECK(back.precision == "fp8-row");
  CHECK(back.cache == "dbcache");
  const cpplan::Query again = query_of(back);
  CHECK(again.precision == q.precision);
  CHECK(again.cache == q.cache);
  CHECK(again.cache.hit_rate == 0.25);
  CHECK(again.cache.max_continuous_cached == 2);

  // Ranked lists give their names back; BF16 alone and no cache give no flag.
  o.precision = "bf16,fp8";
  o.cache = "none,fbcache";
  o.cache_fn = o.cache_bn = o.cache_warmup = o.cache_hit_rate = o.cache_max_cached = "";
  const Options listed = cpplan::session::query_options(query_of(o));
  CHECK(listed.precision == "bf16,fp8");
  CHECK(listed.cache == "none,fbcache");
  const Options plain = cpplan::session::query_options(query_of(flux_tiny()));
  CHECK(plain.precision.empty());
  CHECK(plain.cache.empty());
}
