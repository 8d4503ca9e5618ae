#pragma once
// What the session tests share: the one line a bad query is refused with, and a shipped profile's
// text to break for the loaders' one-line errors.
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "session/query/query.h"
#include "tests/support/fixtures.h"

namespace cpplan::test {

// build_query's refusal of `o` on the fitted catalog, in its one line; "" when the query builds.
inline std::string query_error(const session::Options& o) {
  std::ostringstream err;
  try {
    session::build_query(o, fitted_catalog(), err);
  } catch (const session::InvalidInput& e) {
    return e.message;
  }
  return std::string();
}

// FLUX.1-dev at 1024x1024 on one H100 under diffusers' runtime, in BF16 without a cache.
inline Query flux_on_h100() {
  const ProfileCatalog& cat = fitted_catalog();
  Query q = make_query("flux.1-dev", 1, 1024, 1024);
  q.hardware = cat.find_hardware("h100-sxm");
  q.runtime = cat.find_runtime("diffusers");
  return q;
}

// The text of a shipped profile, e.g. "frameworks/xdit.toml".
inline std::string shipped_profile(const std::string& file) {
  std::ifstream in(std::string(CPPLAN_TEST_PROFILES) + "/" + file);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace cpplan::test
