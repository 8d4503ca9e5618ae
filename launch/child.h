#pragma once
// One child command (a launcher: torchrun, srun, mpirun) run to its end or to a time limit, its
// output in a log file: what `cpplan tune` launches a user's script with.

#include <atomic>
#include <string>
#include <vector>

namespace cpplan::launch {

struct ChildOutcome {
  int exit_code = 0;        // 128 + signal when killed
  bool timed_out = false;   // ended by us after the time limit
  bool cancelled = false;   // `cancel` was set before it ended (by us, or by the same Ctrl-C)
  bool started = true;      // false: the command could not be executed (exit code 127)
};

// Runs `argv` (argv[0] looked up in PATH) with this environment plus `extra_env` ("NAME=value"),
// stdout and stderr appended to `log_path`, in this process's group (a terminal's Ctrl-C reaches
// it too). After `timeout_s` seconds (0: none), or once `cancel` is set, it gets SIGTERM (a
// launcher ends its ranks on it), then SIGKILL `grace_s` seconds later. The child dies with this
// process.
ChildOutcome run_child(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                       const std::string& log_path, double timeout_s, const std::atomic<bool>* cancel,
                       double grace_s = 10);

}  // namespace cpplan::launch
