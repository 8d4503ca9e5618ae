#include <fmt/format.h>

#include "planner/cp_rules.h"

namespace cpplan::planner::rules {

void require_even_split(const Query& q, std::string_view name, long long degree, std::vector<std::string>& reasons) {
  if (degree <= 1) return;
  const Sequence& s = q.sequence;
  if (s.image_tokens % degree != 0)
    reasons.push_back(fmt::format("{} = {}: must divide image tokens = {}", name, degree, s.image_tokens));
  const bool text_split = q.model->cp_split == CpSplit::kImageAndText && q.model->text_handling == TextHandling::kJoint;
  if (text_split && s.text_tokens % degree != 0)
    reasons.push_back(fmt::format("{} = {}: must divide text tokens = {}", name, degree, s.text_tokens));
}

void require_heads_divisible(const Query& q, const ParallelConfig& c, std::vector<std::string>& reasons) {
  const int u = c.ulysses(), t = c.tp(), heads = q.model->heads;
  if (u <= 1 || t < 1) return;
  if (t == 1) {
    if (heads % u != 0) reasons.push_back(fmt::format("ulysses_degree = {}: must divide num_heads = {}", u, heads));
  } else if (heads % t == 0 && (heads / t) % u != 0) {
    reasons.push_back(fmt::format("ulysses_degree = {}: must divide heads per TP rank = {} / tp_degree {} = {}", u,
                                  heads, t, heads / t));
  }
}

void require_lse_backend(const Query& q, const ParallelConfig& c, std::vector<std::string>& reasons) {
  if (c.ring() > 1 && !returns_lse(q.backend))
    reasons.push_back(fmt::format(
        "ring_degree = {}: attention backend {} cannot return the LSE that Ring needs; use flash, cudnn or sage",
        c.ring(), to_string(q.backend)));
}

void require_token_per_rank(const Query& q, std::string_view name, int degree, std::vector<std::string>& reasons) {
  if (degree > q.sequence.image_tokens)
    reasons.push_back(fmt::format("{} = {}: needs at least one image token per rank (image tokens = {})", name, degree,
                                  q.sequence.image_tokens));
  const bool text_split = q.model->cp_split == CpSplit::kImageAndText && q.model->text_handling == TextHandling::kJoint;
  if (text_split && degree > q.sequence.text_tokens)
    reasons.push_back(fmt::format("{} = {}: needs at least one text token per rank (text tokens = {})", name, degree,
                                  q.sequence.text_tokens));
}

}  // namespace cpplan::planner::rules
