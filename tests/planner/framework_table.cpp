#include "tests/planner/framework_table.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string_view>

#include "planner/frameworks.h"
#include "planner/validate.h"
#include "tests/support/fixtures.h"

namespace cpplan::test {

namespace {
// The lines of the file a refusal may quote: a missing feature, a conflict, an unlisted model, a
// device family.
bool is_line_of(const FrameworkProfile& fw, std::string_view reason) {
  std::vector<std::string_view> lines(std::begin(fw.missing), std::end(fw.missing));
  for (const auto& c : fw.conflicts) lines.push_back(c.reason);
  for (const auto& f : fw.families) lines.push_back(f.reason);
  for (const auto& r : fw.backend_rules) lines.push_back(r.reason);
  for (const auto& m : fw.models)
    for (const auto& l : m.max_degrees) lines.push_back(l.reason);
  lines.push_back(fw.unlisted);
  lines.push_back(fw.family_reason);
  return std::find(lines.begin(), lines.end(), reason) != lines.end();
}

}  // namespace

std::array<PlanKind, kPlanKinds> plan_kinds() {
  ParallelConfig pipefusion;
  pipefusion.pipefusion = {2, 2, 1};
  ParallelConfig fully_shard = config(1, 2);
  fully_shard.fs_degree = 2;
  return {{
      {"ulysses 2", 2, 1, config(1, 2)},
      {"ring 2", 2, 1, config(2, 1)},
      {"ulysses 2 x ring 2", 4, 1, config(2, 2)},
      {"ulysses 3 anything (uneven split)", 3, 1, config(1, 3, 1, 1, 1, true)},
      {"tp 2", 2, 1, config(1, 1, 2)},
      {"ulysses 2 x tp 2", 4, 1, config(1, 2, 2)},
      {"cfg 2", 2, 1, config(1, 1, 1, 2)},
      {"pipefusion 2 (2 patches)", 2, 1, pipefusion},
      {"ulysses 2 x fs 2", 2, 1, fully_shard},
      {"dp 2, batch 2", 2, 2, config(1, 1, 1, 1, 2)},
  }};
}

// Checks every stated cell of `rows` against the verdict of framework file `file` (selected as
// --framework-version selects it), naming the cell that differs.
void check_table(const std::string& file, const std::vector<TableRow>& rows) {
  const FrameworkProfile* fw = catalog().find_framework(file);
  REQUIRE(fw);
  const auto frameworks = catalog().frameworks_for_query({file});
  REQUIRE(frameworks);
  const auto kinds = plan_kinds();
  for (const TableRow& row : rows) {
    for (int i = 0; i < kPlanKinds; ++i) {
      const PlanKind& kind = kinds[i];
      const Verdict expected = row.cells[i];
      auto q = make_query(*row.model, kind.gpus, row.width, row.height);
      q.batch = kind.batch;
      q.frameworks = *frameworks;
      const cpplan::Plan p = planner::make_plan(q, kind.config);
      const std::string_view reason = planner::unsupported_reason(fw->framework, q, p);
      INFO(file << " | " << row.label << " | " << kind.name << " (" << cpplan::plan_label(kind.config) << ")");
      INFO("plan: " << (p.reasons().empty() ? std::string("valid") : p.reasons().front()));
      INFO("verdict: " << (reason.empty() ? std::string_view("runs") : reason));
      if (expected == Verdict::kInvalid) {
        CHECK_FALSE(p.valid());
        continue;
      }
      CHECK(p.valid());  // else the table picked a plan the model cannot have
      if (expected == Verdict::kUnstated || !p.valid()) continue;
      CHECK(reason.empty() == (expected == Verdict::kRuns));
      if (expected == Verdict::kRefused && !reason.empty()) {
        CHECK(is_line_of(*fw, reason));
        CHECK_THAT(std::string(reason), Catch::Contains(fw->title));
      }
    }
  }
}

std::string framework_file_error(const std::string& name, const std::string& from, const std::string& to) {
  std::ifstream in(profiles_dir() + "/frameworks/" + name + ".toml");
  std::string text(std::istreambuf_iterator<char>(in), {});
  const std::string file = name + ".toml";
  REQUIRE(parse_framework_profile(text, file));
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  const auto r = parse_framework_profile(text.replace(at, from.size(), to), file);
  REQUIRE_FALSE(r);
  return r.error().message;
}

}  // namespace cpplan::test
