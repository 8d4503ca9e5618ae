#pragma once
// Who started this process as one rank of a job, and what the launcher said about the job: rank,
// world size, local rank and the rendezvous, read from the variables each launcher sets.
//
//   torchrun (and anything else that sets RANK): RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
//     MASTER_ADDR, MASTER_PORT; TORCHELASTIC_USE_AGENT_STORE=True when torchrun's agent hosts the
//     store (ranks are its clients under /worker/attempt_<TORCHELASTIC_RESTART_COUNT>),
//     TORCHELASTIC_ERROR_FILE where a failed rank leaves its error.
//   srun (a task of a job step: SLURM_PROCID and SLURM_STEP_ID; a batch script has no step):
//     SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the first host of the step's (else the job's)
//     node list, a port derived from the job and step ids.
//   mpirun: Open MPI's OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE} (port from its job id),
//     MPICH's PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS.
// MASTER_ADDR and MASTER_PORT, when set, win over what is derived. Torch-free.

#include <functional>
#include <optional>
#include <string>

namespace cpplan::launch {

enum class Launcher { kEnv, kTorchrun, kSlurm, kOpenMpi, kMpich };

// "RANK", "torchrun", "srun", "mpirun (Open MPI)", "mpirun (MPICH)".
const char* launcher_name(Launcher l);

struct LaunchEnv {
  Launcher launcher = Launcher::kEnv;
  int rank = 0, world_size = 1, local_rank = 0, local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  bool agent_store = false;           // torchrun's agent serves the rendezvous store
  int restart_count = 0;              // torchrun's restarts of the worker group so far
  std::string error_file;             // TORCHELASTIC_ERROR_FILE ("" when unset)
  std::string world_variable = "WORLD_SIZE";  // where world_size came from, for messages
};

// A variable of the environment, "" when unset.
using EnvLookup = std::function<std::string(const std::string& name)>;

// The job this process is a rank of; nullopt when no launcher started it as one (no RANK, not a
// task of a Slurm job step, not an MPI rank). A bad value throws std::invalid_argument with one
// line naming the variable, its value and the rule.
std::optional<LaunchEnv> launch_env(const EnvLookup& env);
std::optional<LaunchEnv> launch_env();  // of this process's environment

// The first host of a Slurm host list: "gpu[07-09,12],login1" -> "gpu07".
std::string first_host(const std::string& nodelist);

// The tasks on node `node` of a Slurm tasks-per-node list ("2(x3),1": 2, 2, 2, 1); 0 past its end
// or when it does not parse.
int tasks_on_node(const std::string& tasks_per_node, int node);

// The port a Slurm job step rendezvouses on unless MASTER_PORT is set: in [10000, 30000), distinct
// for 2000 consecutive job ids (array tasks are jobs of their own) and 10 steps of one job.
int slurm_port(long long job_id, long long step_id);

// Sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT in this process's
// environment from `e`, so that everything reading the standard variables agrees with the launcher.
// Call it before any thread starts.
void export_launch_env(const LaunchEnv& e);

}  // namespace cpplan::launch
