// _cpplan: the planning library as a Python extension module, under the pure-Python package
// cpplan (python/cpplan/__init__.py), which turns keyword arguments into Options and the JSON
// report into Plan objects. The report crosses as the text `cpplan --json` prints: one format,
// parsed by Python's json module, so that a plan from Python and one from the CLI are the same.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>
#include <utility>
#include <string>

#include "session/engine/engine.h"
#include "session/render/plan_json.h"
#include "session/query/query.h"
#include "session/query/query_fields.h"

namespace py = pybind11;
using cpplan::session::InvalidInput;
using cpplan::session::Options;

namespace {

// The recommendation for `options` (every option as text, as the CLI receives it) as JSON text:
// `cpplan --json`'s report with the rows, rejection groups and framework choices the CLI renders,
// and the notes the CLI prints on stderr (the package turns them into warnings). `exe` locates the
// installed profiles (empty: the source tree's, compiled in); throws InvalidInput.
// The process's engine for the profile directories `profiles` (and the installed ones, `exe`),
// opened once: its catalog is read once per process, not per call. No probe: not --hardware local.
std::shared_ptr<const cpplan::session::Engine> engine_for(const std::vector<std::string>& profiles,
                                                          const std::string& exe) {
  static std::mutex mutex;  // planning runs without the GIL
  static std::map<std::pair<std::vector<std::string>, std::string>, std::shared_ptr<const cpplan::session::Engine>>
      engines;
  const std::lock_guard<std::mutex> lock(mutex);
  auto& engine = engines[{profiles, exe}];
  if (!engine) {
    auto opened = cpplan::session::Engine::open(profiles, exe);
    if (!opened) throw InvalidInput{opened.error().message};
    engine = std::make_shared<const cpplan::session::Engine>(std::move(opened).value());
  }
  return engine;
}

std::pair<std::string, std::string> recommend(const Options& options, const std::string& exe) {
  const auto engine = engine_for(options.profiles, exe);
  // Each plan's snippets and framework arguments, as `cpplan --json`; the rejection groups too.
  auto resolved = engine->resolve(options, {true, true});
  if (!resolved) throw InvalidInput{resolved.error().message};
  auto rec = engine->recommend(*resolved);
  if (!rec) throw InvalidInput{rec.error().message};
  const auto report = cpplan::session::recommendation_json(**rec);
  std::string notes;
  for (const auto& note : report.at("notes")) notes += note.get<std::string>() + "\n";
  return {report.dump(), std::move(notes)};
}

void set_option(Options& o, const std::string& key, const std::string& text) {
  const cpplan::session::QueryField* f = cpplan::session::find_query_field(key);
  if (!f || f->key != key || !f->accepted_by(cpplan::session::kPythonFront))
    throw InvalidInput{key + ": not a query field (cpplan.query_fields() lists them)"};
  cpplan::session::set_field(o, *f, text);
}

const char* kind_name(cpplan::session::FieldKind k) {
  using K = cpplan::session::FieldKind;
  switch (k) {
    case K::kText: return "text";
    case K::kChoice: return "choice";
    case K::kInt: return "int";
    case K::kNumber: return "number";
    case K::kResolution: return "resolution";
    case K::kFlag: return "flag";
    case K::kList: return "list";
  }
  return "text";
}

// The query fields Python takes, as dicts (key, flag, kind, lo, hi, choices, default, help).
py::list python_fields() {
  py::list out;
  for (const cpplan::session::QueryField& f : cpplan::session::query_fields()) {
    if (!f.accepted_by(cpplan::session::kPythonFront)) continue;
    py::dict d;
    d["key"] = std::string(f.key);
    d["flag"] = std::string(f.flag);
    d["kind"] = kind_name(f.kind);
    d["lo"] = f.lo;
    d["hi"] = f.hi;
    py::list choices;
    for (std::string_view c : f.choices) choices.append(std::string(c));
    d["choices"] = choices;
    d["default"] = std::string(f.default_text);
    d["help"] = f.help;
    out.append(d);
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(_cpplan, m) {
  m.doc() = "cpplan's planner (use the package cpplan: cpplan.plan(...))";

  // cpplan.InvalidInput: a ValueError whose text is the CLI's one-line message (field, value, rule).
  static py::exception<InvalidInput> invalid_input(m, "InvalidInput", PyExc_ValueError);
  invalid_input.attr("__module__") = "cpplan";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InvalidInput& e) {
      invalid_input(e.message.c_str());
    }
  });

  // The options of a ranking: every query field (session/query/query_fields.h) by its key, and the three
  // the package sets itself.
  py::class_<Options>(m, "Options", "Every option of a ranking as text, as `cpplan` receives its flags")
      .def(py::init<>())
      .def("set", &set_option, py::arg("key"), py::arg("text"),
           "query field `key` (query_fields()) set from text; a list field gains one element")
      .def_readwrite("model_config_json", &Options::model_config_json)
      .def_readwrite("cluster", &Options::cluster)
      .def_readwrite("db", &Options::db)
      .def_readwrite("top", &Options::top);
  m.def("query_fields", &python_fields, "the query fields the package takes as keywords");

  // The GIL is released while planning (tens of milliseconds), so that other Python threads run;
  // cpplan.plan builds a fresh Options per call, which nothing else touches meanwhile.
  m.def("recommend", &recommend, py::arg("options"), py::arg("exe") = std::string(),
        py::call_guard<py::gil_scoped_release>(),
        "(the JSON recommendation for options as text: `cpplan --json`'s report with rows, rejected and "
        "framework_choices; the notes cpplan prints on stderr); raises "
        "InvalidInput with the CLI's message");
}
