#pragma once
// Runs the real cpplan binary (fork + exec, no shell) and captures its exit, output and time.

#include <fcntl.h>
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

inline Process run_process(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  const std::string out_path = "/tmp/cpplan-test-" + std::to_string(getpid()) + ".out";
  const std::string err_path = out_path + ".err";
  const auto t0 = std::chrono::steady_clock::now();
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
  int status = 0;
  waitpid(pid, &status, 0);
  Process p;
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  p.out = slurp(out_path);
  p.err = slurp(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  return p;
}

}  // namespace cpplan::test
