#include "cli/profile_command.h"

#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fstream>

#include "cli/app.h"
#include "core/diffusers_config.h"
#include "core/profiles.h"

namespace cpplan::cli {

namespace fs = std::filesystem;

void add_profile_import_options(CLI::App& import, ProfileImportArgs& p) {
  import.add_option("path", p.path, "a diffusers transformer config.json, or a pipeline folder (model_index.json)")
      ->required();
  import.add_option("--name", p.name, "profile name (default: the --output file's stem, else the folder's name)");
  import.add_option("-o,--output", p.output, "write the TOML here, e.g. DIR/models/NAME.toml (default: standard output)");
}

namespace {
// How to plan with the written file: --profiles DIR when it sits in DIR/models/.
std::string usage_line(const fs::path& file, const std::string& name) {
  const fs::path folder = fs::absolute(file).parent_path();
  if (folder.filename() == "models")
    return fmt::format("plan with it: cpplan --profiles {} --model {} ...", folder.parent_path().string(), name);
  return fmt::format("plan with it: move it to DIR/models/{}.toml and run cpplan --profiles DIR --model {} ...", name,
                     name);
}
}  // namespace

int profile_import_command(const ProfileImportArgs& p, const Args& a, const std::string& exe, std::ostream& out) {
  const std::string stem = p.output.empty() ? "" : fs::path(p.output).stem().string();
  if (!stem.empty() && !p.name.empty() && p.name != stem)
    throw InvalidInput{fmt::format("--name = {}: must equal the --output file's name \"{}\" (a profile's name is its file stem)",
                                   p.name, stem)};
  if (!p.output.empty() && fs::path(p.output).extension() != ".toml")
    throw InvalidInput{fmt::format("--output = {}: must end in .toml (profiles/models/NAME.toml)", p.output)};
  std::error_code ec;
  if (!p.output.empty() && fs::exists(p.output, ec))
    throw InvalidInput{fmt::format("--output = {}: exists; cpplan does not overwrite a profile", p.output)};
  auto catalog = ProfileCatalog::load(profile_search_path(a.profiles, exe));
  if (!catalog) throw InvalidInput{catalog.error().message};
  auto m = diffusers::import_profile(p.path, *catalog, {p.name.empty() ? stem : p.name, ""});
  if (!m) throw InvalidInput{m.error().message};
  std::string assumed;  // what the template supplied (the profile has no field for it): comments
  for (const std::string& line : m->assumptions) assumed += "# assumed: " + line + "\n";
  const std::string toml = fmt::format("# cpplan profile import {}\n{}{}", p.path, assumed, model_profile_toml(*m));
  if (p.output.empty()) {
    out << toml;
    return kExitOk;
  }
  std::ofstream file(p.output, std::ios::binary);
  if (!(file << toml) || !file.flush()) {
    fs::remove(p.output, ec);
    throw InvalidInput{fmt::format("--output = {}: cannot write the file", p.output)};
  }
  file.close();
  auto loaded = load_model_profile(p.output);  // as the planner will load it
  if (!loaded) {
    fmt::print(out, "cpplan: the imported profile does not load back: {}\n", loaded.error().message);
    return kExitRuntime;
  }
  fmt::print(out, "wrote {}: {}; {:.3f} B transformer parameters\n{}\n", p.output, loaded->description,
             loaded->params / 1e9, usage_line(p.output, loaded->name));
  return kExitOk;
}

}  // namespace cpplan::cli
