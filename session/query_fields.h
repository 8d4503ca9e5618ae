#pragma once
// The query fields, one table: each field's flag, kind, bounds, default, key (the Python keyword
// and the JSON key), help, the fronts that take it and the Options member it fills. The CLI's and
// cpplan-gui's flags (session/query_flags.h), the GUI's form bounds, the Python module's keywords
// and the argv of a query (to_argv) all come from it, and resolve_query parses with its bounds.

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "session/query.h"

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

  bool accepted_by(Front f) const { return (fronts & f) != 0; }
};

// Every query field, in the order the fronts declare them.
const std::vector<QueryField>& query_fields();
// The field of `flag` ("--gpus") or of `key` ("gpus"); null when none.
const QueryField* find_query_field(std::string_view flag_or_key);
// The field of `flag`; a missing one is a programming error (std::logic_error).
const QueryField& query_field(std::string_view flag);

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

}  // namespace cpplan::session
