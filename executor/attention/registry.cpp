// The context-parallel attention variants the executor runs: one line each, in CpVariant order
// (core/cp_registry.h).
#include "executor/attention.h"

namespace cpplan::executor {

const AttentionOp& local_attention_op();
const AttentionOp& ring_attention_op();
const AttentionOp& ulysses_attention_op();
const AttentionOp& unified_attention_op();
const AttentionOp& ulysses_anything_attention_op();
const AttentionOp& ring_anything_attention_op();

namespace {
constexpr CpRegistryLines<AttentionOp> kLines = {{
    {CpVariant::kNone, local_attention_op},
    {CpVariant::kRing, ring_attention_op},
    {CpVariant::kUlysses, ulysses_attention_op},
    {CpVariant::kUnified, unified_attention_op},
    {CpVariant::kUlyssesAnything, ulysses_anything_attention_op},
    {CpVariant::kRingAnything, ring_anything_attention_op},
}};
static_assert(one_line_per_variant(kLines), "one line per CpVariant, in the enum's order");
}  // namespace

const CpRegistry<AttentionOp>& all_attention_ops() {
  static const CpRegistry<AttentionOp> kRegistry = build_cp_registry(kLines, "executor AttentionOp");
  return kRegistry;
}

const AttentionOp& attention_op(CpVariant v) { return cp_registry_entry(all_attention_ops(), v); }

}  // namespace cpplan::executor
