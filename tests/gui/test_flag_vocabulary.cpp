// One flag vocabulary (session/query/query_flags.h): the real `cpplan` and `cpplan-gui` binaries accept
// the same query flags, with the same help line each, start from the same defaults, and refuse the
// same bad value with the same one line (after the program's name) and the same exit code.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gui/args.h"
#include "gui/planning.h"
#include "session/render/plan_json.h"
#include "session/query/query_flags.h"
#include "tests/gui/gui_support.h"

namespace {

struct Output {
  int exit_code = -1;
  std::string text;  // stdout, or stderr with `want_stderr`
};

// `binary ARGS` (a fixed argv: no user text reaches the shell).
Output run(const std::string& binary, const std::vector<std::string>& args, bool want_stderr) {
  // A flag the fronts accept would leave cpplan-gui open: 60 s bound it (exit 124, a failure).
  std::string command = "timeout 60 " + binary;
  for (const std::string& a : args) command += " '" + a + "'";
  command += want_stderr ? " 2>&1 >/dev/null" : " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  Output out;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.text.append(buffer, n);
  const int status = pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// The help of `flag`: its line ("--gpus TEXT   number of ...") and the description lines CLI11
// wraps under it; "" when the help has none.
std::string help_line(const std::string& help, const std::string& flag) {
  std::istringstream in(help);
  std::string found;
  for (std::string line; std::getline(in, line);) {
    const auto start = line.find_first_not_of(' ');
    if (!found.empty()) {  // a continuation is indented further and is not another option
      if (start == std::string::npos || start <= 2 || line[start] == '-') break;
      found += "\n" + line.substr(start);
      continue;
    }
    if (start == std::string::npos || line.compare(start, flag.size(), flag) != 0) continue;
    const char next = start + flag.size() < line.size() ? line[start + flag.size()] : ' ';
    if (next == ' ' || next == ',') found = line.substr(start);
  }
  return found;
}

std::string without_prefix(const std::string& line, const std::string& prefix) {
  return line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : "(no " + prefix + ") " + line;
}

}  // namespace

TEST_CASE("cpplan and cpplan-gui declare the same query flags with the same help", "[gui][args][vocabulary]") {
  const auto& names = cpplan::session::query_flag_names();
  REQUIRE(names.size() >= 23);
  const Output cli = run(CPPLAN_BINARY, {"--help"}, false);
  const Output gui = run(CPPLAN_GUI_BINARY, {"--help"}, false);
  REQUIRE(cli.exit_code == 0);
  REQUIRE(gui.exit_code == 0);
  for (const std::string& flag : names) {
    INFO(flag);
    const std::string line = help_line(cli.text, flag);
    CHECK(!line.empty());
    CHECK(line == help_line(gui.text, flag));
  }
  // the front-specific defaults are said in the one declaration
  CHECK_THAT(help_line(gui.text, "--gpus"), Catch::Contains("cpplan-gui: 4"));
  CHECK_THAT(help_line(gui.text, "--hardware"), Catch::Contains("cpplan-gui: h100-sxm"));
}

TEST_CASE("cpplan and cpplan-gui start from the same query defaults", "[gui][args][vocabulary]") {
  // cpplan-gui without flags: --gpus 4 --hardware h100-sxm (session::apply_gui_defaults); every
  // other default is the shared declaration's, so the query is cpplan's with those two flags.
  std::vector<const char*> argv{"cpplan-gui"};
  const auto parsed = cpplan::gui::parse_args(static_cast<int>(argv.size()), argv.data(), "");
  REQUIRE(parsed.exit_code == -1);
  const auto r = cpplan::gui::compute_plans(parsed.catalog, parsed.options.input, 1);
  REQUIRE(r.error.empty());
  const Output cli = run(CPPLAN_BINARY, {"--gpus", "4", "--hardware", "h100-sxm", "--json", "--top", "1"}, false);
  REQUIRE(cli.exit_code == 0);
  const auto json = nlohmann::json::parse(cli.text);  // the query's fields, then the plans'
  const auto gui = cpplan::session::query_json(*r.query);
  for (const auto& [key, value] : gui.items()) {
    INFO(key);
    REQUIRE(json.contains(key));
    CHECK(json[key] == value);
  }
}

TEST_CASE("cpplan and cpplan-gui refuse a bad query flag with the same line", "[gui][args][vocabulary]") {
  // Every case names --gpus and --hardware (unless under test), so neither front asks nvidia-smi.
  const std::vector<std::vector<std::string>> cases = {
      {"--gpus", "0"},
      {"--gpus", "four"},
      {"--res", "10x"},
      {"--res", "1000x1000"},
      {"--framework", "foo"},
      {"--attention-backend", "x"},
      {"--dtype", "fp16"},
      {"--dtype", "nvfp4"},
      {"--batch", "0"},
      {"--steps", "0"},
      {"--frames", "0"},
      {"--text-tokens", "0"},
      {"--model", "nope"},
      {"--hardware", "nope"},
      {"--runtime", "torch"},
      {"--text-encoder", "gpu"},
      {"--vae", "tile"},
      {"--host-mem", "lots"},
      {"--host-mem", "0"},
      {"--offload-text-encoders", "--text-encoder", "sharded"},
      {"--nodes", "2"},
      {"--topology", "nope"},
      {"--topology", "dgx-h100", "--nodes", "0"},
      {"--num-pipeline-patch", "0"},
      {"--pipefusion-warmup-steps", "x"},
      {"--framework-version", "xdit-1999"},
      {"--model-config", "/no/such/config.json"},
  };
  for (std::vector<std::string> args : cases) {
    const bool topology = args[0] == "--topology" || args[0] == "--nodes";
    if (args[0] != "--gpus" && !topology) args.insert(args.end(), {"--gpus", "4"});
    if (args[0] != "--hardware" && !topology) args.insert(args.end(), {"--hardware", "h100-sxm"});
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    INFO(shown);
    const Output cli = run(CPPLAN_BINARY, args, true);
    const Output gui = run(CPPLAN_GUI_BINARY, args, true);
    CHECK(cli.exit_code == 3);
    CHECK(gui.exit_code == 3);
    REQUIRE(!cli.text.empty());
    CHECK(cli.text.find('\n') == cli.text.size() - 1);  // one line
    CHECK(without_prefix(gui.text, "cpplan-gui: ") == without_prefix(cli.text, "cpplan: "));
  }
}

TEST_CASE("A flag both fronts take but the GUI's panel cannot hold is refused, not dropped", "[gui][args][vocabulary]") {
  std::vector<const char*> argv{"cpplan-gui", "--text-tokens", "300"};
  const auto parsed = cpplan::gui::parse_args(static_cast<int>(argv.size()), argv.data(), "");
  CHECK(parsed.exit_code == 3);
  CHECK_THAT(parsed.message, Catch::StartsWith("cpplan-gui: --text-tokens = 300: "));
}
