#pragma once
// The scaffolding of the framework table tests (test_framework_tables.cpp, test_serving_framework_
// tables.cpp): ten plan kinds as columns, a row per model with its expected verdicts, written by
// hand from shared/reference/frameworks.md, and the check of every stated cell against a framework
// file's verdict.
#include <array>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/parallel_config.h"

namespace cpplan::test {

enum class Verdict {
  kRuns,      // the framework runs the plan
  kRefused,   // it cannot
  kUnstated,  // frameworks.md says nothing: not checked
  kInvalid,   // the plan is invalid for the model (e.g. CFG on a guidance-distilled model)
};
// Table shorthand.
constexpr Verdict kRun = Verdict::kRuns, kRef = Verdict::kRefused, kSil = Verdict::kUnstated,
                  kInv = Verdict::kInvalid;

// One plan kind: a column of the tables.
struct PlanKind {
  const char* name;
  int gpus;
  int batch;
  ParallelConfig config;
};

constexpr int kPlanKinds = 10;
using Cells = std::array<Verdict, kPlanKinds>;

// The columns: ulysses 2, ring 2, ulysses 2 x ring 2, ulysses 3 anything, tp 2, ulysses 2 x tp 2,
// cfg 2, pipefusion 2, ulysses 2 x fs 2, dp 2 (batch 2).
std::array<PlanKind, kPlanKinds> plan_kinds();

// A row: the model (it outlives the check), its name in messages, the size (0: the model's
// default) and the expected verdicts in plan_kinds() order.
struct TableRow {
  const ModelProfile* model;
  std::string label;
  int width, height;
  Cells cells;
};

// Checks every stated cell of `rows` against the verdict of framework file `file` (selected as
// --framework-version selects it), naming the cell that differs; a refusal must quote a line of
// the file and name the framework.
void check_table(const std::string& file, const std::vector<TableRow>& rows);

// The error of loading profiles/frameworks/`name`.toml with its first `from` replaced by `to`
// (REQUIREs that the file as shipped loads, that `from` is there and that the edit is refused).
std::string framework_file_error(const std::string& name, const std::string& from, const std::string& to);

}  // namespace cpplan::test
