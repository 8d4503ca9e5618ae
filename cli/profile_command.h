#pragma once
// `cpplan profile import PATH`: a model profile derived from a diffusers transformer config.json
// or pipeline folder (core/diffusers_config.h), printed or written with --output and checked by
// loading it back.

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>

#include "cli/args.h"

namespace cpplan::cli {

struct ProfileImportArgs {
  std::string path, name, output;
};

void add_profile_import_options(CLI::App& import, ProfileImportArgs& p);
// Throws InvalidInput on bad input (exit 3); returns the exit code otherwise.
int profile_import_command(const ProfileImportArgs& p, const Args& a, const std::string& exe, std::ostream& out);

}  // namespace cpplan::cli
