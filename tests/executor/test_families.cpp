// Every plan the planner accepts for the tiny profile of every model family runs, on real ranks
// (one thread each, Gloo over loopback, one in-process store), reproduces the single-rank latents
// and sends the bytes the cost model predicts: for 2, 3 and 4 GPUs, each ring x ulysses x tp x
// pipefusion x cfg factorization and anything mode that planner::validate() accepts at the
// profile's default size, and each plan with Ring again with rotate_method p2p. PipeFusion plans
// run with their warm-up steps = steps (exact: no stale K/V; tests/executor/test_pipefusion.cpp
// measures the approximation) and M = P (the other patch counts cut the same stages); the valid
// plans the executor does not run yet (session/engine/executor_support.h) are counted and skipped.
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <iostream>
#include <string>
#include <vector>

#include "core/plan.h"
#include "costmodel/cost_model.h"
#include "executor/model.h"
#include "executor/runner.h"
#include "session/engine/executor_support.h"
#include "planner/planner.h"
#include "planner/validate.h"
#include "session/engine/local_model.h"

// Last: LibTorch (above) defines glog's CHECK, which would replace Catch's and go uncounted.
#undef CHECK
#include <catch2/catch.hpp>

#include "tests/executor/rank_threads.h"
#include "tests/support/fixtures.h"

namespace {

using cpplan::ParallelConfig;
using cpplan::executor::RunFigures;
using cpplan::executor::RunSpec;

// `draws`: the model's weights drawn once for every run that shares it (runner.h).
RunSpec spec_for(const cpplan::Query& q, const ParallelConfig& pc,
                 std::shared_ptr<cpplan::executor::WeightDraws> draws = nullptr) {
  RunSpec s;
  s.weight_draws = std::move(draws);
  s.model = q.model;
  s.resolution = q.resolution;
  s.frames = q.frames;
  s.warmup = 0;
  s.steps = 1;
  s.config = pc;
  s.seed = 11;
  s.timeout = std::chrono::seconds(60);
  return s;
}

// run_rank on every rank of the plan, one thread each; rank 0's figures (its latents), with the
// bytes sent per step of the rank that sent the most (what `cpplan run` records).
RunFigures run_threads(const RunSpec& s) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  const int world = static_cast<int>(s.config.world_size());
  const auto ranks = cpplan::test::on_rank_threads<RunFigures>(
      world, [&](int rank) { return cpplan::executor::run_rank(s, store, rank, world); });
  RunFigures out = ranks[0];
  for (const RunFigures& f : ranks) out.bytes_sent = std::max(out.bytes_sent, f.bytes_sent);
  return out;
}

// The bytes per rank per step the cost model predicts for the plan (the most loaded rank's), its
// activations in fp32 as these CPU runs hold them (as `cpplan run` predicts its fp32 runs).
double predicted_bytes(const cpplan::Query& q, const ParallelConfig& pc) {
  const cpplan::ModelProfile fp32 = cpplan::session::as_executed(*q.model, true);
  cpplan::Query as_run = q;
  as_run.model = &fp32;
  const cpplan::costmodel::DatasheetModel hw(*q.hardware);
  const auto variant = cpplan::planner::make_plan(as_run, pc).variant;
  return cpplan::costmodel::CostModel(hw).predict(as_run, pc, variant).comm_bytes;
}

// The plan as accepted, and with Ring's K/V passed peer to peer where it has a p2p form.
std::vector<ParallelConfig> forms(ParallelConfig pc) {
  std::vector<ParallelConfig> out = {pc};
  auto& cp = pc.context_parallel_config;
  if (pc.ring() > 1 && !cp.ring_anything) {
    cp.rotate_method = cpplan::RotateMethod::kP2P;
    out.push_back(pc);
  }
  return out;
}

double relative_error(const at::Tensor& a, const at::Tensor& reference) {
  return (a - reference).abs().max().item<double>() / reference.abs().max().item<double>();
}

}  // namespace

// The tests below share one model's weight draws across their runs (runner.h): a run that reads
// them computes what ranks drawing their own compute, on every rank count and stage split.
TEST_CASE("ranks that read shared weight draws compute the latents of ranks that draw their own",
          "[executor][multirank][families]") {
  for (const std::string model : {"flux-tiny", "wan22-tiny"}) {  // wan22-tiny: two transformers, seeds s and s + 1
    const auto draws = cpplan::executor::make_weight_draws();
    ParallelConfig stages = cpplan::test::config(1, 1);
    stages.pipefusion.degree = stages.pipefusion.patches = stages.pipefusion.warmup_steps = 2;
    for (const ParallelConfig& pc : {cpplan::test::config(1, 1), cpplan::test::config(2, 2),
                                     cpplan::test::config(1, 2, 2), stages}) {
      const cpplan::Query q = cpplan::test::make_query(model, static_cast<int>(pc.world_size()));
      INFO(model << " " << cpplan::plan_label(pc));
      const at::Tensor own = run_threads(spec_for(q, pc)).latents;
      CHECK(relative_error(run_threads(spec_for(q, pc, draws)).latents, own) == 0);
    }
  }
}

TEST_CASE("every plan the planner accepts for each family's tiny profile runs and reproduces one rank",
          "[executor][multirank][families]") {
  for (const std::string model :
       {"flux-tiny", "flux2-tiny", "qwen-tiny", "sd35-tiny", "hunyuan-tiny", "cogvideox-tiny", "wan-tiny", "latte-tiny",
        "hunyuandit-tiny", "hidream-tiny", "wan22-tiny", "sana-tiny", "mochi-tiny"}) {
    const cpplan::Query one = cpplan::test::make_query(model, 1);
    const auto draws = cpplan::executor::make_weight_draws();
    const at::Tensor reference = run_threads(spec_for(one, cpplan::test::config(1, 1), draws)).latents;
    int accepted = 0, skipped = 0, bytes_checked = 0;
    double worst = 0;
    for (int gpus : {2, 3, 4}) {
      const cpplan::Query q = cpplan::test::make_query(model, gpus);
      for (const ParallelConfig& accepted_plan : cpplan::planner::enumerate(gpus)) {
        if (!cpplan::planner::validate(q, accepted_plan).empty()) continue;
        if (accepted_plan.pp() > 1 && accepted_plan.pipefusion.patches != accepted_plan.pp()) continue;
        if (!cpplan::session::unsupported_plan(*q.model, accepted_plan).empty()) {
          ++skipped;
          continue;
        }
        for (ParallelConfig pc : forms(accepted_plan)) {
          if (pc.pp() > 1) pc.pipefusion.warmup_steps = q.steps;  // >= the run's steps: every pass whole, as predicted
          ++accepted;
          const auto& cp = pc.context_parallel_config;
          const bool even = !cp.ulysses_anything && !cp.ring_anything;
          INFO(model << " on " << gpus << " ranks: " << cpplan::plan_label(pc)
                     << (cp.ulysses_anything ? " (Ulysses Anything)" : cp.ring_anything ? " (Ring Anything)" : "")
                     << (cp.rotate_method == cpplan::RotateMethod::kP2P ? " (p2p)" : ""));
          const RunFigures f = run_threads(spec_for(q, pc, draws));
          REQUIRE(f.latents.sizes() == reference.sizes());
          const double error = relative_error(f.latents, reference);
          worst = std::max(worst, error);
          CHECK(error <= 1e-4);
          const double predicted = predicted_bytes(q, pc);
          INFO("bytes sent per rank per step: measured " << f.bytes_sent << ", cost model " << predicted);
          CHECK(f.bytes_sent > 0);
          // Uneven splits: the cost model takes the longest share on every rank.
          CHECK(f.bytes_sent == Approx(predicted).epsilon(even ? 1e-9 : 0.05));
          ++bytes_checked;
        }
      }
    }
    std::cout << model << ": " << accepted << " runs of the plans the planner accepts on 2, 3 and 4 ranks (Ring "
              << "plans also with p2p); worst relative difference from one rank " << worst << "; " << bytes_checked
              << " sent the bytes the cost model predicts; " << skipped
              << " valid plans the executor does not run yet (session/engine/executor_support.h)\n";
    CHECK(accepted > 0);
    CHECK(bytes_checked > 0);
  }
}

// Issue 57: the plans frameworks run that the executor once refused, checked as the others: long
// skips across PipeFusion stages (hunyuandit-tiny), linear attention and the conv-GLU's rows across
// them (sana-tiny), Ring over spatial tokens with temporal blocks local (latte-tiny), context
// parallelism inside PipeFusion stages (all three and flux-tiny). Every plan the planner accepts on
// 2 and 4 ranks, every patch count M it accepts (W = steps: exact), must be one the executor runs,
// reproduce the single-rank latents and send the cost model's bytes: the family test above runs
// them with M = P, this one the other patch counts.
TEST_CASE("every valid plan of the tiny HunyuanDiT and SANA and Latte and FLUX on 2 and 4 ranks is one the executor "
          "runs with every patch count",
          "[executor][multirank][families]") {
  for (const std::string model : {"hunyuandit-tiny", "sana-tiny", "latte-tiny", "flux-tiny"}) {
    const cpplan::Query one = cpplan::test::make_query(model, 1);
    const auto draws = cpplan::executor::make_weight_draws();
    const at::Tensor reference = run_threads(spec_for(one, cpplan::test::config(1, 1), draws)).latents;
    int runs = 0;
    for (int gpus : {2, 4}) {
      const cpplan::Query q = cpplan::test::make_query(model, gpus);
      for (const auto& u : cpplan::session::unsupported_plans(q)) FAIL_CHECK(model << ": " << u.label << ": " << u.reason);
      for (ParallelConfig pc : cpplan::planner::enumerate(gpus)) {
        if (!cpplan::planner::validate(q, pc).empty()) continue;
        // The family test above runs the others (M = P, and every plan without PipeFusion).
        if (pc.pp() == 1 || pc.pipefusion.patches == pc.pp()) continue;
        pc.pipefusion.warmup_steps = q.steps;  // the query's steps (4), above the run's (1): every pass whole
        INFO(model << " on " << gpus << " ranks: " << cpplan::plan_label(pc));
        const RunFigures f = run_threads(spec_for(q, pc, draws));
        REQUIRE(f.latents.sizes() == reference.sizes());
        CHECK(relative_error(f.latents, reference) <= 1e-4);
        const double predicted = predicted_bytes(q, pc);
        INFO("bytes sent per rank per step: measured " << f.bytes_sent << ", cost model " << predicted);
        CHECK(f.bytes_sent == Approx(predicted).epsilon(1e-9));
        ++runs;
      }
    }
    std::cout << model << ": " << runs << " PipeFusion plans of 2 and 4 ranks with M != P\n";
    if (model != "latte-tiny") CHECK(runs > 0);  // Latte's temporal blocks take no PipeFusion
  }
}

TEST_CASE("wan22-tiny runs its first transformer (seed) for the first ceil(steps / 2) steps, the second (seed + 1) after",
          "[executor][multirank][families]") {
  const cpplan::Query two = cpplan::test::make_query("wan22-tiny", 1), one = cpplan::test::make_query("wan-tiny", 1);
  RunSpec a = spec_for(two, cpplan::test::config(1, 1)), b = spec_for(one, cpplan::test::config(1, 1));
  // One step: only the high-noise transformer runs, drawn from the same seed as wan-tiny's one.
  a.steps = b.steps = 1;
  CHECK(relative_error(run_threads(a).latents, run_threads(b).latents) == 0);
  // Two steps: the second runs the low-noise transformer, other weights than wan-tiny's.
  a.steps = b.steps = 2;
  CHECK(relative_error(run_threads(a).latents, run_threads(b).latents) > 1e-3);
}

// Fully sharded weights (fs_degree F, FSDP): each rank keeps 1/F of every block, flattened and padded
// to F equal chunks, and all-gathers it over the fs group (F consecutive ranks) before the block
// runs, once per forward pass (true CFG batches both prompts into one pass or gives each CFG rank
// one). The latents must stay the single-rank run's, and each rank must send its twin plan's bytes
// (the same plan without fully_shard) plus (F - 1) chunks of fp32 per block.
namespace {

double fully_shard_bytes(const std::vector<int64_t>& block_elements, int f) {
  double bytes = 0;
  for (const int64_t n : block_elements) bytes += static_cast<double>((n + f - 1) / f) * (f - 1) * 4;
  return bytes;
}

// Each of `plans` with fs_degree F (the pair's second) against the single-rank latents and its
// unsharded twin's bytes; `block_elements`: the executor's tensors per block.
void check_fully_sharded(const std::string& model, const std::vector<std::pair<ParallelConfig, int>>& plans,
                         const std::vector<int64_t>& block_elements) {
  const cpplan::Query one = cpplan::test::make_query(model, 1);
  const auto draws = cpplan::executor::make_weight_draws();
  const at::Tensor reference = run_threads(spec_for(one, cpplan::test::config(1, 1), draws)).latents;
  for (const auto& [twin, f] : plans) {
    ParallelConfig sharded = twin;
    sharded.fs_degree = f;
    const cpplan::Query q = cpplan::test::make_query(model, static_cast<int>(twin.world_size()));
    INFO(model << ": " << cpplan::plan_label(twin) << " with fully_shard " << f);
    REQUIRE(cpplan::planner::validate(q, sharded).empty());
    const RunFigures r = run_threads(spec_for(q, sharded, draws)), unsharded = run_threads(spec_for(q, twin, draws));
    REQUIRE(r.latents.sizes() == reference.sizes());
    CHECK(relative_error(r.latents, reference) <= 1e-4);
    const double gathers = fully_shard_bytes(block_elements, f);
    INFO("bytes per rank per step: measured " << r.bytes_sent << ", twin " << unsharded.bytes_sent << " + gathers "
                                              << gathers);
    CHECK(r.bytes_sent == Approx(unsharded.bytes_sent + gathers).epsilon(1e-9));
  }
}

using cpplan::test::config;  // ring, ulysses, tp, cfg

// flux-tiny, counted like its profile: double block 2 x 666,464 = 1,332,928 (two streams), single
// block 555,104; F = 2: chunks of 666,464 and 277,552, F = 4: 333,232 and 138,776.
const std::vector<int64_t> kFluxTinyBlocks = {1332928, 1332928, 555104, 555104};

}  // namespace

TEST_CASE("fully sharded weights on flux-tiny (double and single-stream blocks) reproduce the single-rank latents",
          "[executor][multirank][fully_shard]") {
  check_fully_sharded("flux-tiny",
                      {{config(1, 2), 2},
                       {config(1, 4), 2},  // two groups of 2: ranks {0, 1} and {2, 3}
                       {config(2, 2), 4}},
                      kFluxTinyBlocks);
}

TEST_CASE("fully sharded weights on cogvideox-tiny (sequential blocks, true CFG) reproduce the single-rank latents",
          "[executor][multirank][fully_shard]") {
  // Its profile counts the executor's block: adaLN 2 x 222,336 + attention 148,256 + FFN 295,872.
  check_fully_sharded("cogvideox-tiny", {{config(1, 2), 2}, {config(1, 2, 1, 2), 4}}, {888800, 888800});
}

TEST_CASE("fully sharded weights on wan-tiny (cross-attention blocks) reproduce the single-rank latents",
          "[executor][multirank][fully_shard]") {
  // Block: table 6D = 1,152; self and cross attention 4(D^2 + D) + q/k norm 2 x 16 = 148,256 each;
  // FFN D*F + F + F*D + D = 197,312 (D = 192, F = 512) -> 494,976.
  check_fully_sharded("wan-tiny", {{config(1, 1, 1, 2), 2}, {config(1, 2, 1, 2), 4}}, {494976, 494976});
}

TEST_CASE("fully sharded weights on hunyuandit-tiny (long skips) and hidream-tiny (experts) reproduce one rank",
          "[executor][multirank][fully_shard]") {
  // hunyuandit-tiny (its profile's counts): block 593,536; a skip block adds skip_linear 73,920.
  check_fully_sharded("hunyuandit-tiny", {{config(1, 2), 2}, {config(1, 2, 1, 2), 4}},
                      {593536, 593536, 593536, 667456, 667456});
  // hidream-tiny: double block 2,964,168, single (sequential) block 1,482,084.
  check_fully_sharded("hidream-tiny", {{config(1, 2), 2}}, {2964168, 1482084, 1482084});
}

TEST_CASE("fully sharded weights on sana-tiny (conv-GLU FFN) and mochi-tiny (narrower text) reproduce one rank",
          "[executor][multirank][fully_shard]") {
  // As their profiles count the executor's blocks: sana-tiny 18,112 (the conv-GLU's depthwise taps
  // and bias among them), mochi-tiny 93,760 (the text stream's weights at its width).
  check_fully_sharded("sana-tiny", {{config(1, 2), 2}}, {18112, 18112});
  check_fully_sharded("mochi-tiny", {{config(2, 1), 2}}, {93760, 93760});
}

// PipeFusion's patch passes (no warm-up step: every pass patched, the K/V of the patches not yet run
// this step read from the previous, here empty, buffer) send what the cost model prices for them:
// each patch's CP collectives over its own run of tokens (the conv-GLU's halos of that run,
// linear attention's whole state), the hidden states between stages patch by patch.
TEST_CASE("PipeFusion's patch passes send the bytes the cost model predicts for them", "[executor][multirank][families]") {
  for (const std::string model : {"hunyuandit-tiny", "sana-tiny", "flux-tiny"}) {
    int runs = 0;
    for (int gpus : {2, 4}) {
      const cpplan::Query q = cpplan::test::make_query(model, gpus);
      for (ParallelConfig pc : cpplan::planner::enumerate(gpus)) {
        if (pc.pp() == 1 || !cpplan::planner::validate(q, pc).empty()) continue;
        pc.pipefusion.warmup_steps = 0;
        INFO(model << " on " << gpus << " ranks: " << cpplan::plan_label(pc));
        const RunFigures f = run_threads(spec_for(q, pc));
        const double predicted = predicted_bytes(q, pc);
        INFO("bytes sent per rank per step: measured " << f.bytes_sent << ", cost model " << predicted);
        CHECK(f.bytes_sent == Approx(predicted).epsilon(1e-9));
        ++runs;
      }
    }
    std::cout << model << ": " << runs << " PipeFusion plans of 2 and 4 ranks with every pass patched\n";
    CHECK(runs > 0);
  }
}
