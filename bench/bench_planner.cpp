// Planner speed: enumeration + validation + costing + ranking of every plan, for growing GPU
// counts, and the cost model alone (plans per second). Targets (issue 2): every plan for
// 4,096 GPUs ranked in under 20 ms.
#include <benchmark/benchmark.h>

#include <stdexcept>

#include "core/profiles.h"
#include "costmodel/cost_model.h"
#include "planner/planner.h"
#include "planner/validate.h"

namespace {

using namespace cpplan;

const ProfileCatalog& catalog() {
  static const ProfileCatalog c = [] {
    auto loaded = ProfileCatalog::load({CPPLAN_BENCH_PROFILES});
    if (!loaded) throw std::runtime_error(loaded.error().message);
    return std::move(loaded).value();
  }();
  return c;
}

Query flux_query(int gpus) {
  Query q;
  q.model = catalog().find_model("flux.1-dev");
  q.hardware = catalog().find_hardware("h100-sxm");
  q.gpus = gpus;
  q.resolution = {1024, 1024};
  q.steps = 28;
  q.sequence = *compute_sequence(*q.model, q.resolution, 1, q.model->text_tokens);
  return q;
}

void BM_RankAllPlans(benchmark::State& state) {
  const Query q = flux_query(static_cast<int>(state.range(0)));
  const costmodel::DatasheetModel hw(*q.hardware);
  const costmodel::CostModel cost(hw);
  const planner::Planner planner(cost);
  std::size_t plans = 0;
  for (auto _ : state) {
    auto report = planner.plan(q);
    plans = report.plans.size();
    benchmark::DoNotOptimize(report);
  }
  state.counters["plans"] = static_cast<double>(plans);
  state.counters["plans_per_sec"] =
      benchmark::Counter(static_cast<double>(plans) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RankAllPlans)->Arg(1)->Arg(8)->Arg(64)->Arg(512)->Arg(4096)->Unit(benchmark::kMillisecond);

// The cost model alone over the valid plans of a 64-GPU query (the hot loop of sweeps and the GUI):
// every one (0), those without PipeFusion (1), the PipeFusion ones (2), whose block groups are
// priced for one block on the full sequence and on a patch, then summed over the stages (targets:
// kind 1 >= 1e6 plans/s, kind 2 >= 5e5).
void BM_CostModelPredict(benchmark::State& state) {
  const Query q = flux_query(64);
  const costmodel::DatasheetModel hw(*q.hardware);
  const costmodel::CostModel cost(hw);
  const auto kept = [&](const Plan& p) { return state.range(0) == 0 || (p.config.pp() > 1) == (state.range(0) == 2); };
  std::vector<Plan> valid;
  for (const auto& c : planner::enumerate(q.gpus)) {
    Plan p = planner::make_plan(q, c);
    if (p.valid() && kept(p)) valid.push_back(p);
  }
  for (auto _ : state)
    for (const Plan& p : valid) benchmark::DoNotOptimize(cost.predict(q, p.config, p.variant));
  state.counters["plans"] = static_cast<double>(valid.size());
  state.counters["plans_per_sec"] =
      benchmark::Counter(static_cast<double>(valid.size()) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CostModelPredict)->ArgName("kind")->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

void BM_EnumerateAndValidate(benchmark::State& state) {
  const Query q = flux_query(static_cast<int>(state.range(0)));
  for (auto _ : state)
    for (const auto& c : planner::enumerate(q.gpus)) benchmark::DoNotOptimize(planner::validate(q, c));
}
BENCHMARK(BM_EnumerateAndValidate)->Arg(4096)->Unit(benchmark::kMillisecond);

// Topology-aware placement (issue 5): every plan ranked with its best placement on N x dgx-h100
// (8 GPUs per node, rail network). Target: the 1,024-GPU query (128 nodes) in well under a second.
// Each iteration is a cold query: the placer, its graphs and caches are built anew.
void BM_TopologyQuery(benchmark::State& state, const char* model, int width, int height, int frames, int batch) {
  const int nodes = static_cast<int>(state.range(0));
  Query q;
  q.model = catalog().find_model(model);
  q.hardware = catalog().find_hardware("h100-sxm");
  q.topology = catalog().find_topology("dgx-h100");
  q.nodes = nodes;
  q.gpus = nodes * q.topology->gpus;
  q.resolution = {width, height};
  q.frames = frames;
  q.batch = batch;
  q.steps = q.model->default_steps;
  q.sequence = *compute_sequence(*q.model, q.resolution, frames, q.model->text_tokens);
  const costmodel::DatasheetModel hw(*q.hardware);
  const costmodel::CostModel cost(hw);
  const planner::Planner planner(cost);
  std::size_t placed = 0;
  for (auto _ : state) {
    auto report = planner.plan(q);
    placed = static_cast<std::size_t>(report.valid_count);
    benchmark::DoNotOptimize(report);
  }
  state.counters["gpus"] = q.gpus;
  state.counters["placed_plans"] = static_cast<double>(placed);
}
BENCHMARK_CAPTURE(BM_TopologyQuery, wan14b_720p_81f, "wan2.1-t2v-14b", 1280, 720, 81, 1)
    ->Arg(2)->Arg(16)->Arg(128)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TopologyQuery, flux_1024_batch8, "flux.1-dev", 1024, 1024, 1, 8)
    ->Arg(128)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
