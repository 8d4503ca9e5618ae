#include "cli/db_command.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "data/store.h"

namespace cpplan::cli {

int db_check_command(const std::string& db, bool json, std::ostream& out, std::ostream& err) {
  const std::string path = db.empty() ? data::Store::default_path() : db;
  auto store = data::Store::open(path);
  if (!store) {
    fmt::print(err, "cpplan db check: {}\n", store.error().message);
    return kExitInvalid;
  }
  const auto check = store.value().integrity_check();
  const auto runs = store.value().runs();
  if (!check || !runs) {
    fmt::print(err, "cpplan db check: {}: {}\n", path, !check ? check.error().message : runs.error().message);
    return kExitRuntime;
  }
  const bool ok = check.value() == "ok";
  if (json) {
    out << nlohmann::json{{"db", path},
                          {"schema_version", store.value().schema_version()},
                          {"integrity", check.value()},
                          {"runs", runs.value().size()}}
               .dump(2)
        << '\n';
  } else {
    fmt::print(out, "{}: schema version {}, {} runs, integrity {}\n", path, store.value().schema_version(),
               runs.value().size(), check.value());
  }
  return ok ? kExitOk : kExitRuntime;
}

}  // namespace cpplan::cli
