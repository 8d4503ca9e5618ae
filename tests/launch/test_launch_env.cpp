// What each launcher's variables make of a rank: torchrun, srun (a task of a step, not a batch
// script), Open MPI and MPICH. Expected values are read off the launchers' documentation and the
// variables a real srun, sbatch and mpirun set (tests/cluster runs them for real).

#include <map>
#include <string>

#include "launch/launch_env.h"

#include <catch2/catch.hpp>

using cpplan::launch::first_host;
using cpplan::launch::launch_env;
using cpplan::launch::Launcher;
using cpplan::launch::slurm_port;
using cpplan::launch::tasks_on_node;

namespace {

cpplan::launch::EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) {
    auto it = vars.find(name);
    return it == vars.end() ? std::string() : it->second;
  };
}

// The variables srun gave task 1 of `srun -n 2` in job 1234 (seen on a one-node Slurm 22.05).
std::map<std::string, std::string> srun_task() {
  return {{"SLURM_PROCID", "1"},         {"SLURM_NTASKS", "2"},       {"SLURM_LOCALID", "1"},
          {"SLURM_NODEID", "0"},         {"SLURM_STEP_ID", "0"},      {"SLURM_JOB_ID", "1234"},
          {"SLURM_JOB_NODELIST", "vm"},  {"SLURM_STEP_NODELIST", "vm"}, {"SLURM_STEP_TASKS_PER_NODE", "2"}};
}

}  // namespace

TEST_CASE("a plain process is no rank of a job", "[launch_env]") {
  CHECK_FALSE(launch_env(env_of({})));
  // An sbatch script has SLURM_PROCID=0 but no job step: cpplan run there launches its own ranks.
  CHECK_FALSE(launch_env(env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "7"}})));
}

TEST_CASE("torchrun's variables: the agent store, its attempt and the error file", "[launch_env]") {
  const auto e = launch_env(env_of({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                                    {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29611"},
                                    {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RESTART_COUNT", "2"},
                                    {"TORCHELASTIC_RUN_ID", "none"}, {"TORCHELASTIC_ERROR_FILE", "/tmp/e.json"}}));
  REQUIRE(e);
  CHECK(e->launcher == Launcher::kTorchrun);
  CHECK((e->rank == 3 && e->world_size == 4 && e->local_rank == 1 && e->local_world_size == 2));
  CHECK((e->master_addr == "node0" && e->master_port == 29611));
  CHECK(e->agent_store);
  CHECK(e->restart_count == 2);
  CHECK(e->error_file == "/tmp/e.json");
  // c10d's rendezvous backend in torch 1.x: the workers serve their own store.
  const auto own = launch_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TORCHELASTIC_USE_AGENT_STORE", "False"},
                                      {"TORCHELASTIC_RESTART_COUNT", "0"}}));
  REQUIRE(own);
  CHECK_FALSE(own->agent_store);
  CHECK((own->master_addr == "127.0.0.1" && own->master_port == 29500));
}

TEST_CASE("srun's task variables: rank, world, node list and a port of the job", "[launch_env]") {
  const auto e = launch_env(env_of(srun_task()));
  REQUIRE(e);
  CHECK(e->launcher == Launcher::kSlurm);
  CHECK((e->rank == 1 && e->world_size == 2 && e->local_rank == 1 && e->local_world_size == 2));
  CHECK(e->master_addr == "vm");
  CHECK(e->master_port == 10000 + 1234 * 10);  // job 1234, step 0
  CHECK(e->world_variable == "SLURM_NTASKS");
  auto vars = srun_task();
  vars["MASTER_ADDR"] = "10.0.0.1";
  vars["MASTER_PORT"] = "29400";
  const auto given = launch_env(env_of(vars));
  CHECK((given->master_addr == "10.0.0.1" && given->master_port == 29400));
  // Two nodes, 4 tasks on the first and 3 on the second: task 5 is local rank 1 of 3.
  vars = srun_task();
  vars.erase("MASTER_ADDR");
  vars.insert_or_assign("SLURM_PROCID", "5");
  vars.insert_or_assign("SLURM_NTASKS", "7");
  vars.insert_or_assign("SLURM_NODEID", "1");
  vars.insert_or_assign("SLURM_STEP_TASKS_PER_NODE", "4,3");
  vars.insert_or_assign("SLURM_STEP_NODELIST", "gpu[07-08]");
  const auto two = launch_env(env_of(vars));
  CHECK((two->rank == 5 && two->world_size == 7 && two->local_world_size == 3));
  CHECK(two->master_addr == "gpu07");
}

TEST_CASE("array tasks and concurrent steps rendezvous on different ports", "[launch_env]") {
  CHECK(slurm_port(1234, 0) != slurm_port(1235, 0));
  CHECK(slurm_port(1234, 0) != slurm_port(1234, 1));
  for (long long job : {0LL, 1999LL, 123456789LL})
    for (long long step : {0LL, 9LL}) {
      CHECK(slurm_port(job, step) >= 10000);
      CHECK(slurm_port(job, step) < 30000);
    }
}

TEST_CASE("Slurm host lists: the first host", "[launch_env]") {
  CHECK(first_host("vm") == "vm");
  CHECK(first_host("node1,node2") == "node1");
  CHECK(first_host("gpu[07-09,12],login1") == "gpu07");
  CHECK(first_host("gpu[3,1-2]") == "gpu3");
  CHECK(first_host("rack[2-3]-n[001-004]") == "rack2-n001");
  CHECK(first_host("a-b[10-11].cluster") == "a-b10.cluster");
}

TEST_CASE("Slurm tasks per node lists", "[launch_env]") {
  CHECK(tasks_on_node("2(x3),1", 0) == 2);
  CHECK(tasks_on_node("2(x3),1", 2) == 2);
  CHECK(tasks_on_node("2(x3),1", 3) == 1);
  CHECK(tasks_on_node("2(x3),1", 4) == 0);
  CHECK(tasks_on_node("8", 0) == 8);
  CHECK(tasks_on_node("x", 0) == 0);
}

TEST_CASE("Open MPI and MPICH ranks", "[launch_env]") {
  const auto ompi = launch_env(env_of({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                       {"OMPI_MCA_ess_base_jobid", "1847853057"}}));
  REQUIRE(ompi);
  CHECK(ompi->launcher == Launcher::kOpenMpi);
  CHECK((ompi->rank == 1 && ompi->world_size == 2 && ompi->local_rank == 1));
  CHECK(ompi->master_addr == "127.0.0.1");
  CHECK(ompi->master_port == 10000 + 1847853057 % 20000);
  const auto mpich = launch_env(env_of({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "2"},
                                        {"MPI_LOCALNRANKS", "4"}}));
  REQUIRE(mpich);
  CHECK(mpich->launcher == Launcher::kMpich);
  CHECK((mpich->rank == 2 && mpich->world_size == 4 && mpich->master_port == 29500));
}

TEST_CASE("bad launcher variables are one line naming the variable", "[launch_env]") {
  auto vars = srun_task();
  vars["SLURM_NTASKS"] = "two";
  CHECK_THROWS_WITH(launch_env(env_of(vars)), "SLURM_NTASKS = 'two': must be an integer in [1, 1048576]");
  vars = srun_task();
  vars["SLURM_PROCID"] = "2";
  CHECK_THROWS_WITH(launch_env(env_of(vars)), "SLURM_PROCID = '2': must be an integer in [0, 1]");
  // Across nodes, mpirun gives no address of rank 0: it must be passed.
  CHECK_THROWS_WITH(launch_env(env_of({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}})),
                    "MASTER_ADDR = '': mpirun placed the 4 ranks on more than one node; pass rank 0's address, e.g. "
                    "mpirun -x MASTER_ADDR=<node0>");
  CHECK_THROWS_WITH(launch_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TORCHELASTIC_RESTART_COUNT", "x"}})),
                    "TORCHELASTIC_RESTART_COUNT = 'x': must be an integer in [0, 1073741824]");
}
