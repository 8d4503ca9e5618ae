#pragma once
// What every block of one denoising step shares, for the cost model's own sources
// (cost_model.cpp, block_cost.cpp, pipeline_cost.cpp): the plan's degrees and communication
// groups, the attention layer's cost under the plan's CP strategy, the samples per forward pass
// and the runtime.

#include "core/plan.h"
#include "costmodel/cost_model.h"
#include "costmodel/cp_cost.h"

namespace cpplan::costmodel {

struct Axes {
  int r, u, t, p, c, d;
  int f;  // fully-shard group (laid over the others, not a factor of the world size)
  explicit Axes(const ParallelConfig& pc)
      : r(pc.ring()), u(pc.ulysses()), t(pc.tp()), p(pc.pp()), c(pc.cfg_degree), d(pc.dp_degree), f(pc.fs()) {}
  int replica() const { return r * u * t * p * c; }  // GPUs of one data-parallel replica
};

struct StepContext {
  const Query& q;
  const ModelProfile& m;
  const HardwareModel& hw;
  const RuntimeProfile& runtime;
  const ParallelConfig& config;
  CpVariant variant;
  Axes axes;
  CommLayout groups;
  double samples = 1;     // samples in one forward on a rank (true CFG batches both passes unless split)
  AttentionInput input;   // one self-attention layer, as the strategy sees it
  AttentionCost attention;        // the self-attention layer
  AttentionCost image_attention;  // SD3.5-medium's extra image-only self-attention
  AttentionCost temporal_attention;  // a temporal block's, across frames (Latte); else `attention`
  double tokens = 0;      // local tokens of the most loaded rank
  double text_local = 0;  // of which text (joint models)
  double text = 0;        // the model's text tokens
  // Runs of consecutive image tokens a CP rank holds: one per patch in PipeFusion's whole-sequence
  // pass under CP inside its stages (each rank keeps its run of every patch), else one.
  int image_runs = 1;

  StepContext(const Query& query, const ParallelConfig& c, CpVariant v, const HardwareModel& model,
              const RuntimeProfile& rt, const CommLayout* layout);
  const CommGroup& group(CommAxis a) const { return groups[a]; }
};

// One block group's terms for one step (all `count` blocks), and what it adds to the step's
// per-axis communication and bytes sent.
struct BlockTerms {
  BlockCost cost;
  std::array<Milliseconds, kCommAxisCount> axis_comm_ms{};
  Bytes bytes_sent = 0;
  Bytes live_bytes = 0;  // the largest live layer of one block (attention or FFN), for memory
};
BlockTerms block_terms(const StepContext& ctx, const BlockGroup& g);

// What the framework's fused kernels (Query::kernels) leave of the runtime's eager elementwise
// work: the block's memory-bound traffic over the fused block's (one pass plus the runtime's
// elementwise_traffic beyond it times the share of the eager excess the unfused kinds move), and
// the share of the block's host ops still dispatched.
double elementwise_traffic(const Query& q, const RuntimeProfile& rt);
double unfused_ops_share(const Query& q, const RuntimeProfile& rt);

// The host's ops for one block of `g` under the context's plan (the runtime's counts): the
// block's own (with an anything mode's), the Ulysses all-to-alls', Ring's set-up and its K/V blocks.
struct HostOps {
  double block = 0, ulysses = 0, ring = 0, ring_iterations = 0;
  double attention = 0;  // of block: the attention modules' ops (RuntimeOps::*_attention; 0: not counted apart)
};
HostOps block_host_ops(const StepContext& ctx, const BlockGroup& g);

// sqrt(2 ln n): the expected excess of the slowest of n ranks over one, in standard deviations of
// a rank's host time between collectives (the maximum of n Gaussians); 0 for n = 1.
double slowest_rank_factor(int ranks);

// One placement's once-per-image costs and memory (pipeline_cost.cpp).
using PlacedPipeline = PipelineOption;
// Every placement to consider (the query's forced one, else each that applies to the plan), with
// `denoising`'s memory: the text encoders' terms computed once per encoder placement and the
// decode's once per VAE placement (the planner prices every plan's placements).
int placements(const StepContext& ctx, const MemoryBreakdown& denoising,
               std::array<PlacedPipeline, kPipelineOptionCount>& out);
// Whether a placement applies to the plan: sharding and parallel decode need more than one GPU
// per replica; offloading needs the hardware's host link.
bool placement_applies(const StepContext& ctx, TextEncoderPlacement te, VaePlacement vae);

}  // namespace cpplan::costmodel
