#pragma once
// A broken validity rule as data: the field it concerns, the field's value, the rule, and the
// lever a user moves to satisfy it. The planner writes no front's words into it: each front names
// its own control for a lever (the CLI "--res", the GUI its resolution box, Python width=/height=).

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

struct Violation {
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
