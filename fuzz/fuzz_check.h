#pragma once
// What every fuzz target asserts besides "no crash, leak or undefined behaviour" (the sanitizers
// see to those): bad input comes back as a value whose message is one clear line (STYLE.md), and
// no parser lets an exception escape. A broken rule aborts, which libFuzzer reports as a crash
// and the replay tests (replay_main.cpp) as a failed test.

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "core/profiles.h"
#include "core/result.h"
#include "core/text.h"

namespace cpplan::fuzz {

[[noreturn]] inline void fail(std::string_view what, std::string_view detail) {
  const std::string shown = printable(detail);
  std::fprintf(stderr, "fuzz check failed: %.*s: [%s]\n", static_cast<int>(what.size()), what.data(), shown.c_str());
  std::fflush(stderr);
  std::abort();
}

// A message: not empty, and one line: no newline nor any other control character (echoed input
// must be escaped, or a terminal would be driven by it).
inline void check_message(std::string_view where, std::string_view message) {
  if (message.empty()) fail(where, "empty error message");
  for (char c : message) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) fail(where, message);
  }
}

template <class T>
void check(std::string_view where, const Result<T>& r) {
  if (!r) check_message(where, r.error().message);
}

// Runs `body`; an escaping exception is a failure naming it.
template <class F>
void no_throw(std::string_view where, F&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    fail(where, e.what());
  } catch (...) {
    fail(where, "unknown exception");
  }
}

// The built-in profiles, loaded once (a failure to load them is the harness's, not the input's).
inline const ProfileCatalog& builtin_catalog() {
  static const ProfileCatalog c = [] {
    auto loaded = ProfileCatalog::load(profile_search_path({}, ""));
    if (!loaded) fail("built-in profiles", loaded.error().message);
    return std::move(loaded).value();
  }();
  return c;
}

}  // namespace cpplan::fuzz
