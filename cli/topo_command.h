#pragma once
// `cpplan topo import FILE`: the output of `nvidia-smi topo -m` turned into a topology file
// (docs/topology.md), printed or written with --output and checked by loading it back.

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>

#include "cli/args.h"

namespace cpplan::cli {

void add_topo_import_options(CLI::App& import, Args& a);
// Throws InvalidInput on bad input (exit 3); returns the exit code otherwise.
int topo_import_command(const Args& a, const std::string& exe, std::ostream& out);

}  // namespace cpplan::cli
