#pragma once
// Which frameworks users run can execute a plan, why the others cannot, and the ready-to-paste
// configuration for them (diffusers Python, xDiT command line).

#include <string>
#include <string_view>
#include <vector>

#include "core/plan.h"

namespace cpplan::planner {

enum class Framework { kDiffusers, kXdit, kCacheDit };
inline constexpr int kFrameworkCount = 3;
std::string_view to_string(Framework f);  // "diffusers", "xdit", "cache-dit"

struct FrameworkSet {
  unsigned bits = 0;
  bool has(Framework f) const { return bits & (1u << static_cast<int>(f)); }
  void add(Framework f) { bits |= 1u << static_cast<int>(f); }
  std::vector<std::string> names() const;
};

// Empty when `f` can run the (valid) plan with its text encoders and VAE placed as `where`, else
// the reason it cannot.
std::string_view unsupported_reason(Framework f, const Query& q, const Plan& p, const PipelinePlacement& where = {});
FrameworkSet frameworks_for(const Query& q, const Plan& p, const PipelinePlacement& where = {});

// diffusers script for the plan (launch line in its first comment), with the lines that stream
// (offloaded) or free (sequential) the text encoders; precondition: diffusers can run it.
std::string diffusers_snippet(const Query& q, const Plan& p, const PipelinePlacement& where = {});
// xDiT launch line; precondition: xDiT can run it.
std::string xdit_command(const Query& q, const Plan& p, const PipelinePlacement& where = {});

}  // namespace cpplan::planner
