#pragma once
// A test case whose precondition cannot hold on this machine ends with CPPLAN_SKIP(reason): it
// prints "cpplan-test-skip: <reason>", which ctest reports as Skipped with that line (every Catch
// test is registered with SKIP_REGULAR_EXPRESSION "cpplan-test-skip:", tests/CMakeLists.txt), and
// returns. A test that makes its precondition itself (a fake nvidia-smi on PATH) does not skip.

#include <iostream>
#include <sstream>
#include <string>

namespace cpplan::test {

// The line ctest's SKIP_REGULAR_EXPRESSION matches, on standard output (Catch's console reporter
// writes there too), flushed before the test case returns.
inline void print_skip(const std::string& reason) { std::cout << "cpplan-test-skip: " << reason << std::endl; }

}  // namespace cpplan::test

// `reason` is a stream expression, as WARN's: CPPLAN_SKIP("needs " << n << " GPUs").
#define CPPLAN_SKIP(reason)                           \
  do {                                                \
    std::ostringstream cpplan_skip_reason_;           \
    cpplan_skip_reason_ << reason;                    \
    ::cpplan::test::print_skip(cpplan_skip_reason_.str()); \
    return;                                           \
  } while (false)
