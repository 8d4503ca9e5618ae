// The fronts render; they do not compute (issue 31): every source file of cli/ and gui/ is read,
// and (1) its costmodel/ and planner/ includes are only the headers of the types it renders, and
// (2) it calls none of the functions that predict, rank, choose frameworks, group rejections or
// lay out collectives. Those live in session/ (session/recommend.h) and below.
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

std::vector<fs::path> front_sources() {
  std::vector<fs::path> files;
  for (const char* front : {"cli", "gui"})
    for (const auto& entry : fs::recursive_directory_iterator(source_root() / front))
      if (entry.path().extension() == ".cpp" || entry.path().extension() == ".h") files.push_back(entry.path());
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
  static const std::regex kComments(R"(//[^\n]*|/\*[\s\S]*?\*/)");
  static const std::regex kStrings(R"("(?:[^"\\\n]|\\.)*")");
  return std::regex_replace(std::regex_replace(text, kComments, ""), kStrings, "\"\"");
}

}  // namespace

TEST_CASE("cli/ and gui/ include only the costmodel/ and planner/ headers of the types they render",
          "[session][layers]") {
  // The value types a front renders: RankedPlan and PlanReport, FleetReport, FrameworkSet,
  // RuntimeCalibration, Placement, Prediction, Calibration and the timing rows it fits.
  const std::set<std::string> rendered = {"planner/planner.h",       "planner/fleet.h",
                                          "planner/frameworks.h",    "planner/runtime_calibration.h",
                                          "planner/topology/placement.h", "costmodel/cost_model.h",
                                          "costmodel/calibration.h", "costmodel/timing_row.h"};
  static const std::regex kInclude(R"re(#include "((costmodel|planner)/[^"]+)")re");
  const auto files = front_sources();
  REQUIRE(files.size() > 40);  // both fronts were found
  for (const fs::path& file : files) {
    const std::string text = read(file);
    for (std::sregex_iterator it(text.begin(), text.end(), kInclude), end; it != end; ++it) {
      INFO(fs::relative(file, source_root()).string() << " includes " << (*it)[1]);
      CHECK(rendered.count((*it)[1]) == 1);
    }
  }
}

TEST_CASE("No function in cli/ or gui/ predicts, ranks, chooses a framework or groups rejections",
          "[session][layers]") {
  // The computations of a recommendation (costmodel/, planner/): session::recommend calls them.
  const std::vector<std::string> computing = {
      "Planner(",         "plan_fleet(",       "forward_flops(",      "best_by_framework(", "snippets_for(",
      "framework_snippets(", "rejection_groups(", "merged_rows(",     "CostModel(",         "default_layout(",
      "main_collective(", "prediction_source(", "keep_plans_of(",     "predict(",           "make_plan(",
      "planner::validate(", "rank_plans(",     "fastest_plan_for(",   "unsupported_reason(", "frameworks_for("};
  for (const fs::path& file : front_sources()) {
    const std::string code = code_of(read(file));
    for (const std::string& call : computing) {
      INFO(fs::relative(file, source_root()).string() << " calls " << call);
      CHECK(code.find(call) == std::string::npos);
    }
  }
}
