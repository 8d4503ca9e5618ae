#pragma once
// One real `cpplan run --json --save-latents` of a tiny model (3 steps, 1 warm-up), its JSON and
// final latents read back: what the multirank and device suites compare. Include after catch.hpp
// (and LibTorch before it: its glog CHECK must not replace Catch's).

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "executor/npy.h"
#include "tests/executor/process.h"

namespace cpplan::test {

struct SavedRun {
  nlohmann::json result;
  at::Tensor latents;
};

// `flags` follow the model and size (plan, --dtype ...); the run is recorded in `db`, its latents
// written under `dir`. The run must succeed.
inline SavedRun run_saved(const std::string& model, const std::string& res, const std::vector<std::string>& flags,
                          const std::filesystem::path& dir, const std::string& db) {
  static int counter = 0;
  const std::string latents = (dir / ("latents-" + std::to_string(counter++) + ".npy")).string();
  std::vector<std::string> args = {CPPLAN_BINARY, "run", "--model", model, "--res", res, "--steps", "3",
                                   "--warmup", "1", "--db", db, "--save-latents", latents, "--json",
                                   "--timeout", "30"};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto p = run_process(args);
  INFO("cpplan run " << model << " " << res << " stderr: " << p.err);
  REQUIRE(p.code == 0);
  SavedRun r{nlohmann::json::parse(p.out), {}};
  auto t = cpplan::executor::read_npy(latents);
  REQUIRE(t.ok());
  r.latents = t.value();
  return r;
}

}  // namespace cpplan::test
