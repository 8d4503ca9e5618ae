#pragma once
// Real ranks as threads of one process: `rank_main(rank)` on every rank of `world` (rank 0 on the
// calling thread), each rank's result kept; the first rank's exception, if any, rethrown after
// all have joined. The ranks meet through whatever store `rank_main` captures (a HashStore).

#include <exception>
#include <thread>
#include <vector>

namespace cpplan::test {

template <class Result, class RankMain>
std::vector<Result> on_rank_threads(int world, RankMain rank_main) {
  std::vector<Result> results(world);
  std::vector<std::exception_ptr> errors(world);
  auto run = [&](int rank) {
    try {
      results[rank] = rank_main(rank);
    } catch (...) {
      errors[rank] = std::current_exception();
    }
  };
  std::vector<std::thread> others;
  for (int r = 1; r < world; ++r) others.emplace_back(run, r);
  run(0);
  for (auto& t : others) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return results;
}

}  // namespace cpplan::test
