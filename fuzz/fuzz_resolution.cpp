// The strings a user types on the command line: --res (parse_resolution) on the whole input, then
// the input as the arguments of `cpplan check` (one per line, or per NUL-separated field when the
// input has a NUL, so that an argument can hold a newline) through the real flag definitions,
// build_query, plan_config and the planner's verdict on that one plan.
// Checks: every error is one line; a parsed size is in range and prints back to itself; a query
// that builds is consistent; an invalid plan names its reasons, a valid one has a finite,
// positive predicted step time. Files and the local GPU stay out: --profiles and --topology-file
// are dropped and the hardware defaults to h100-sxm instead of asking nvidia-smi.

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/args.h"
#include "session/query/query_fields.h"
#include "core/profiles.h"
#include "core/sequence.h"
#include "costmodel/cost_model.h"
#include "fuzz/fuzz_check.h"
#include "planner/planner.h"

namespace {

using namespace cpplan;
using cpplan::fuzz::check;
using cpplan::fuzz::check_message;
using cpplan::fuzz::fail;

constexpr std::size_t kMaxArguments = 48;

const ProfileCatalog& catalog() { return cpplan::fuzz::builtin_catalog(); }

std::vector<std::string> arguments(std::string_view text) {
  const char separator = text.find('\0') != std::string_view::npos ? '\0' : '\n';
  std::vector<std::string> out;
  while (!text.empty() && out.size() < kMaxArguments) {
    const auto end = text.find(separator);
    out.emplace_back(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  return out;
}

void check_resolution(std::string_view text) {
  const auto res = parse_resolution(text);
  check("parse_resolution", res);
  if (!res) return;
  if (res->width < 1 || res->height < 1 || res->width > 16384 || res->height > 16384)
    fail("parse_resolution: size out of range", text);
  const auto again = parse_resolution(fmt::format("{}x{}", res->width, res->height));
  if (!again || again->width != res->width || again->height != res->height)
    fail("parse_resolution: the parsed size does not parse back to itself", text);
}

void check_command_line(std::string_view text) {
  const std::vector<std::string> args = arguments(text);
  cli::Args a;
  CLI::App app{"cpplan check (fuzz)"};
  cli::add_query_options(app, a);  // --top and --all too (session/query/query_fields.h)
  cli::add_plan_options(app, a);
  std::vector<const char*> argv{"cpplan"};
  for (const auto& s : args) argv.push_back(s.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
    return;  // a usage error (exit 2), CLI11's own message
  }
  a.profiles.clear();
  a.topology_file.clear();
  if (a.hardware.empty() && a.topology.empty()) a.hardware = "h100-sxm";

  std::ostringstream err;
  try {
    const cli::Context ctx = cli::build_query(a, catalog(), err);
    const Query& q = ctx.query;
    if (ctx.local_hardware) return;  // --hardware local: the caller reads this machine's measured profile
    if (!q.model || !q.hardware) fail("build_query: no model or hardware", text);
    if (q.gpus < 1 || q.gpus > cli::kMaxGpus || q.nodes < 1) fail("build_query: gpus or nodes out of range", text);
    if (q.sequence.total() < 1 || q.sequence.image_tokens < 1) fail("build_query: empty sequence", text);
    session::parse_int_field("top", a.top);
    const ParallelConfig config = cli::plan_config(a);

    const costmodel::DatasheetModel hardware(*q.hardware);
    const costmodel::CostModel cost(hardware);
    const auto p = planner::Planner(cost).evaluate(q, config);
    for (const auto& reason : p.plan.reasons()) check_message("plan reason", reason);
    if (p.plan.valid()) {
      if (!p.predicted) fail("a valid plan without a prediction", text);
      if (!std::isfinite(p.predicted->step_ms) || p.predicted->step_ms <= 0)
        fail("a valid plan's step_ms is not finite and positive", fmt::format("{}", p.predicted->step_ms));
    }
  } catch (const cli::InvalidInput& e) {
    check_message("InvalidInput", e.message);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  cpplan::fuzz::no_throw("resolution", [&] { check_resolution(text); });
  cpplan::fuzz::no_throw("command line", [&] { check_command_line(text); });
  return 0;
}
