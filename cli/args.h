#pragma once
// The flags shared by the cpplan commands (CLI11), filling a session::Options that the library
// parses into a Query and a ParallelConfig (session/query.h).

#include <CLI/CLI.hpp>

#include "session/query.h"

namespace cpplan::cli {

using Args = session::Options;
using session::build_query;
using session::Context;
using session::InvalidInput;
using session::kMaxGpus;
using session::parse_int;
using session::parse_number;
using session::plan_config;

void add_query_options(CLI::App& app, Args& a);
void add_plan_options(CLI::App& app, Args& a);

}  // namespace cpplan::cli
