#pragma once
// The rendezvous of a run's ranks and the Gloo groups built on it: a key-value store behind the
// c10d::Store interface the process groups use, of one of two kinds.
//
// - cpplan's own: rank 0 serves it on MASTER_PORT. For a local run (MASTER_ADDR 127.0.0.1, ::1
//   or localhost, the default) it listens on that loopback address only, as LibTorch 1.13's
//   TCPStore cannot (its server listens on every address of the host), which is why cpplan has
//   its own; the Gloo transport listens on loopback too. For any other MASTER_ADDR, once it names
//   this host, it listens on every address of the host: the other nodes may resolve the name to
//   another address than this host does (a host name that /etc/hosts maps to 127.0.1.1 here and
//   DNS to the network address there), and Gloo listens on the address of the interface that
//   routes to MASTER_ADDR, never on a loopback address the others cannot reach. The other ranks
//   connect, retrying until the timeout.
// - torchrun's agent store (TORCHELASTIC_USE_AGENT_STORE=True): torchrun's agent already serves a
//   c10d TCPStore there, so every rank is a client of it (LibTorch's TCPStore client) under the
//   prefix /worker/attempt_<restarts>, as PyTorch's env:// rendezvous is.

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "executor/comm.h"
#include "launch/launch_env.h"

namespace cpplan::executor {

struct Rendezvous {
  std::string master_addr = "127.0.0.1";  // a host name or IPv4/IPv6 address
  int master_port = 29500;
  int rank = 0;
  int world_size = 1;
  std::chrono::milliseconds timeout{60000};
  bool agent_store = false;  // a client of torchrun's agent store, not cpplan's own
  int restart_count = 0;     // torchrun's worker-group restarts: the agent store's key prefix
};

// The rendezvous of the job this process is a rank of (launch/launch_env.h: torchrun, srun,
// mpirun, or RANK, WORLD_SIZE, MASTER_ADDR (default 127.0.0.1) and MASTER_PORT as set by hand); a
// bad value throws std::invalid_argument with one line naming the variable, its value and the rule.
Rendezvous rendezvous_from_env(std::chrono::milliseconds timeout);
// The same of a job already read (launch_env).
Rendezvous rendezvous_for(const launch::LaunchEnv& job, std::chrono::milliseconds timeout);

// Connects to the rendezvous: to torchrun's agent store, or to cpplan's own, serving it first on
// rank 0. Throws std::runtime_error with one line when the address cannot be listened on (taken
// port, not this host's address) or reached in time.
c10::intrusive_ptr<c10d::Store> connect_store(const Rendezvous& r);

// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& host);
// True for a local run's MASTER_ADDR: 127.0.0.1, ::1 and "localhost" (rank 0 then listens there
// only). Any other (a host name, another loopback address such as 127.0.1.1) may be known to the
// other nodes by another address of this host.
bool serves_loopback_only(const std::string& host);
// The address this host's Gloo transport listens on and advertises for MASTER_ADDR = `master`:
// 127.0.0.1 for a loopback address; else the local address of the interface that routes to
// `master`, or, when that is loopback (`master` names this host and resolves to 127.x here), the
// first non-loopback interface's (IPv4 first), as NCCL picks one; 127.0.0.1 when there is none.
std::string reachable_address(const std::string& master);

// A Gloo group of `size` ranks named `name` on `store`. Its transport listens on loopback when
// MASTER_ADDR is loopback (or unset), on GLOO_SOCKET_IFNAME's interface when set, else on
// reachable_address(MASTER_ADDR).
Group gloo_group(const c10::intrusive_ptr<c10d::Store>& store, const std::string& name, int rank, int size,
                 std::chrono::milliseconds timeout);

// An NCCL group of `size` ranks named `name` on `store`, one GPU per rank (the current device);
// its collectives time out after `timeout` (NCCL's watchdog then ends the rank). Throws in a
// build without NCCL.
Group nccl_group(const c10::intrusive_ptr<c10d::Store>& store, const std::string& name, int rank, int size,
                 std::chrono::milliseconds timeout);

// NCCL for a GPU device, Gloo otherwise.
Group new_group(const c10::intrusive_ptr<c10d::Store>& store, const std::string& name, int rank, int size,
                std::chrono::milliseconds timeout, const at::Device& device);

}  // namespace cpplan::executor
