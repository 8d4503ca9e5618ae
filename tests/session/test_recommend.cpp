// session::Engine::resolve and recommend: the one typed answer the fronts render. Expected
// values are derived by hand from the model's shape (FLUX.1-dev: 16 pixels per token side, 24
// heads), not read from the code under test.
#include <catch2/catch.hpp>
#include <algorithm>
#include <numeric>

#include "session/engine/engine.h"
#include "session/engine/recommend.h"
#include "session/render/plan_json.h"
#include "tests/session/engine_support.h"
#include "tests/support/fixtures.h"
#include "tests/support/rule_ids.h"

using cpplan::Lever;
using cpplan::session::Options;
using cpplan::session::Recommendation;
using cpplan::test::engine;
using cpplan::test::recommend;

namespace {

Options flux(const std::string& gpus, const std::string& res) {
  Options o;
  o.model = "flux.1-dev";
  o.hardware = "h100-sxm";
  o.gpus = gpus;
  o.res = res;
  return o;
}

std::string refusal(const Options& o) {
  auto resolved = engine().resolve(o);
  if (!resolved) return resolved.error().message;
  auto rec = engine().recommend(*resolved);
  return rec.ok() ? std::string("accepted") : rec.error().message;
}

}  // namespace

TEST_CASE("A bad request is one line naming the field, its value and the rule, not an exception",
          "[session][recommend]") {
  Options o = flux("4", "1008x1008");
  o.top = "0";
  CHECK(refusal(o) == "--top = 0: must be between 1 and 1073741824");
  o = flux("4", "1008x1008");
  o.objective = "fast";
  CHECK(refusal(o) == "--objective = fast: must be latency or throughput");
  o = flux("4", "1008x1008");
  o.slo_ms = "500";
  CHECK(refusal(o) == "--slo-ms = 500: needs --objective throughput (a latency target of replicas)");
  o = flux("4", "1008x1008");
  o.framework = "foo";
  CHECK(refusal(o) == "--framework = foo: must be diffusers, xdit, cache-dit, sglang, vllm-omni, cpplan or any");
  o = flux("4", "1008x1008");
  o.model = "no-such-model";
  const std::string model_error = refusal(o);
  CHECK(model_error.find("no-such-model") != std::string::npos);
  CHECK(model_error.find('\n') == std::string::npos);
}

TEST_CASE("At 1008x1008 FLUX's 3969 image tokens reject every even Ring and Ulysses split, grouped under the "
          "resolution lever", "[session][recommend]") {
  // 1008 / 16 = 63 tokens a side: 63^2 = 3969, odd, so no split of 2 or 4 divides it.
  const auto rec = recommend(flux("4", "1008x1008"));
  CHECK(rec->query().sequence.image_tokens == 3969);
  REQUIRE_FALSE(rec->rows.empty());
  for (const auto& row : rec->rows) {
    const auto& cp = row.plan->plan.config.context_parallel_config;
    INFO(cpplan::plan_label(row.plan->plan.config));
    CHECK((cp.degree() == 1 || cp.ulysses_anything || cp.ring_anything));
    CHECK(row.same.empty());  // uneven: no Anything form equals a plain one
  }
  REQUIRE_FALSE(rec->rejections.empty());
  const auto& first = rec->rejections.front();
  CHECK(first.id == cpplan::RuleId::kEvenSplitImageTokens);
  CHECK(first.lever == Lever::kResolution);
  const int grouped = std::accumulate(rec->rejections.begin(), rec->rejections.end(), 0,
                                      [](int n, const auto& g) { return n + g.count; });
  CHECK(grouped == rec->report.invalid_count);
  // The example's first broken rule is its group's, as a typed violation.
  const cpplan::Violation& v = first.example->plan.violations.front();
  CHECK(v.id == first.id);
  CHECK(v.rule == first.rule);
}

TEST_CASE("The recommendation's JSON names each rejection group's rule by its id", "[session][recommend][rule_id]") {
  // Python's cpplan.recommend reads this JSON (with scripts, as it asks): the even split's group leads.
  auto resolved = engine().resolve(flux("4", "1008x1008"), {true, true});
  REQUIRE(resolved.ok());
  auto answer = engine().recommend(*resolved);
  REQUIRE(answer.ok());
  const Recommendation& rec = **answer;
  const auto j = cpplan::session::recommendation_json(rec);
  const auto& rejected = j.at("rejected");
  REQUIRE(rejected.size() == rec.rejections.size());
  CHECK(rejected[0].at("rule_id") == "even-split-image-tokens");
  for (std::size_t i = 0; i < rejected.size(); ++i)
    CHECK(rejected[i].at("rule_id") == cpplan::to_string(rec.rejections[i].id));
}

TEST_CASE("At 1024x1024 Ring and Ring Anything over 4 GPUs are one row as cpplan's executor runs them",
          "[session][recommend]") {
  // 1024 / 16 = 64: 4096 image and 512 text tokens both split 4 ways, so Ring Anything pads
  // nothing and exchanges the same K/V blocks; the executor (runtime cpplan) runs both forms with
  // the same kernels (diffusers' runtime adds host work to an Anything form: two rows there).
  Options o = flux("4", "1024x1024");
  o.runtime = "cpplan";
  const auto rec = recommend(o);
  const auto row = std::find_if(rec->rows.begin(), rec->rows.end(), [](const auto& r) {
    return cpplan::plan_label(r.plan->plan.config) == "ring 4";
  });
  REQUIRE(row != rec->rows.end());
  CHECK(row->variant == "Ring/Anything");
  REQUIRE(row->same.size() == 1);
  CHECK(row->plan->plan.config.context_parallel_config.ring_anything !=
        row->same.front()->plan.config.context_parallel_config.ring_anything);
  CHECK(row->same.front()->predicted->step_ms == row->plan->predicted->step_ms);
  // Each form is its own row with --all.
  o.all = true;
  const auto each = recommend(o);
  CHECK(std::count_if(each->rows.begin(), each->rows.end(), [](const auto& r) {
          return cpplan::plan_label(r.plan->plan.config) == "ring 4";
        }) == 2);
}

TEST_CASE("Each framework's choice holds its plan, its gap and its script as lines", "[session][recommend]") {
  const auto rec = recommend(flux("4", "1024x1024"));
  const auto* top = rec->top();
  REQUIRE(top);
  REQUIRE(rec->frameworks.size() == static_cast<std::size_t>(cpplan::kFrameworkCount));
  for (const auto& c : rec->frameworks) {
    INFO(c.title);
    CHECK(c.shown);
    if (c.top_unavailable.empty()) {
      CHECK(c.plan == top);
      CHECK(c.gap == 0);
    }
    if (!c.plan) continue;
    REQUIRE(c.script);
    CHECK_FALSE(c.script->lines.empty());
    CHECK(c.gap >= 0);
    for (const auto& line : c.script->lines) CHECK(line.find('\n') == std::string::npos);
  }
  CHECK(rec->frameworks[0].title == "diffusers");
  CHECK(rec->frameworks[1].title == "xDiT");
  CHECK(rec->frameworks[2].title == "cache-dit");
  CHECK(rec->frameworks[3].title == "SGLang Diffusion");
  CHECK(rec->frameworks[4].title == "vLLM-Omni");
  // Python scripts for diffusers and cache-dit, command lines for the others.
  using Kind = cpplan::session::Script::Kind;
  const Kind kinds[] = {Kind::kScript, Kind::kCommand, Kind::kScript, Kind::kCommand, Kind::kCommand};
  for (int i = 0; i < cpplan::kFrameworkCount; ++i)
    if (rec->frameworks[i].script) CHECK(rec->frameworks[i].script->kind == kinds[i]);
  CHECK(rec->frameworks[2].script);  // cache-dit runs FLUX.1-dev's Ulysses: a script, no longer a note
  CHECK(rec->forward_flops > 0);
}

TEST_CASE("Restricted to diffusers (--framework), the recommendation shows only diffusers' choice and counts the plans it hides", "[session][recommend]") {
  Options o = flux("4", "1008x1008");
  o.framework = "diffusers";
  const auto rec = recommend(o);
  for (const auto& c : rec->frameworks) CHECK(c.shown == (c.framework == cpplan::Framework::kDiffusers));
  for (const auto& row : rec->rows) CHECK(row.frameworks.has(cpplan::Framework::kDiffusers));
  CHECK(rec->report.framework == cpplan::Framework::kDiffusers);
}

TEST_CASE("For throughput (--objective) the answer is replica splits, not a ranking", "[session][recommend]") {
  Options o = flux("8", "1024x1024");
  o.objective = "throughput";
  const auto rec = recommend(o);
  REQUIRE(rec->fleet);
  CHECK(rec->rows.empty());
  CHECK_FALSE(rec->fleet->rows.empty());
  for (const auto& row : rec->fleet->rows) CHECK(row.replicas * row.gpus_per_replica + row.idle_gpus == 8);
}

TEST_CASE("check: one plan's verdict with its typed violations", "[session][recommend]") {
  Options o = flux("4", "1008x1008");
  o.ring = "4";
  auto resolved = engine().resolve(o);
  REQUIRE(resolved.ok());
  auto checked = engine().check(*resolved);
  REQUIRE(checked.ok());
  const auto& plan = (*checked)->plan.plan;
  REQUIRE(plan.violations.size() == 1);
  CHECK(plan.violations.front() == cpplan::Violation{cpplan::RuleId::kEvenSplitImageTokens, "ring_degree", "4",
                                                     "must divide image tokens = 3969", Lever::kResolution});
}
