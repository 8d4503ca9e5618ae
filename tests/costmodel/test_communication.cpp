// Collectives of each context-parallel variant against the byte table of
// shared/spec/parallelism.md ("Communication per attention layer, per rank"), the collective time
// model t = alpha + bytes * factor / busbw, and the communication the cost model charges a plan.
#include <catch2/catch.hpp>

#include "core/hardware.h"
#include "costmodel/cost_model.h"
#include "costmodel/cp_cost.h"
#include "costmodel/hardware_model.h"
#include "tests/support/fixtures.h"

using cpplan::CpVariant;
using cpplan::costmodel::AttentionCost;
using cpplan::costmodel::AttentionInput;
using cpplan::costmodel::busbw_factor;
using cpplan::costmodel::Collective;
using cpplan::costmodel::CommGroup;
using cpplan::costmodel::CpAxis;
using cpplan::costmodel::cp_cost_strategy;
using cpplan::test::config;
using cpplan::test::make_query;

namespace {

// FLUX.1-dev's attention at 1024x1024: 4096 image + 512 text tokens, 24 x 128 = 3072, bf16.
AttentionInput flux_layer(int ring, int ulysses) {
  AttentionInput in;
  in.image_tokens = 4096;
  in.text_tokens = 512;
  in.split_text = true;
  in.heads = 24;
  in.head_dim = 128;
  in.ring = ring;
  in.ulysses = ulysses;
  in.elem_bytes = 2;
  return in;
}

// Bytes one rank sends per layer: sum of count x size x (n-1)/n over its calls.
double bytes_sent(const AttentionCost& c, int ring, int ulysses) {
  double sent = 0;
  for (int i = 0; i < c.comm_count; ++i) {
    const auto& call = c.comm[i];
    const int n = call.axis == CpAxis::kRing ? ring : ulysses;
    sent += call.count * call.bytes * busbw_factor(call.kind, n);
  }
  return sent;
}

// An accelerator with round numbers: 100 GB/s at efficiency 1 and 10 us inside a node,
// 10 GB/s at efficiency 0.5 and 20 us between nodes.
cpplan::HardwareProfile round_hardware(int gpus_per_node = 8) {
  cpplan::HardwareProfile hw;
  hw.name = "round";
  hw.bf16_tflops = 100;
  hw.memory_mib = 81920;
  hw.reserved_mib = 1024;
  hw.memory_bandwidth_gbps = 1000;
  hw.intra_node = {100, 10, 1.0};
  hw.network = {10, 20, 0.5};
  hw.gpus_per_node = gpus_per_node;
  return hw;
}

cpplan::costmodel::Prediction predict(cpplan::Query q, const cpplan::HardwareProfile& hw,
                                      const cpplan::ParallelConfig& c) {
  q.hardware = &hw;
  const cpplan::costmodel::DatasheetModel model(hw);
  const cpplan::costmodel::CostModel cost(model);
  return cost.predict(q, c, cpplan::classify(c.context_parallel_config));
}

}  // namespace

TEST_CASE("Every variant has a cost strategy that reports its own variant", "[costmodel][cp]") {
  for (int i = 0; i < cpplan::kCpVariantCount; ++i) {
    const auto v = static_cast<CpVariant>(i);
    CHECK(cp_cost_strategy(v).variant() == v);
  }
}

TEST_CASE("No context parallelism: the whole sequence, no collectives", "[costmodel][cp][none]") {
  const AttentionCost c = cp_cost_strategy(CpVariant::kNone).attention(flux_layer(1, 1));
  CHECK(c.comm_count == 0);
  CHECK(c.tokens == 4608);
  CHECK(c.q_tokens == 4608);
  CHECK(c.kv_tokens == 4608);
  CHECK(c.heads == 24);
  CHECK(c.calls == 1);
  CHECK(c.transient_bytes == 0);
}

TEST_CASE("Ulysses: four all-to-alls of (S/u) x hidden x b", "[costmodel][cp][ulysses]") {
  const AttentionCost c = cp_cost_strategy(CpVariant::kUlysses).attention(flux_layer(1, 4));
  REQUIRE(c.comm_count == 1);
  CHECK(c.comm[0].kind == Collective::kAllToAll);
  CHECK(c.comm[0].axis == CpAxis::kUlysses);
  // (4608 / 4 = 1152) x 3072 x 2 = 7,077,888 bytes, for Q, K, V and O
  CHECK(c.comm[0].bytes == 7077888.0);
  CHECK(c.comm[0].count == 4);
  // spec: 4 * (S/u) * hidden * b * (u-1)/u = 4 * 7,077,888 * 3/4 = 21,233,664
  CHECK(bytes_sent(c, 1, 4) == Approx(21233664.0).epsilon(1e-12));
  // local projections over 1152 tokens; attention over all 4608 with 24 / 4 = 6 heads
  CHECK(c.tokens == 1152);
  CHECK(c.q_tokens == 4608);
  CHECK(c.kv_tokens == 4608);
  CHECK(c.heads == 6);
  // full-sequence Q, K, V, O for 6 heads: 4 x 4608 x 768 x 2 = 28,311,552
  CHECK(c.transient_bytes == 28311552.0);
}

TEST_CASE("Ring: one all-gather of K and V, 2 x S x hidden x b", "[costmodel][cp][ring]") {
  const AttentionCost c = cp_cost_strategy(CpVariant::kRing).attention(flux_layer(4, 1));
  REQUIRE(c.comm_count == 1);
  CHECK(c.comm[0].kind == Collective::kAllGather);
  CHECK(c.comm[0].axis == CpAxis::kRing);
  // 2 x 4608 x 3072 x 2 = 56,623,104 bytes gathered once
  CHECK(c.comm[0].bytes == 56623104.0);
  CHECK(c.comm[0].count == 1);
  // spec: 2 * S * hidden * b * (r-1)/r = 42,467,328
  CHECK(bytes_sent(c, 4, 1) == Approx(42467328.0).epsilon(1e-12));
  // r kernel calls of 1152 queries against 1152 keys, all 24 heads
  CHECK(c.calls == 4);
  CHECK(c.tokens == 1152);
  CHECK(c.q_tokens == 1152);
  CHECK(c.kv_tokens == 1152);
  CHECK(c.heads == 24);
  // LSE merges: 3 x 1152 x 3072 x 4 (fp32) x 4 blocks = 169,869,312
  CHECK(c.merge_bytes == 169869312.0);
  // gathered K/V plus the fp32 running output and LSE: 56,623,104 + 1152 x (3072 + 24) x 4 = 70,889,472
  CHECK(c.transient_bytes == 70889472.0);
}

TEST_CASE("Ring without convert_to_fp32 keeps the merge in the activation dtype", "[costmodel][cp][ring]") {
  auto in = flux_layer(4, 1);
  in.fp32_merge = false;
  const AttentionCost c = cp_cost_strategy(CpVariant::kRing).attention(in);
  // 3 x 1152 x 3072 x 2 x 4 = 84,934,656
  CHECK(c.merge_bytes == 84934656.0);
  CHECK(c.transient_bytes == 56623104.0 + 1152.0 * (3072 + 24) * 2);
}

TEST_CASE("Ring with p2p rotation sends r-1 K/V blocks that overlap the attention", "[costmodel][cp][ring][p2p]") {
  auto in = flux_layer(4, 1);
  in.ring_p2p = true;
  const AttentionCost c = cp_cost_strategy(CpVariant::kRing).attention(in);
  REQUIRE(c.comm_count == 1);
  CHECK(c.comm[0].kind == Collective::kSendRecv);
  CHECK(c.comm[0].axis == CpAxis::kRing);
  // one rank's K and V: 2 x 1152 x 3072 x 2 = 14,155,776 bytes, passed on 3 times
  CHECK(c.comm[0].bytes == 14155776.0);
  CHECK(c.comm[0].count == 3);
  CHECK(c.comm[0].overlapped);
  // the same bytes per rank as the all-gather: 3 x 14,155,776 = 42,467,328
  CHECK(bytes_sent(c, 4, 1) == Approx(42467328.0).epsilon(1e-12));
  // two K/V blocks live instead of all four: 2 x 14,155,776 + 1152 x 3096 x 4 = 42,577,920
  CHECK(c.transient_bytes == 42577920.0);
  // the all-gather is not overlapped
  CHECK_FALSE(cp_cost_strategy(CpVariant::kRing).attention(flux_layer(4, 1)).comm[0].overlapped);
}

TEST_CASE("Ring Anything ignores p2p rotation and still gathers padded K/V", "[costmodel][cp][ring_anything][p2p]") {
  auto in = flux_layer(4, 1);
  in.ring_p2p = true;
  const AttentionCost c = cp_cost_strategy(CpVariant::kRingAnything).attention(in);
  REQUIRE(c.comm_count == 1);
  CHECK(c.comm[0].kind == Collective::kAllGather);
  CHECK(c.comm[0].bytes == 56623104.0);
}

TEST_CASE("Unified with p2p rotation sends the ring part as r-1 overlapped blocks", "[costmodel][cp][unified][p2p]") {
  auto in = flux_layer(2, 2);
  in.ring_p2p = true;
  const AttentionCost c = cp_cost_strategy(CpVariant::kUnified).attention(in);
  REQUIRE(c.comm_count == 2);
  CHECK(c.comm[0].kind == Collective::kAllToAll);
  CHECK(c.comm[0].bytes == 7077888.0);
  CHECK(c.comm[1].kind == Collective::kSendRecv);
  // 2 x 4608 x 1536 x 2 / 2 = 14,155,776 bytes, once (r - 1 = 1)
  CHECK(c.comm[1].bytes == 14155776.0);
  CHECK(c.comm[1].count == 1);
  CHECK(c.comm[1].overlapped);
  CHECK(bytes_sent(c, 2, 2) == Approx(28311552.0).epsilon(1e-12));
}

TEST_CASE("Unified 2x2: all-to-alls of (S/N) x hidden x b and an all-gather of 2 x S x hidden/u x b",
          "[costmodel][cp][unified]") {
  const AttentionCost c = cp_cost_strategy(CpVariant::kUnified).attention(flux_layer(2, 2));
  REQUIRE(c.comm_count == 2);
  CHECK(c.comm[0].kind == Collective::kAllToAll);
  CHECK(c.comm[0].axis == CpAxis::kUlysses);
  // (4608 / 4 = 1152) x 3072 x 2 = 7,077,888, four times
  CHECK(c.comm[0].bytes == 7077888.0);
  CHECK(c.comm[0].count == 4);
  CHECK(c.comm[1].kind == Collective::kAllGather);
  CHECK(c.comm[1].axis == CpAxis::kRing);
  // 2 x 4608 x (3072 / 2) x 2 = 28,311,552, once
  CHECK(c.comm[1].bytes == 28311552.0);
  CHECK(c.comm[1].count == 1);
  // spec: 4 (S/N) hidden b (u-1)/u + 2 (S/u) hidden b (r-1)/r = 14,155,776 + 14,155,776
  CHECK(bytes_sent(c, 2, 2) == Approx(28311552.0).epsilon(1e-12));
  CHECK(c.tokens == 1152);
  CHECK(c.heads == 12);
  CHECK(c.calls == 2);
  CHECK(c.q_tokens == 2304);
  CHECK(c.kv_tokens == 2304);
}

TEST_CASE("Ulysses Anything pads heads to a multiple of u and splits lengths with ceil",
          "[costmodel][cp][ulysses_anything]") {
  // 30 heads on 8 ranks -> 32 padded heads, hidden 32 x 128 = 4096; FLUX.1-dev at 1008x1008:
  // ceil(3969 / 8) = 497 image + 512 / 8 = 64 text = 561 tokens on the longest rank.
  auto in = flux_layer(1, 8);
  in.image_tokens = 3969;
  in.heads = 30;
  const AttentionCost c = cp_cost_strategy(CpVariant::kUlyssesAnything).attention(in);
  REQUIRE(c.comm_count == 2);
  CHECK(c.comm[0].kind == Collective::kAllToAll);
  CHECK(c.comm[0].axis == CpAxis::kUlysses);
  // 561 x 4096 x 2 = 4,595,712
  CHECK(c.comm[0].bytes == 4595712.0);
  CHECK(c.comm[0].count == 4);
  // the per-rank lengths: one int64 per rank, 8 x 8 = 64 bytes
  CHECK(c.comm[1].kind == Collective::kAllGather);
  CHECK(c.comm[1].bytes == 64.0);
  CHECK(c.comm[1].count == 1);
  CHECK(c.tokens == 561);
  CHECK(c.heads == 4);  // 32 / 8
  CHECK(c.q_tokens == 4481);
  CHECK(c.kv_tokens == 4481);
}

TEST_CASE("Ulysses Anything on an even case moves the same bytes as Ulysses plus the lengths",
          "[costmodel][cp][ulysses_anything]") {
  const AttentionCost even = cp_cost_strategy(CpVariant::kUlysses).attention(flux_layer(1, 4));
  const AttentionCost any = cp_cost_strategy(CpVariant::kUlyssesAnything).attention(flux_layer(1, 4));
  REQUIRE(any.comm_count == 2);
  CHECK(any.comm[0].bytes == even.comm[0].bytes);
  CHECK(any.heads == even.heads);
  CHECK(any.comm[1].bytes == 32.0);  // 8 bytes x 4 ranks
}

TEST_CASE("Ring Anything pads every rank's K/V to r x ceil(S/r) before gathering",
          "[costmodel][cp][ring_anything]") {
  // 3969 image tokens on 4 ranks: ceil = 993 (+ 512 / 4 = 128 text) = 1121 per rank, gathered
  // 4 x 1121 = 4484 (3 padding tokens over the true 4481).
  auto in = flux_layer(4, 1);
  in.image_tokens = 3969;
  const AttentionCost c = cp_cost_strategy(CpVariant::kRingAnything).attention(in);
  REQUIRE(c.comm_count == 1);
  CHECK(c.comm[0].kind == Collective::kAllGather);
  CHECK(c.comm[0].axis == CpAxis::kRing);
  // 2 x 4484 x 3072 x 2 = 55,099,392
  CHECK(c.comm[0].bytes == 55099392.0);
  CHECK(c.tokens == 1121);
  CHECK(c.calls == 4);
  // The padding is sliced off before attention: keys per block 4481 / 4.
  CHECK(c.kv_tokens == Approx(4481.0 / 4));
  // Plain Ring on the same input would gather the true 4481 tokens.
  const AttentionCost ring = cp_cost_strategy(CpVariant::kRing).attention(in);
  CHECK(ring.comm[0].bytes == 2.0 * 4481 * 3072 * 2);
}

TEST_CASE("Models that keep the text whole split only the image tokens", "[costmodel][cp]") {
  // SD3.5-large style: 4096 image + 333 text in joint attention, text not split; Ulysses 2.
  auto in = flux_layer(1, 2);
  in.text_tokens = 333;
  in.split_text = false;
  const AttentionCost c = cp_cost_strategy(CpVariant::kUlysses).attention(in);
  CHECK(c.tokens == 2048 + 333);
  CHECK(c.q_tokens == 4429);
  CHECK(c.comm[0].bytes == 2048.0 * 3072 * 2);
}

TEST_CASE("busbw_factor follows nccl-tests", "[costmodel][collective]") {
  CHECK(busbw_factor(Collective::kAllReduce, 2) == 1.0);
  CHECK(busbw_factor(Collective::kAllReduce, 4) == 1.5);   // 2 x 3 / 4
  CHECK(busbw_factor(Collective::kAllReduce, 8) == 1.75);  // 2 x 7 / 8
  CHECK(busbw_factor(Collective::kAllGather, 4) == 0.75);
  CHECK(busbw_factor(Collective::kAllGather, 8) == 0.875);
  CHECK(busbw_factor(Collective::kReduceScatter, 4) == 0.75);
  CHECK(busbw_factor(Collective::kAllToAll, 2) == 0.5);
  CHECK(busbw_factor(Collective::kSendRecv, 2) == 1.0);
  CHECK(busbw_factor(Collective::kSendRecv, 8) == 1.0);
  CHECK(busbw_factor(Collective::kAllReduce, 1) == 0.0);  // nothing to move
}

TEST_CASE("A collective costs latency plus bytes x factor over busbw", "[costmodel][collective]") {
  const auto hw = round_hardware();
  const cpplan::costmodel::DatasheetModel model(hw);
  const CommGroup four{4, 1, 1};
  // 1e9 bytes at 100 GB/s: 10 ms per unit of factor; plus 10 us = 0.01 ms
  CHECK(model.collective(Collective::kAllReduce, 1e9, four).ms == Approx(0.01 + 15.0).epsilon(1e-12));
  CHECK(model.collective(Collective::kAllGather, 1e9, four).ms == Approx(0.01 + 7.5).epsilon(1e-12));
  CHECK(model.collective(Collective::kAllToAll, 1e9, four).ms == Approx(0.01 + 7.5).epsilon(1e-12));
  CHECK(model.collective(Collective::kReduceScatter, 1e9, four).ms == Approx(0.01 + 7.5).epsilon(1e-12));
  CHECK(model.collective(Collective::kSendRecv, 1e9, {2, 1, 1}).ms == Approx(0.01 + 10.0).epsilon(1e-12));
  CHECK(model.collective(Collective::kAllReduce, 1e9, four).source == cpplan::costmodel::Source::kDatasheet);
  // Across nodes the network link bounds it: 10 GB/s x 0.5 = 5 GB/s busbw, 20 us.
  // all-gather of 1e9 on 2 ranks: 0.02 + 1e9 x 0.5 / 5e9 s = 0.02 + 100 ms
  CHECK(model.collective(Collective::kAllGather, 1e9, {2, 8, 2}).ms == Approx(0.02 + 100.0).epsilon(1e-12));
  // One rank or no bytes: free.
  CHECK(model.collective(Collective::kAllReduce, 1e9, {1, 1, 1}).ms == 0.0);
  CHECK(model.collective(Collective::kAllReduce, 0, four).ms == 0.0);
}

TEST_CASE("Ulysses on 2 GPUs pays 4 all-to-alls per block plus the output gather", "[costmodel][cp][ulysses]") {
  const auto hw = round_hardware();
  const auto p = predict(make_query("flux.1-dev", 2), hw, config(1, 2));
  // a2a size: (4096 / 2 + 512 / 2 = 2304) x 3072 x 2 = 14,155,776 bytes;
  //   0.01 ms + 14,155,776 x 1/2 / 100e9 s = 0.01 + 0.07077888 = 0.08077888 ms
  const double a2a = 0.01 + 14155776.0 * 0.5 / 100e9 * 1e3;
  // output gather of the prediction, 4096 x 64 x 2 = 524,288 bytes: 0.01 + 0.00262144 ms
  const double gather = 0.01 + 524288.0 * 0.5 / 100e9 * 1e3;
  REQUIRE(p.block_count == 2);
  CHECK(p.blocks[0].comm_ms == Approx(19 * 4 * a2a).epsilon(1e-9));
  CHECK(p.blocks[1].comm_ms == Approx(38 * 4 * a2a).epsilon(1e-9));
  CHECK(p.step_comm_extra_ms == Approx(gather).epsilon(1e-9));
  // 57 x 4 x 0.08077888 + 0.01262144 = 18.43020608 ms
  CHECK(p.comm_ms == Approx(18.43020608).epsilon(1e-9));
  CHECK(p.comm_ms >= 57 * 4 * a2a);
  CHECK(p.step_ms == Approx(p.compute_ms + p.comm_ms).epsilon(1e-12));
}

TEST_CASE("comm_bytes counts the bytes each rank sends per step", "[costmodel][cp][ulysses]") {
  const auto hw = round_hardware();
  // Ulysses 2: 57 x 4 x 14,155,776 x 1/2 + the output gather 524,288 x 1/2 = 1,614,020,608
  const auto u2 = predict(make_query("flux.1-dev", 2), hw, config(1, 2));
  CHECK(u2.comm_bytes == Approx(1614020608.0).epsilon(1e-12));
  // TP 2: (19 x 2 + 38 x 1) all-reduces of 28,311,552 x 2 x 1/2 = 2,151,677,952
  const auto tp2 = predict(make_query("flux.1-dev", 2), hw, config(1, 1, 2));
  CHECK(tp2.comm_bytes == Approx(2151677952.0).epsilon(1e-12));
  // One GPU sends nothing.
  CHECK(predict(make_query("flux.1-dev", 1), hw, config(1, 1)).comm_bytes == 0.0);
}

TEST_CASE("Overlapped p2p transfers cost only what exceeds the attention they hide behind",
          "[costmodel][cp][ring][p2p]") {
  auto c = config(4, 1);
  c.context_parallel_config.rotate_method = cpplan::RotateMethod::kP2P;
  const double gather_out_fast = 0.01 + 524288.0 * 0.75 / 100e9 * 1e3;
  SECTION("a fast link hides completely") {
    const auto hw = round_hardware();
    const auto p = predict(make_query("flux.1-dev", 4), hw, c);
    // per layer 3 send/recv of 14,155,776 bytes: 3 x (0.01 + 0.14155776) = 0.45467328 ms
    const double sends = 3 * (0.01 + 14155776.0 / 100e9 * 1e3);
    REQUIRE(p.block_count == 2);
    for (int i = 0; i < p.block_count; ++i) {
      const auto& b = p.blocks[i];
      INFO("block group " << i);
      CHECK(b.attention_ms > b.count * sends);
      CHECK(b.comm_ms == 0.0);
    }
    CHECK(p.comm_ms == Approx(gather_out_fast).epsilon(1e-9));
  }
  SECTION("a slow link shows the excess") {
    auto hw = round_hardware();
    hw.intra_node.bandwidth_gbps = 1;
    const auto p = predict(make_query("flux.1-dev", 4), hw, c);
    // per layer 3 x (0.01 + 14,155,776 / 1e9 s) = 3 x 14.16577600 ms
    const double sends = 3 * (0.01 + 14155776.0 / 1e9 * 1e3);
    for (int i = 0; i < p.block_count; ++i) {
      const auto& b = p.blocks[i];
      INFO("block group " << i);
      REQUIRE(b.attention_ms < b.count * sends);
      CHECK(b.comm_ms == Approx(b.count * sends - b.attention_ms).epsilon(1e-9));
    }
  }
}

TEST_CASE("A CP group wider than a node uses the network link", "[costmodel][cp][ulysses]") {
  const auto hw = round_hardware(/*gpus_per_node=*/2);
  const auto p = predict(make_query("flux.1-dev", 4), hw, config(1, 4));
  // a2a size 1152 x 3072 x 2 = 7,077,888; over the network: 0.02 + 7,077,888 x 3/4 / 5e9 s
  const double a2a = 0.02 + 7077888.0 * 0.75 / 5e9 * 1e3;     // 1.0816832 ms
  const double gather = 0.02 + 524288.0 * 0.75 / 5e9 * 1e3;  // 0.0986432 ms
  CHECK(p.comm_ms == Approx(57 * 4 * a2a + gather).epsilon(1e-9));
}

TEST_CASE("Tensor parallelism all-reduces twice per stream of a double block and once per single block",
          "[costmodel][tp]") {
  const auto hw = round_hardware();
  const auto p = predict(make_query("flux.1-dev", 2), hw, config(1, 1, 2));
  // Double blocks: image stream 4096 x 3072 x 2 = 25,165,824 bytes, text 512 x 3072 x 2 = 3,145,728,
  // each after attention and after the FFN; on 2 ranks (factor 1), alpha 0.01 ms, 100 GB/s.
  const double image = 0.01 + 25165824.0 / 100e9 * 1e3, text = 0.01 + 3145728.0 / 100e9 * 1e3;
  // Single blocks: one all-reduce of 4608 x 3072 x 2 = 28,311,552 bytes (fused projection).
  const double single = 0.01 + 28311552.0 / 100e9 * 1e3;
  REQUIRE(p.block_count == 2);
  CHECK(p.blocks[0].comm_ms == Approx(19 * 2 * (image + text)).epsilon(1e-9));
  CHECK(p.blocks[1].comm_ms == Approx(38 * single).epsilon(1e-9));
  CHECK(p.step_comm_extra_ms == 0.0);  // no CP group, no CFG group
  CHECK(p.comm_ms == Approx(38 * (image + text) + 38 * single).epsilon(1e-9));
}

TEST_CASE("Tensor parallelism all-reduces three times per cross block", "[costmodel][tp]") {
  const auto hw = round_hardware();
  // wan-tiny: 2 cross blocks, 128 tokens, D = 192, true CFG batched (2 samples per forward).
  const auto p = predict(make_query("wan-tiny", 2), hw, config(1, 1, 2));
  // 2 x 128 x 192 x 2 = 98,304 bytes: 0.01 + 0.00098304 ms, after attention, cross-attention, FFN
  const double reduce = 0.01 + 98304.0 / 100e9 * 1e3;
  CHECK(p.comm_ms == Approx(2 * 3 * reduce).epsilon(1e-9));
}

TEST_CASE("SD3.5-medium's extra self-attention adds a third all-reduce to its first 13 blocks", "[costmodel][tp]") {
  const auto hw = round_hardware();
  const auto p = predict(make_query("sd3.5-medium", 2), hw, config(1, 1, 2));
  // 2 samples x 4429 tokens x 1536 x 2 bytes = 27,211,776: 0.01 + 0.27211776 ms;
  // Per stream: image 4096 x 1536 x 2 bytes x 2 samples (true CFG) = 25,165,824, text 333 tokens
  // (kept whole) = 2,045,952. Blocks 0-12: 3 image + 2 text all-reduces; 13-23: 2 + 2.
  const double image = 0.01 + 25165824.0 / 100e9 * 1e3, text = 0.01 + 2045952.0 / 100e9 * 1e3;
  REQUIRE(p.block_count == 2);
  CHECK(p.blocks[0].comm_ms == Approx(13 * (3 * image + 2 * text)).epsilon(1e-9));
  CHECK(p.blocks[1].comm_ms == Approx(11 * (2 * image + 2 * text)).epsilon(1e-9));
  CHECK(p.comm_ms == Approx(61 * image + 48 * text).epsilon(1e-9));
}

TEST_CASE("CFG parallelism all-gathers the prediction once per step, and only with cfg 2", "[costmodel][cfg]") {
  const auto hw = round_hardware();
  // sd3.5-large 1024x1024: the prediction is 4096 x 64 x 2 = 524,288 bytes; both halves
  // gathered: 1,048,576 bytes on 2 ranks: 0.01 + 1,048,576 x 1/2 / 100e9 s = 0.01524288 ms
  const auto cfg = predict(make_query("sd3.5-large", 2), hw, config(1, 1, 1, 2));
  CHECK(cfg.step_comm_extra_ms == Approx(0.01524288).epsilon(1e-9));
  CHECK(cfg.comm_ms == Approx(0.01524288).epsilon(1e-9));

  auto q = make_query("sd3.5-large", 2);
  q.batch = 2;
  const auto dp = predict(q, hw, config(1, 1, 1, 1, 2));
  CHECK(dp.comm_ms == 0.0);  // replicas never talk

  const auto single = predict(make_query("sd3.5-large", 1), hw, config(1, 1));
  CHECK(single.comm_ms == 0.0);
}

TEST_CASE("Ring and Unified charge their collectives on the ring axis", "[costmodel][cp][ring]") {
  const auto hw = round_hardware();
  const auto ring = predict(make_query("flux.1-dev", 4), hw, config(4, 1));
  // one all-gather of 56,623,104 bytes on 4 ranks per block: 0.01 + 56,623,104 x 3/4 / 100e9 s
  const double gather_kv = 0.01 + 56623104.0 * 0.75 / 100e9 * 1e3;
  const double gather_out = 0.01 + 524288.0 * 0.75 / 100e9 * 1e3;
  CHECK(ring.comm_ms == Approx(57 * gather_kv + gather_out).epsilon(1e-9));

  const auto unified = predict(make_query("flux.1-dev", 4), hw, config(2, 2));
  // per block: 4 all-to-alls of 7,077,888 on the 2 Ulysses ranks + one all-gather of 28,311,552 on 2 ring ranks
  const double a2a = 0.01 + 7077888.0 * 0.5 / 100e9 * 1e3;
  const double kv = 0.01 + 28311552.0 * 0.5 / 100e9 * 1e3;
  CHECK(unified.comm_ms == Approx(57 * (4 * a2a + kv) + gather_out).epsilon(1e-9));
}

TEST_CASE("the collectives a step issues are counted per plan", "[costmodel][communication]") {
  // flux-tiny: 2 double + 2 single blocks. Ring (all-gather): K and V together, one per block,
  // the output gather once per step; Ulysses: Q, K, V and the output all-to-all per block; TP: the
  // row-parallel all-reduces (double: 2 per stream x 2 streams, single: 1).
  const cpplan::costmodel::DatasheetModel hw(*cpplan::test::catalog().find_hardware("h100-sxm"));
  const cpplan::costmodel::CostModel cost(hw);
  auto calls = [&](const cpplan::ParallelConfig& c) {
    const cpplan::Query q = cpplan::test::make_query("flux-tiny", static_cast<int>(c.world_size()), 128, 128);
    return cost.predict(q, c, cpplan::classify(c.context_parallel_config)).collective_calls;
  };
  CHECK(calls(cpplan::test::config(1, 1)) == 0);
  CHECK(calls(cpplan::test::config(2, 1)) == 4 * 1 + 1);
  CHECK(calls(cpplan::test::config(1, 2)) == 4 * 4 + 1);
  CHECK(calls(cpplan::test::config(1, 1, 2)) == 2 * 4 + 2 * 1);
}
