// Comm's rule that no host tensor reaches an NCCL collective, applied by the real collectives
// before they touch their group; and the same collectives over a real Gloo group (two ranks as two
// threads of this process, over loopback) taking host tensors and counting what they sent.
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "executor/comm.h"
#include "executor/rendezvous.h"
#include "tests/support/skip.h"

// Last: LibTorch (above) defines glog's CHECK, which would replace Catch's and go uncounted.
#undef CHECK
#include <catch2/catch.hpp>

namespace ex = cpplan::executor;
using Catch::Matchers::Contains;
using namespace std::chrono_literals;

namespace {

// Runs `body(rank, group)` on two ranks, each a thread with its own Gloo group of two over one
// in-process store; rethrows a rank's failure. Catch's assertions are not thread-safe: the bodies
// record what they saw and the test asserts after the join. False when this build has no Gloo.
bool on_two_gloo_ranks(const std::function<void(int, const ex::Group&)>& body) {
#ifndef CPPLAN_GLOO
  (void)body;
  return false;
#else
  static int round = 0;
  const std::string name = "comm-test/" + std::to_string(round++);
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::exception_ptr failure[2];
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      try {
        body(r, ex::gloo_group(store, name, r, 2, 10s));
      } catch (...) {
        failure[r] = std::current_exception();
      }
    });
  for (auto& t : ranks) t.join();
  for (const auto& f : failure)
    if (f) std::rethrow_exception(f);
  return true;
#endif
}

// The std::runtime_error `f` throws ("" when it returns, "other" for another exception).
std::string runtime_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  } catch (...) {
    return "other";
  }
  return "";
}

}  // namespace

TEST_CASE("the collective rule refuses host tensors on NCCL groups only, naming the collective",
          "[executor][comm][nccl]") {
  const at::Tensor ids = at::arange(3, at::kLong);
  const auto error = ex::collective_tensor_error(ex::Transport::kNccl, "all_gather_cat", ids);
  REQUIRE(error.has_value());
  CHECK(*error == "all_gather_cat on an NCCL group: got a Long tensor on cpu, shape [3]; NCCL takes GPU tensors only");
  CHECK(ex::collective_tensor_error(ex::Transport::kNccl, "all_reduce", at::Tensor()) ==
        "all_reduce on an NCCL group: got an undefined tensor; NCCL takes GPU tensors only");
  CHECK_FALSE(ex::collective_tensor_error(ex::Transport::kGloo, "all_gather_cat", ids).has_value());
}

TEST_CASE("every collective of an NCCL group refuses a host tensor before its group sees it",
          "[executor][comm][nccl]") {
  // Real Gloo groups under a Comm told they are NCCL: were the rule not applied first, each
  // collective would run over Gloo and return, and the checks below would fail.
  struct Seen {
    std::vector<std::string> errors;
    ex::CommStats stats;
  } seen[2];
  const bool ran = on_two_gloo_ranks([&](int rank, const ex::Group& group) {
    Seen& s = seen[rank];
    ex::Comm comm(group, rank, 2, &s.stats, ex::Transport::kNccl);
    at::Tensor x = at::ones({2, 4});
    at::Tensor recv = at::empty_like(x);
    s.errors = {runtime_error_of([&] { comm.all_gather_cat(x, 0); }),
                runtime_error_of([&] { comm.all_gather_uneven(x, 0, {2, 1}); }),
                runtime_error_of([&] { comm.all_to_all(x); }),
                runtime_error_of([&] { comm.all_to_all_flat(x.flatten(), {4, 4}, {4, 4}); }),
                runtime_error_of([&] { comm.all_reduce(x); }),
                runtime_error_of([&] { comm.exchange(x, 1 - rank, recv, 1 - rank, 0); }),
                runtime_error_of([&] { comm.all_gather_cat(at::arange(3, at::kLong), 0); })};
  });
  if (!ran) CPPLAN_SKIP("this build has no Gloo: the rule was checked on its own only");
  const std::vector<std::string> expected = {"all_gather_cat on an NCCL group: got a Float tensor on cpu, shape [2, 4]",
                                             "all_gather_uneven on an NCCL group: got a Float tensor on cpu",
                                             "all_to_all on an NCCL group: got a Float tensor on cpu",
                                             "all_to_all_flat on an NCCL group: got a Float tensor on cpu, shape [8]",
                                             "all_reduce on an NCCL group: got a Float tensor on cpu",
                                             "exchange (send) on an NCCL group: got a Float tensor on cpu",
                                             "all_gather_cat on an NCCL group: got a Long tensor on cpu, shape [3]"};
  for (const Seen& s : seen) {
    REQUIRE(s.errors.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) CHECK_THAT(s.errors[i], Contains(expected[i]));
    CHECK(s.stats.calls == 0);  // nothing was sent or counted
    CHECK(s.stats.bytes_sent == 0);
  }
}

TEST_CASE("the collectives of a Gloo group take host tensors and count the bytes each rank sends",
          "[executor][comm]") {
  struct Seen {
    double gathered = 0, reduced_min = 0, reduced_max = 0, received = 0;
    int64_t ids = 0;
    ex::CommStats stats;
  } seen[2];
  const bool ran = on_two_gloo_ranks([&](int rank, const ex::Group& group) {
    Seen& s = seen[rank];
    ex::Comm comm(group, rank, 2, &s.stats, ex::Transport::kGloo, ex::CollectiveTiming::kEvents);
    const at::Tensor mine = at::full({2, 3}, static_cast<double>(rank + 1), at::kFloat);
    s.gathered = comm.all_gather_cat(mine, 0).sum().item<double>();
    at::Tensor sum = mine.clone();
    comm.all_reduce(sum);
    s.reduced_min = sum.min().item<double>();
    s.reduced_max = sum.max().item<double>();
    s.ids = comm.all_gather_cat(at::arange(3, at::kLong), 0).sum().item<int64_t>();  // Ulysses Anything's
    at::Tensor send = mine.clone(), recv = at::zeros_like(mine);
    auto pending = comm.exchange(send, 1 - rank, recv, 1 - rank, 0);
    comm.wait(pending);
    s.received = recv.sum().item<double>();
  });
  if (!ran) CPPLAN_SKIP("this build has no Gloo (its LibTorch ships no gloo headers)");
  for (int rank = 0; rank < 2; ++rank) {
    const Seen& s = seen[rank];
    CHECK(s.gathered == 6 * 1 + 6 * 2);
    CHECK(s.reduced_min == 3);
    CHECK(s.reduced_max == 3);
    CHECK(s.ids == 2 * (0 + 1 + 2));
    CHECK(s.received == 6 * (2 - rank));  // the other rank's tensor
    // nccl-tests' counts for 24 bytes on 2 ranks: all-gather (n-1) x 24, all-reduce 2(n-1)/n x 24,
    // the kLong gather (n-1) x 24, the exchange 24.
    CHECK(s.stats.calls == 4);
    CHECK(s.stats.bytes_sent == 24 + 24 + 24 + 24);
    CHECK(s.stats.seconds > 0);            // Gloo blocks: timed by the clock,
    CHECK(s.stats.pending == nullptr);     // with nothing left to read later
  }
}
