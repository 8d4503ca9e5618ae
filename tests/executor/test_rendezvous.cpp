// The rendezvous store: the c10d::Store semantics the Gloo groups rely on, bounded waits, and
// where it listens: loopback for local runs, only the address asked for otherwise.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
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
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

Rendezvous endpoint(int port, int rank, int world, std::chrono::milliseconds timeout = 5s) {
  Rendezvous r;
  r.master_addr = "127.0.0.1";
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
