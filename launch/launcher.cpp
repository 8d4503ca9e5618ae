#include "launch/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <thread>

extern char** environ;

namespace cpplan::launch {

namespace {

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

std::string describe_exit(int rank, int status) {
  if (WIFSIGNALED(status))
    return "rank " + std::to_string(rank) + " was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "rank " + std::to_string(rank) + " exited with code " + std::to_string(WEXITSTATUS(status));
}

// fork + execve of `argv` with `env`; with `stdout_path`, the child's stdout goes to that file
// and its stderr is discarded. The child dies with this process.
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const std::string* stdout_path = nullptr, const cpu_set_t* cpus = nullptr) {
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = getpid();
  std::fflush(nullptr);  // the child must not repeat the parent's buffered output
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a launcher killed outright takes its children with it
    if (getppid() != parent) _exit(125);  // it died before prctl took effect
    if (stdout_path && (!freopen(stdout_path->c_str(), "w", stdout) || !freopen("/dev/null", "w", stderr)))
      _exit(126);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (cpus) sched_setaffinity(0, sizeof(cpu_set_t), cpus);  // before exec: every thread inherits it
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  return pid;
}

// rank_cores() for this process's cores, as affinity masks; none with CPPLAN_CPU_BIND=none.
std::vector<cpu_set_t> rank_cpu_sets(int nproc) {
  const char* bind = std::getenv("CPPLAN_CPU_BIND");
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if ((bind && std::string(bind) == "none") || sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {};
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cores.push_back(c);
  std::vector<cpu_set_t> sets;
  for (const std::vector<int>& share : rank_cores(nproc, cores)) {
    sets.emplace_back();
    CPU_ZERO(&sets.back());
    for (int c : share) CPU_SET(c, &sets.back());
  }
  return sets;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  return env;
}

}  // namespace

std::vector<std::vector<int>> rank_cores(int nproc, const std::vector<int>& cores) {
  const int share = static_cast<int>(cores.size()) / std::max(1, nproc);
  if (nproc < 1 || share < 1) return {};
  std::vector<std::vector<int>> out(nproc);
  for (int r = 0; r < nproc; ++r) out[r].assign(cores.begin() + r * share, cores.begin() + (r + 1) * share);
  return out;
}

int run_to_file(const std::vector<std::string>& argv, const std::string& stdout_path) {
  const pid_t pid = spawn(argv, current_environment(), &stdout_path);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 29500;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

LaunchOutcome launch_local(const std::vector<std::string>& argv, int nproc, const std::vector<std::string>& extra_env) {
  const int port = free_loopback_port();
  std::vector<std::string> base;
  for (const std::string& entry : current_environment()) {
    const std::string name = entry.substr(0, entry.find('='));
    if (name != "RANK" && name != "WORLD_SIZE" && name != "LOCAL_RANK" && name != "LOCAL_WORLD_SIZE" &&
        name != "MASTER_ADDR" && name != "MASTER_PORT")
      base.push_back(entry);
  }
  base.insert(base.end(), extra_env.begin(), extra_env.end());
  // Idle OpenMP workers spinning for work steal the cores of the BLAS threads and of the other
  // ranks: CPU ranks measured 3x slower and 5x noisier without this (unless the user chose).
  if (!std::getenv("OMP_WAIT_POLICY")) base.push_back("OMP_WAIT_POLICY=PASSIVE");
  base.push_back("WORLD_SIZE=" + std::to_string(nproc));
  base.push_back("LOCAL_WORLD_SIZE=" + std::to_string(nproc));
  base.push_back("MASTER_ADDR=127.0.0.1");
  base.push_back("MASTER_PORT=" + std::to_string(port));

  struct sigaction sa{}, old_int{}, old_term{};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  g_signal = 0;

  std::vector<pid_t> pids(nproc, -1);
  const std::vector<cpu_set_t> cpus = rank_cpu_sets(nproc);
  std::string host_cores;  // every core of the launcher, for a rank that runs alone
  for (int r = 0; r < static_cast<int>(cpus.size()); ++r)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &cpus[r])) host_cores += (host_cores.empty() ? "" : ",") + std::to_string(c);
  for (int r = 0; r < nproc; ++r) {
    auto env = base;
    env.push_back("RANK=" + std::to_string(r));
    env.push_back("LOCAL_RANK=" + std::to_string(r));
    if (!cpus.empty()) {
      env.push_back("CPPLAN_RANK_CORES=" + std::to_string(CPU_COUNT(&cpus[r])));
      env.push_back("CPPLAN_HOST_CORES=" + host_cores);
    }
    pids[r] = spawn(argv, env, nullptr, cpus.empty() ? nullptr : &cpus[r]);
  }

  LaunchOutcome outcome;
  int alive = nproc;
  bool stopping = false;
  auto deadline = std::chrono::steady_clock::time_point::max();
  auto stop_all = [&](int sig) {
    for (pid_t p : pids)
      if (p > 0) kill(p, sig);
    if (!stopping) deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    stopping = true;
  };
  while (alive > 0) {
    if (g_signal && !stopping) {
      outcome = {LaunchStatus::kCancelled, std::string("cancelled by ") + strsignal(g_signal)};
      stop_all(g_signal);
    }
    if (stopping && std::chrono::steady_clock::now() > deadline) stop_all(SIGKILL);
    int status = 0;
    const pid_t done = waitpid(-1, &status, WNOHANG);
    if (done <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    for (int r = 0; r < nproc; ++r) {
      if (pids[r] != done) continue;
      pids[r] = -1;
      --alive;
      const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      if (failed && outcome.status == LaunchStatus::kOk) {
        // The first failure is the cause; the others are ended so no one waits on a dead peer.
        outcome = {LaunchStatus::kFailed, describe_exit(r, status), r};
        stop_all(SIGTERM);
      }
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return outcome;
}

}  // namespace cpplan::launch
