#pragma once
// Starts N local ranks of a command (fork + exec with an argv: no shell sees user strings), with
// the standard rendezvous variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR=127.0.0.1, MASTER_PORT), forwards SIGINT/SIGTERM, and ends every rank as soon as
// one fails. With at least as many cores as ranks, each rank is bound to its own equal share of
// them (CPPLAN_RANK_CORES tells it how many; CPPLAN_CPU_BIND=none leaves them unbound).

#include <string>
#include <vector>

namespace cpplan::launch {

enum class LaunchStatus { kOk, kFailed, kCancelled };

struct LaunchOutcome {
  LaunchStatus status = LaunchStatus::kOk;
  std::string reason;  // which rank failed and how, or which signal cancelled the run
  int failed_rank = -1;  // the first rank that failed
};

// Runs `argv` (argv[0] is the executable path) as `nproc` ranks plus `extra_env` entries
// ("NAME=value") and waits for all of them.
LaunchOutcome launch_local(const std::vector<std::string>& argv, int nproc, const std::vector<std::string>& extra_env);

// Runs `argv` as one child (fork + exec, no shell) with this environment, its stdout written to
// `stdout_path` and its stderr discarded; the child dies with this process. Waits and returns its
// exit code (128 + signal when killed).
int run_to_file(const std::vector<std::string>& argv, const std::string& stdout_path);

// The cores of each of `nproc` local ranks: disjoint equal shares of `cores` (the ones this
// process may run on), in order, the remainder unused; none when there are fewer cores than ranks
// (the kernel schedules them freely). A rank that keeps its cores keeps its caches and is not
// preempted by its peers: on 2 cores, Ulysses 2 ranged 29-43 ms per step unbound, 29-31 bound.
std::vector<std::vector<int>> rank_cores(int nproc, const std::vector<int>& cores);

// A TCP port on 127.0.0.1 that was free a moment ago (the rendezvous binds it next).
int free_loopback_port();

}  // namespace cpplan::launch
