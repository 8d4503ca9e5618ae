#pragma once
// Runs the real cpplan binary (fork + exec, no shell) and captures its exit, output and time.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace cpplan::test {

// A directory of this test process (`prefix` + pid under the temp directory), created on first
// use and removed with everything in it when the process ends.
inline const std::filesystem::path& process_temp_dir(const std::string& prefix) {
  struct Dir {
    std::filesystem::path path;
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir = [&] {
    Dir d{std::filesystem::temp_directory_path() / (prefix + std::to_string(getpid()))};
    std::filesystem::create_directories(d.path);
    return d;
  }();
  return dir.path;
}

struct Process {
  int code = -1;  // exit code, or 128 + signal
  std::string out, err;
  double seconds = 0;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts `args` (args[0] an executable path) with `env` added, its stdout and stderr into the two
// files; returns the child's pid.
inline pid_t start_process(const std::vector<std::string>& args, const std::vector<std::string>& env,
                           const std::string& out_path, const std::string& err_path) {
  std::fflush(nullptr);  // the child must not repeat the parent's buffered output
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// Waits for `pid`: its exit code, or 128 + the signal that ended it.
inline int wait_process(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A socket listening on a free loopback port (the port a rank 0 must find taken); close(fd) frees it.
struct ListeningSocket {
  int fd = -1;
  int port = 0;
};
inline ListeningSocket listen_on_free_port() {
  ListeningSocket s;
  s.fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(s.fd, 1) != 0 ||
      getsockname(s.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return {};
  s.port = ntohs(addr.sin_port);
  return s;
}

inline Process run_process(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  const std::string out_path = "/tmp/cpplan-test-" + std::to_string(getpid()) + ".out";
  const std::string err_path = out_path + ".err";
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = start_process(args, env, out_path, err_path);
  Process p;
  p.code = wait_process(pid);
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.out = slurp(out_path);
  p.err = slurp(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  return p;
}

}  // namespace cpplan::test
