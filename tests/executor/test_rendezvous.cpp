// The rendezvous store: the c10d::Store semantics the Gloo groups rely on, bounded waits, and
// where it listens: loopback for local runs; every address of the host for any other MASTER_ADDR
// that names it, so that ranks knowing the host by another address (a host name that is
// 127.0.1.1 here) reach it. Real sockets throughout: threads, and two cpplan processes.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "executor/rendezvous.h"
#include "tests/executor/process.h"

// Last: LibTorch (above) defines glog's CHECK, which would replace Catch's and go uncounted.
#undef CHECK
#include <catch2/catch.hpp>

namespace fs = std::filesystem;
using cpplan::executor::connect_store;
using cpplan::executor::Rendezvous;
using namespace std::chrono_literals;

namespace {

int free_port() {
  const cpplan::test::ListeningSocket s = cpplan::test::listen_on_free_port();
  close(s.fd);
  return s.port;
}

Rendezvous endpoint(int port, int rank, int world, std::chrono::milliseconds timeout = 5s,
                    const std::string& master_addr = "127.0.0.1") {
  Rendezvous r;
  r.master_addr = master_addr;
  r.master_port = port;
  r.rank = rank;
  r.world_size = world;
  r.timeout = timeout;
  return r;
}

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

struct Socket {
  std::string address;  // local address, hex as in /proc/net/tcp{,6}
  bool ipv6;
  bool listening;
};

// The TCP sockets of this process: /proc/self/net/tcp{,6} rows whose inode is one of its open
// sockets.
std::vector<Socket> own_sockets() {
  std::set<std::string> inodes;
  for (const auto& fd : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = fs::read_symlink(fd.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<Socket> out;
  for (const auto* file : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream row(line);
      std::string slot, local, remote, state, queues, timer, retr, uid, timeout, inode;
      row >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      if (inodes.count(inode))
        out.push_back({local.substr(0, local.find(':')), std::string(file).back() == '6', state == "0A"});
    }
  }
  return out;
}

// The addresses `host` resolves to here, numeric; empty when it does not resolve.
std::vector<std::string> resolved(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  std::vector<std::string> out;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &list) != 0) return out;
  for (addrinfo* a = list; a; a = a->ai_next) {
    char text[NI_MAXHOST] = {};
    if (getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) out.push_back(text);
  }
  freeaddrinfo(list);
  return out;
}

bool all_loopback(const std::vector<std::string>& addresses) {
  return !addresses.empty() && std::all_of(addresses.begin(), addresses.end(), [](const std::string& a) {
    return cpplan::executor::is_loopback(a);
  });
}

// A name of this host that resolves to loopback addresses only: the host name where it does (as
// Debian's /etc/hosts maps it to 127.0.1.1), else "localhost", which every host maps so.
std::string loopback_host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0 && all_loopback(resolved(name))) return name;
  return "localhost";
}

// Rank 0 serves at `served`, rank 1 connects through `reached` (another address of this host):
// a key goes each way.
void check_reached(const std::string& served, const std::string& reached) {
  const int port = free_port();
  auto server = connect_store(endpoint(port, 0, 2, 5s, served));
  auto client = connect_store(endpoint(port, 1, 2, 5s, reached));
  client->set("from-1", bytes("a"));
  server->set("from-0", bytes("b"));
  CHECK(server->get("from-1") == bytes("a"));
  CHECK(client->get("from-0") == bytes("b"));
}

// One `cpplan run` rank as its own process with the rendezvous variables, its stdout and stderr
// in files of its own (run_process's are per test process, and these run at once).
struct Rank {
  pid_t pid = -1;
  std::string out, err;
};

Rank start_rank(const std::vector<std::string>& args, const std::vector<std::string>& env, const std::string& stem) {
  Rank r{-1, stem + ".out", stem + ".err"};
  r.pid = cpplan::test::start_process(args, env, r.out, r.err);
  return r;
}

int wait_rank(const Rank& r) { return cpplan::test::wait_process(r.pid); }

}  // namespace

TEST_CASE("the rendezvous store answers set, get, add, check, wait, compareSet and delete across ranks",
          "[executor][rendezvous]") {
  const int port = free_port();
  auto server = connect_store(endpoint(port, 0, 2));
  auto client = connect_store(endpoint(port, 1, 2));

  client->set("a", bytes("hello"));
  CHECK(server->get("a") == bytes("hello"));
  CHECK(server->add("n", 3) == 3);
  CHECK(client->add("n", 4) == 7);
  CHECK(client->check({"a", "n"}));
  CHECK_FALSE(client->check({"a", "missing"}));
  CHECK(server->getNumKeys() == 2);

  // get blocks until another rank sets the key
  std::thread later([&] {
    std::this_thread::sleep_for(200ms);
    server->set("late", bytes("x"));
  });
  CHECK(client->get("late") == bytes("x"));
  later.join();
  client->wait({"a", "late"});

  CHECK(client->compareSet("c", {}, bytes("1")) == bytes("1"));        // absent, empty expectation: set
  CHECK(client->compareSet("c", bytes("2"), bytes("3")) == bytes("1"));  // mismatch: unchanged
  CHECK(server->compareSet("c", bytes("1"), bytes("4")) == bytes("4"));  // match: swapped
  CHECK(client->deleteKey("c"));
  CHECK_FALSE(client->deleteKey("c"));
}

TEST_CASE("a key nobody sets fails within the timeout with one line", "[executor][rendezvous]") {
  const int port = free_port();
  auto server = connect_store(endpoint(port, 0, 2, 1s));
  const auto t0 = std::chrono::steady_clock::now();
  try {
    server->get("never");
    FAIL("get returned");
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    CHECK(what == "rendezvous: key 'never' not set within 1 s (a rank did not arrive)");
  }
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
  CHECK_THROWS_WITH(server->wait({"x", "y"}, 300ms), Catch::Contains("2 keys not set"));
}

TEST_CASE("a rank whose rendezvous server ended gets one line, not a hang", "[executor][rendezvous]") {
  const int port = free_port();
  auto server = connect_store(endpoint(port, 0, 2));
  auto client = connect_store(endpoint(port, 1, 2));
  server.reset();
  CHECK_THROWS_WITH(client->get("k"), Catch::StartsWith("rendezvous: lost the connection to 127.0.0.1:"));
}

TEST_CASE("a local run's rendezvous and Gloo transport listen on loopback only", "[executor][rendezvous]") {
  ::unsetenv("MASTER_ADDR");
  const int port = free_port();
  auto store0 = connect_store(endpoint(port, 0, 2));
  auto store1 = connect_store(endpoint(port, 1, 2));
  cpplan::executor::Group group1;
  std::thread rank1([&] { group1 = cpplan::executor::gloo_group(store1, "world", 1, 2, 5s); });
  auto group0 = cpplan::executor::gloo_group(store0, "world", 0, 2, 5s);
  rank1.join();
  // What stays: the store's listener, the ranks' store connections and the connected pair of the
  // two Gloo ranks; Gloo 1.13's listens only while its pairs connect, LibTorch 2.x's keeps one
  // listener per rank. Every one on 127.0.0.1.
  const auto sockets = own_sockets();
  const auto listening = std::count_if(sockets.begin(), sockets.end(), [](const Socket& s) { return s.listening; });
  INFO("sockets: " << sockets.size() << ", listening: " << listening);
  CHECK(listening >= 1);
  CHECK(listening <= 3);
  REQUIRE(sockets.size() >= 7);  // listener, 2 store connections (both ends), 2 Gloo pair ends
  for (const auto& s : sockets) {
    CHECK_FALSE(s.ipv6);
    CHECK(s.address == "0100007F");  // 127.0.0.1, little-endian hex
  }
}

TEST_CASE("rank 0 refuses to serve on an address that is not this host's", "[executor][rendezvous]") {
  Rendezvous r = endpoint(free_port(), 0, 2);
  r.master_addr = "192.0.2.1";  // TEST-NET-1: no host has it
  CHECK_THROWS_WITH(connect_store(r),
                    "rendezvous: MASTER_ADDR = 192.0.2.1: not an address of this host (rank 0 serves the rendezvous "
                    "there)");
}

TEST_CASE("bad rendezvous variables are one line naming the variable", "[executor][rendezvous]") {
  ::setenv("WORLD_SIZE", "2", 1);
  ::setenv("RANK", "2", 1);
  CHECK_THROWS_WITH(cpplan::executor::rendezvous_from_env(1s), "RANK = '2': must be an integer in [0, 1]");
  ::setenv("RANK", "0", 1);
  ::setenv("MASTER_PORT", "http", 1);
  CHECK_THROWS_WITH(cpplan::executor::rendezvous_from_env(1s), "MASTER_PORT = 'http': must be an integer in [1, 65535]");
  ::unsetenv("WORLD_SIZE");
  ::unsetenv("RANK");
  ::unsetenv("MASTER_PORT");
}

TEST_CASE("rank 0 at one loopback address is reached by a rank that knows the host by another",
          "[executor][rendezvous][multinode]") {
  // 127.0.0.2 stands for the address a host name resolves to on rank 0's host, 127.0.0.1 for the
  // one the other ranks reach it at: rank 0 must listen on both (every address of the host).
  check_reached("127.0.0.2", "127.0.0.1");
  // Debian's /etc/hosts maps the host name to 127.0.1.1: the same, with that very address.
  check_reached("127.0.1.1", "127.0.0.1");
  check_reached("127.0.1.1", "127.0.0.2");
}

TEST_CASE("rank 0 at a host name that resolves to loopback here is reached through another address",
          "[executor][rendezvous][multinode]") {
  const std::string name = loopback_host_name();
  const auto addresses = resolved(name);
  REQUIRE(all_loopback(addresses));
  // The name's own address would be 127.0.0.1 or 127.0.1.1; 127.0.0.3 is another of the host's.
  INFO("host name " << name << " resolves to " << addresses.front());
  check_reached(name, "127.0.0.3");
  // Gloo listens where the other nodes reach this host, not on the name's loopback address.
  const std::string gloo = cpplan::executor::reachable_address(name);
  INFO("Gloo's address " << gloo);
  const bool not_the_names = std::find(addresses.begin(), addresses.end(), gloo) == addresses.end();
  CHECK((not_the_names || gloo == "127.0.0.1"));
}

TEST_CASE("Gloo listens on loopback for a loopback MASTER_ADDR and where the route to a remote one leaves",
          "[executor][rendezvous][multinode]") {
  CHECK(cpplan::executor::reachable_address("127.0.0.1") == "127.0.0.1");
  CHECK(cpplan::executor::reachable_address("127.0.1.1") == "127.0.0.1");
  // TEST-NET-1, no host's: the interface that routes there (not loopback), when there is a route.
  const std::string remote = cpplan::executor::reachable_address("192.0.2.1");
  INFO(remote);
  CHECK_FALSE(remote.empty());
  CHECK((remote == "127.0.0.1" || !cpplan::executor::is_loopback(remote)));
}

TEST_CASE("two cpplan run processes meet though rank 0 is at 127.0.0.2 and rank 1 asks for 127.0.0.1",
          "[executor][rendezvous][multinode]") {
  const int port = free_port();
  const std::string dir = (fs::temp_directory_path() / ("cpplan-rdzv-" + std::to_string(getpid()))).string();
  fs::create_directories(dir);
  const std::vector<std::string> args{CPPLAN_BINARY, "run", "--model", "flux-tiny", "--res", "128x128", "--steps", "2",
                                      "--ring", "2", "--db", dir + "/runs.db", "--timeout", "30"};
  auto env = [&](int rank, const std::string& master) {
    return std::vector<std::string>{"RANK=" + std::to_string(rank), "WORLD_SIZE=2", "MASTER_ADDR=" + master,
                                    "MASTER_PORT=" + std::to_string(port)};
  };
  const Rank r0 = start_rank(args, env(0, "127.0.0.2"), dir + "/rank0");
  const Rank r1 = start_rank(args, env(1, "127.0.0.1"), dir + "/rank1");
  const int c1 = wait_rank(r1), c0 = wait_rank(r0);
  INFO("rank 0: " << cpplan::test::slurp(r0.err) << "rank 1: " << cpplan::test::slurp(r1.err));
  CHECK(c0 == 0);
  CHECK(c1 == 0);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("bad rendezvous addresses stay one line: no such name, a taken port", "[executor][rendezvous]") {
  Rendezvous r = endpoint(free_port(), 0, 2, 1s, "no-such-host.invalid");
  CHECK_THROWS_WITH(connect_store(r), Catch::StartsWith("rendezvous: MASTER_ADDR = no-such-host.invalid: does not resolve ("));
  // A port another socket listens on, for both kinds of rank 0.
  const cpplan::test::ListeningSocket taken = cpplan::test::listen_on_free_port();
  REQUIRE(taken.port > 0);
  const int fd = taken.fd, port = taken.port;
  const std::string p = std::to_string(port);
  CHECK_THROWS_WITH(connect_store(endpoint(port, 0, 2, 1s, "127.0.0.1")),
                    "rendezvous: MASTER_PORT = " + p + ": address 127.0.0.1:" + p + " is already in use");
  CHECK_THROWS_WITH(connect_store(endpoint(port, 0, 2, 1s, "127.0.0.2")),
                    "rendezvous: MASTER_PORT = " + p + ": address 127.0.0.2:" + p + " is already in use");
  close(fd);
}
