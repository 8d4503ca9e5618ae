#include "core/violation.h"

#include <iterator>

namespace cpplan {

std::string_view to_string(Lever l) {
  switch (l) {
    case Lever::kNone: return "none";
    case Lever::kResolution: return "resolution";
    case Lever::kTextTokens: return "text_tokens";
    case Lever::kModelHeads: return "model_heads";
    case Lever::kAttentionBackend: return "attention_backend";
    case Lever::kGpuCount: return "gpu_count";
    case Lever::kDegree: return "degree";
    case Lever::kVariant: return "variant";
    case Lever::kBatch: return "batch";
    case Lever::kSteps: return "steps";
    case Lever::kModel: return "model";
  }
  return "none";
}

namespace {
// Indexed by RuleId; to_string's switch-free table keeps the ids in one place.
constexpr std::string_view kRuleIds[] = {
    "degree-at-least-one",
    "pipefusion-warmup-non-negative",
    "gpu-count-product",
    "anything-modes-exclusive",
    "rotate-alltoall-unimplemented",
    "rotate-p2p-needs-ring",
    "even-split-image-tokens",
    "even-split-text-tokens",
    "ulysses-heads-divisible",
    "image-token-per-rank",
    "text-token-per-rank",
    "anything-mode-not-unified",
    "anything-mode-needs-degree",
    "ring-anything-no-mask",
    "ulysses-anything-head-padding",
    "tp-heads-divisible",
    "tp-ffn-divisible",
    "cfg-degree-at-most-two",
    "cfg-needs-guidance",
    "pipefusion-flags-need-pipefusion",
    "pipefusion-patches-at-least-degree",
    "pipefusion-patches-at-most-rows",
    "pipefusion-xdit-patch-split",
    "pipefusion-warmup-at-most-steps",
    "pipefusion-excludes-tp",
    "pipefusion-excludes-anything",
    "fully-shard-excludes-tp",
    "fully-shard-excludes-pipefusion",
    "fully-shard-divides-ranks",
    "structure-needs-even-split",
    "temporal-excludes-pipefusion",
    "conv-glu-latent-row",
    "dp-divides-batch",
    "cache-excludes-pipefusion",
};
static_assert(std::size(kRuleIds) == kRuleIdCount, "one kebab-case id per RuleId");
}  // namespace

std::string_view to_string(RuleId id) { return kRuleIds[static_cast<int>(id)]; }

std::optional<RuleId> parse_rule_id(std::string_view text) {
  for (int i = 0; i < kRuleIdCount; ++i)
    if (kRuleIds[i] == text) return static_cast<RuleId>(i);
  return std::nullopt;
}

std::string Violation::message() const {
  return value.empty() ? field + ": " + rule : field + " = " + value + ": " + rule;
}

std::vector<std::string> messages(const std::vector<Violation>& v) {
  std::vector<std::string> out;
  out.reserve(v.size());
  for (const Violation& x : v) out.push_back(x.message());
  return out;
}

}  // namespace cpplan
