// The host a rank runs on: its share of the host's cores reaches the BLAS LibTorch's CPU GEMMs run in (Debian's
// OpenBLAS keeps its own thread pool, which at::set_num_threads does not size), both when a rank
// shares the cores with others and when a rank our launcher bound to one core runs alone (the
// probe's one-rank kernels, which must run as a one-rank run does: on every core); and the share of
// the host's CPU time its hypervisor gave to other guests while the steps ran.
#include <ATen/Parallel.h>
#include <sched.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "executor/run_parts.h"
#include "executor/runner.h"

// Last: LibTorch (above) defines glog's CHECK, which would replace Catch's and go uncounted.
#undef CHECK
#include <catch2/catch.hpp>

#include "tests/support/skip.h"

using cpplan::executor::blas_threads;
using cpplan::executor::share_cpu_threads;

TEST_CASE("a rank bound to one core sizes OpenBLAS to its core, and to every host core when it runs alone",
          "[executor][threads]") {
  cpu_set_t host;
  REQUIRE(sched_getaffinity(0, sizeof host, &host) == 0);
  const int cores = CPU_COUNT(&host);
  if (blas_threads() < 0 || cores < 2)
    CPPLAN_SKIP("LibTorch's BLAS is not OpenBLAS, or this host has one core: nothing to size");
  // As our launcher starts a rank: bound to one core, told how many and every core of the host.
  std::string list;
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &host)) {
      list += (list.empty() ? "" : ",") + std::to_string(c);
      if (first < 0) first = c;
    }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  setenv("CPPLAN_RANK_CORES", "1", 1);
  setenv("CPPLAN_HOST_CORES", list.c_str(), 1);

  share_cpu_threads(cores);  // one of `cores` ranks: its one core
  CHECK(blas_threads() == 1);
  CHECK(at::get_num_threads() == 1);
  share_cpu_threads(1);  // alone: every core of the host, BLAS included
  CHECK(blas_threads() == cores);
  CHECK(at::get_num_threads() == cores);
  cpu_set_t now;
  REQUIRE(sched_getaffinity(0, sizeof now, &now) == 0);
  CHECK(CPU_COUNT(&now) == cores);
  share_cpu_threads(cores);  // back to its share
  CHECK(blas_threads() == 1);
  REQUIRE(sched_getaffinity(0, sizeof now, &now) == 0);
  CHECK(CPU_COUNT(&now) == 1);
}

TEST_CASE("the hypervisor's share of the host's CPU time during the steps is read from /proc/stat",
          "[executor][threads]") {
  using cpplan::executor::HostCpuTime;
  using cpplan::executor::host_steal_fraction;
  // 1000 jiffies pass, 100 of them stolen: 10%.
  CHECK(host_steal_fraction(HostCpuTime{1000, 10}, HostCpuTime{2000, 110}) == Approx(0.1));
  CHECK(host_steal_fraction(std::nullopt, HostCpuTime{2000, 110}) == -1);
  CHECK(host_steal_fraction(HostCpuTime{2000, 110}, HostCpuTime{2000, 110}) == -1);  // no time passed
  const auto now = cpplan::executor::host_cpu_time();
  REQUIRE(now.has_value());  // Linux
  CHECK(now->total > 0);
  CHECK(now->steal >= 0);
  CHECK(now->steal <= now->total);
}
