// _cpplan: the planning library as a Python extension module, under the pure-Python package
// cpplan (python/cpplan/__init__.py), which turns keyword arguments into Options and the JSON
// report into Plan objects. The report crosses as the text `cpplan --json` prints: one format,
// parsed by Python's json module, so that a plan from Python and one from the CLI are the same.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <exception>
#include <sstream>
#include <utility>
#include <string>

#include "session/plan_json.h"
#include "session/query.h"

namespace py = pybind11;
using cpplan::session::InvalidInput;
using cpplan::session::Options;

namespace {

// The recommendation for `options` (every option as text, as the CLI receives it) as JSON text:
// `cpplan --json`'s report with the rows, rejection groups and framework choices the CLI renders,
// and the notes the CLI prints on stderr (the package turns them into warnings). `exe` locates the
// installed profiles (empty: the source tree's, compiled in); throws InvalidInput.
std::pair<std::string, std::string> recommend(const Options& options, const std::string& exe) {
  auto report = cpplan::session::recommend_json(options, exe);
  if (!report) throw InvalidInput{report.error().message};
  std::string notes;
  for (const auto& note : report->at("notes")) notes += note.get<std::string>() + "\n";
  return {report->dump(), std::move(notes)};
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

  // Only the options of a ranking; the names are the CLI's flags (Options in session/query.h).
  py::class_<Options>(m, "Options", "Every option of a ranking as text, as `cpplan` receives its flags")
      .def(py::init<>())
      .def_readwrite("gpus", &Options::gpus)
      .def_readwrite("res", &Options::res)
      .def_readwrite("frames", &Options::frames)
      .def_readwrite("model", &Options::model)
      .def_readwrite("model_config", &Options::model_config)
      .def_readwrite("model_config_json", &Options::model_config_json)
      .def_readwrite("hardware", &Options::hardware)
      .def_readwrite("steps", &Options::steps)
      .def_readwrite("backend", &Options::backend)
      .def_readwrite("batch", &Options::batch)
      .def_readwrite("text_tokens", &Options::text_tokens)
      .def_readwrite("runtime", &Options::runtime)
      .def_readwrite("text_encoder", &Options::text_encoder)
      .def_readwrite("vae", &Options::vae)
      .def_readwrite("profiles", &Options::profiles)
      .def_readwrite("topology", &Options::topology)
      .def_readwrite("topology_file", &Options::topology_file)
      .def_readwrite("nodes", &Options::nodes)
      .def_readwrite("cluster", &Options::cluster)
      .def_readwrite("db", &Options::db)
      .def_readwrite("top", &Options::top)
      .def_readwrite("framework", &Options::framework)
      .def_readwrite("all", &Options::all);

  // The GIL is released while planning (tens of milliseconds), so that other Python threads run;
  // cpplan.plan builds a fresh Options per call, which nothing else touches meanwhile.
  m.def("recommend", &recommend, py::arg("options"), py::arg("exe") = std::string(),
        py::call_guard<py::gil_scoped_release>(),
        "(the JSON recommendation for options as text: `cpplan --json`'s report with rows, rejected and "
        "framework_choices; the notes cpplan prints on stderr); raises "
        "InvalidInput with the CLI's message");
}
