#pragma once
// A broken validity rule as data: the field it concerns, the field's value, the rule, and the
// lever a user moves to satisfy it. The planner writes no front's words into it: each front names
// its own control for a lever (the CLI "--res", the GUI its resolution box, Python width=/height=).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cpplan {

// What a broken rule depends on, as a concept.
enum class Lever {
  kNone,              // nothing a query can change (e.g. a mode flag's exclusivity)
  kResolution,        // image tokens: the width, height (and frames)
  kTextTokens,        // the text length
  kModelHeads,        // the model's attention heads (a different degree, or another model)
  kAttentionBackend,  // the attention kernel
  kGpuCount,          // the number of GPUs
  kDegree,            // a parallel degree of the plan itself
  kVariant,           // the CP variant or its flags (anything modes, rotate method)
  kBatch,             // images generated together
  kSteps,             // denoising steps
  kModel,             // the model's own structure (its guidance, its blocks)
};
inline constexpr int kLeverCount = static_cast<int>(Lever::kModel) + 1;
std::string_view to_string(Lever l);

// Which validity rule broke: one id per rule (its message may vary with the values and the
// variant). to_string gives a stable kebab-case id for the JSON and the tests; the table of ids
// is in docs/architecture.md ("Validity rules").
enum class RuleId {
  kDegreeAtLeastOne,                 // every degree and the patch count >= 1
  kPipeFusionWarmupNonNegative,      // pipefusion_warmup_steps >= 0
  kGpuCountProduct,                  // r x u x t x p x c x d = the GPU count
  kAnythingModesExclusive,           // not ulysses_anything and ring_anything together
  kRotateAllToAllUnimplemented,      // rotate_method alltoall is reserved
  kRotateP2pNeedsRing,               // rotate_method p2p needs a Ring or Unified plan without ring_anything
  kEvenSplitImageTokens,             // the CP degree divides the image tokens
  kEvenSplitTextTokens,              // the CP degree divides the text tokens (models that split text)
  kUlyssesHeadsDivisible,            // u divides the heads (per TP rank)
  kImageTokenPerRank,                // an anything mode leaves each rank an image token
  kTextTokenPerRank,                 // an anything mode leaves each rank a text token
  kAnythingModeNotUnified,           // an anything mode with the other CP degree 1
  kAnythingModeNeedsDegree,          // an anything mode with its own degree > 1
  kRingAnythingNoMask,               // Ring Anything runs no attention mask
  kUlyssesAnythingHeadPadding,       // Ulysses Anything's head padding < one rank's share
  kTpHeadsDivisible,                 // t divides the heads
  kTpFfnDivisible,                   // t divides the FFN's hidden dimension
  kCfgDegreeAtMostTwo,               // cfg_degree is 1 or 2
  kCfgNeedsGuidance,                 // cfg_degree 2 needs a true-CFG model
  kPipeFusionFlagsNeedPipeFusion,    // patches and warm-up steps only with pipefusion_degree > 1
  kPipeFusionPatchesAtLeastDegree,   // M >= P
  kPipeFusionPatchesAtMostRows,      // M <= the latent rows
  kPipeFusionXditPatchSplit,         // xDiT's patch split runs M equal patches
  kPipeFusionWarmupAtMostSteps,      // W <= steps
  kPipeFusionExcludesTp,             // no PipeFusion with tensor parallelism
  kPipeFusionExcludesAnything,       // no PipeFusion with an anything mode
  kFullyShardExcludesTp,             // no fully sharded weights with tensor parallelism
  kFullyShardExcludesPipeFusion,     // no fully sharded weights with PipeFusion
  kFullyShardDividesRanks,           // fs divides r x u x c x d
  kStructureNeedsEvenSplit,          // linear or temporal attention runs no anything mode
  kTemporalExcludesPipeFusion,       // temporal blocks run no PipeFusion
  kConvGluLatentRow,                 // a conv-GLU FFN keeps a latent row per CP rank
  kDpDividesBatch,                   // d divides the batch
  kCacheExcludesPipeFusion,          // a step cache runs no PipeFusion
};
inline constexpr int kRuleIdCount = static_cast<int>(RuleId::kCacheExcludesPipeFusion) + 1;
// "ulysses-heads-divisible": stable, kebab-case.
std::string_view to_string(RuleId id);
// The id to_string gives `text`; nullopt for an unknown one.
std::optional<RuleId> parse_rule_id(std::string_view text);

// `id` comes first and has no default, so that every construction site names its rule.
struct Violation {
  RuleId id;
  std::string field;  // "ulysses_degree", "ring_degree x ulysses_degree", "ulysses_anything and ring_anything"
  std::string value;  // the field's value as written in the message; empty when the rule names no value
  std::string rule;   // "must divide image tokens = 3969"
  Lever lever = Lever::kNone;

  // "field = value: rule", or "field: rule" without a value (shared/spec/parallelism.md's form).
  std::string message() const;
  bool operator==(const Violation&) const = default;
};

// The messages of `v`, in order.
std::vector<std::string> messages(const std::vector<Violation>& v);

}  // namespace cpplan
