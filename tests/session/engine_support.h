#pragma once
// The session tests' engine over the fitted catalog (no --hardware local: nothing probes this
// machine), and a request's recommendation, required to resolve and to answer.
#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>
#include <string>

#include "session/engine/engine.h"
#include "tests/support/fixtures.h"

namespace cpplan::test {

inline const session::Engine& engine() {
  static const session::Engine engine(fitted_catalog(), [] () -> session::Machine {
    throw std::logic_error("no --hardware local here");
  });
  return engine;
}

inline std::unique_ptr<session::Recommendation> recommend(const session::Options& o) {
  auto resolved = engine().resolve(o);
  INFO((resolved.ok() ? std::string() : resolved.error().message));
  REQUIRE(resolved.ok());
  auto rec = engine().recommend(*resolved);
  INFO((rec.ok() ? std::string() : rec.error().message));
  REQUIRE(rec.ok());
  return std::move(rec).value();
}

}  // namespace cpplan::test
