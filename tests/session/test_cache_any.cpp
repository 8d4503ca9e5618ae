// --dtype any and --cache any (issue 56): every format and every cache ranked with every plan. The
// expected formats and caches come from independent facts: which GPUs have FP8 and FP4 tensor cores
// (FP8 from sm89, FP4 from sm100), and which formats and caches each framework's source ships
// (profiles/frameworks/*.toml, cited there). The ranked rows are checked against the queries of
// one format and one cache, the path the planner took before any.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/cache.h"
#include "core/precision.h"
#include "session/engine/engine.h"
#include "tests/session/engine_support.h"
#include "tests/session/session_support.h"
#include "tests/support/fixtures.h"

using cpplan::CachePolicy;
using cpplan::session::Options;
using cpplan::session::Recommendation;
using cpplan::test::engine;
using cpplan::test::recommend;

namespace {

Options flux(const std::string& gpus, const std::string& hardware = "h100-sxm") {
  Options o;
  o.gpus = gpus;
  o.hardware = hardware;
  o.res = "1024x1024";
  return o;
}

cpplan::Query query_of(const Options& o) {
  std::ostringstream err;
  return cpplan::session::build_query(o, cpplan::test::fitted_catalog(), err).query;
}

std::vector<std::string> formats_of(const Options& o) {
  std::vector<std::string> names;
  for (const cpplan::Precision& p : query_of(o).precisions) names.push_back(cpplan::to_string(p));
  return names;
}

std::vector<std::string> policies_of(const Options& o) {
  std::vector<std::string> names;
  for (const cpplan::CacheSpec& c : query_of(o).caches) names.emplace_back(cpplan::to_string(c.policy));
  return names;
}

// A ranked plan's identity: its label, CP variant, format and cache policy.
using Key = std::tuple<std::string, std::string, std::string, std::string>;
Key key_of(const cpplan::planner::RankedPlan& p) {
  return {cpplan::plan_label(p.plan.config), std::string(cpplan::display_name(p.plan.variant)),
          cpplan::to_string(p.precision), std::string(cpplan::to_string(p.cache.policy))};
}

}  // namespace

TEST_CASE("dtype any is BF16 and every format the GPU has tensor cores for that a framework offers",
          "[session][precision][any]") {
  Options o = flux("8");
  o.precision = "any";
  // sm90: FP8 and INT8 W8A8 and the weight-only formats, no FP4 (sm100); fp8-static is in no framework's list.
  CHECK(formats_of(o) == std::vector<std::string>{"bf16", "fp8", "fp8-row", "fp8-weight-only", "int8",
                                                  "int8-weight-only"});
  // sm100: NVFP4 (cache-dit, SGLang) too. MXFP4 is xDiT's --use_fp4_gemms alone, which FLUX.1-dev's
  // runner does not declare (its ModelCapabilities: use_fp8_gemms only); FLUX.2-dev's does.
  o.hardware = "b200";
  CHECK(formats_of(o) == std::vector<std::string>{"bf16", "fp8", "fp8-row", "fp8-weight-only", "int8",
                                                  "int8-weight-only", "nvfp4"});
  o.model = "flux.2-dev";
  CHECK(formats_of(o) == std::vector<std::string>{"bf16", "fp8", "fp8-row", "fp8-weight-only", "int8",
                                                  "int8-weight-only", "nvfp4", "mxfp4"});
  o.model = "flux.1-dev";
  // sm80: no FP8 tensor cores, INT8 ones; the weight-only formats dequantize inside a BF16 GEMM.
  o.hardware = "a100-sxm-80g";
  CHECK(formats_of(o) == std::vector<std::string>{"bf16", "fp8-weight-only", "int8", "int8-weight-only"});
  // A named framework: the formats it offers for the model (xDiT's FLUX.1-dev runner: --use_fp8_gemms;
  // --use_int8_gemms is Z-Image's alone).
  o.hardware = "h100-sxm";
  o.framework = "xdit";
  CHECK(formats_of(o) == std::vector<std::string>{"bf16", "fp8"});
  // cpplan's executor runs BF16 and weight-only int8 (cpplan run --weights int8).
  o.framework = "cpplan";
  CHECK(formats_of(o) == std::vector<std::string>{"bf16", "int8-weight-only"});
  // A list keeps precision_choices' order.
  o = flux("8");
  o.precision = "fp8,bf16";
  CHECK(formats_of(o) == std::vector<std::string>{"bf16", "fp8"});
}

TEST_CASE("cache any is none and every cache a framework ships, each at its defaults and the parameters given",
          "[session][cache][any]") {
  Options o = flux("8");
  o.cache = "any";
  // fixed is the executor's own schedule: no framework's [[cache]] lists it.
  CHECK(policies_of(o) == std::vector<std::string>{"none", "fbcache", "dbcache", "teacache", "taylorseer", "magcache"});
  o.framework = "diffusers";  // its hooks: FirstBlockCache, MagCache, TaylorSeer
  CHECK(policies_of(o) == std::vector<std::string>{"none", "fbcache", "taylorseer", "magcache"});
  o.framework = "cpplan";
  CHECK(policies_of(o) == std::vector<std::string>{"none"});
  // A parameter applies to the policies that take it: the threshold policies' hit rate, not
  // TaylorSeer's interval; the first blocks to DBCache only (FBCache is F1B0, TeaCache F0).
  o = flux("8");
  o.cache = "any";
  o.cache_hit_rate = "0.25";
  o.cache_fn = "4";
  const cpplan::Query q = query_of(o);
  REQUIRE(q.caches.size() == 6);
  CHECK(q.caches[1].hit_rate == 0.25);        // fbcache
  CHECK(q.caches[1].first_blocks == 1);
  CHECK(q.caches[2].first_blocks == 4);       // dbcache
  CHECK(q.caches[3].first_blocks == 0);       // teacache decides on the first block's input
  CHECK(q.caches[4].every == 5);              // taylorseer: diffusers' cache_interval 5
  CHECK(q.caches[4].hit_rate == 0);
  // FBCache's hit rate 0.25 after its warm-up of 4: floor(0.25 x 24) = 6 of 28 steps cached.
  CHECK(cpplan::computed_steps(q.caches[1], 28) == 22);
}

TEST_CASE("Bad axes are refused in one line naming the field, the value and the rule", "[session][any][errors]") {
  struct Bad {
    std::string dtype, cache, cache_bn, cache_warmup;
    std::string error;  // the whole line, or its beginning when it ends with "..."
  };
  const Bad bad[] = {
      {"", "fbcache,lru", "", "", "--cache = lru: must be none, fbcache..."},
      {"", "any,fbcache", "", "", "--cache = any,fbcache: any stands alone (it lists every choice that runs here)"},
      {"", "fbcache,fbcache", "", "", "--cache = fbcache,fbcache: fbcache is listed twice"},
      {"", "fixed,fbcache", "", "",
       "--cache = fixed: no framework ships it (a framework profile lists its caches under [[cache]])"},
      {"", "fbcache,teacache", "2", "",
       "--cache-bn = 2: --cache fbcache,teacache lists no policy that takes it (fbcache runs no last block on a "
       "cached step)"},
      {"", "any", "", "40", "--cache-warmup = 40: must be from 0 to the 28 steps"},  // FLUX.1-dev's 28 steps
      {"bf16,nvfp4", "", "", "", "--dtype = nvfp4: nvfp4 GEMMs do not run on h100-sxm..."},  // NVFP4: sm100
      {"any,fp8", "", "", "", "--dtype = any,fp8: any stands alone (it lists every choice that runs here)"},
      {"fp8,", "", "", "", "--dtype = fp8,: a name is empty (names are separated by one comma)"},
      {"fp8-static,bf16", "", "", "", "--dtype = fp8-static: no framework offers it (cpplan list frameworks says which do)"},
      {"fp8,fp16", "", "", "", "--dtype = fp16: must be bf16 | fp8 |..."},
  };
  for (const Bad& b : bad) {
    Options o = flux("8");
    o.precision = b.dtype;
    o.cache = b.cache;
    o.cache_bn = b.cache_bn;
    o.cache_warmup = b.cache_warmup;
    const std::string error = cpplan::test::query_error(o);
    INFO("--dtype " << b.dtype << " --cache " << b.cache << ": " << error);
    const bool prefix = b.error.size() > 3 && b.error.compare(b.error.size() - 3, 3, "...") == 0;
    if (prefix) CHECK(error.rfind(b.error.substr(0, b.error.size() - 3), 0) == 0);
    else CHECK(error == b.error);
  }
}

TEST_CASE("Each row of dtype any and cache any is that plan of the query of its one format and one cache",
          "[session][any]") {
  Options o = flux("4");
  o.precision = "bf16,fp8";
  o.cache = "none,fbcache";
  const auto any = recommend(o);
  // The plans of each format x cache, priced alone; those a framework runs (a quantized or cached
  // plan needs one: cpplan's executor runs neither) and those of bf16 without a cache.
  std::map<Key, const cpplan::planner::RankedPlan*> single;
  std::vector<std::unique_ptr<Recommendation>> keep;
  int expected_valid = 0;
  for (const char* format : {"bf16", "fp8"})
    for (const char* cache : {"none", "fbcache"}) {
      Options one = flux("4");
      one.precision = format;
      one.cache = cache;
      keep.push_back(recommend(one));
      for (const cpplan::planner::RankedPlan& p : keep.back()->report.plans) {
        if (!p.plan.valid()) continue;
        const bool plain = std::string(format) == "bf16" && std::string(cache) == "none";
        if (!plain && p.cpplan_only()) continue;
        single[key_of(p)] = &p;
        ++expected_valid;
      }
    }
  CHECK(any->report.valid_count == expected_valid);
  int valid = 0;
  for (const cpplan::planner::RankedPlan& p : any->report.plans) {
    if (!p.plan.valid()) continue;
    ++valid;
    const auto it = single.find(key_of(p));
    INFO(std::get<0>(key_of(p)) << " " << std::get<2>(key_of(p)) << " " << std::get<3>(key_of(p)));
    REQUIRE(it != single.end());
    CHECK(p.predicted->step_ms == it->second->predicted->step_ms);
    CHECK(p.predicted->image_ms == it->second->predicted->image_ms);
    CHECK(p.predicted->peak_mem_bytes == it->second->predicted->peak_mem_bytes);
    CHECK(p.frameworks.bits == it->second->frameworks.bits);
  }
  CHECK(valid == expected_valid);
  // PipeFusion plans run no step cache: valid once, under none; their fbcache twins are no rows.
  for (const cpplan::planner::RankedPlan& p : any->report.plans)
    if (p.plan.config.pp() > 1 && p.plan.valid()) CHECK_FALSE(p.cache.active());
  // The invalid plans are listed once: as many as the plain query's.
  CHECK(any->report.invalid_count == keep.front()->report.invalid_count);
}

TEST_CASE("Plans of several caches rank by the mean step, the cached steps at their own time, by hand",
          "[session][any][cache]") {
  Options o = flux("8");
  o.precision = "any";
  o.cache = "any";
  const auto rec = recommend(o);
  const int steps = rec->query().steps;
  REQUIRE(steps == 28);
  double previous = 0;
  int tier_fitting = 0;
  for (const cpplan::planner::RankedPlan& p : rec->report.plans) {
    if (!p.plan.valid() || !p.predicted->fits_memory || p.cpplan_only()) continue;
    ++tier_fitting;
    const cpplan::costmodel::Prediction& pr = *p.predicted;
    // (computed x step + cached x cached step) / steps; the computed steps from the policy's schedule.
    const int cached = steps - cpplan::computed_steps(p.cache, steps);
    CHECK(pr.cached_steps == cached);
    const double mean = ((steps - cached) * pr.step_ms + cached * pr.cached_step_ms) / steps;
    CHECK(mean >= previous - 1e-9);
    previous = mean;
  }
  CHECK(tier_fitting > 100);
  // The top row computes fewer steps than the step count: a cache pays on a host-bound H100.
  const cpplan::planner::RankedPlan* top = rec->top();
  REQUIRE(top);
  CHECK(top->cache.active());
  // Each framework's choice carries the format and cache of its plan, and its script the flags.
  for (const cpplan::session::FrameworkChoice& c : rec->frameworks) {
    if (!c.plan || !c.script) continue;
    std::string text;
    for (const std::string& line : c.script->lines) text += line + "\n";
    if (c.framework == cpplan::Framework::kXdit && c.plan->cache.policy == CachePolicy::kTeacache)
      CHECK(text.find("--use_teacache") != std::string::npos);
    if (c.framework == cpplan::Framework::kXdit && c.plan->precision.quantized())
      CHECK(text.find("--use_fp8_gemms") != std::string::npos);
    if (c.framework == cpplan::Framework::kCacheDit && c.plan->cache.active())
      CHECK(text.find("DBCacheConfig(") != std::string::npos);
  }
}

TEST_CASE("The fleet of dtype any and cache any takes, per replica size, the fastest format and cache",
          "[session][any][fleet]") {
  Options o = flux("4");
  o.objective = "throughput";
  o.precision = "bf16,fp8";
  o.cache = "none,fbcache";
  const auto rec = recommend(o);
  REQUIRE(rec->fleet);
  // Each size's replica: the least image time among the one-format one-cache fleets' replicas.
  std::map<int, double> least;
  for (const char* format : {"bf16", "fp8"})
    for (const char* cache : {"none", "fbcache"}) {
      Options one = o;
      one.precision = format;
      one.cache = cache;
      const auto r = recommend(one);
      for (const cpplan::planner::Replica& rep : r->fleet->replicas) {
        if (!rep.fits()) continue;
        auto [it, added] = least.emplace(rep.gpus, rep.image_ms());
        if (!added) it->second = std::min(it->second, rep.image_ms());
      }
    }
  for (const cpplan::planner::Replica& rep : rec->fleet->replicas) {
    INFO(rep.gpus << " GPUs per replica");
    REQUIRE(least.count(rep.gpus) == 1);
    CHECK(rep.image_ms() == Approx(least[rep.gpus]));
  }
  // Images per hour per GPU: 4 one-GPU replicas at t ms each make 4 x 3.6e6 / t per hour over 4 GPUs.
  for (const cpplan::planner::FleetRow& row : rec->fleet->rows)
    CHECK(row.images_per_hour_per_gpu() ==
          Approx(row.replicas * 3.6e6 / row.image_ms / (row.replicas * row.gpus_per_replica + row.idle_gpus)));
}

TEST_CASE("check with dtype any and cache any prices its one plan with each and keeps the fastest",
          "[session][any][check]") {
  Options o = flux("8");
  o.ulysses = "8";
  o.precision = "any";
  o.cache = "any";
  auto resolved = engine().resolve(o);
  REQUIRE(resolved.ok());
  auto checked = engine().check(*resolved);
  REQUIRE(checked.ok());
  const cpplan::session::CheckResult& c = **checked;
  CHECK(c.priced_with == 6 * 6);  // bf16, fp8, fp8-row, fp8-weight-only, int8, int8-weight-only x 6 caches
  REQUIRE(c.plan.plan.valid());
  // The fastest mean step of the same plan checked with each format and cache alone.
  double fastest = 1e30;
  for (const std::string& format : formats_of(o))
    for (const std::string& cache : policies_of(o)) {
      Options one = o;
      one.precision = format;
      one.cache = cache;
      auto r = engine().resolve(one);
      REQUIRE(r.ok());
      auto single = engine().check(*r);
      REQUIRE(single.ok());
      const cpplan::costmodel::Prediction& pr = *(*single)->plan.predicted;
      if (!(*single)->plan.frameworks.bits) continue;  // a quantized or cached plan no framework runs
      fastest = std::min(fastest, ((28 - pr.cached_steps) * pr.step_ms + pr.cached_steps * pr.cached_step_ms) / 28);
    }
  const cpplan::costmodel::Prediction& pr = *c.plan.predicted;
  CHECK(((28 - pr.cached_steps) * pr.step_ms + pr.cached_steps * pr.cached_step_ms) / 28 == Approx(fastest));
}
