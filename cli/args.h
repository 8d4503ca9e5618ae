#pragma once
// The flags shared by the cpplan commands (CLI11), filling a session::Options that the library
// parses into a Query and a ParallelConfig (session/query/query.h).

#include <CLI/CLI.hpp>

#include "session/query/query.h"

namespace cpplan::cli {

using Args = session::Options;
using session::build_query;
using session::Context;
using session::InvalidInput;
using session::kMaxGpus;
using session::parse_int;
using session::parse_number;
using session::plan_config;

// The query flags (session::add_query_flags, shared with cpplan-gui) and the CLI's own: --json,
// --explain, --objective, --slo-ms.
void add_query_options(CLI::App& app, Args& a);
void add_plan_options(CLI::App& app, Args& a);

}  // namespace cpplan::cli
