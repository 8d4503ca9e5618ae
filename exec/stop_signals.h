#pragma once
// SIGINT and SIGTERM of a rank under an outside launcher (scancel or a time limit under srun,
// torchrun stopping its workers, Ctrl-C), taken by a thread of their own (sigwait), so that what
// a rank does on them (rank 0 records the run) does not run inside a signal handler: the handler
// only passes the signal on through a pipe.

#include <functional>

namespace cpplan::exec {

// From now on SIGINT and SIGTERM run `on_stop(signal)` once on a thread of their own, then end the
// process with 128 + signal. At most once per process.
void on_stop_signal(std::function<void(int signal)> on_stop);

}  // namespace cpplan::exec
