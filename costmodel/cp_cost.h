#pragma once
// Cost of one self-attention layer on one rank under a context-parallel variant: the shape of
// the attention kernel calls, the collectives, and the extra memory; and the variant's facts the
// step model reads beside it (CpCostTraits). One file per variant in costmodel/strategies/ (Ring
// and Ring Anything share ring.cpp, Ulysses and Ulysses Anything ulysses.cpp), one line each in
// cp_cost_registry.cpp.

#include <array>

#include "core/cp_registry.h"
#include "core/parallel_config.h"
#include "core/units.h"
#include "costmodel/hardware_model.h"

namespace cpplan::costmodel {

// One self-attention layer for one sample, seen from the most loaded rank.
struct AttentionInput {
  double image_tokens = 0;  // S_img of the whole sequence
  double text_tokens = 0;   // S_txt inside the joint sequence (0 for cross-attention models)
  bool split_text = true;   // text split with the image (true) or whole on every rank
  int heads = 0;            // heads per tensor-parallel rank
  int head_dim = 0;
  int ring = 1;
  int ulysses = 1;
  Bytes elem_bytes = 2;     // activation dtype
  bool fp32_merge = true;   // convert_to_fp32: Ring's running output and LSE in fp32
  bool ring_p2p = false;    // rotate_method p2p: K/V blocks passed around the ring
};

enum class CpAxis { kUlysses, kRing };

struct CommCall {
  Collective kind = Collective::kAllGather;
  CpAxis axis = CpAxis::kUlysses;
  Bytes bytes = 0;  // nccl-tests "size" of one call
  int count = 1;    // calls per layer
  bool overlapped = false;  // runs concurrently with the layer's attention kernels
};

struct AttentionCost {
  double tokens = 0;          // local tokens the projections and elementwise work run on
  double q_tokens = 0;        // queries per kernel call
  double kv_tokens = 0;       // keys per kernel call
  double heads = 0;           // heads per kernel call (Ulysses Anything: including padding)
  int calls = 1;              // kernel calls per layer (Ring: one per K/V block)
  Bytes merge_bytes = 0;      // memory traffic of Ring's log-sum-exp merges
  Bytes layout_bytes = 0;     // memory traffic of the contiguous copies around all-to-alls
  Bytes transient_bytes = 0;  // live bytes beyond the local Q/K/V/O: gathered K/V, full-sequence QKV
  std::array<CommCall, 3> comm{};
  int comm_count = 0;

  Flops flops() const { return 4.0 * q_tokens * kv_tokens * calls * heads; }  // times head_dim by caller
  void add(CommCall c) { comm[comm_count++] = c; }
};

// What the step model knows of a variant beyond one layer's attention cost: the host-side op
// groups of the runtime profile (RuntimeOps) each attention layer pays, and how its Ring axis moves
// K/V.
struct CpCostTraits {
  bool ulysses_ops = false;   // all-to-alls over the Ulysses axis: RuntimeOps::ulysses per layer
  bool ring_ops = false;      // K/V blocks over the Ring axis: RuntimeOps::ring per layer and
                              // RuntimeOps::ring_iteration per layer and ring rank
  bool anything_ops = false;  // uneven split (lengths exchanged, padding): RuntimeOps::anything per layer
  bool ring_always_gathers = false;  // its Ring axis all-gathers K/V even under rotate_method p2p
                                     // (Ring Anything: padded K/V); else p2p makes it send/recv
};

class CpCostStrategy {
 public:
  virtual ~CpCostStrategy() = default;
  virtual CpVariant variant() const = 0;
  virtual CpCostTraits traits() const = 0;
  virtual AttentionCost attention(const AttentionInput& in) const = 0;

  // The collective that carries the variant's attention traffic on a CP axis: all-to-all on the
  // Ulysses axis; on the Ring axis send/recv under rotate_method p2p (unless
  // traits().ring_always_gathers), else all-gather.
  Collective main_collective(CpAxis axis, RotateMethod rotate) const {
    if (axis == CpAxis::kUlysses) return Collective::kAllToAll;
    return rotate == RotateMethod::kP2P && !traits().ring_always_gathers ? Collective::kSendRecv : Collective::kAllGather;
  }
};

// The variant's strategy; every CpVariant has its own (core/cp_registry.h).
const CpCostStrategy& cp_cost_strategy(CpVariant v);
// All of them, in CpVariant order.
const CpRegistry<CpCostStrategy>& all_cp_cost_strategies();

// Shared arithmetic of the strategies.
namespace cp {
inline double ceil_div(double a, double b) { return b <= 1 ? a : static_cast<double>(static_cast<long long>((a + b - 1) / b)); }
// Local tokens when the split part is divided over n ranks (ceil: the longest rank bounds time).
inline double split_tokens(const AttentionInput& in, int n) {
  return ceil_div(in.image_tokens, n) + (in.split_text ? ceil_div(in.text_tokens, n) : 0);
}
inline double local_tokens(const AttentionInput& in, int n) {
  return split_tokens(in, n) + (in.split_text ? 0 : in.text_tokens);
}
// Joint text that every rank holds whole (not split with the image).
inline bool whole_text(const AttentionInput& in) { return !in.split_text && in.text_tokens > 0; }
inline double sequence(const AttentionInput& in) { return in.image_tokens + in.text_tokens; }
inline double split_sequence(const AttentionInput& in) { return in.image_tokens + (in.split_text ? in.text_tokens : 0); }
// Each all-to-all needs its tensor contiguous in the order it scatters (heads for Q, K, V;
// sequence for the output): one copy before and one after each of the four, read and written.
inline Bytes all_to_all_layout_traffic(double split_tokens, double hidden, Bytes elem) {
  return 4 * 2 * 2.0 * split_tokens * hidden * elem;
}
inline Bytes merge_traffic(double q_tokens, double hidden, int blocks, bool fp32, Bytes elem) {
  // each merge reads the running output and the block's output and writes the result
  return 3.0 * q_tokens * hidden * (fp32 ? 4.0 : elem) * blocks;
}
}  // namespace cp

}  // namespace cpplan::costmodel
