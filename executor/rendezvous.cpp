#include "executor/rendezvous.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef CPPLAN_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef CPPLAN_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace cpplan::executor {

namespace {

using Bytes = std::vector<uint8_t>;
using Clock = std::chrono::steady_clock;

enum class Op : uint8_t { kSet = 1, kGet, kAdd, kCompareSet, kDelete, kCheck, kNumKeys, kWait };

// ---------------------------------------------------------------------------------- the wire
// A request is an op byte and its fields; strings and byte strings are a u32 length and the bytes.

struct Closed {};  // the peer went away (or the socket timed out)

void send_all(int fd, const std::string& buf) {
  size_t off = 0;
  while (off < buf.size()) {
    const ssize_t n = ::send(fd, buf.data() + off, buf.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Closed{};
    off += static_cast<size_t>(n);
  }
}

void recv_all(int fd, void* p, size_t size) {
  auto* out = static_cast<char*>(p);
  size_t off = 0;
  while (off < size) {
    const ssize_t n = ::recv(fd, out + off, size - off, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Closed{};
    off += static_cast<size_t>(n);
  }
}

struct Writer {
  std::string buf;
  Writer& u8(uint8_t v) { buf.push_back(static_cast<char>(v)); return *this; }
  Writer& i64(int64_t v) { buf.append(reinterpret_cast<const char*>(&v), sizeof v); return *this; }
  Writer& bytes(const void* p, size_t n) {
    const auto len = static_cast<uint32_t>(n);
    buf.append(reinterpret_cast<const char*>(&len), sizeof len);
    buf.append(static_cast<const char*>(p), n);
    return *this;
  }
  Writer& str(const std::string& s) { return bytes(s.data(), s.size()); }
  Writer& vec(const Bytes& v) { return bytes(v.data(), v.size()); }
};

constexpr uint32_t kMaxField = 1u << 30;  // a key or value over 1 GiB is a broken peer

uint8_t read_u8(int fd) { uint8_t v; recv_all(fd, &v, 1); return v; }
int64_t read_i64(int fd) { int64_t v; recv_all(fd, &v, sizeof v); return v; }
Bytes read_vec(int fd) {
  uint32_t len;
  recv_all(fd, &len, sizeof len);
  if (len > kMaxField) throw Closed{};
  Bytes v(len);
  if (len) recv_all(fd, v.data(), len);
  return v;
}
std::string read_str(int fd) {
  const Bytes v = read_vec(fd);
  return {v.begin(), v.end()};
}

std::string errno_text(int e) { return std::strerror(e); }

// getaddrinfo for a TCP endpoint; throws with one line when the name does not resolve.
std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &list); rc != 0)
    throw std::runtime_error("rendezvous: MASTER_ADDR = " + host + ": does not resolve (" + gai_strerror(rc) + ")");
  return {list, &freeaddrinfo};
}

// ---------------------------------------------------------------------------------- listening
// A socket of `family` bound to `addr` and listening; -1 with errno set when it cannot be.
// `dual_stack`: an IPv6 wildcard that takes IPv4 connections too.
int listen_on(int family, const sockaddr* addr, socklen_t len, bool dual_stack) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (dual_stack) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  if (::bind(fd, addr, len) == 0 && ::listen(fd, 128) == 0) return fd;
  const int e = errno;
  ::close(fd);
  errno = e;
  return -1;
}

// Every address of this host on `port`: the IPv6 wildcard taking IPv4 too, else the IPv4 one.
int listen_anywhere(int port) {
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_addr = in6addr_any;
  v6.sin6_port = htons(static_cast<uint16_t>(port));
  const int fd = listen_on(AF_INET6, reinterpret_cast<const sockaddr*>(&v6), sizeof v6, true);
  if (fd >= 0 || errno == EADDRINUSE) return fd;
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_addr.s_addr = htonl(INADDR_ANY);
  v4.sin_port = htons(static_cast<uint16_t>(port));
  return listen_on(AF_INET, reinterpret_cast<const sockaddr*>(&v4), sizeof v4, false);
}

// Whether one of `list`'s addresses is this host's: a socket binds to it (on any free port).
bool names_this_host(const addrinfo* list) {
  for (const addrinfo* a = list; a; a = a->ai_next) {
    sockaddr_storage probe{};
    std::memcpy(&probe, a->ai_addr, a->ai_addrlen);
    if (probe.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&probe)->sin_port = 0;
    else if (probe.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&probe)->sin6_port = 0;
    const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&probe), a->ai_addrlen) == 0;
    ::close(fd);
    if (ok) return true;
  }
  return false;
}

// Where rank 0 listens for MASTER_ADDR = `host`: a local run's address (rendezvous.h,
// serves_loopback_only) on loopback alone; any other, once it names this host, on every address
// of the host, so that ranks that resolve the name to another of its addresses reach it (a host
// name that is 127.0.1.1 in this host's /etc/hosts and its network address to the others). One
// line when it cannot: a name that does not resolve, an address of another host, a taken port.
int listen_for(const std::string& host, int port) {
  auto list = resolve(host, port, false);
  const auto fail = [&](int e) -> std::runtime_error {
    const std::string where = host + ":" + std::to_string(port);
    if (e == EADDRINUSE)
      return std::runtime_error("rendezvous: MASTER_PORT = " + std::to_string(port) + ": address " + where +
                                " is already in use");
    if (e == EADDRNOTAVAIL)
      return std::runtime_error("rendezvous: MASTER_ADDR = " + host +
                                ": not an address of this host (rank 0 serves the rendezvous there)");
    return std::runtime_error("rendezvous: cannot listen on " + where + ": " + errno_text(e));
  };
  if (!serves_loopback_only(host)) {
    if (!names_this_host(list.get())) throw fail(EADDRNOTAVAIL);
    const int fd = listen_anywhere(port);
    if (fd < 0) throw fail(errno);
    return fd;
  }
  int last = EADDRNOTAVAIL;
  for (addrinfo* a = list.get(); a; a = a->ai_next) {
    const int fd = listen_on(a->ai_family, a->ai_addr, a->ai_addrlen, false);
    if (fd >= 0) return fd;
    last = errno;
  }
  throw fail(last);
}

// ---------------------------------------------------------------------------------- server
// The key-value store of the run, on rank 0: a thread per connected rank, requests answered in
// order; `get` and `wait` block on the server until the keys exist or the caller's deadline.
class Server {
 public:
  Server(const std::string& host, int port) : listen_fd_(listen_for(host, port)) {
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~Server() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);
    }
    cv_.notify_all();
    ::shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    ::close(listen_fd_);
    for (std::thread& t : workers_) t.join();
  }

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

 private:
  void accept_loop() {
    while (true) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        if (fd >= 0) ::close(fd);
        return;
      }
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) continue;
        return;
      }
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      connections_.push_back(fd);
      workers_.emplace_back([this, fd] { serve(fd); });
    }
  }

  // Blocks until every key is present, the deadline passes or the server stops.
  bool wait_for(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys, int64_t timeout_ms) {
    const auto present = [&] {
      return stopping_ || std::all_of(keys.begin(), keys.end(), [&](const auto& k) { return data_.count(k) > 0; });
    };
    if (timeout_ms <= 0) cv_.wait(lock, present);
    else cv_.wait_until(lock, Clock::now() + std::chrono::milliseconds(timeout_ms), present);
    return !stopping_ && std::all_of(keys.begin(), keys.end(), [&](const auto& k) { return data_.count(k) > 0; });
  }

  void serve(int fd) {
    try {
      while (true) {
        const auto op = static_cast<Op>(read_u8(fd));
        Writer reply;
        switch (op) {
          case Op::kSet: {
            std::string key = read_str(fd);
            Bytes value = read_vec(fd);
            { std::lock_guard<std::mutex> lock(mu_); data_[std::move(key)] = std::move(value); }
            cv_.notify_all();
            reply.u8(1);
            break;
          }
          case Op::kGet: {
            const std::string key = read_str(fd);
            const int64_t timeout_ms = read_i64(fd);
            std::unique_lock<std::mutex> lock(mu_);
            if (wait_for(lock, {key}, timeout_ms)) reply.u8(1).vec(data_[key]);
            else reply.u8(0);
            break;
          }
          case Op::kAdd: {
            const std::string key = read_str(fd);
            const int64_t delta = read_i64(fd);
            int64_t value = 0;
            {
              std::lock_guard<std::mutex> lock(mu_);
              auto it = data_.find(key);
              if (it != data_.end()) {
                const std::string text(it->second.begin(), it->second.end());
                std::from_chars(text.data(), text.data() + text.size(), value);
              }
              value += delta;
              const std::string text = std::to_string(value);
              data_[key] = Bytes(text.begin(), text.end());
            }
            cv_.notify_all();
            reply.i64(value);
            break;
          }
          case Op::kCompareSet: {
            const std::string key = read_str(fd);
            const Bytes expected = read_vec(fd);
            Bytes desired = read_vec(fd);
            Bytes now;
            {
              std::lock_guard<std::mutex> lock(mu_);
              auto it = data_.find(key);
              if (it == data_.end() && expected.empty()) {
                data_[key] = desired;
                now = std::move(desired);
              } else if (it == data_.end()) {
                now = expected;  // c10d's convention: absent key, non-empty expectation
              } else {
                if (it->second == expected) it->second = std::move(desired);
                now = it->second;
              }
            }
            cv_.notify_all();
            reply.vec(now);
            break;
          }
          case Op::kDelete: {
            const std::string key = read_str(fd);
            std::lock_guard<std::mutex> lock(mu_);
            reply.u8(data_.erase(key) > 0 ? 1 : 0);
            break;
          }
          case Op::kCheck:
          case Op::kWait: {
            const int64_t n = read_i64(fd);
            if (n < 0 || n > (1 << 20)) throw Closed{};
            std::vector<std::string> keys;
            for (int64_t i = 0; i < n; ++i) keys.push_back(read_str(fd));
            const int64_t timeout_ms = op == Op::kWait ? read_i64(fd) : 0;
            std::unique_lock<std::mutex> lock(mu_);
            const bool all = op == Op::kWait ? wait_for(lock, keys, timeout_ms)
                                             : std::all_of(keys.begin(), keys.end(),
                                                           [&](const auto& k) { return data_.count(k) > 0; });
            reply.u8(all ? 1 : 0);
            break;
          }
          case Op::kNumKeys: {
            std::lock_guard<std::mutex> lock(mu_);
            reply.i64(static_cast<int64_t>(data_.size()));
            break;
          }
          default:
            throw Closed{};
        }
        send_all(fd, reply.buf);
      }
    } catch (const Closed&) {
    }
    std::lock_guard<std::mutex> lock(mu_);
    connections_.erase(std::remove(connections_.begin(), connections_.end(), fd), connections_.end());
    ::close(fd);
  }

  int listen_fd_ = -1;
  std::thread acceptor_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, Bytes> data_;
  std::vector<int> connections_;
  std::vector<std::thread> workers_;
};

// ---------------------------------------------------------------------------------- client
// Connects within `timeout`, retrying while rank 0 is not listening yet; one line when it gives up.
int connect_within(const std::string& host, int port, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string last = "no answer";
  while (true) {
    auto list = resolve(host, port, false);
    for (addrinfo* a = list.get(); a; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd < 0) continue;
      int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
      if (rc < 0 && errno == EINPROGRESS) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        pollfd p{fd, POLLOUT, 0};
        rc = ::poll(&p, 1, static_cast<int>(std::clamp<int64_t>(left, 1, 1000)));
        int err = 0;
        socklen_t len = sizeof err;
        if (rc == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) rc = 0;
        else {
          last = rc == 0 ? "no answer" : errno_text(err ? err : errno);
          rc = -1;
        }
      } else if (rc < 0) {
        last = errno_text(errno);
      }
      if (rc == 0) {
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return fd;
      }
      ::close(fd);
    }
    if (Clock::now() >= deadline)
      throw std::runtime_error("rendezvous: cannot reach MASTER_ADDR:MASTER_PORT = " + host + ":" +
                               std::to_string(port) + " within " +
                               std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
                               " s (" + last + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

class StoreClient : public c10d::Store {
 public:
  StoreClient(const Rendezvous& r, std::shared_ptr<Server> server)
      : c10d::Store(r.timeout), rendezvous_(r), server_(std::move(server)),
        where_(r.master_addr + ":" + std::to_string(r.master_port)) {
    fd_ = connect_within(r.master_addr, r.master_port, r.timeout);
  }

  // LibTorch 2.x asks stores for a clone sharing the same keys (a pure virtual there, absent in
  // 1.x, hence no `override`): a second connection to the same server, which it keeps alive.
  c10::intrusive_ptr<c10d::Store> clone() {
    Rendezvous r = rendezvous_;
    r.timeout = timeout_;
    return c10::make_intrusive<StoreClient>(r, server_);
  }

  ~StoreClient() override {
    if (fd_ >= 0) ::close(fd_);
    server_.reset();  // after our own connection closed
  }

  void set(const std::string& key, const Bytes& value) override {
    Writer w;
    w.u8(static_cast<uint8_t>(Op::kSet)).str(key).vec(value);
    call(w, timeout_, [&] { read_u8(fd_); });
  }

  Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) override {
    Writer w;
    w.u8(static_cast<uint8_t>(Op::kCompareSet)).str(key).vec(expected).vec(desired);
    Bytes out;
    call(w, timeout_, [&] { out = read_vec(fd_); });
    return out;
  }

  Bytes get(const std::string& key) override {
    Writer w;
    w.u8(static_cast<uint8_t>(Op::kGet)).str(key).i64(timeout_.count());
    Bytes out;
    bool found = false;
    call(w, timeout_, [&] {
      found = read_u8(fd_) == 1;
      if (found) out = read_vec(fd_);
    });
    if (!found) throw_timeout("key '" + key + "'");
    return out;
  }

  int64_t add(const std::string& key, int64_t delta) override {
    Writer w;
    w.u8(static_cast<uint8_t>(Op::kAdd)).str(key).i64(delta);
    int64_t out = 0;
    call(w, timeout_, [&] { out = read_i64(fd_); });
    return out;
  }

  bool deleteKey(const std::string& key) override {
    Writer w;
    w.u8(static_cast<uint8_t>(Op::kDelete)).str(key);
    bool out = false;
    call(w, timeout_, [&] { out = read_u8(fd_) == 1; });
    return out;
  }

  bool check(const std::vector<std::string>& keys) override {
    Writer w;
    w.u8(static_cast<uint8_t>(Op::kCheck)).i64(static_cast<int64_t>(keys.size()));
    for (const auto& k : keys) w.str(k);
    bool out = false;
    call(w, timeout_, [&] { out = read_u8(fd_) == 1; });
    return out;
  }

  int64_t getNumKeys() override {
    Writer w;
    w.u8(static_cast<uint8_t>(Op::kNumKeys));
    int64_t out = 0;
    call(w, timeout_, [&] { out = read_i64(fd_); });
    return out;
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }

  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    Writer w;
    w.u8(static_cast<uint8_t>(Op::kWait)).i64(static_cast<int64_t>(keys.size()));
    for (const auto& k : keys) w.str(k);
    w.i64(timeout.count());
    bool all = false;
    call(w, timeout, [&] { all = read_u8(fd_) == 1; });
    if (!all) throw_timeout(keys.size() == 1 ? "key '" + keys[0] + "'" : std::to_string(keys.size()) + " keys");
  }

 private:
  // One request and its reply, under the lock; the socket waits the server's deadline plus a margin.
  template <class Read>
  void call(const Writer& w, std::chrono::milliseconds timeout, Read&& read) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto ms = timeout.count() > 0 ? timeout.count() + 10000 : 0;
    timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    try {
      send_all(fd_, w.buf);
      read();
    } catch (const Closed&) {
      throw std::runtime_error("rendezvous: lost the connection to " + where_ + " (rank 0 ended)");
    }
  }

  [[noreturn]] void throw_timeout(const std::string& what) const {
    throw std::runtime_error("rendezvous: " + what + " not set within " +
                             std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout_).count()) +
                             " s (a rank did not arrive)");
  }

  Rendezvous rendezvous_;
  std::shared_ptr<Server> server_;  // rank 0's, shared with its clones
  std::string where_;
  int fd_ = -1;
  std::mutex mu_;
};

}  // namespace

bool serves_loopback_only(const std::string& host) {
  return host == "127.0.0.1" || host == "::1" || host == "localhost";
}

namespace {

std::string numeric_host(const sockaddr* a, socklen_t len) {
  char text[NI_MAXHOST] = {};
  if (getnameinfo(a, len, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0) return {};
  return text;
}

// The local address of the interface that routes to `host` (a connected UDP socket sends
// nothing); "" when it does not resolve or has no route.
std::string route_to(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* list = nullptr;
  if (getaddrinfo(host.c_str(), "9", &hints, &list) != 0) return {};
  std::string out;
  for (addrinfo* a = list; a && out.empty(); a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 && getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0)
      out = numeric_host(reinterpret_cast<sockaddr*>(&local), len);
    ::close(fd);
  }
  freeaddrinfo(list);
  return out;
}

// The first address of an interface that is up and not loopback, IPv4 before IPv6 (link-local
// IPv6 needs a scope the peers do not know); "" when there is none.
std::string first_network_address() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  std::string v4, v6;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    if (i->ifa_addr->sa_family == AF_INET && v4.empty())
      v4 = numeric_host(i->ifa_addr, sizeof(sockaddr_in));
    else if (i->ifa_addr->sa_family == AF_INET6 && v6.empty() &&
             !IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr))
      v6 = numeric_host(i->ifa_addr, sizeof(sockaddr_in6));
  }
  freeifaddrs(list);
  return !v4.empty() ? v4 : v6;
}

}  // namespace

std::string reachable_address(const std::string& master) {
  if (is_loopback(master)) return "127.0.0.1";
  const std::string route = route_to(master);
  if (!route.empty() && !is_loopback(route)) return route;
  const std::string network = first_network_address();
  return network.empty() ? "127.0.0.1" : network;
}

bool is_loopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

Rendezvous rendezvous_from_env(std::chrono::milliseconds timeout) {
  return rendezvous_for(launch::launch_env().value_or(launch::LaunchEnv{}), timeout);
}

Rendezvous rendezvous_for(const launch::LaunchEnv& e, std::chrono::milliseconds timeout) {
  Rendezvous r;
  r.world_size = e.world_size;
  r.rank = e.rank;
  r.master_port = e.master_port;
  r.master_addr = e.master_addr;
  r.timeout = timeout;
  r.agent_store = e.agent_store;
  r.restart_count = e.restart_count;
  return r;
}

namespace {

// A client of the TCPStore torchrun's agent serves, as torch.distributed's env:// rendezvous is
// one: its keys under the worker group's attempt, and (`count_worker`) counted among the store's
// workers once per rank.
c10::intrusive_ptr<c10d::Store> agent_store_client(const Rendezvous& r, bool count_worker) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(r.master_port);
  options.isServer = false;
  options.numWorkers = static_cast<std::size_t>(r.world_size);
  options.waitWorkers = count_worker;
  options.timeout = r.timeout;
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(r.master_addr, options);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw std::runtime_error("rendezvous: cannot reach torchrun's agent store at MASTER_ADDR:MASTER_PORT = " +
                             r.master_addr + ":" + std::to_string(r.master_port) + " (" +
                             what.substr(0, what.find('\n')) + ")");
  }
  return c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(r.restart_count), store);
}

// torchrun's agent store as the ranks use it: LibTorch's client, its failures one line that names
// the store and what was waited for (LibTorch says only "Socket Timeout").
class AgentStore : public c10d::Store {
 public:
  AgentStore(const Rendezvous& r, bool count_worker)
      : c10d::Store(r.timeout), rendezvous_(r), inner_(agent_store_client(r, count_worker)) {}

  // LibTorch 2.x's clone (see StoreClient::clone): a second connection, not counted as a worker.
  c10::intrusive_ptr<c10d::Store> clone() {
    Rendezvous r = rendezvous_;
    r.timeout = timeout_;
    return c10::make_intrusive<AgentStore>(r, false);
  }

  void set(const std::string& key, const Bytes& value) override {
    guard(key, [&] { inner_->set(key, value); });
  }
  Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) override {
    return guard(key, [&] { return inner_->compareSet(key, expected, desired); });
  }
  Bytes get(const std::string& key) override {
    return guard(key, [&] { return inner_->get(key); });
  }
  int64_t add(const std::string& key, int64_t delta) override {
    return guard(key, [&] { return inner_->add(key, delta); });
  }
  bool deleteKey(const std::string& key) override {
    return guard(key, [&] { return inner_->deleteKey(key); });
  }
  bool check(const std::vector<std::string>& keys) override {
    return guard(first(keys), [&] { return inner_->check(keys); });
  }
  int64_t getNumKeys() override {
    return guard("", [&] { return inner_->getNumKeys(); });
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    guard(first(keys), [&] { inner_->wait(keys, timeout); });
  }
  void setTimeout(const std::chrono::milliseconds& timeout) override {
    c10d::Store::setTimeout(timeout);
    inner_->setTimeout(timeout);
  }

 private:
  static std::string first(const std::vector<std::string>& keys) { return keys.empty() ? "" : keys.front(); }

  template <class F>
  auto guard(const std::string& key, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const std::exception& e) {
      std::string what = e.what();
      what = what.substr(0, what.find('\n'));
      const std::string where = "torchrun's agent store at " + rendezvous_.master_addr + ":" +
                                std::to_string(rendezvous_.master_port);
      std::string lower = what;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      if (lower.find("timeout") != std::string::npos || lower.find("timed out") != std::string::npos)
        throw std::runtime_error("rendezvous: key '" + key + "' not set within " +
                                 std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout_).count()) +
                                 " s in " + where + " (a rank did not arrive)");
      throw std::runtime_error("rendezvous: " + where + ": " + what);
    }
  }

  Rendezvous rendezvous_;
  c10::intrusive_ptr<c10d::Store> inner_;
};

}  // namespace

c10::intrusive_ptr<c10d::Store> connect_store(const Rendezvous& r) {
  if (r.agent_store) return c10::make_intrusive<AgentStore>(r, true);
  auto server = r.rank == 0 ? std::make_unique<Server>(r.master_addr, r.master_port) : nullptr;
  return c10::make_intrusive<StoreClient>(r, std::move(server));
}

Group gloo_group(const c10::intrusive_ptr<c10d::Store>& store, const std::string& name, int rank, int size,
                 std::chrono::milliseconds timeout) {
#ifndef CPPLAN_GLOO
  (void)store, (void)name, (void)rank, (void)size, (void)timeout;
  throw std::runtime_error("this cpplan was built without Gloo (its LibTorch ships no gloo headers): CPU ranks "
                           "cannot form a group; use --device cuda");
#else
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->timeout = timeout;
  const char* master = std::getenv("MASTER_ADDR");
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifname && *ifname && master && *master && !is_loopback(master))
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  else  // not the host name's address: on Debian it is 127.0.1.1, which the other nodes cannot reach
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(
        reachable_address(master && *master ? master : "127.0.0.1")));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>(name, store), rank, size,
                                                     options);
#endif
}

Group nccl_group(const c10::intrusive_ptr<c10d::Store>& store, const std::string& name, int rank, int size,
                 std::chrono::milliseconds timeout) {
#ifndef CPPLAN_NCCL
  (void)store, (void)name, (void)rank, (void)size, (void)timeout;
  throw std::runtime_error("this cpplan was built without NCCL (configure with -DCPPLAN_NCCL=ON against a CUDA "
                           "LibTorch): GPU ranks cannot form a group");
#else
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(c10::make_intrusive<c10d::PrefixStore>(name, store), rank, size,
                                                     options);
#endif
}

Group new_group(const c10::intrusive_ptr<c10d::Store>& store, const std::string& name, int rank, int size,
                std::chrono::milliseconds timeout, const at::Device& device) {
  return device.is_cuda() ? nccl_group(store, name, rank, size, timeout)
                          : gloo_group(store, name, rank, size, timeout);
}

}  // namespace cpplan::executor
