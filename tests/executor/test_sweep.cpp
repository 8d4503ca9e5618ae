// Sweeps: file errors name the line and field; a sweep killed with SIGKILL at random points and
// resumed records every run exactly once.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "data/store.h"
#include "tests/executor/process.h"

namespace fs = std::filesystem;
using cpplan::test::run_process;

namespace {
fs::path dir() { return cpplan::test::process_temp_dir("cpplan-sweep-test-"); }

std::string write(const std::string& name, const std::string& text) {
  const fs::path p = dir() / name;
  std::ofstream(p) << text;
  return p.string();
}
}  // namespace

namespace {
std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("sweep file errors name the file, line and field", "[executor][sweep]") {
  struct Case {
    std::string text, message;
  };
  const std::vector<Case> cases = {
      {"models = [\"flux-tiny\"]\nplans = \"bogus\"\n", ":2: plans = \"bogus\": must be \"all\", \"top K\""},
      {"models = [\"flux-tiny\"]\nsteps = 0\n", ":2: steps = 0: must be an integer between 1 and"},
      {"models = [\"nope\"]\nplans = [ {} ]\n", "models: --model = nope: unknown profile"},
      {"models = [\"flux-tiny\"]\nresolutions = [\"1000x1000\"]\nplans = [ {} ]\n", "nearest valid sizes: 992x992 or 1008x1008"},
      {"models = [\"flux-tiny\"]\nplans = [ { ring = -2 } ]\n", ":2: plans.ring = -2: must be a positive integer"},
      {"models = [\"flux-tiny\"]\ncolour = 3\n", ":2: colour: unknown field"},
      {"plans = [ {} ]\n", "models: required (or model_configs: diffusers config paths)"},
      {"models = [\"flux-tiny\"]\nplans = \"all\"\n", "gpus: required with plans"},
      {"models = [\"flux-tiny\"\n", "invalid TOML"},
      {"models = [\"flux-tiny\"]\ndevice = \"tpu\"\n", ":2: device = \"tpu\": must be \"cpu\" or \"cuda\""},
      {"models = [\"flux-tiny\"]\nplans = [ { pipefusion = 0 } ]\n", ":2: plans.pipefusion = 0: must be a positive integer"},
      {"models = [\"flux-tiny\"]\nplans = [ { pipefusion = 2, pipefusion_warmup_steps = -1 } ]\n",
       ":2: plans.pipefusion_warmup_steps = -1: unknown field or wrong type"},
  };
  for (const auto& c : cases) {
    const std::string path = write("bad.toml", c.text);
    const auto p = run_process({CPPLAN_BINARY, "sweep", path, "--dry-run", "--db", (dir() / "bad.db").string()});
    INFO(c.text);
    CHECK(p.code == 3);
    CHECK_THAT(p.err, Catch::Contains(c.message));
    CHECK(std::count(p.err.begin(), p.err.end(), '\n') == 1);
  }
}

TEST_CASE("a sweep on cuda runs every plan with --device cuda, in its launch scripts too", "[executor][sweep]") {
  const std::string path =
      write("gpu.toml", "models = [\"flux-tiny\"]\nresolutions = [\"128x128\"]\ndevice = \"cuda\"\nplans = [ {}, { ulysses = 2 } ]\n");
  const auto p = run_process({CPPLAN_BINARY, "sweep", path, "--emit", "torchrun", "--db", (dir() / "gpu.db").string()});
  INFO(p.err);
  REQUIRE(p.code == 0);
  CHECK(count_of(p.out, "--device cuda") == 2);
  // The Slurm array asks for the most tasks a run needs, a GPU each, and srun gives each its own.
  const auto s = run_process({CPPLAN_BINARY, "sweep", path, "--emit", "slurm", "--db", (dir() / "gpu.db").string()});
  REQUIRE(s.code == 0);
  CHECK_THAT(s.out, Catch::Contains("#SBATCH --ntasks=2\n#SBATCH --gpus-per-task=1\n"));
  CHECK_THAT(s.out, Catch::Contains("srun --ntasks=\"$NPROC\" --gpus-per-task=1 cpplan run \"${ARGS[@]}\""));
  CHECK(count_of(s.out, "--device cuda") == 2);
  const std::string cpu = write("cpu.toml", "models = [\"flux-tiny\"]\nresolutions = [\"128x128\"]\nplans = [ {} ]\n");
  const auto q = run_process({CPPLAN_BINARY, "sweep", cpu, "--emit", "torchrun", "--db", (dir() / "gpu.db").string()});
  REQUIRE(q.code == 0);
  CHECK(count_of(q.out, "--device") == 0);
}

namespace {

// Runs `sweep` with --resume, killing it with SIGKILL `kills` times after random delays, then once
// to the end; every run the sweep describes must be recorded ok exactly once. Returns how many
// kills found the sweep still running (the others hit a sweep that had finished).
int kill_and_resume(const std::string& name, const std::string& text, int kills, unsigned seed, int max_delay_ms,
                    std::size_t runs_expected) {
  const std::string sweep = write(name + ".toml", text);
  const std::string db = (dir() / (name + ".db")).string();
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> delay_ms(200, max_delay_ms);
  int landed = 0;
  for (int k = 0; k < kills; ++k) {
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
      execl(CPPLAN_BINARY, CPPLAN_BINARY, "sweep", sweep.c_str(), "--db", db.c_str(), "--resume",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(gen)));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ++landed;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // children die with the sweep
  const auto final = run_process({CPPLAN_BINARY, "sweep", sweep, "--db", db, "--resume"});
  INFO(final.err);
  CHECK(final.code == 0);
  auto store = cpplan::data::Store::open(db);
  REQUIRE(store.ok());
  auto runs = store.value().runs();
  REQUIRE(runs.ok());
  std::map<std::string, int> ok_by_key;
  for (const auto& r : runs.value())
    if (r.run.status == "ok") ++ok_by_key[r.run.run_key];
  CHECK(ok_by_key.size() == runs_expected);
  for (const auto& [key, count] : ok_by_key) {
    INFO(key);
    CHECK(count == 1);
  }
  std::printf("%s: %d kills, %d landed while the sweep ran; %zu runs recorded ok, %zu expected, each once: %s\n",
              name.c_str(), kills, landed, ok_by_key.size(), runs_expected,
              std::all_of(ok_by_key.begin(), ok_by_key.end(), [](const auto& kv) { return kv.second == 1; }) ? "yes"
                                                                                                              : "no");
  return landed;
}

}  // namespace

TEST_CASE("a sweep killed with SIGKILL and resumed records every run exactly once", "[executor][sweep][fault]") {
  kill_and_resume("kill",
                  "models = [\"flux-tiny\"]\nresolutions = [\"128x128\", \"112x112\"]\nsteps = 2\n"
                  "warmup = 0\nplans = [ {}, { ulysses = 2, ulysses_anything = true } ]\n",
                  5, 7, 2500, 4);
}

// The long drill (label slow): 20 kills at random points of a sweep of 12 runs, two models.
TEST_CASE("a sweep killed with SIGKILL at 20 random points and resumed records every run exactly once",
          "[.slow][executor][sweep][fault]") {
  const int landed = kill_and_resume(
      "kill20",
      "models = [\"flux-tiny\", \"wan-tiny\"]\nresolutions = [\"128x128\", \"112x112\", \"96x96\"]\n"
      "steps = 2\nwarmup = 0\nplans = [ {}, { ulysses = 2, ulysses_anything = true } ]\n",
      20, 2026, 1500, 12);
  CHECK(landed >= 15);  // most kills hit the sweep mid-way, not after it finished
}

TEST_CASE("a sweep's PipeFusion plan runs with its flags, xDiT's defaults filled in", "[executor][sweep][pipefusion]") {
  // num_pipeline_patch given, the warm-up steps left to xDiT's default (1).
  const std::string path = write("pf.toml", "models = [\"flux-tiny\"]\nresolutions = [\"128x128\"]\n"
                                            "plans = [ { pipefusion = 2, num_pipeline_patch = 4 } ]\n");
  const auto p = run_process({CPPLAN_BINARY, "sweep", path, "--emit", "torchrun"});
  REQUIRE(p.code == 0);
  CHECK_THAT(p.out, Catch::Contains("torchrun --nproc_per_node 2 "));
  CHECK_THAT(p.out, Catch::Contains("--pipefusion 2 --num-pipeline-patch 4 --pipefusion-warmup-steps 1"));
}

namespace {
// A FluxTransformer2DModel config of flux-tiny's shape (profiles/models/flux-tiny.toml: 2 double and
// 2 single blocks, 12 heads of 16, FFN 768, T5 and pooled widths 64), in its own folder.
std::string tiny_flux_config(const fs::path& folder) {
  fs::create_directories(folder);
  std::ofstream(folder / "config.json")
      << R"({"_class_name": "FluxTransformer2DModel", "attention_head_dim": 16, "guidance_embeds": true,
             "in_channels": 64, "joint_attention_dim": 64, "num_attention_heads": 12, "num_layers": 2,
             "num_single_layers": 2, "patch_size": 1, "pooled_projection_dim": 64})";
  return folder.string();
}
}  // namespace

TEST_CASE("a sweep's model_configs run each diffusers config by its path, relative to the sweep file",
          "[executor][sweep][model_config]") {
  const fs::path root = dir() / "configs-sweep";
  const std::string config = tiny_flux_config(root / "configs" / "tiny-flux");
  fs::create_directories(root);
  const std::string path = (root / "sweep.toml").string();
  std::ofstream(path) << "model_configs = [\"configs/tiny-flux\"]\nresolutions = [\"128x128\"]\nsteps = 2\nwarmup = 0\n"
                         "plans = [ { ulysses = 2 }, { ulysses = 2, fs = 2 } ]\n";
  const std::string db = (dir() / "configs.db").string();
  fs::remove(db);
  const auto emitted = run_process({CPPLAN_BINARY, "sweep", path, "--emit", "torchrun", "--db", db});
  REQUIRE(emitted.code == 0);
  CHECK(count_of(emitted.out, "--model-config " + config + " ") == 2);  // absolute: runs start anywhere
  CHECK(count_of(emitted.out, "--fully-shard 2") == 1);

  const auto ran = run_process({CPPLAN_BINARY, "sweep", path, "--db", db});
  INFO(ran.out << ran.err);
  REQUIRE(ran.code == 0);
  auto store = cpplan::data::Store::open(db);
  REQUIRE(store.ok());
  auto runs = store->runs();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 2);
  int sharded = 0;
  for (const auto& r : *runs) {
    CHECK(r.run.model == "tiny-flux");  // the config's folder names the profile
    CHECK(r.run.status == "ok");
    sharded += r.run.fs == 2;
  }
  CHECK(sharded == 1);

  const std::string missing = write("missing.toml", "model_configs = [\"no-such-folder\"]\nplans = [ {} ]\n");
  const auto bad = run_process({CPPLAN_BINARY, "sweep", missing, "--dry-run"});
  CHECK(bad.code == 3);
  CHECK_THAT(bad.err, Catch::Contains("model_configs: " + (dir() / "no-such-folder").string() + ": no such file or folder"));
}

TEST_CASE("a sweep's caches run each plan with each fixed schedule, under keys a resume matches", "[executor][sweep][cache]") {
  const std::string path = write("caches.toml", "models = [\"flux-tiny\"]\nresolutions = [\"128x128\"]\nsteps = 5\n"
                                                "warmup = 0\nplans = [ {} ]\n"
                                                "caches = [ {}, { fn = 1, bn = 0, warmup = 2, every = 2 } ]\n");
  const std::string db = (dir() / "caches.db").string();
  fs::remove(db);
  const auto emitted = run_process({CPPLAN_BINARY, "sweep", path, "--emit", "torchrun", "--db", db});
  REQUIRE(emitted.code == 0);
  CHECK(count_of(emitted.out, "--cache fixed --cache-fn 1 --cache-bn 0 --cache-warmup 2 --cache-every 2") == 1);

  const auto ran = run_process({CPPLAN_BINARY, "sweep", path, "--db", db});
  INFO(ran.out << ran.err);
  REQUIRE(ran.code == 0);
  {
    auto store = cpplan::data::Store::open(db);
    REQUIRE(store.ok());
    auto runs = store->runs();
    REQUIRE(runs.ok());
    REQUIRE(runs->size() == 2);
    int cached = 0;
    for (const auto& r : *runs) {
      CHECK(r.run.status == "ok");
      for (const auto& [name, value] : r.run.metrics)
        // 5 steps, warm-up 2, every 2nd after it: steps 0, 1 and 3 computed, 2 and 4 cached.
        if (name == "cache.computed_steps") cached += value == 3;
    }
    CHECK(cached == 1);
  }
  // Resumed: both runs are recorded under the keys the sweep computes, so neither runs again.
  const auto resumed = run_process({CPPLAN_BINARY, "sweep", path, "--db", db, "--resume"});
  INFO(resumed.out << resumed.err);
  REQUIRE(resumed.code == 0);
  auto store = cpplan::data::Store::open(db);
  REQUIRE(store.ok());
  CHECK(store->runs()->size() == 2);
}

TEST_CASE("a sweep's caches are fixed schedules that leave the model a block to cache", "[executor][sweep][cache]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"caches = [ { fn = 2, bn = 2 } ]\n", ":3: caches: --cache-fn + --cache-bn = 2 + 2: must leave at least one"},
      {"caches = [ { threshold = 0.1 } ]\n", ":3: caches.threshold = 0.1: unknown field or wrong type"},
      {"caches = [ { policy = \"fbcache\" } ]\n", ":3: caches.policy = \"fbcache\": unknown field or wrong type"},
      {"caches = [ 3 ]\n", ":3: caches: every entry must be a table"},
      {"caches = []\n", ":3: caches: must be a non-empty array"},
  };
  for (const auto& [line, message] : cases) {
    const std::string path = write("bad-cache.toml", "models = [\"flux-tiny\"]\nplans = [ {} ]\n" + line);
    const auto p = run_process({CPPLAN_BINARY, "sweep", path, "--dry-run", "--db", (dir() / "bad.db").string()});
    INFO(line);
    CHECK(p.code == 3);
    CHECK_THAT(p.err, Catch::Contains(message));
    CHECK(std::count(p.err.begin(), p.err.end(), '\n') == 1);
  }
}

TEST_CASE("a sweep's weights run each plan with its weights in the dtype and in int8, under keys a resume matches",
          "[executor][sweep][int8]") {
  const std::string path = write("weights.toml", "models = [\"flux-tiny\"]\nresolutions = [\"128x128\"]\nsteps = 2\n"
                                                 "warmup = 0\nplans = [ {} ]\nweights = [\"same\", \"int8\"]\n");
  const std::string db = (dir() / "weights.db").string();
  fs::remove(db);
  const auto emitted = run_process({CPPLAN_BINARY, "sweep", path, "--emit", "torchrun", "--db", db});
  REQUIRE(emitted.code == 0);
  CHECK(count_of(emitted.out, "--weights int8") == 1);
  const auto ran = run_process({CPPLAN_BINARY, "sweep", path, "--db", db});
  INFO(ran.out << ran.err);
  REQUIRE(ran.code == 0);
  const auto resumed = run_process({CPPLAN_BINARY, "sweep", path, "--db", db, "--resume"});
  REQUIRE(resumed.code == 0);
  auto store = cpplan::data::Store::open(db);
  REQUIRE(store.ok());
  auto runs = store->runs();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 2);  // the resume ran neither again
  int int8 = 0;
  for (const auto& r : *runs) {
    CHECK(r.run.status == "ok");
    int8 += r.run.run_key.find("|weights-int8") != std::string::npos;
  }
  CHECK(int8 == 1);

  const std::string bad = write("bad-weights.toml", "models = [\"flux-tiny\"]\nplans = [ {} ]\nweights = [\"int4\"]\n");
  const auto refused = run_process({CPPLAN_BINARY, "sweep", bad, "--dry-run", "--db", (dir() / "bad.db").string()});
  CHECK(refused.code == 3);
  CHECK_THAT(refused.err, Catch::Contains(":3: weights = \"int4\": every entry must be \"same\""));
}
