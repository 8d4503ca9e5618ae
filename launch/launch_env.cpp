#include "launch/launch_env.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace cpplan::launch {

namespace {

constexpr int kMaxWorld = 1 << 20;

// `name`'s value as an integer in [lo, hi]; `fallback` when unset. One line when it is not.
long long int_var(const EnvLookup& env, const std::string& name, const std::string& fallback, long long lo,
                  long long hi) {
  const std::string raw = env(name);
  const std::string text = raw.empty() ? fallback : raw;
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value < lo || value > hi)
    throw std::invalid_argument(name + " = '" + text + "': must be an integer in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "]");
  return value;
}

int small_int(const EnvLookup& env, const std::string& name, const std::string& fallback, int lo, int hi) {
  return static_cast<int>(int_var(env, name, fallback, lo, hi));
}

// The rank, world and local rank from the variables `rank`, `world`, `local_rank`, `local_world`
// ("" where the launcher has none: the whole world then).
LaunchEnv ranks(const EnvLookup& env, Launcher l, const std::string& rank, const std::string& world,
                const std::string& local_rank, const std::string& local_world) {
  LaunchEnv e;
  e.launcher = l;
  e.world_variable = world;
  e.world_size = small_int(env, world, "1", 1, kMaxWorld);
  e.rank = small_int(env, rank, "0", 0, e.world_size - 1);
  e.local_world_size =
      local_world.empty() ? e.world_size : small_int(env, local_world, std::to_string(e.world_size), 1, e.world_size);
  e.local_rank = small_int(env, local_rank, "0", 0, kMaxWorld - 1);
  return e;
}

// MASTER_ADDR and MASTER_PORT where set, else `addr` and `port`.
void rendezvous_at(LaunchEnv& e, const EnvLookup& env, const std::string& addr, int port) {
  const std::string master = env("MASTER_ADDR");
  e.master_addr = master.empty() ? addr : master;
  e.master_port = small_int(env, "MASTER_PORT", std::to_string(port), 1, 65535);
}

LaunchEnv from_rank_variables(const EnvLookup& env) {
  const bool torchrun = !env("TORCHELASTIC_RUN_ID").empty() || !env("TORCHELASTIC_RESTART_COUNT").empty();
  LaunchEnv e = ranks(env, torchrun ? Launcher::kTorchrun : Launcher::kEnv, "RANK", "WORLD_SIZE", "LOCAL_RANK",
                      "LOCAL_WORLD_SIZE");
  rendezvous_at(e, env, "127.0.0.1", 29500);
  e.agent_store = env("TORCHELASTIC_USE_AGENT_STORE") == "True";
  e.restart_count = small_int(env, "TORCHELASTIC_RESTART_COUNT", "0", 0, 1 << 30);
  e.error_file = env("TORCHELASTIC_ERROR_FILE");
  return e;
}

LaunchEnv from_slurm(const EnvLookup& env) {
  LaunchEnv e = ranks(env, Launcher::kSlurm, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "");
  const int node = small_int(env, "SLURM_NODEID", "0", 0, kMaxWorld);
  std::string per_node = env("SLURM_STEP_TASKS_PER_NODE");
  if (per_node.empty()) per_node = env("SLURM_TASKS_PER_NODE");
  if (const int local = tasks_on_node(per_node, node); local > 0) e.local_world_size = std::min(local, e.world_size);
  std::string nodes = env("SLURM_STEP_NODELIST");
  if (nodes.empty()) nodes = env("SLURM_JOB_NODELIST");
  if (nodes.empty() && env("MASTER_ADDR").empty())
    throw std::invalid_argument("SLURM_JOB_NODELIST = '': unset, and MASTER_ADDR is not set either: rank 0's host is "
                                "unknown");
  const long long job = int_var(env, "SLURM_JOB_ID", "0", 0, 1LL << 62);
  const long long step = int_var(env, "SLURM_STEP_ID", "0", 0, 1LL << 62);
  rendezvous_at(e, env, first_host(nodes), slurm_port(job, step));
  return e;
}

// An MPI launcher says nothing of rank 0's address: on one node it is loopback, across nodes the
// user must pass it (`how`: the launcher's option that sets a variable).
void need_master_addr_across_nodes(const LaunchEnv& e, const EnvLookup& env, const std::string& how) {
  if (e.local_world_size < e.world_size && env("MASTER_ADDR").empty())
    throw std::invalid_argument("MASTER_ADDR = '': " + how.substr(0, how.find(' ')) + " placed the " +
                                std::to_string(e.world_size) +
                                " ranks on more than one node; pass rank 0's address, e.g. " + how);
}

LaunchEnv from_open_mpi(const EnvLookup& env) {
  LaunchEnv e = ranks(env, Launcher::kOpenMpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                      "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE");
  need_master_addr_across_nodes(e, env, "mpirun -x MASTER_ADDR=<node0>");
  const long long job = int_var(env, "OMPI_MCA_ess_base_jobid", "0", 0, 1LL << 62);
  rendezvous_at(e, env, "127.0.0.1", job > 0 ? static_cast<int>(10000 + job % 20000) : 29500);
  return e;
}

LaunchEnv from_mpich(const EnvLookup& env) {
  LaunchEnv e = ranks(env, Launcher::kMpich, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS");
  need_master_addr_across_nodes(e, env, "mpiexec -genv MASTER_ADDR <node0>");
  rendezvous_at(e, env, "127.0.0.1", 29500);
  return e;
}

}  // namespace

const char* launcher_name(Launcher l) {
  switch (l) {
    case Launcher::kEnv: return "RANK";
    case Launcher::kTorchrun: return "torchrun";
    case Launcher::kSlurm: return "srun";
    case Launcher::kOpenMpi: return "mpirun (Open MPI)";
    case Launcher::kMpich: return "mpirun (MPICH)";
  }
  return "?";
}

std::optional<LaunchEnv> launch_env(const EnvLookup& env) {
  if (!env("RANK").empty()) return from_rank_variables(env);
  if (!env("SLURM_PROCID").empty() && !env("SLURM_STEP_ID").empty()) return from_slurm(env);
  if (!env("OMPI_COMM_WORLD_RANK").empty()) return from_open_mpi(env);
  if (!env("PMI_RANK").empty()) return from_mpich(env);
  return std::nullopt;
}

std::optional<LaunchEnv> launch_env() {
  return launch_env([](const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return std::string(v ? v : "");
  });
}

std::string first_host(const std::string& nodelist) {
  std::string host;
  bool in_brackets = false, skipping = false;  // skipping: past the first element inside [...]
  for (const char c : nodelist) {
    if (!in_brackets && c == ',') break;
    if (c == '[') {
      in_brackets = true;
      skipping = false;
    } else if (c == ']') {
      in_brackets = false;
    } else if (in_brackets) {
      if (c == ',' || c == '-') skipping = true;
      else if (!skipping) host.push_back(c);
    } else {
      host.push_back(c);
    }
  }
  return host;
}

int tasks_on_node(const std::string& tasks_per_node, int node) {
  int seen = 0;
  std::size_t pos = 0;
  while (pos < tasks_per_node.size()) {
    const std::size_t end = std::min(tasks_per_node.find(',', pos), tasks_per_node.size());
    const std::string item = tasks_per_node.substr(pos, end - pos);
    int tasks = 0, repeat = 1;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), tasks);
    if (ec != std::errc{}) return 0;
    if (p != item.data() + item.size() &&
        std::sscanf(std::string(p).c_str(), "(x%d)", &repeat) != 1)  // "2(x3)": 2 tasks on each of 3 nodes
      return 0;
    if (node < seen + repeat) return tasks;
    seen += repeat;
    pos = end + 1;
  }
  return 0;
}

int slurm_port(long long job_id, long long step_id) {
  return static_cast<int>(10000 + (job_id % 2000) * 10 + step_id % 10);
}

void export_launch_env(const LaunchEnv& e) {
  setenv("RANK", std::to_string(e.rank).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(e.world_size).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(e.local_rank).c_str(), 1);
  setenv("LOCAL_WORLD_SIZE", std::to_string(e.local_world_size).c_str(), 1);
  setenv("MASTER_ADDR", e.master_addr.c_str(), 1);
  setenv("MASTER_PORT", std::to_string(e.master_port).c_str(), 1);
}

}  // namespace cpplan::launch
