#include <fmt/format.h>

#include "planner/cp_rules.h"

namespace cpplan::planner::rules {

void require_even_split(const Query& q, std::string_view name, long long degree, std::vector<Violation>& out) {
  if (degree <= 1) return;
  const Sequence& s = q.sequence;
  if (s.image_tokens % degree != 0)
    out.push_back({RuleId::kEvenSplitImageTokens, std::string(name), std::to_string(degree),
                   fmt::format("must divide image tokens = {}", s.image_tokens), Lever::kResolution});
  const bool text_split = q.model->cp_split == CpSplit::kImageAndText && q.model->text_handling == TextHandling::kJoint;
  if (text_split && s.text_tokens % degree != 0)
    out.push_back({RuleId::kEvenSplitTextTokens, std::string(name), std::to_string(degree),
                   fmt::format("must divide text tokens = {}", s.text_tokens), Lever::kTextTokens});
}

void require_heads_divisible(const Query& q, const ParallelConfig& c, std::vector<Violation>& out) {
  const int u = c.ulysses(), t = c.tp(), heads = q.model->heads;
  if (u <= 1 || t < 1) return;
  if (t == 1) {
    if (heads % u != 0)
      out.push_back({RuleId::kUlyssesHeadsDivisible, "ulysses_degree", std::to_string(u),
                     fmt::format("must divide num_heads = {}", heads), Lever::kModelHeads});
  } else if (heads % t == 0 && (heads / t) % u != 0) {
    out.push_back({RuleId::kUlyssesHeadsDivisible, "ulysses_degree", std::to_string(u),
                   fmt::format("must divide heads per TP rank = {} / tp_degree {} = {}", heads, t, heads / t),
                   Lever::kModelHeads});
  }
}

void require_token_per_rank(const Query& q, std::string_view name, int degree, std::vector<Violation>& out) {
  if (degree > q.sequence.image_tokens)
    out.push_back({RuleId::kImageTokenPerRank, std::string(name), std::to_string(degree),
                   fmt::format("needs at least one image token per rank (image tokens = {})", q.sequence.image_tokens),
                   Lever::kResolution});
  const bool text_split = q.model->cp_split == CpSplit::kImageAndText && q.model->text_handling == TextHandling::kJoint;
  if (text_split && degree > q.sequence.text_tokens)
    out.push_back({RuleId::kTextTokenPerRank, std::string(name), std::to_string(degree),
                   fmt::format("needs at least one text token per rank (text tokens = {})", q.sequence.text_tokens),
                   Lever::kTextTokens});
}

}  // namespace cpplan::planner::rules
