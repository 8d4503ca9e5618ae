// The fronts render; they do not compute (issues 31, 49): every source file of cli/, gui/, exec/
// and python/ is read, and (1) its costmodel/ and planner/ includes are only the headers of the
// types it renders, (2) it calls none of the functions that predict, rank, choose a plan or a
// framework, write a framework's arguments, group rejections or lay out collectives, and (3) it
// asks the engine (session/engine/engine.h), not the session's functions under it. The renderers
// (session/render/plan_json.cpp, cli's text) call none of (2) either. Those live in session/ and below.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/fixtures.h"

namespace fs = std::filesystem;

namespace {

fs::path source_root() { return fs::path(cpplan::test::profiles_dir()).parent_path(); }

bool is_source(const fs::path& p) {
  const auto ext = p.extension();
  // Python's own sources, not its tests (which call the CLI to compare).
  if (ext == ".py") return p.filename().string().rfind("test_", 0) != 0;
  return ext == ".cpp" || ext == ".h";
}

std::vector<fs::path> front_sources() {
  std::vector<fs::path> files;
  for (const char* front : {"cli", "gui", "exec", "python"})
    for (const auto& entry : fs::recursive_directory_iterator(source_root() / front))
      if (is_source(entry.path())) files.push_back(entry.path());
  return files;
}

// Every source file of the product: the libraries, the fronts and the scripts they run.
std::vector<fs::path> product_sources() {
  std::vector<fs::path> files;
  for (const char* folder : {"core", "costmodel", "planner", "data", "imports", "launch", "session", "executor",
                             "report", "cli", "gui", "exec", "python"})
    for (const auto& entry : fs::recursive_directory_iterator(source_root() / folder))
      if (is_source(entry.path())) files.push_back(entry.path());
  return files;
}

// The fronts and the JSON renderer.
std::vector<fs::path> front_and_renderer_sources() {
  auto files = front_sources();
  files.push_back(source_root() / "session" / "render" / "plan_json.cpp");
  files.push_back(source_root() / "session" / "render" / "plan_json.h");
  return files;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A source without its comments and string literals (a comment may name a function it does not call).
std::string code_of(const std::string& text) {
  static const std::regex kComments(R"(//[^\n]*|/\*[\s\S]*?\*/|(^|\n)\s*#[^\n]*)");
  static const std::regex kStrings(R"("(?:[^"\\\n]|\\.)*")");
  return std::regex_replace(std::regex_replace(text, kComments, ""), kStrings, "\"\"");
}

}  // namespace

TEST_CASE("The fronts include no planner/, costmodel/ or session internal/ header: the Engine's are their types",
          "[session][layers]") {
  // Every front (cli/, gui/, exec/, python/): the types they render come through the session's
  // public headers (session/engine/engine.h and the others); cmake/FrontIncludes.cmake fails the
  // build on the same rule.
  static const std::regex kInclude(R"re(#\s*include\s*"((costmodel|planner)/[^"]+|session/[a-z_]+/internal/[^"]+)")re");
  const auto files = front_sources();
  REQUIRE(files.size() > 60);  // every front was found
  for (const fs::path& file : files) {
    const std::string text = read(file);
    for (std::sregex_iterator it(text.begin(), text.end(), kInclude), end; it != end; ++it) {
      INFO(fs::relative(file, source_root()).string() << " includes " << (*it)[1]);
      CHECK(false);
    }
  }
  // The JSON renderer: only the headers of the types it renders.
  const std::set<std::string> rendered = {"planner/planner.h", "planner/fleet.h", "planner/frameworks.h",
                                          "planner/topology/placement.h", "costmodel/cost_model.h",
                                          "session/engine/internal/planning.h"};
  for (const char* name : {"plan_json.cpp", "plan_json.h"}) {
    const fs::path file = source_root() / "session" / "render" / name;
    const std::string text = read(file);
    for (std::sregex_iterator it(text.begin(), text.end(), kInclude), end; it != end; ++it) {
      INFO(fs::relative(file, source_root()).string() << " includes " << (*it)[1]);
      CHECK(rendered.count((*it)[1]) == 1);
    }
  }
}

TEST_CASE("CMake links each front to the session's libraries, not to the planner or the cost model", "[session][layers]") {
  // The link rules (session/CMakeLists.txt): a front names session libraries (and core, data, Qt,
  // the executor); the planner and cost model come under the Engine only.
  static const std::regex kLink(R"re(target_link_libraries\(\s*(cpplan_cli|cpplan_gui|cpplan_exec|_cpplan)\b([^)]*)\))re");
  for (const char* front : {"cli", "gui", "exec", "python"}) {
    const std::string text = read(source_root() / front / "CMakeLists.txt");
    std::smatch m;
    REQUIRE(std::regex_search(text, m, kLink));
    INFO(front << "/CMakeLists.txt links: " << m[2].str());
    CHECK(m[2].str().find("cpplan_session_") != std::string::npos);
    CHECK(m[2].str().find("cpplan_planner") == std::string::npos);
    CHECK(m[2].str().find("cpplan_costmodel") == std::string::npos);
    CHECK(text.find("cpplan_front_includes(") != std::string::npos);
  }
}

TEST_CASE("No function of a front or a renderer predicts, ranks, chooses a framework or writes its arguments",
          "[session][layers]") {
  // The computations of a recommendation (costmodel/, planner/): the engine's answers hold their results.
  const std::vector<std::string> computing = {
      "Planner(",         "plan_fleet(",       "forward_flops(",      "best_by_framework(", "snippets_for(",
      "framework_snippets(", "rejection_groups(", "merged_rows(",     "CostModel(",         "default_layout(",
      "main_collective(", "prediction_source(", "keep_plans_of(",     "predict(",           "make_plan(",
      "planner::validate(", "rank_plans(",     "best_plan(",   "unsupported_reason(", "frameworks_for(",
      "context_parallel_arguments(", "tensor_parallel_arguments(", "python_arguments(", "xdit_parallel_args(",
      "sglang_parallel_args(", "vllm_omni_parallel_args(", "place_for_frameworks(", "images_per_hour(",
      "planner::enumerate(", "DatasheetModel(", "pareto_frontier(", "xdit_patch_split(", "patch_token_span(",
      "pipefusion_stage_blocks("};
  for (const fs::path& file : front_and_renderer_sources()) {
    const std::string code = code_of(read(file));
    for (const std::string& call : computing) {
      INFO(fs::relative(file, source_root()).string() << " calls " << call);
      CHECK(code.find(call) == std::string::npos);
    }
  }
}

TEST_CASE("The fronts ask the engine, which chooses the best plan in one place", "[session][layers]") {
  // What the engine wraps (session/engine/engine.h): a front calling these would answer beside it.
  const std::vector<std::string> beside = {"session::recommend(", "session::check(", "session::heatmap(",
                                           "session::fleet(",     "session::ranking(", "recommend_json("};
  for (const fs::path& file : front_sources()) {
    const std::string code = code_of(read(file));
    for (const std::string& call : beside) {
      INFO(fs::relative(file, source_root()).string() << " calls " << call);
      CHECK(code.find(call) == std::string::npos);
    }
  }
  // One choice: no front takes "the first plan" of a report as the best, nor reads its plans' front().
  static const std::regex kFirstPlan(R"(plans\s*(\.front\(\)|\[0\]))");
  for (const fs::path& file : front_sources()) {
    const std::string code = code_of(read(file));
    INFO(fs::relative(file, source_root()).string() << " picks a report's first plan itself");
    CHECK_FALSE(std::regex_search(code, kFirstPlan));
  }
}

TEST_CASE("cpplan-gui declares no bounds of the query flags: the table's (session/query/query_fields.h)", "[session][layers]") {
  // Bounds come from the query field table (parse_int_field, query_field(...).lo/hi); a GUI source
  // parsing a flag with bounds of its own, or ranging a query spin box by a number, would copy them.
  static const std::regex kOwnBounds(R"re(parse_int\s*\(|parse_number\s*\(|kMaxGpus|(gpus|batch|frames|steps|nodes|width|height)_->setRange\s*\(\s*[0-9])re");
  for (const auto& entry : fs::recursive_directory_iterator(source_root() / "gui")) {
    if (entry.path().extension() != ".cpp" && entry.path().extension() != ".h") continue;
    const std::string code = code_of(read(entry.path()));
    INFO(fs::relative(entry.path(), source_root()).string() << " declares a flag bound of its own");
    CHECK_FALSE(std::regex_search(code, kOwnBounds));
  }
}

TEST_CASE("Every flag the fronts share is written in one product file: the field table", "[session][layers]") {
  // session/query/query_fields.cpp names the flags; every command, front and job asks it (add_field_option,
  // flag_of, to_argv, plan_argv). A flag spelt elsewhere would be a second declaration to keep in step.
  const fs::path table = source_root() / "session" / "query" / "query_fields.cpp";
  for (const std::string flag : {"--db", "--cluster"}) {
    std::vector<std::string> spelt;
    for (const fs::path& file : product_sources())
      if (read(file).find('"' + flag + '"') != std::string::npos) spelt.push_back(fs::relative(file, source_root()));
    INFO(flag << " is written in: " << Catch::Detail::stringify(spelt));
    CHECK(spelt == std::vector<std::string>{fs::relative(table, source_root()).string()});
  }
}
