#pragma once
// The fields the fronts share, one table: each field's flag, kind, bounds, default, key (the Python
// keyword and the JSON key), help, the fronts that take it, its group and the Options member it
// fills. The query's fields (query_fields()), a plan's (--ring ... --no-fp32), how the answer is
// ranked (--top, --objective, --slo-ms) and the store's (--db, --cluster). The CLI's and
// cpplan-gui's flags (session/query/query_flags.h), the GUI's form bounds, the Python module's keywords
// and every argv a front or a job builds (to_argv) come from it, and the parsers use its bounds.
// `--db` and `--cluster` are spelt in its .cpp only (tests/session/test_front_sources.cpp); the
// query part of the GUI's run and tune argv (gui/run_panel.cpp) still spells its flags itself.

#include <initializer_list>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "session/query/query.h"

namespace cpplan::session {

enum class FieldKind {
  kText,        // a name or a path
  kChoice,      // one of `choices`
  kInt,         // an integer in [lo, hi]
  kNumber,      // a number in (lo, hi]
  kResolution,  // WIDTHxHEIGHT, each side in [lo, hi]
  kFlag,        // present or not
  kList,        // repeatable
};

// The fronts that take a field (a bit set).
enum Front : unsigned { kCliFront = 1, kGuiFront = 2, kPythonFront = 4, kRunFront = 8, kEveryFront = 15 };

// Which part of a command line a field belongs to.
enum class FieldGroup {
  kQuery,      // the query every planning front takes (query_fields())
  kPlan,       // one plan: its degrees and options (check, run, sweeps, the GUI's run panel)
  kRecommend,  // how the answer is ranked and shown
  kStore,      // the measurement store, and the cluster priced from its imports
};

struct QueryField {
  using Member = std::variant<std::string Options::*, bool Options::*, std::vector<std::string> Options::*>;
  std::string_view flag;  // "--gpus"
  std::string_view key;   // "gpus": the Python keyword and the JSON key (the flag's words joined by '_')
  FieldKind kind = FieldKind::kText;
  double lo = 0, hi = 0;               // kInt, kNumber, kResolution
  std::vector<std::string_view> choices;  // kChoice
  std::string_view default_text;       // "" : computed (the model's, the topology's, ...)
  std::string help;
  unsigned fronts = kEveryFront;
  Member member;
  FieldGroup group = FieldGroup::kQuery;

  bool accepted_by(Front f) const { return (fronts & f) != 0; }
};

// Every shared field, the query's first, in the order the fronts declare them.
const std::vector<QueryField>& shared_fields();
// The fields of `group`, in the table's order.
const std::vector<QueryField>& fields_of(FieldGroup group);
// The query's fields (fields_of(kQuery)).
const std::vector<QueryField>& query_fields();
// The field of `flag` ("--gpus") or of `key` ("gpus"); null when none.
const QueryField* find_query_field(std::string_view flag_or_key);
// The field of `flag` or `key`; a missing one is a programming error (std::logic_error).
const QueryField& query_field(std::string_view flag_or_key);
// The flag of the field `key` (its words joined by dashes), for an argv; a missing key is a programming error.
std::string flag_of(std::string_view key);

// A kInt field's value of `text`, within the table's bounds; throws InvalidInput.
int parse_int_field(std::string_view flag, const std::string& text);
// A kNumber field's value of `text`, within the table's bounds; throws InvalidInput.
double parse_number_field(std::string_view flag, const std::string& text);

// Whether field `f` of `o` differs from its default (Options{}).
bool field_set(const Options& o, const QueryField& f);
// Field `f` of `o` as text: its value, a list's values joined by ',', a flag "true" or "false".
std::string field_text(const Options& o, const QueryField& f);
// Field `f` of `o` set from text (kFlag: "true"/"false"; kList: one more element); the value is
// checked later, when the query is resolved. Throws InvalidInput for a flag value that is not a boolean.
void set_field(Options& o, const QueryField& f, const std::string& text);
// The query fields of `o` that differ from the defaults, as the flags `cpplan` takes.
std::vector<std::string> to_argv(const Options& o);
// The fields of `groups` that differ from the defaults, as flags, in the table's order.
std::vector<std::string> to_argv(const Options& o, std::initializer_list<FieldGroup> groups);

}  // namespace cpplan::session
