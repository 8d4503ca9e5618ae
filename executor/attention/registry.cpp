// The context-parallel attention variants the executor runs: one line each.
#include "executor/attention.h"

namespace cpplan::executor {

const AttentionOp& local_attention_op();
const AttentionOp& ring_attention_op();
const AttentionOp& ulysses_attention_op();
const AttentionOp& unified_attention_op();
const AttentionOp& ulysses_anything_attention_op();
const AttentionOp& ring_anything_attention_op();

const AttentionOp& attention_op(CpVariant v) {
  static const AttentionOp* const kByVariant[kCpVariantCount] = {
      &local_attention_op(),   &ring_attention_op(),           &ulysses_attention_op(),
      &unified_attention_op(), &ulysses_anything_attention_op(), &ring_anything_attention_op(),
  };
  return *kByVariant[static_cast<int>(v)];
}

}  // namespace cpplan::executor
