#pragma once
// Shared test fixtures: the project's own profiles and queries built from them.

#include <string>

#include "core/plan.h"
#include "core/profiles.h"

namespace cpplan::test {

// The built-in profiles as their files give them, no fit applied (loaded once per test binary):
// what hand derivations start from.
const ProfileCatalog& catalog();
// The built-in profiles with the shipped fits applied (profiles/fits/): what cpplan plans with.
const ProfileCatalog& fitted_catalog();
std::string profiles_dir();

// A query for `model` on `gpus` x `hardware`; width/height/frames <= 0 take the model's defaults.
Query make_query(const std::string& model, int gpus, int width = 0, int height = 0, int frames = 0,
                 const std::string& hardware = "h100-sxm");
// The same for a profile the test built (it must outlive the query).
Query make_query(const ModelProfile& model, int gpus, int width = 0, int height = 0, int frames = 0,
                 const std::string& hardware = "h100-sxm");

// A parallel config from degrees and anything flags.
ParallelConfig config(int ring, int ulysses, int tp = 1, int cfg = 1, int dp = 1, bool ulysses_anything = false,
                      bool ring_anything = false);

}  // namespace cpplan::test
