#pragma once
// Tests match which rule broke by its RuleId (core/violation.h), not by its wording; Catch prints
// an id as its kebab-case string.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/violation.h"

namespace Catch {
template <>
struct StringMaker<cpplan::RuleId> {
  static std::string convert(cpplan::RuleId id) { return std::string(cpplan::to_string(id)); }
};
}  // namespace Catch

namespace cpplan::test {

// The ids of `violations`, in order.
inline std::vector<RuleId> rule_ids(const std::vector<Violation>& violations) {
  std::vector<RuleId> out;
  out.reserve(violations.size());
  for (const Violation& v : violations) out.push_back(v.id);
  return out;
}

}  // namespace cpplan::test
