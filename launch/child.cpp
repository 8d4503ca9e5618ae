#include "launch/child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

namespace cpplan::launch {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void exec_child(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                             const std::string& log_path, pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // a tune killed outright takes its launch with it
  if (getppid() != parent) _exit(125);
  const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) _exit(126);
  close(fd);
  for (const std::string& e : extra_env) putenv(const_cast<char*>(e.c_str()));  // the strings outlive exec
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "cannot execute %s\n", args[0]);
  _exit(127);
}

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

ChildOutcome run_child(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                       const std::string& log_path, double timeout_s, const std::atomic<bool>* cancel,
                       double grace_s) {
  ChildOutcome out;
  const pid_t parent = getpid();
  std::fflush(nullptr);  // the child must not repeat the parent's buffered output
  const pid_t pid = fork();
  if (pid < 0) return {127, false, false, false};
  if (pid == 0) exec_child(argv, extra_env, log_path, parent);
  const auto start = Clock::now();
  std::optional<Clock::time_point> terminated;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    const double elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (!terminated && ((timeout_s > 0 && elapsed_s > timeout_s) || (cancel && cancel->load()))) {
      (cancel && cancel->load() ? out.cancelled : out.timed_out) = true;
      kill(pid, SIGTERM);
      terminated = Clock::now();
    }
    if (terminated && Clock::now() - *terminated > std::chrono::duration<double>(grace_s)) kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // A terminal's Ctrl-C reaches the child too, which may end before the loop sees `cancel`.
  if (cancel && cancel->load() && !out.timed_out) out.cancelled = true;
  out.exit_code = exit_code(status);
  out.started = out.exit_code != 127;
  return out;
}

}  // namespace cpplan::launch
