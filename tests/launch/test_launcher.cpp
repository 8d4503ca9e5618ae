// The launcher's pure parts (launch/launcher.h); starting real ranks with it is tested through the
// cpplan binary (tests/executor/test_faults.cpp, label multirank).

#include <vector>

#include "launch/launcher.h"

#include <catch2/catch.hpp>

TEST_CASE("the cores of local ranks are disjoint equal shares, or none when too few", "[launcher]") {
  using cpplan::launch::rank_cores;
  CHECK(rank_cores(2, {0, 1, 2, 3}) == std::vector<std::vector<int>>{{0, 1}, {2, 3}});
  CHECK(rank_cores(3, {0, 1, 2, 3, 4, 5, 6}) == std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}});
  CHECK(rank_cores(2, {4, 9}) == std::vector<std::vector<int>>{{4}, {9}});  // the cores allowed, not 0..n
  CHECK(rank_cores(4, {0, 1}).empty());
  CHECK(rank_cores(0, {0, 1}).empty());
}
