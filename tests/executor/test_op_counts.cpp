// The `[ops]` of profiles/runtimes/cpplan.toml, counted: the executor's real model and runner
// (executor/model.cpp, executor/runner.cpp, executor/attention/) run on CPU in fp32 under an ATen
// RecordFunction observer that counts the top-level ops of the rank's thread (an op dispatched
// while no other observed op runs on that thread: what the host dispatches one by one; the ops a
// composite op such as at::linear calls inside itself are not counted again). Every count is a
// difference of two runs, so what the two share (building the weights, the set-up, the
// read-back of the figures) cancels exactly:
//   one forward pass = warm-up 2 minus warm-up 1;
//   one block        = the pass of a model with 2 blocks of its kind minus the pass with 1;
//   one step         = steps 2 minus steps 1 (the runner's loop: CP split, forward, CP gather,
//                      CFG, Euler update), less its blocks and the per-step read-back.
// Context- and tensor-parallel plans run as real ranks: one thread per rank in this process,
// Gloo over loopback, counted on rank 0.
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <chrono>
#include <stdexcept>
#include <exception>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "core/profiles.h"
#include "costmodel/cost_model.h"
#include "costmodel/hardware_model.h"
#include "executor/runner.h"

// Last: LibTorch (above) defines glog's CHECK, which would replace Catch's and go uncounted.
#undef CHECK
#include <catch2/catch.hpp>

#include "tests/executor/rank_threads.h"
#include "tests/support/fixtures.h"

namespace {

using cpplan::BlockGroup;
using cpplan::BlockKind;
using cpplan::ModelProfile;
using cpplan::ParallelConfig;
using cpplan::executor::RunFigures;
using cpplan::executor::RunSpec;

// ------------------------------------------------------------------ the observer
// Thread-local: each rank's thread counts its own ops; LibTorch's intra-op and Gloo worker
// threads never count (`counting` is false there).
thread_local bool counting = false;
thread_local int depth = 0;
thread_local long long top_level_ops = 0;

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction&) {
  if (counting && depth++ == 0) ++top_level_ops;
  return nullptr;
}
void on_op_end(const at::RecordFunction&, at::ObserverContext*) {
  if (counting) --depth;
}

// Counts the top-level ATen ops (RecordScope::FUNCTION) of this thread while it lives.
class OpCounter {
 public:
  OpCounter()
      : handle_(at::addThreadLocalCallback(
            at::RecordFunctionCallback(on_op_start, on_op_end).scopes({at::RecordScope::FUNCTION}))) {
    depth = 0;
    top_level_ops = 0;
    counting = true;
  }
  ~OpCounter() {
    counting = false;
    at::removeCallback(handle_);
  }
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;
  long long ops() const { return top_level_ops; }

 private:
  at::CallbackHandle handle_;
};

// ------------------------------------------------------------------ runs
// Sizes every plan below splits evenly (degrees 2 and 3): 6 x 6 = 36 image tokens, 12 text tokens.
constexpr cpplan::Resolution kResolution{96, 96};
constexpr int kTextTokens = 12;

// A built-in model (flux-tiny, wan-tiny) with other blocks; the rest as its profile says.
ModelProfile model(const std::string& base, std::vector<BlockGroup> blocks) {
  const ModelProfile* found = cpplan::test::catalog().find_model(base);
  if (!found) throw std::runtime_error("no model profile " + base);
  ModelProfile m = *found;
  m.blocks = std::move(blocks);
  m.text_tokens = kTextTokens;
  return m;
}
ModelProfile model(const std::string& base, BlockKind kind, int count) { return model(base, {{kind, count, false}}); }

RunSpec spec(const ModelProfile& m, const ParallelConfig& pc, int warmup, int steps, int batch = 1, int frames = 1) {
  RunSpec s;
  s.model = &m;
  s.batch = batch;
  s.resolution = kResolution;
  s.frames = frames;
  s.warmup = warmup;
  s.steps = steps;
  s.config = pc;
  s.seed = 7;
  s.timeout = std::chrono::seconds(60);
  return s;
}

struct Counted {
  long long ops = 0;  // rank 0's top-level ops over the whole run_rank
  RunFigures figures;
};

// run_rank on every rank of the plan (one thread each, one in-process store), counted on rank 0.
Counted count_run(const RunSpec& s) {
  const int world = static_cast<int>(s.config.world_size());
  auto store = c10::make_intrusive<c10d::HashStore>();
  return cpplan::test::on_rank_threads<Counted>(world, [&](int rank) {
    OpCounter counter;
    Counted c;
    c.figures = cpplan::executor::run_rank(s, store, rank, world);
    c.ops = counter.ops();
    return c;
  })[0];
}

// Ops of one forward pass (velocity(): the CP split, the model, the CP gather, CFG).
long long pass_ops(const ModelProfile& m, const ParallelConfig& pc, int batch) {
  return count_run(spec(m, pc, 2, 1, batch)).ops - count_run(spec(m, pc, 1, 1, batch)).ops;
}

// Ops of one block of `kind` of the `base` model's architecture under the plan.
long long block_ops(const std::string& base, BlockKind kind, const ParallelConfig& pc, int batch = 1) {
  return pass_ops(model(base, kind, 2), pc, batch) - pass_ops(model(base, kind, 1), pc, batch);
}

// After the loop rank 0 reads every timed step's time back (`slowest[i].item<double>()`: a select
// and an item, executor/runner.cpp): per step, but no part of a step.
constexpr long long kReadBackOpsPerStep = 2;

// Ops of one denoising step of the runner's loop, blocks included.
long long step_ops(const ModelProfile& m, const ParallelConfig& pc) {
  return count_run(spec(m, pc, 1, 2)).ops - count_run(spec(m, pc, 1, 1)).ops - kReadBackOpsPerStep;
}

ParallelConfig single_rank() { return cpplan::test::config(1, 1); }

const cpplan::RuntimeProfile& cpplan_runtime() {
  static const cpplan::RuntimeProfile rt = [] {
    auto loaded = cpplan::load_runtime_profile(cpplan::test::profiles_dir() + "/runtimes/cpplan.toml");
    if (!loaded) throw std::runtime_error(loaded.error().message);
    return std::move(loaded).value();
  }();
  return rt;
}

}  // namespace

TEST_CASE("cpplan.toml's op counts per block and per step are the executor's own, counted",
          "[executor][runtime]") {
  const cpplan::RuntimeOps& claimed = cpplan_runtime().ops;
  const long long double_block = block_ops("flux-tiny", BlockKind::kDouble, single_rank());
  const long long single_block = block_ops("flux-tiny", BlockKind::kSingle, single_rank());
  const long long cross_block = block_ops("wan-tiny", BlockKind::kCross, single_rank());
  // SD3.5-medium's image-only attention: a double block with it minus one without.
  const long long image_attention = pass_ops(model("flux-tiny", {{BlockKind::kDouble, 1, true}}), single_rank(), 1) -
                                    pass_ops(model("flux-tiny", {{BlockKind::kDouble, 1, false}}), single_rank(), 1);
  // The step outside the blocks, for flux-tiny's blocks (2 double, 2 single) and wan-tiny's (2
  // cross, true CFG: the conditional and unconditional batches concatenated, then combined).
  const ModelProfile flux = model("flux-tiny", {{BlockKind::kDouble, 2, false}, {BlockKind::kSingle, 2, false}});
  const ModelProfile wan = model("wan-tiny", BlockKind::kCross, 2);
  const long long flux_step = step_ops(flux, single_rank()) - 2 * double_block - 2 * single_block;
  const long long wan_step = step_ops(wan, single_rank()) - 2 * cross_block;
  std::cout << "top-level ATen ops, single rank: double_block " << double_block << ", single_block " << single_block
            << ", cross_block " << cross_block << ", step " << flux_step << " (FLUX-style; Wan-style with true CFG "
            << wan_step << "), image-only attention " << image_attention << "\n";
  CHECK(claimed.double_block == double_block);
  CHECK(claimed.image_attention == image_attention);
  CHECK(claimed.single_block == single_block);
  CHECK(claimed.cross_block == cross_block);
  CHECK(claimed.step == flux_step);
  CHECK(wan_step == 41);  // cpplan.toml's step line: Wan-style with true CFG, the 2 batches' combination
}

TEST_CASE("cpplan.toml's op counts of the parallel plans are the executor's own, counted on real ranks",
          "[executor][runtime][multirank]") {
  const cpplan::RuntimeOps& claimed = cpplan_runtime().ops;
  const ParallelConfig one = single_rank();
  using cpplan::test::config;
  // Beyond the single-rank plan, per attention layer (every block below has one in its CP group).
  auto extra = [&](const std::string& base, BlockKind kind, const ParallelConfig& pc, int batch = 1) {
    return block_ops(base, kind, pc, batch) - block_ops(base, kind, one, batch);
  };

  // Ulysses: per all-to-all a reshape, a permute, the send made contiguous, the receive buffer,
  // a permute and a reshape: 4 x 6. The contiguous copy is no op when the permuted send already
  // is contiguous, as it is for a batch of 1 (and q, k, v contiguous): FLUX's double blocks then
  // dispatch 21, its single blocks 22 (their v is a transposed view). The profile takes a batch
  // of 2 (Wan's true CFG in one pass, or two images), where every send is copied.
  const long long ulysses = extra("wan-tiny", BlockKind::kCross, config(1, 2));
  CHECK(extra("flux-tiny", BlockKind::kDouble, config(1, 2), 2) == ulysses);
  const long long ulysses_double_1 = extra("flux-tiny", BlockKind::kDouble, config(1, 2));
  const long long ulysses_single_1 = extra("flux-tiny", BlockKind::kSingle, config(1, 2));
  // Batch 1: the double block's q, k and v sends are contiguous already (3 copies fewer: 24 - 3),
  // the single block's q and k (its v a transposed view is copied: 24 - 2); the output's is copied.
  CHECK(ulysses_double_1 == 4 * 6 - 3);
  CHECK(ulysses_single_1 == 4 * 6 - 2);

  // Ring (the default rotate method, allgather): set-up + r x per K/V block, from r = 2 and 3.
  // Ring replaces the local attention (12 ops) and its first block needs no merge (10 ops), so
  // the set-up is negative; the profile's counts are non-negative: ring = 0, a bias of the
  // set-up's magnitude per attention layer, and ring_iteration exact.
  const long long ring2 = extra("flux-tiny", BlockKind::kDouble, config(2, 1));
  const long long ring_iteration = extra("flux-tiny", BlockKind::kDouble, config(3, 1)) - ring2;
  const long long ring = ring2 - 2 * ring_iteration;
  // p2p (printed: the profile has one Ring count, the default's).
  ParallelConfig p2p2 = config(2, 1), p2p3 = config(3, 1);
  p2p2.context_parallel_config.rotate_method = p2p3.context_parallel_config.rotate_method = cpplan::RotateMethod::kP2P;
  const long long p2p_2 = extra("flux-tiny", BlockKind::kDouble, p2p2);
  const long long p2p_iteration = extra("flux-tiny", BlockKind::kDouble, p2p3) - p2p_2;

  // Ulysses Anything beyond Ulysses at u = 2 (the lengths' all-gather and read-back, the flat
  // all-to-alls' slicing), even lengths and heads; Ring Anything beyond Ring: the same code, its
  // padding only on the ranks shorter than the longest (never rank 0).
  const long long anything = extra("flux-tiny", BlockKind::kDouble, config(1, 2, 1, 1, 1, true)) - ulysses_double_1;
  const long long anything_3 =
      extra("flux-tiny", BlockKind::kDouble, config(1, 3, 1, 1, 1, true)) - extra("flux-tiny", BlockKind::kDouble, config(1, 3));
  const long long ring_anything = extra("flux-tiny", BlockKind::kDouble, config(2, 1, 1, 1, 1, false, true)) - ring2;

  // Tensor parallelism: a double block all-reduces 4 times (two attention outputs, two MLPs).
  const long long tp = extra("flux-tiny", BlockKind::kDouble, config(1, 1, 2));

  std::cout << "top-level ATen ops per attention layer on rank 0 (Gloo, fp32): ulysses " << ulysses << " (batch 1: "
            << ulysses_double_1 << " double, " << ulysses_single_1 << " single), ring " << ring
            << ", ring_iteration " << ring_iteration << " (p2p: ring " << p2p_2 - 2 * p2p_iteration
            << ", ring_iteration " << p2p_iteration << "), ulysses anything beyond ulysses " << anything
            << " (u = 3: " << anything_3 << "), ring anything beyond ring " << ring_anything
            << "; tensor parallel 2: " << tp << " per double block (4 all-reduces)\n";
  // cpplan.toml's Ring counts per attention layer at degree r: allgather 27 r - 16, p2p 25 r - 21
  // (a K/V block each iteration; the local attention's 12 ops and the first merge's 10 replaced).
  CHECK(ring == -16);
  CHECK(p2p_iteration == 25);
  CHECK(p2p_2 - 2 * p2p_iteration == -21);
  CHECK(anything_3 == 40);  // Ulysses Anything beyond Ulysses at u = 3 (cpplan.toml's anything line)
  CHECK(ring_anything == 0);  // its padding is on the shorter ranks, never rank 0
  // fp32 tensors all-reduce in place over Gloo: no op dispatched for the 4 all-reduces.
  CHECK(tp == 0);
  CHECK(claimed.ulysses == ulysses);
  CHECK(claimed.ring == 0);
  CHECK(claimed.ring_iteration == ring_iteration);
  CHECK(claimed.anything == anything);
  CHECK(claimed.tp_all_reduce == tp / 4);
}

TEST_CASE("the host time per top-level op of the CPU executor is printed", "[executor][runtime]") {
  // A model so small that a step is its dispatch: 2 heads of 16, FFN 64, 4 image and 4 text tokens.
  ModelProfile m = model("flux-tiny", {{BlockKind::kDouble, 2, false}, {BlockKind::kSingle, 2, false}});
  m.heads = 2;
  m.ffn_hidden = 64;
  m.text_tokens = 4;
  RunSpec timed = spec(m, single_rank(), 3, 50);
  timed.resolution = {32, 32};
  RunSpec once = timed, twice = timed;
  once.steps = 1;
  twice.steps = 2;
  const long long ops = count_run(twice).ops - count_run(once).ops - kReadBackOpsPerStep;
  // Timed without an observer: a registered callback would slow every dispatch.
  const RunFigures f = cpplan::executor::run_rank(timed, c10::make_intrusive<c10d::HashStore>(), 0, 1);
  // The median step, and the 10th percentile (less of what other processes on the host take).
  const double us_per_op = f.median_step_ms() * 1e3 / static_cast<double>(ops);
  const double us_per_op_p10 = f.percentile_step_ms(0.1) * 1e3 / static_cast<double>(ops);
  std::cout << "host time per top-level ATen op (CPU, fp32, " << at::get_num_threads() << " threads): " << us_per_op
            << " us (p10 " << us_per_op_p10 << " us; " << ops << " ops per step, median step " << f.median_step_ms()
            << " ms)\n";
  // A step of 2 double and 2 single blocks, by cpplan.toml's counts: the loop's 39 ops, 2 x 133 and
  // 2 x 79; none depends on the sizes (heads, FFN, tokens).
  CHECK(ops == 39 + 2 * 133 + 2 * 79);
  CHECK(us_per_op > 0);
}

// ------------------------------------------------------------------ FLOPs
// The FLOPs the executor runs, counted from the shapes of its top-level GEMMs: at::linear on
// tokens ([B, S, in] x [out, in]: 2 B S in out; the per-sample modulation and timestep vectors,
// 2-D, are not the blocks' token work the cost model counts) and at::matmul (attention's
// [.., M, K] x [.., K, N]: 2 x batch M K N).
namespace {
thread_local bool counting_flops = false;
thread_local int flop_depth = 0;
thread_local double executed_flops = 0;

std::unique_ptr<at::ObserverContext> on_flop_start(const at::RecordFunction& fn) {
  if (!counting_flops || flop_depth++ > 0) return nullptr;
  const std::string_view name = fn.name();
  const auto in = fn.inputs();
  if (in.size() < 2 || !in[0].isTensor() || !in[1].isTensor()) return nullptr;
  const at::Tensor a = in[0].toTensor(), b = in[1].toTensor();
  if (name == "aten::linear" && a.dim() >= 3) executed_flops += 2.0 * static_cast<double>(a.numel()) * b.size(0);
  if (name == "aten::matmul") executed_flops += 2.0 * static_cast<double>(a.numel()) * b.size(-1);
  return nullptr;
}
void on_flop_end(const at::RecordFunction&, at::ObserverContext*) {
  if (counting_flops) --flop_depth;
}

// FLOPs of one forward pass of `m` on one rank (two warm-up passes minus one), of `frames` frames.
double pass_flops(const ModelProfile& m, int frames = 1) {
  auto run = [&](int warmup) {
    const auto handle = at::addThreadLocalCallback(
        at::RecordFunctionCallback(on_flop_start, on_flop_end).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
    counting_flops = true;
    flop_depth = 0;
    executed_flops = 0;
    (void)cpplan::executor::run_rank(spec(m, single_rank(), warmup, 1, 1, frames), c10::make_intrusive<c10d::HashStore>(),
                                     0, 1);
    counting_flops = false;
    at::removeCallback(handle);
    return executed_flops;
  };
  return run(2) - run(1);
}

// The cost model's FLOPs of one block of the model's group `group`, one rank, one step, `frames` frames.
double predicted_block_flops(const ModelProfile& m, std::size_t group = 0, int frames = 1) {
  cpplan::Query q;
  q.model = &m;
  q.hardware = cpplan::test::catalog().find_hardware("h100-sxm");
  q.resolution = kResolution;
  q.frames = frames;
  q.sequence = cpplan::compute_sequence(m, kResolution, frames, m.text_tokens).value();
  const cpplan::costmodel::DatasheetModel hw(*q.hardware);
  const cpplan::costmodel::Prediction p =
      cpplan::costmodel::CostModel(hw).predict(q, single_rank(), cpplan::CpVariant::kNone);
  return p.blocks.at(group).flops / p.blocks.at(group).count;
}

// One block of group `at` of `groups` in the `base` family, `frames` frames: executed (with the
// group 2 blocks long minus 1 long) and predicted.
std::pair<double, double> group_block_flops(const std::string& base, std::vector<BlockGroup> groups, std::size_t at,
                                            int frames = 1) {
  groups[at].count = 2;
  const double two = pass_flops(model(base, groups), frames);
  groups[at].count = 1;
  const ModelProfile one = model(base, groups);
  return {two - pass_flops(one, frames), predicted_block_flops(one, at, frames)};
}

// One block of `group`'s kind in the `base` family: executed (2 blocks minus 1) and predicted.
std::pair<double, double> block_flops(const std::string& base, BlockGroup group) {
  group.count = 2;
  const ModelProfile two = model(base, {group});
  group.count = 1;
  const ModelProfile one = model(base, {group});
  return {pass_flops(two) - pass_flops(one), predicted_block_flops(one)};
}
}  // namespace

TEST_CASE("the FLOPs the cost model counts per block are the FLOPs the executor runs, for every family",
          "[executor][runtime][flops]") {
  struct Case {
    std::string base;
    BlockGroup group;
  };
  const std::vector<Case> cases = {
      {"flux-tiny", {BlockKind::kDouble, 1, false}},      {"flux-tiny", {BlockKind::kSingle, 1, false}},
      {"wan-tiny", {BlockKind::kCross, 1, false}},        {"sd35-tiny", {BlockKind::kDouble, 1, true}},
      {"sd35-tiny", {BlockKind::kDouble, 1, false}},      {"hunyuan-tiny", {BlockKind::kSingle, 1, false}},
      {"cogvideox-tiny", {BlockKind::kSingle, 1, false, true}}, {"qwen-tiny", {BlockKind::kDouble, 1, false}},
      {"flux2-tiny", {BlockKind::kDouble, 1, false}},     {"flux2-tiny", {BlockKind::kSingle, 1, false}},
      {"sana-tiny", {BlockKind::kCross, 1, false}},       {"mochi-tiny", {BlockKind::kDouble, 1, false}},
  };
  for (const Case& c : cases) {
    const auto [executed, predicted] = block_flops(c.base, c.group);
    std::cout << c.base << " " << cpplan::to_string(c.group.kind) << (c.group.image_self_attention ? " (+image attention)" : "")
              << (c.group.sequential ? " (sequential)" : "") << ": executed " << executed << " FLOPs per block, cost model "
              << predicted << "\n";
    INFO(c.base << " " << cpplan::to_string(c.group.kind));
    CHECK(executed == Approx(predicted).epsilon(1e-9));
  }
  // By hand, sana-tiny's cross block at 96x96 (3 x 3 = 9 image tokens on its 32-pixel grid, 12 text
  // tokens, D = 32, 4 heads of 8, F = 80), per sample: self q, k, v, o 4 x 2 x 9 D^2 = 73,728;
  // linear attention (the state relu(k)^T [v | 1], then relu(q) [S | z]) 2 x 2 x 9 D (hd + 1) =
  // 10,368; cross q, o 2 x 2 x 9 D^2 = 36,864, k, v 2 x 2 x 12 D^2 = 49,152, softmax 4 x 9 x 12 D =
  // 13,824; conv-GLU up 2 x 9 D 2F = 92,160, depthwise 2 x 9 x 9 x 2F = 25,920, down 2 x 9 F D =
  // 46,080 -> 348,096; true CFG runs both prompts in one batch of 2.
  CHECK(block_flops("sana-tiny", {BlockKind::kCross, 1, false}).first == 2 * 348096.0);
  // By hand, mochi-tiny's double block at 96x96 (36 video tokens, 12 text tokens, D = 64, text width
  // T = 32, F = 128, text F 64), per sample: video q, k, v, o 4 x 2 x 36 D^2 = 1,179,648; text q, k,
  // v 3 x 2 x 12 T D = 147,456, o 2 x 12 D T = 49,152; joint attention 4 x 48^2 x D = 589,824; video
  // SwiGLU 3 x 2 x 36 D F = 1,769,472; text SwiGLU 3 x 2 x 12 T 64 = 147,456 -> 3,883,008; true CFG
  // runs both prompts in one batch of 2.
  CHECK(block_flops("mochi-tiny", {BlockKind::kDouble, 1, false}).first == 2 * 3883008.0);
  // By hand, flux-tiny's double block at 96x96 (36 image + 12 text tokens, one sample, D = 192,
  // F = 768): GEMMs 2 x 48 x (4 D^2 + 2 D F) = 42,467,328; attention 4 x 48^2 x D = 1,769,472.
  CHECK(block_flops("flux-tiny", {BlockKind::kDouble, 1, false}).first == 44236800.0);
}

TEST_CASE("the FLOPs the cost model counts per block are the FLOPs the executor runs, for issue 32's structure",
          "[executor][runtime][flops]") {
  using G = BlockGroup;
  G spatial{BlockKind::kCross, 1}, temporal{BlockKind::kCross, 1}, plain{BlockKind::kCross, 1}, skip{BlockKind::kCross, 1};
  temporal.temporal = true;
  skip.skip = true;
  G dbl{BlockKind::kDouble, 1}, seq{BlockKind::kSingle, 1, false, true};
  struct Case {
    std::string label, base;
    std::vector<BlockGroup> groups;
    std::size_t at;
    int frames;
  };
  // 96x96 = 36 positions; Latte's at 4 frames: 144 tokens (the temporal groups: 36 sequences of 4
  // frames, the spatial ones beside them: 4 sequences of 36 positions). A skip block needs an
  // earlier block's output: one plain block in front (and one more per extra skip block).
  const std::vector<Case> cases = {
      {"latte-tiny temporal", "latte-tiny", {temporal}, 0, 4},
      {"latte-tiny spatial (per frame, beside a temporal group)", "latte-tiny", {spatial, temporal}, 0, 4},
      {"hunyuandit-tiny cross", "hunyuandit-tiny", {plain}, 0, 1},
      {"hidream-tiny double (experts)", "hidream-tiny", {dbl}, 0, 1},
      {"hidream-tiny single sequential (experts)", "hidream-tiny", {seq}, 0, 1},
      {"wan22-tiny cross", "wan22-tiny", {plain}, 0, 1},
  };
  for (const Case& c : cases) {
    const auto [executed, predicted] = group_block_flops(c.base, c.groups, c.at, c.frames);
    std::cout << c.label << ": executed " << executed << " FLOPs per block, cost model " << predicted << "\n";
    INFO(c.label);
    CHECK(executed == Approx(predicted).epsilon(1e-9));
  }
  // The skip block: 2 plain + 2 skip minus 2 plain + 1 skip (each skip block pops a plain one's output).
  plain.count = 2;
  skip.count = 2;
  const double two = pass_flops(model("hunyuandit-tiny", {plain, skip}));
  skip.count = 1;
  const ModelProfile one = model("hunyuandit-tiny", {plain, skip});
  const double executed = two - pass_flops(one), predicted = predicted_block_flops(one, 1);
  std::cout << "hunyuandit-tiny skip block: executed " << executed << " FLOPs per block, cost model " << predicted << "\n";
  CHECK(executed == Approx(predicted).epsilon(1e-9));
  // By hand, at 96x96 x 4 frames (N = 2 x 144 tokens: true CFG batches both prompts; D = 192,
  // F = 512): a temporal block (no cross-attention) runs the GEMMs 2 N (4 D^2 + 2 D F) (q, k, v, o;
  // the FFN) and its self-attention 4 N x 4 frames x D (q k^T and p v at each position).
  const double n = 2 * 144, d = 192, f = 512;
  const double temporal_by_hand = 2 * n * (4 * d * d + 2 * d * f) + 4 * n * 4 * d;
  CHECK(group_block_flops("latte-tiny", {temporal}, 0, 4).first == temporal_by_hand);
}
