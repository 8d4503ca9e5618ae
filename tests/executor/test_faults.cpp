// Faults in runs: a killed rank, Ctrl-C to the launcher, an occupied rendezvous port and an
// unreachable MASTER_ADDR each end the run cleanly, quickly, and recorded.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <sched.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "data/store.h"
#include "launch/launcher.h"
#include "executor/memory.h"
#include "tests/executor/process.h"
#include "tests/support/skip.h"

namespace fs = std::filesystem;
using cpplan::test::run_process;
using nlohmann::json;

namespace {

// One database per test process, removed (with its WAL files) when the process ends.
struct TempDb {
  std::string path = (fs::temp_directory_path() / ("cpplan-faults-" + std::to_string(getpid()) + ".db")).string();
  ~TempDb() {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix, ec);
  }
};

std::string db_path() {
  static const TempDb db;
  return db.path;
}

// Whether process `pid` runs cpplan-exec (cpplan execs it for `run`) and has set its own handler
// for `sig` (the SigCgt mask of /proc/PID/status). Before the exec, the forked copy of this test
// process still carries Catch's handlers, so the name is checked too.
bool executor_catches(pid_t pid, int sig) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::string name;
  std::getline(std::ifstream(proc + "/comm"), name);
  if (name != "cpplan-exec") return false;
  std::ifstream in(proc + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("SigCgt:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (sig - 1)) & 1ULL;
  return false;
}

cpplan::data::StoredRun newest_run() {
  auto store = cpplan::data::Store::open(db_path());
  REQUIRE(store.ok());
  auto runs = store.value().runs();
  REQUIRE(runs.ok());
  REQUIRE(!runs.value().empty());
  return runs.value().front();
}

// rank_cores() for the cores this test may use, each share as /proc's Cpus_allowed_list writes
// it ("0", "2-3", "0,2": ranges of consecutive cores).
std::vector<std::string> rank_cores_of_this_machine(int nproc) {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  std::vector<std::string> out;
  for (const auto& share : cpplan::launch::rank_cores(nproc, cores)) {
    std::string text;
    for (std::size_t i = 0; i < share.size();) {
      std::size_t j = i;
      while (j + 1 < share.size() && share[j + 1] == share[j] + 1) ++j;
      if (!text.empty()) text += ",";
      text += j == i ? std::to_string(share[i]) : std::to_string(share[i]) + "-" + std::to_string(share[j]);
      i = j + 1;
    }
    out.push_back(text);
  }
  return out;
}

}  // namespace

TEST_CASE("a rank killed mid-run ends the run quickly and is recorded failed", "[executor][fault]") {
  const auto p = run_process({CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--steps", "4",
                              "--ring", "2", "--db", db_path(), "--timeout", "20", "--json"},
                             {"CPPLAN_FAULT_KILL=1:2"});
  INFO("stderr: " << p.err);
  CHECK(p.code == 4);
  CHECK(p.seconds < 20 + 5);
  const json j = json::parse(p.out);
  CHECK(j["status"] == "failed");
  CHECK_THAT(j["error"].get<std::string>(), Catch::Contains("rank 1 was killed by signal 9"));
  const auto run = newest_run();
  CHECK(run.run.status == "failed");
  CHECK_THAT(run.run.error, Catch::Contains("rank 1"));
}

TEST_CASE("a rank out of memory ends the run recorded as oom with the bytes it asked", "[executor][fault]") {
  // --max-memory caps each CPU rank's tensor memory the way a GPU's capacity caps a CUDA rank.
  const auto p = run_process({CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--steps", "4",
                              "--ring", "2", "--db", db_path(), "--timeout", "20", "--max-memory", "8MiB", "--json"});
  INFO("stderr: " << p.err);
  CHECK(p.code == 4);
  CHECK(p.seconds < 20);
  const json j = json::parse(p.out);
  CHECK(j["status"] == "oom");
  REQUIRE(j.contains("oom_bytes"));
  const auto asked = j["oom_bytes"].get<int64_t>();
  CHECK(asked > 0);
  CHECK(asked < 8 << 20);
  CHECK_THAT(j["error"].get<std::string>(),
             Catch::Matches("rank [01]: out of memory: tried to allocate " + std::to_string(asked) +
                            " bytes \\([0-9]+ bytes in use, limit 8388608 bytes\\)"));
  const auto run = newest_run();
  CHECK(run.run.status == "oom");
  CHECK(run.run.error == j["error"].get<std::string>());
}

TEST_CASE("the same run under a large enough --max-memory succeeds", "[executor][fault]") {
  const auto p = run_process({CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--steps", "2",
                              "--ring", "2", "--db", db_path(), "--max-memory", "512MiB", "--json"});
  INFO("stderr: " << p.err);
  CHECK(p.code == 0);
  CHECK(json::parse(p.out)["status"] == "ok");
}

TEST_CASE("out-of-memory messages of every allocator give the bytes asked", "[executor][fault]") {
  using cpplan::executor::oom_bytes;
  // LibTorch 1.13's CPU allocator
  CHECK(oom_bytes("[enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory: "
                  "you tried to allocate 85899345920 bytes. Error code 12 (Cannot allocate memory)") == 85899345920);
  CHECK(oom_bytes("DefaultCPUAllocator: not enough memory: you tried to allocate 4096 bytes.") == 4096);
  // CUDA's caching allocator, LibTorch 1.x and 2.x wording
  CHECK(oom_bytes("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity; 75.12 GiB "
                  "already allocated)") == int64_t{2} << 30);
  CHECK(oom_bytes("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 139.8 GiB of "
                  "which 3.06 MiB is free.") == int64_t{20} << 20);
  // cpplan's cap
  CHECK(oom_bytes("out of memory: tried to allocate 884736 bytes (7649548 bytes in use, limit 8388608 bytes)") ==
        884736);
  CHECK_FALSE(oom_bytes("Connection reset by peer"));
  CHECK_FALSE(oom_bytes("rendezvous: key 'x' not set within 1 s (a rank did not arrive)"));
}

TEST_CASE("a bad --max-memory is one line and exit 3", "[executor][fault]") {
  for (const std::string bad : {"2x", "-5MiB", "0", "1KiB", "9999TiB", "MiB", "nan"}) {
    const auto p = run_process({CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--db", db_path(),
                                "--max-memory", bad});
    INFO(bad << " -> " << p.err);
    CHECK(p.code == 3);
    CHECK(p.err == "cpplan: --max-memory = '" + bad +
                       "': must be a size from 1MiB to 1024TiB, such as 512MiB or 2GiB\n");
  }
}

TEST_CASE("SIGINT or SIGTERM to the launcher ends every rank and records the run cancelled", "[executor][fault]") {
  const int sig = GENERATE(SIGINT, SIGTERM);
  INFO("signal " << sig);
  const std::string out_path = db_path() + ".sigint.out";
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out_path.c_str(), "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
    execl(CPPLAN_BINARY, CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--steps", "100000",
          "--ulysses", "2", "--db", db_path().c_str(), "--json", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Until the launcher handles the signal (a fixed wait raced LibTorch's loading on a loaded
  // machine), then a second for its ranks to start stepping.
  for (int i = 0; i < 600 && !executor_catches(pid, sig); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto sent = std::chrono::steady_clock::now();
  kill(pid, sig);
  int status = 0;
  waitpid(pid, &status, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(seconds < 10);
  const json j = json::parse(cpplan::test::slurp(out_path));
  CHECK(j["status"] == "cancelled");
  CHECK(newest_run().run.status == "cancelled");
  fs::remove(out_path);
}

TEST_CASE("an occupied rendezvous port fails rank 0 with one clear line, recorded", "[executor][fault]") {
  const cpplan::test::ListeningSocket taken = cpplan::test::listen_on_free_port();
  REQUIRE(taken.port > 0);
  const int fd = taken.fd;
  const std::string port = std::to_string(taken.port);
  const auto p = run_process({CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--steps", "2",
                              "--db", db_path(), "--timeout", "5"},
                             {"RANK=0", "WORLD_SIZE=1", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port});
  close(fd);
  INFO("stderr: " << p.err);
  CHECK(p.code == 4);
  CHECK_THAT(p.err, Catch::StartsWith("cpplan run: rank 0: "));
  CHECK(std::count(p.err.begin(), p.err.end(), '\n') == 1);
  CHECK(newest_run().run.status == "failed");
}

TEST_CASE("an unreachable MASTER_ADDR ends the rank within the timeout", "[executor][fault]") {
  // 192.0.2.1 is TEST-NET-1: nothing answers there.
  const auto p = run_process({CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--steps", "2",
                              "--ring", "2", "--db", db_path(), "--timeout", "3"},
                             {"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=192.0.2.1", "MASTER_PORT=29999"});
  INFO("stderr: " << p.err);
  CHECK(p.code == 4);
  CHECK(p.seconds < 3 + 10);
  CHECK_THAT(p.err, Catch::StartsWith("cpplan run: rank 1: "));
}

TEST_CASE("db check reports the integrity of a real database and refuses a foreign file", "[executor][store]") {
  const auto ok = run_process({CPPLAN_BINARY, "db", "check", "--db", db_path(), "--json"});
  REQUIRE(ok.code == 0);
  CHECK(json::parse(ok.out)["integrity"] == "ok");
  const std::string foreign = db_path() + ".txt";
  { std::ofstream(foreign) << "not a database"; }
  const auto bad = run_process({CPPLAN_BINARY, "db", "check", "--db", foreign});
  CHECK(bad.code == 3);
  CHECK_THAT(bad.err, Catch::Contains("not a cpplan database"));
  CHECK(cpplan::test::slurp(foreign) == "not a database");
  fs::remove(foreign);
}

TEST_CASE("cpplan run binds each local rank to its own cores", "[executor][launcher]") {
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores < 2) CPPLAN_SKIP(cores << " core on this machine: nothing to share out between 2 ranks");
  const std::string out_path = db_path() + ".bind.out";
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out_path.c_str(), "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
    execl(CPPLAN_BINARY, CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--steps", "100000",
          "--ring", "2", "--db", db_path().c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // The ranks are the launcher's children: read their allowed cores while they step. A child read
  // between its fork and its binding still has the launcher's cores: read until both are bound
  // as expected (or 10 s have passed, and the checks below say what they are).
  const auto share = rank_cores_of_this_machine(2);
  std::vector<std::string> allowed;
  for (int tries = 0; tries < 100 && (allowed.size() < 2 || allowed[0] != share[0] || allowed[1] != share[1]);
       ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    allowed.clear();
    std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
    for (int child; children >> child;) {
      std::ifstream status("/proc/" + std::to_string(child) + "/status");
      for (std::string line; std::getline(status, line);)
        if (line.rfind("Cpus_allowed_list:", 0) == 0) allowed.push_back(line.substr(line.find_first_not_of(" \t", 18)));
    }
  }
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  fs::remove(out_path);
  REQUIRE(allowed.size() == 2);
  INFO("rank 0: " << allowed[0] << ", rank 1: " << allowed[1]);
  CHECK(allowed[0] != allowed[1]);
  CHECK(allowed[0] == share[0]);
  CHECK(allowed[1] == share[1]);
}
