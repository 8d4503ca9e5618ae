#pragma once
// Validity rules and planner facts of one context-parallel variant (shared/spec/parallelism.md).
// One file per variant in planner/strategies/, one line each in cp_rules_registry.cpp.

#include <string>
#include <vector>

#include "core/cp_registry.h"
#include "core/plan.h"

namespace cpplan::planner {

// What the planner knows of a variant beyond its rules.
struct CpRulesTraits {
  bool anything_mode = false;  // uneven split (ulysses_anything, ring_anything): enumerated only when
                               // PlannerOptions::allow_anything
  CpVariant even_form = CpVariant::kNone;  // the variant it computes the same as over an even split
                                           // (itself for the even variants); plan tables merge the two
  bool joins_pipefusion = false;  // enumerated with pipefusion_degree > 1 (xDiT's patches split evenly)
};

class CpRules {
 public:
  virtual ~CpRules() = default;
  virtual CpVariant variant() const = 0;
  virtual CpRulesTraits traits() const = 0;
  // Enumeration: whether the variant is a candidate for these degrees.
  virtual bool candidate(int ring, int ulysses) const = 0;
  // Sets the variant's flags (anything modes) on a config that has the degrees.
  virtual void configure(ContextParallelConfig& cp) const { (void)cp; }
  // Appends every rule of this variant that the plan breaks.
  virtual void validate(const Query& q, const ParallelConfig& c, std::vector<Violation>& out) const = 0;
};

// The variant's rules; every CpVariant has its own (core/cp_registry.h).
const CpRules& cp_rules(CpVariant v);
// All of them, in CpVariant order.
const CpRegistry<CpRules>& all_cp_rules();

// Shared checks used by several variants.
namespace rules {
// `degree_name = degree: must divide image tokens = S` (and text tokens when the model's CP
// plan splits text too).
void require_even_split(const Query& q, std::string_view degree_name, long long degree, std::vector<Violation>& out);
// The Ulysses head rule: (heads / tp_degree) % ulysses_degree == 0.
void require_heads_divisible(const Query& q, const ParallelConfig& c, std::vector<Violation>& out);
// Ring needs the attention kernel's log-sum-exp.
// Uneven splits still need one token of each split part per rank.
void require_token_per_rank(const Query& q, std::string_view degree_name, int degree, std::vector<Violation>& out);
}  // namespace rules

}  // namespace cpplan::planner
