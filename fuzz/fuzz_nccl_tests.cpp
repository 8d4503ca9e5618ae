// nccl-tests output (imports/nccl_tests.h), text table or -J JSON, for
// `cpplan import-nccl-tests`: once with the test and rank count taken from the file alone, once
// with a file name that names the test and an explicit --ranks.
// Checks: every error is one line; an imported file has a known test, at least one sample, and
// every sample a positive rank count, a time > 0, bandwidths >= 0 and busbw = algbw x the bus
// factor to the printed precision.

#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <string_view>

#include "imports/nccl_tests.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace cpplan;
using cpplan::fuzz::check;
using cpplan::fuzz::fail;

void check_file(std::string_view text, std::string_view name, const imports::NcclTestsOptions& options) {
  const auto f = imports::parse_nccl_tests_file(text, name, options);
  check("parse_nccl_tests_file", f);
  if (!f) return;
  const auto kind = imports::collective_from_nccl_test(f->test);
  if (!kind) fail("an imported file of an unknown test", f->test);
  if (f->samples.empty() || f->ranks < 1) fail("an imported file without samples or ranks", f->test);
  if (options.ranks > 0 && f->ranks != options.ranks) fail("--ranks was not taken", fmt::format("{}", f->ranks));
  for (const auto& s : f->samples) {
    if (s.kind != *kind || s.ranks != f->ranks || !(s.time_us > 0) || !(s.bytes >= 0) || !(s.algbw_gbps >= 0) ||
        !(s.busbw_gbps >= 0) || !std::isfinite(s.time_us) || !std::isfinite(s.busbw_gbps))
      fail("a sample out of range", fmt::format("{} B {} us {} {} GB/s", s.bytes, s.time_us, s.algbw_gbps, s.busbw_gbps));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  cpplan::fuzz::no_throw("nccl-tests", [&] {
    check_file(text, "nccl-tests.txt", {});
    check_file(text, "logs/all_gather_perf.out", {.ranks = 8, .collective = ""});
  });
  return 0;
}
