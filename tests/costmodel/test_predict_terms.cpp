// The steps of CostModel::predict one by one (costmodel/predict_terms.h): the rest of a step, the
// transformer's weights per GPU and the choice of a placement. Every expected value is derived by
// hand below from the profile's numbers and round figures of a stand-in hardware model.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "costmodel/predict_terms.h"
#include "tests/costmodel/round_hardware.h"
#include "tests/support/fixtures.h"

using cpplan::BlockGroup;
using cpplan::BlockKind;
using cpplan::Bytes;
using cpplan::ModelProfile;
using cpplan::RuntimeProfile;
using cpplan::TextEncoderPlacement;
using cpplan::VaePlacement;
using cpplan::costmodel::Collective;
using cpplan::costmodel::CommAxis;
using cpplan::costmodel::CommGroup;
using cpplan::costmodel::HardwareModel;
using cpplan::costmodel::PlacedPipeline;
using cpplan::costmodel::Prediction;
using cpplan::costmodel::Source;
using cpplan::costmodel::StepContext;
using cpplan::costmodel::StepRestTerms;
using cpplan::costmodel::Timed;
using cpplan::costmodel::add_step_rest;
using cpplan::costmodel::placement_complexity;
using cpplan::costmodel::choose_pipeline;
using cpplan::costmodel::kEveryPipelineOption;
using cpplan::costmodel::step_rest;
using cpplan::costmodel::transformer_weight_bytes;
using cpplan::test::config;
using cpplan::test::make_query;

namespace {

using cpplan::test::RoundHardware;

// 10 us per op, 40 ops outside the blocks, 30 us to issue a collective, 100 us x sqrt(2 ln n) of
// waiting at each collective of n ranks.
RuntimeProfile round_runtime() {
  RuntimeProfile rt;
  rt.name = "round";
  rt.us_per_op = 10;
  rt.collective_us = 30;
  rt.sync_us = 100;
  rt.ops.step = 40;
  return rt;
}

// Qwen-Image at 1024x1024 on `gpus` GPUs with `batch` images, under `pc`, on round figures and the
// round runtime: the step context the rest of a step is priced from (it keeps references to all).
struct QwenStep {
  QwenStep(int gpus, cpplan::ParallelConfig plan, int batch = 1)
      : q(with_batch(make_query("qwen-image", gpus, 1024, 1024), batch)),
        hw(*q.hardware),
        pc(plan),
        ctx(q, pc, cpplan::classify(pc.context_parallel_config), hw, rt, nullptr) {}
  static cpplan::Query with_batch(cpplan::Query query, int batch) {
    query.batch = batch;
    return query;
  }
  const cpplan::Query q;
  const RoundHardware hw;
  const RuntimeProfile rt = round_runtime();
  const cpplan::ParallelConfig pc;
  const StepContext ctx;
};

// Placements with a hand-set once-per-image time (text encoding + decode + 10 ms of host work).
PlacedPipeline placed(TextEncoderPlacement te, VaePlacement vae, double total_ms) {
  PlacedPipeline p;
  p.cost.text_encoder = te;
  p.cost.vae = vae;
  p.cost.host_ms = 10;
  p.cost.vae_decode_ms = 20;
  p.cost.text_encode_ms = total_ms - 30;
  return p;
}

// A prediction of one step whose steps take `steps_ms` in all, with `options` priced.
cpplan::costmodel::Prediction with_options(const std::vector<PlacedPipeline>& options, double steps_ms) {
  cpplan::costmodel::Prediction p;
  p.step_ms = steps_ms;
  for (const PlacedPipeline& o : options) p.pipeline_options[p.pipeline_option_count++] = o;
  return p;
}
constexpr double kRoomy = 1e12;  // bytes per GPU: every option fits

}  // namespace

TEST_CASE("The rest of a step gathers the CP output and both CFG predictions, and updates the latents in fp32",
          "[costmodel][predict][step_rest]") {
  // Qwen-Image at 1024x1024: 1024 / (VAE 8 x patch 2) = 64 -> 64 x 64 = 4096 image tokens of 64
  // channels (16 latent x 2x2) in bf16; true CFG. Ulysses 2 x CFG 2 on 4 GPUs, batch 1: each
  // rank runs one pass (2 passes / cfg 2) of one image, so samples = 1.
  const QwenStep step(4, config(1, 2, 1, 2));
  REQUIRE(step.ctx.samples == 1);

  const StepRestTerms rest = step_rest(step.ctx);
  // CP output gather: ceil(4096 / 2) x 2 ranks x 64 x 2 bytes = 524,288 bytes, busbw factor of
  // an all-gather of 2 = 1/2: 0.01 + 262,144e-6 = 0.272144 ms.
  CHECK(rest.cp_gather_ms == Approx(0.272144));
  // CFG gather: cfg 2 x (4096 x 64 x 2 = 524,288) bytes = 1,048,576 x 1/2: 0.01 + 0.524288 ms.
  CHECK(rest.cfg_gather_ms == Approx(0.534288));
  CHECK(rest.cost.comm_ms == Approx(0.272144 + 0.534288));
  // Bytes sent: 524,288 / 2 + 1,048,576 / 2 = 786,432.
  CHECK(rest.bytes_sent == 786432.0);
  // Scheduler: read latents and velocity, write latents, fp32: 3 x 4096 x 64 x 4 = 3,145,728 bytes;
  // the output LayerNorm and modulation read and write the rank's 2048 image tokens of D = 3072
  // twice: 4 x 2048 x 3072 x 2 = 50,331,648 bytes.
  CHECK(rest.cost.memory_ms == Approx(3.145728 + 50.331648));
  // Host: 40 ops x 10 us + 2 collectives x 30 us = 0.46 ms.
  CHECK(rest.cost.collective_calls == 2);
  CHECK(rest.cost.host_ms == Approx(0.46));
  // Waits: 100 us x (sqrt(2 ln 2) for the CP group + sqrt(2 ln 2) for the CFG group).
  const double wait_ms = 0.1 * 2.0 * std::sqrt(2.0 * std::log(2.0));  // 0.2354820...
  CHECK(rest.cost.sync_ms == Approx(wait_ms));
  CHECK(rest.cost.count == 1);
  CHECK(rest.cost.sources.comm == Source::kMeasured);
  CHECK(rest.cost.sources.memory == Source::kDatasheet);

  // Added to an empty step: asynchronous launches, so the GPU's 53.477376 + 0.806432 = 54.283808 ms
  // bound the host's 0.46 ms; then the waits.
  Prediction p;
  std::optional<Source> source;
  add_step_rest(p, rest, source);
  CHECK(p.step_ms == Approx(54.283808 + wait_ms));
  CHECK(p.compute_ms == Approx(53.477376));
  CHECK(p.comm_ms == Approx(0.806432));
  CHECK(p.host_ms == Approx(0.46));
  CHECK(p.axis_comm_ms[static_cast<int>(CommAxis::kCp)] == Approx(0.272144));
  CHECK(p.axis_comm_ms[static_cast<int>(CommAxis::kCfg)] == Approx(0.534288));
  CHECK(p.axis_comm_ms[static_cast<int>(CommAxis::kTp)] == 0);
  CHECK(p.comm_bytes == 786432.0);
  CHECK(p.step_comm_extra_ms == Approx(0.806432));
  CHECK(source == Source::kMeasured);
}

TEST_CASE("On one GPU the rest of a step is the scheduler's update and the host's ops, without collectives",
          "[costmodel][predict][step_rest]") {
  // Qwen-Image, batch 2 on one GPU: both CFG passes of both images in one forward (samples 4);
  // the scheduler updates 2 images: 3 x 4096 x 64 x 4 x 2 = 6,291,456 bytes = 6.291456 ms; the
  // output norm and modulation 4 x 4 samples x 4096 x 3072 x 2 = 402,653,184 bytes.
  const QwenStep step(1, config(1, 1), 2);
  REQUIRE(step.ctx.samples == 4);
  const StepRestTerms rest = step_rest(step.ctx);
  CHECK(rest.cost.memory_ms == Approx(6.291456 + 402.653184));
  CHECK(rest.cost.comm_ms == 0);
  CHECK(rest.bytes_sent == 0);
  CHECK(rest.cost.collective_calls == 0);
  CHECK(rest.cost.host_ms == Approx(0.4));  // 40 ops x 10 us
  CHECK(rest.cost.sync_ms == 0);
  CHECK_FALSE(rest.cost.sources.comm.has_value());
}

TEST_CASE("The rest of a step runs the transformer's embedders and output layer on the rank's tokens",
          "[costmodel][predict][step_rest]") {
  // Qwen-Image at 1024x1024 under Ulysses 2 x CFG 2 (samples 1): the rank's 4096 / 2 = 2048 image
  // tokens and 512 / 2 = 256 text tokens (its text is split like the image), D = 24 x 128 = 3072,
  // 64 latent channels, the Qwen2.5-VL encoder's 3584 features. GEMMs, 2 FLOPs per multiply-add:
  //   img_in 2048 x 64 x 3072 = 402,653,184; txt_in 256 x 3584 x 3072 = 2,818,572,288;
  //   timestep MLP 1 x 256 x 3072 = 786,432 and 1 x 3072 x 3072 = 9,437,184;
  //   norm_out's adaLN 1 x 3072 x 6144 = 18,874,368; proj_out 2048 x 3072 x 64 = 402,653,184
  //   -> 3,652,976,640 multiply-adds = 7,305,953,280 FLOPs.
  const QwenStep split(4, config(1, 2, 1, 2));
  REQUIRE(split.ctx.samples == 1);
  REQUIRE(split.ctx.text_local == 256);
  CHECK(step_rest(split.ctx).cost.flops == Approx(7305953280.0));

  // Batch 2 on one GPU (samples 4): every GEMM on 4 samples, the 4096 image and 512 text tokens
  // whole: 4 x (4096 x 64 x 3072 x 2 + 512 x 3584 x 3072 + 256 x 3072 + 3072 x 3072 + 3072 x 6144)
  // = 4 x 7,276,855,296 multiply-adds = 58,214,842,368 FLOPs.
  const QwenStep batched(1, config(1, 1), 2);
  REQUIRE(batched.ctx.samples == 4);
  CHECK(step_rest(batched.ctx).cost.flops == Approx(58214842368.0));
}

TEST_CASE("Tensor parallelism divides the blocks' linear weights and leaves the rest of the transformer whole",
          "[costmodel][predict][memory][tp]") {
  // hidden D = 2 heads x 4 = 8 (D^2 = 64), GELU FFN of 32: FFN weights 2 x 8 x 32 = 512.
  // Per token: self-attention blocks 4 D^2 + 512 = 768; cross blocks 768 + 2 D^2 (cross q, out) = 896.
  ModelProfile m;
  m.heads = 2;
  m.head_dim = 4;
  m.ffn_hidden = 32;
  m.ffn_kind = cpplan::FfnKind::kGelu;
  m.bytes_per_param = 2;
  m.params = 10000;
  m.blocks = {BlockGroup{BlockKind::kDouble, 2}, BlockGroup{BlockKind::kSingle, 3}, BlockGroup{BlockKind::kCross, 1}};
  // Sharded: double 2 streams x 768 x 2 blocks = 3072; single 768 x 3 = 2304; cross 896 + the
  // text's K/V 2 D^2 = 1024, x 1. Total 6400 of 10,000 parameters; 3600 stay whole.
  CHECK(transformer_weight_bytes(m, 1) == 20000.0);           // (6400 + 3600) x 2
  CHECK(transformer_weight_bytes(m, 2) == 13600.0);           // (3200 + 3600) x 2
  CHECK(transformer_weight_bytes(m, 4) == 10400.0);           // (1600 + 3600) x 2
  // SD3.5-medium's image-only self-attention adds 4 D^2 = 256 per block: 6400 + 2 x 256 = 6912.
  m.blocks[0].image_self_attention = true;
  CHECK(transformer_weight_bytes(m, 2) == 2.0 * (6912.0 / 2 + 3088.0));  // 13,088
  // The sharded part never exceeds the parameters: with 5000 of them all 5000 are divided.
  m.blocks[0].image_self_attention = false;
  m.params = 5000;
  CHECK(transformer_weight_bytes(m, 2) == 5000.0);  // (2500 + 0) x 2
}

TEST_CASE("A placement's complexity counts what it asks of a framework beyond loading the pipeline",
          "[costmodel][predict][placement]") {
  using TE = TextEncoderPlacement;
  CHECK(placement_complexity(placed(TE::kReplicated, VaePlacement::kSingle, 100).cost) == 0);
  CHECK(placement_complexity(placed(TE::kOffloaded, VaePlacement::kSingle, 100).cost) == 1);
  CHECK(placement_complexity(placed(TE::kSequential, VaePlacement::kSingle, 100).cost) == 1);
  CHECK(placement_complexity(placed(TE::kSharded, VaePlacement::kSingle, 100).cost) == 2);
  CHECK(placement_complexity(placed(TE::kSharded, VaePlacement::kParallel, 100).cost) == 3);
  CHECK(placement_complexity(placed(TE::kReplicated, VaePlacement::kParallel, 100).cost) == 1);
}

TEST_CASE("The simplest placement within 2% of the fastest wins, and of equally simple ones the faster",
          "[costmodel][predict][placement]") {
  using TE = TextEncoderPlacement;
  // Replicated 100 ms (complexity 0), sharded + parallel decode 80 ms (3), offloaded 85 ms (1).
  const std::vector<PlacedPipeline> fitting = {placed(TE::kReplicated, VaePlacement::kSingle, 100),
                                               placed(TE::kSharded, VaePlacement::kParallel, 80),
                                               placed(TE::kOffloaded, VaePlacement::kSingle, 85)};
  const auto choose = [](const std::vector<PlacedPipeline>& o, double steps_ms, unsigned allowed = kEveryPipelineOption) {
    return choose_pipeline(with_options(o, steps_ms), allowed, 1, kRoomy);
  };
  // Steps 1000 ms: budget 80 + 0.02 x (1000 + 80) = 101.6 ms: all three; the replicated is simplest.
  CHECK(choose(fitting, 1000) == 0);
  // Steps 400 ms: budget 80 + 0.02 x 480 = 89.6 ms: sharded and offloaded; offloaded is simpler.
  CHECK(choose(fitting, 400) == 2);
  // Steps 100 ms: budget 80 + 0.02 x 180 = 83.6 ms: only the fastest.
  CHECK(choose(fitting, 100) == 1);
  // A sequential encoder at 84 ms is as simple as the offloaded one (1) and faster: it wins at 400 ms.
  std::vector<PlacedPipeline> more = fitting;
  more.push_back(placed(TE::kSequential, VaePlacement::kSingle, 84));
  CHECK(choose(more, 400) == 3);
  // A framework without the sharded encoder and the parallel decode (options 0 and 2, mask 0b101)
  // at 100 ms of steps: fastest 85, budget 85 + 0.02 x 185 = 88.7 ms: the offloaded encoder.
  CHECK(choose(fitting, 100, 0b101u) == 2);
  // Allowed nothing: no option.
  CHECK(choose(fitting, 100, 0u) == -1);
}

TEST_CASE("When no allowed placement fits, the one needing the least memory is chosen",
          "[costmodel][predict][placement]") {
  using TE = TextEncoderPlacement;
  std::vector<PlacedPipeline> o = {placed(TE::kReplicated, VaePlacement::kSingle, 100),
                                   placed(TE::kOffloaded, VaePlacement::kSingle, 150),
                                   placed(TE::kSharded, VaePlacement::kSingle, 90)};
  o[0].memory.text_encoder_weights = 30e9;  // peaks: 30, 10 and 20 GB
  o[1].memory.text_encode = 10e9;
  o[2].memory.text_encoder_weights = 20e9;
  const auto p = with_options(o, 1000);
  CHECK(choose_pipeline(p, kEveryPipelineOption, 1, 5e9) == 1);  // none fits 5 GB: the 10 GB one
  CHECK(choose_pipeline(p, 0b101u, 1, 5e9) == 2);                 // without it: the 20 GB one
  // 25 GB: the offloaded (150 ms) and the sharded (90 ms) fit; budget 90 + 0.02 x 1090 = 111.8 ms.
  CHECK(choose_pipeline(p, kEveryPipelineOption, 1, 25e9) == 2);
}
