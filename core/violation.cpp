#include "core/violation.h"

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
