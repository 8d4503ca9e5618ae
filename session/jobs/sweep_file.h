#pragma once
// The sweep file of `cpplan sweep` (TOML; docs/calibration.md): models x sizes x frames x GPU
// counts x plans, expanded into the runs the sweep command executes. Torch-free, so that it can be
// read (and fuzzed, fuzz/) without the executor.

#include <string>
#include <string_view>
#include <vector>

#include "core/cache.h"
#include "core/parallel_config.h"
#include "core/profiles.h"
#include "core/result.h"
#include "core/sequence.h"

namespace cpplan::session {

// One run of a sweep: the arguments of `cpplan run` after "run", and what identifies it.
struct SweepRun {
  std::string model;
  std::string resolution;               // as written in the file, e.g. "1024x1024"
  Resolution size;                      // the same, parsed
  int frames = 1;
  int gpus = 1;                         // the plan's world size
  int steps = 10;
  int seed = 0;
  ParallelConfig config;
  std::vector<std::string> plan_flags;  // --ring 2 --ulysses 2 ...
  std::string label;                    // human label of the plan
  std::string device = "cpu";           // cpu | cuda (the sweep's `device`)
  std::string dtype = "fp32";           // what `cpplan run` uses on that device
  std::vector<std::string> run_args;    // everything after `cpplan run`
  std::string peak_phase;               // the phase of its predicted memory peak (a listed plan: "")
  CacheSpec cache;                      // the sweep's `caches` entry: none, or a fixed schedule
  std::string weights;                  // the sweep's `weights` entry: "" (the dtype's) or "int8"
};

// Parses a sweep file and expands it into runs; models come from `catalog`. Errors name the
// file, line and field in one line.
Result<std::vector<SweepRun>> load_sweep(const std::string& path, const ProfileCatalog& catalog);
// The same on the file's text; `path` names it in messages.
Result<std::vector<SweepRun>> parse_sweep(std::string_view text, const std::string& path,
                                          const ProfileCatalog& catalog);

}  // namespace cpplan::session
