// Each framework runs a plan with the text-encoder and VAE placement it offers (issue 33): the
// plan is runnable by a framework when SOME placement it offers works, and the framework's own
// time and memory are those of that placement. The verdicts are checked against the framework
// files through unsupported_reason (the framework data, asked placement by placement), not
// through the planner's own bookkeeping.
#include <catch2/catch.hpp>

#include <string>

#include "costmodel/hardware_model.h"
#include "planner/planner.h"
#include "planner/snippets.h"
#include "tests/support/fixtures.h"

using cpplan::Framework;
using cpplan::kFrameworkCount;
using cpplan::PipelinePlacement;
using cpplan::TextEncoderPlacement;
using cpplan::VaePlacement;
using cpplan::planner::PlanReport;
using cpplan::planner::RankedPlan;
using cpplan::planner::unsupported_reason;
using cpplan::test::make_query;

namespace {

PlanReport plan(const cpplan::Query& q, const cpplan::planner::PlannerOptions& options = {}) {
  const cpplan::costmodel::DatasheetModel hw(*q.hardware);
  const cpplan::costmodel::CostModel cost(hw);
  return cpplan::planner::Planner(cost).plan(q, options);
}

// Whether the framework file accepts the plan with some placement the cost model priced for it.
bool some_placement_runs(Framework f, const cpplan::Query& q, const RankedPlan& p) {
  const auto& pr = *p.predicted;
  for (int i = 0; i < pr.pipeline_option_count; ++i)
    if (unsupported_reason(f, q, p.plan, pr.pipeline_options[i].cost.placement()).empty()) return true;
  return false;
}

}  // namespace

TEST_CASE("No plan is reported unrunnable by a framework that runs it with another placement",
          "[planner][frameworks][placement]") {
  int plans = 0, own_placement = 0;
  for (const auto& model : cpplan::test::catalog().models()) {
    for (const int gpus : {2, 4, 8}) {
      const auto q = make_query(model.name, gpus);
      const PlanReport r = plan(q);
      for (const RankedPlan& p : r.plans) {
        if (!p.plan.valid()) continue;
        ++plans;
        const auto snippets = cpplan::planner::snippets_for(q, p);
        for (int i = 0; i < kFrameworkCount; ++i) {
          const auto f = static_cast<Framework>(i);
          INFO(model.name << " on " << gpus << " GPUs, " << cpplan::plan_label(p.plan.config) << ", "
                          << cpplan::to_string(f));
          const bool runs = some_placement_runs(f, q, p);
          CHECK(p.frameworks.has(f) == runs);
          CHECK(p.run(f).runs == runs);
          CHECK(snippets[i].unavailable.empty() == runs);
          if (!runs) continue;
          // The placement it runs with is one it offers, and the script is written for it.
          CHECK(unsupported_reason(f, q, p.plan, p.run(f).where).empty());
          CHECK_FALSE(snippets[i].text.empty());
          own_placement += p.run(f).where != p.predicted->pipeline.placement();
        }
      }
    }
  }
  CHECK(plans > 1000);
  CHECK(own_placement > 0);  // some framework's placement is not the plan's (xDiT's one decoder, ...)
}

TEST_CASE("xDiT runs CogVideoX-5B's ulysses 2 x cfg 2 with the VAE on one GPU",
          "[planner][frameworks][placement]") {
  // frameworks.md: "cogvideox_usp_example.py refuses PipeFusion and parallel VAE"; it runs USP and
  // CFG parallel. SGLang Diffusion (its flags: --vae-sp) decodes in parallel, so the plan's own
  // placement is the parallel decode, and xDiT's is one decoder, with its own image time and memory.
  const auto q = make_query("cogvideox-5b", 4, 0, 0, 0, "l40");
  const PlanReport r = plan(q);
  const RankedPlan* usp_cfg = nullptr;
  for (const RankedPlan& p : r.plans)
    if (p.plan.valid() && cpplan::plan_label(p.plan.config) == "ulysses 2 x cfg 2" &&
        !p.plan.config.context_parallel_config.ulysses_anything)
      usp_cfg = &p;
  REQUIRE(usp_cfg);
  REQUIRE(usp_cfg->frameworks.has(Framework::kXdit));
  const auto& xdit = usp_cfg->run(Framework::kXdit);
  CHECK(xdit.where.vae == VaePlacement::kSingle);
  CHECK(usp_cfg->predicted->pipeline.vae == VaePlacement::kParallel);
  // One decoder decodes the whole video: slower than four, and its activations are not divided.
  CHECK(xdit.image_ms > usp_cfg->predicted->image_ms);
  CHECK(xdit.peak_bytes > usp_cfg->predicted->peak_mem_bytes);
  const std::string command = cpplan::planner::snippets_for(q, *usp_cfg)[static_cast<int>(Framework::kXdit)].text;
  CHECK_THAT(command, Catch::Contains("examples/cogvideox_usp_example.py"));
  CHECK_THAT(command, Catch::Contains("--ulysses_degree 2 --ring_degree 1 --use_cfg_parallel"));
  CHECK_THAT(command, !Catch::Contains("--use_parallel_vae"));
  // xDiT's fastest plan here is a USP x CFG plan, run with one decoder.
  const RankedPlan* best = cpplan::planner::best_plan(r, Framework::kXdit);
  REQUIRE(best);
  CHECK(best->plan.config.cfg_degree == 2);
  CHECK(best->run(Framework::kXdit).where.vae == VaePlacement::kSingle);
}

TEST_CASE("diffusers runs FLUX.2-dev's tp 8 on 8 x L20 with its text encoder streamed or freed",
          "[planner][frameworks][placement]") {
  // FLUX.2-dev's Mistral-3 24B text encoder is about 48 GB in bf16: it alone fills an L20 (48 GB),
  // so no plan fits with the encoder on every GPU. diffusers offers group offloading (offloaded) and
  // freeing after encoding (sequential), not a sharded encoder; tp 8 with one of those fits.
  const auto q = make_query("flux.2-dev", 8, 1024, 1024, 0, "l20");
  cpplan::planner::PlannerOptions options;
  options.framework = Framework::kDiffusers;
  PlanReport r = plan(q, options);
  cpplan::planner::keep_plans_of(r, Framework::kDiffusers);
  REQUIRE(r.valid_count > 0);
  const RankedPlan& top = r.plans.front();
  CHECK(cpplan::plan_label(top.plan.config) == "tp 8");
  const PipelinePlacement where = top.run(Framework::kDiffusers).where;
  CHECK((where.text_encoder == TextEncoderPlacement::kOffloaded ||
         where.text_encoder == TextEncoderPlacement::kSequential));
  CHECK(top.run(Framework::kDiffusers).fits);
  // The ranking for diffusers takes its placement: the plan's own figures are diffusers'.
  CHECK(top.predicted->pipeline.placement() == where);
  CHECK(top.predicted->fits_memory);
}

TEST_CASE("Plans only cpplan runs rank after those a framework runs, unless --framework cpplan",
          "[planner][frameworks][placement]") {
  // Qwen-Image at 1328x1328 on 4 GPUs: 6889 image tokens split 4 ways only unevenly; pipefusion 2 x
  // cfg 2 is the fastest (its pipe fills and drains once per image), and no framework runs it (xDiT
  // has no PipeFusion for Qwen-Image; diffusers and cache-dit have neither PipeFusion nor CFG
  // parallelism).
  const auto q = make_query("qwen-image", 4, 1328, 1328);
  const PlanReport ranked = plan(q);
  cpplan::planner::PlannerOptions by_time;
  by_time.framework_plans_first = false;
  const PlanReport every = plan(q, by_time);
  REQUIRE(every.plans.front().plan.valid());
  CHECK(every.plans.front().cpplan_only());
  CHECK(cpplan::plan_label(every.plans.front().plan.config) == "pipefusion 2 (2 patches) x cfg 2");
  CHECK_FALSE(ranked.plans.front().cpplan_only());
  // In the default ranking every fitting plan some framework runs comes before every one it does not.
  bool seen_cpplan_only = false;
  for (const RankedPlan& p : ranked.plans) {
    if (!p.plan.valid() || !p.predicted->fits_memory) break;
    if (p.cpplan_only()) seen_cpplan_only = true;
    else CHECK_FALSE(seen_cpplan_only);
  }
  CHECK(seen_cpplan_only);
}
