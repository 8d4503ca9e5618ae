#include "session/query/query_flags.h"

#include <type_traits>
#include <variant>

#include "session/query/query_fields.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace cpplan::session {

namespace {

CLI::Option* add_field(CLI::App& app, const QueryField& f, Options& o) {
  const std::string flag(f.flag);
  return std::visit(
      [&](auto member) -> CLI::Option* {
        using T = std::remove_reference_t<decltype(o.*member)>;
        if constexpr (std::is_same_v<T, bool>) return app.add_flag(flag, o.*member, f.help);
        else return app.add_option(flag, o.*member, f.help);
      },
      f.member);
}

}  // namespace

void add_field_flags(CLI::App& app, Options& o, FieldGroup group) {
  CLI::Option* model = nullptr;
  for (const QueryField& f : fields_of(group)) {
    CLI::Option* opt = add_field(app, f, o);
    if (f.flag == "--model") model = opt;
    if (f.flag == "--model-config") opt->excludes(model);
  }
}

void add_query_flags(CLI::App& app, Options& o) { add_field_flags(app, o, FieldGroup::kQuery); }

CLI::Option* add_field_option(CLI::App& app, std::string_view key, std::string& target, const std::string& help) {
  const QueryField& f = query_field(key);
  return app.add_option(std::string(f.flag), target, help.empty() ? f.help : help);
}

const std::vector<std::string>& query_flag_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const QueryField& f : query_fields()) out.emplace_back(f.flag);
    return out;
  }();
  return names;
}

void apply_gui_defaults(Options& o) {
  if (!o.topology.empty() || !o.topology_file.empty()) return;
  if (o.gpus.empty()) o.gpus = std::to_string(kGuiGpus);
  if (o.hardware.empty()) o.hardware = kGuiHardware;
}

}  // namespace cpplan::session
