// One best plan (issues 49 and 54): for ten queries, every front that picks "the best plan" picks
// the same one, the GUI's memory chart, Python and a sweep name the peak phase `cpplan --json`
// names, and the GUI's Run tab, Python and a sweep's run write the argv `cpplan --json` writes,
// each read from what it shows the user: `cpplan --json` (its first plan), the GUI's
// Recommendation tab (a real widget, off-screen: its first row) and its heatmap cell at the same
// size and GPU count, Python in a real python3 process (cpplan.plan(...)[0]), a sweep's "top 1"
// (`cpplan sweep --dry-run`) and `cpplan run --plan best --dry-run`; and the GUI's Fleet tab the
// replica split `cpplan --objective throughput` chooses. The queries are planned as
// `cpplan run` plans them (h100-sxm's datasheet, the cpplan runtime), so that all six compare.
#include <catch2/catch.hpp>

#include <QTreeWidgetItem>
#include <QChart>
#include <algorithm>
#include <fstream>
#include <ostream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gui/charts.h"
#include "gui/fleet_panel.h"
#include "gui/planning.h"
#include "gui/recommendation_view.h"
#include "gui/run_panel.h"
#include "tests/gui/gui_support.h"
#include "tests/support/temp_dir.h"

using nlohmann::json;

namespace {

struct BestQuery {
  std::string model;
  int gpus = 1;
  int width = 0, height = 0;  // 0: the model's default
  int frames = 0;             // 0: the model's default
  int steps = 0;              // 0: the model's default
};

// Picked to cover the axes a best plan comes from: uneven splits (Anything forms), CFG, TP,
// PipeFusion, video, two transformers, one GPU.
const std::vector<BestQuery> kQueries = {
    {"flux.1-dev", 4, 1008, 1008},      {"flux.1-dev", 8, 1024, 1024},     {"flux.1-dev", 3, 1024, 1024},
    {"flux.1-dev", 1, 512, 512},        {"sd3.5-large", 2},                {"pixart-alpha", 8},
    {"qwen-image", 4, 1328, 1328},      {"wan2.1-t2v-14b", 8, 832, 480, 33, 20},
    {"hunyuanvideo", 4, 640, 368, 33, 20}, {"wan2.2-ti2v-5b", 2, 1280, 704, 25, 20},
};

std::string res_of(const BestQuery& q) { return std::to_string(q.width) + "x" + std::to_string(q.height); }

// The query's flags as every command takes them.
std::vector<std::string> flags_of(const BestQuery& q) {
  std::vector<std::string> a{"--model", q.model, "--gpus", std::to_string(q.gpus), "--hardware", "h100-sxm",
                             "--runtime", "cpplan"};
  if (q.width > 0) a.insert(a.end(), {"--res", res_of(q)});
  if (q.frames > 0) a.insert(a.end(), {"--frames", std::to_string(q.frames)});
  if (q.steps > 0) a.insert(a.end(), {"--steps", std::to_string(q.steps)});
  return a;
}

std::string shell(const std::vector<std::string>& argv) {
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "'" : " '") + a + "'";
  return command;
}

// What a front shows of its best plan: its label, the phase of its peak memory (MemoryPhase's
// names: load, encode, denoise, decode) and the argv that runs it (what follows `cpplan run`).
struct Best {
  std::string label, peak_phase;
  std::vector<std::string> run_args;
  bool operator==(const Best&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Best& b) {
  os << b.label << " (peak " << b.peak_phase << "): cpplan run";
  for (const std::string& a : b.run_args) os << ' ' << a;
  return os;
}

// The words of `args` that follow "--seed N": a sweep's run writes its plan's flags there.
std::vector<std::string> after_seed(const std::vector<std::string>& args) {
  const auto seed = std::find(args.begin(), args.end(), "--seed");
  return seed == args.end() || seed + 1 == args.end() ? std::vector<std::string>{}
                                                      : std::vector<std::string>(seed + 2, args.end());
}

bool ends_with(const std::vector<std::string>& all, const std::vector<std::string>& tail) {
  return tail.size() <= all.size() && std::equal(tail.rbegin(), tail.rend(), all.rbegin());
}

Best cli_best(const BestQuery& q) {
  std::vector<std::string> argv{CPPLAN_BINARY};
  const auto flags = flags_of(q);
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("--json");
  const json j = json::parse(cpplan::test::command_output(shell(argv) + " 2>/dev/null"));
  REQUIRE_FALSE(j.at("plans").empty());
  const json& first = j.at("plans").at(0);
  return {first.at("label"), first.at("predicted").at("memory_phases").at("peak"), first.at("run_args")};
}

// The phase the GUI's memory chart names in its title ("Peak memory ... while denoising"), in the
// cost model's words.
std::string chart_peak_phase(const cpplan::costmodel::Prediction& pr) {
  cpplan::gui::MemoryChart chart;
  chart.set_prediction(&pr, 80);
  const std::string title = chart.chart()->title().toStdString();
  const std::vector<std::pair<std::string, std::string>> names = {
      {"while loading", "load"}, {"while encoding", "encode"}, {"while denoising", "denoise"}, {"while decoding", "decode"}};
  for (const auto& [words, phase] : names)
    if (title.find(words) != std::string::npos) return phase;
  FAIL("the memory chart's title names no phase: " << title);
  return "";
}

cpplan::gui::QueryInput gui_input(const BestQuery& q) {
  cpplan::gui::QueryInput in;
  in.model = q.model;
  in.hardware = "h100-sxm";
  in.gpus = q.gpus;
  in.width = q.width;
  in.height = q.height;
  in.frames = q.frames;
  in.steps = q.steps;
  in.runtime = "cpplan";
  return in;
}

// The first row of the GUI's Recommendation tab, and its memory chart.
Best gui_best(const BestQuery& q) {
  const auto result = cpplan::gui::compute_plans(cpplan::test::shared_catalog(), gui_input(q), 1);
  REQUIRE(result.error.empty());
  using View = cpplan::gui::RecommendationView;
  View view;
  view.set_recommendation(result.recommendation.get());
  const QTreeWidgetItem* ranked = view.section(View::kRanked);
  REQUIRE(ranked->childCount() > 0);
  const cpplan::planner::RankedPlan* top = result.recommendation->top();
  REQUIRE(top);
  REQUIRE(top->predicted);
  // The Run tab's command for that plan (MainWindow hands it the selected row's plan).
  std::vector<std::string> run_args;
  for (const QString& a : cpplan::gui::run_arguments(*result.query, top->plan.config, {})) run_args.push_back(a.toStdString());
  REQUIRE_FALSE(run_args.empty());
  REQUIRE(run_args.front() == "run");
  run_args.erase(run_args.begin());
  return {ranked->child(0)->text(View::kPlan).toStdString(), chart_peak_phase(*top->predicted), run_args};
}

// The best replica split of `cpplan --objective throughput --json`: "REPLICAS x LABEL".
std::string cli_fleet_best(const BestQuery& q) {
  std::vector<std::string> argv{CPPLAN_BINARY};
  const auto flags = flags_of(q);
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--objective", "throughput", "--json"});
  const json j = json::parse(cpplan::test::command_output(shell(argv) + " 2>/dev/null"));
  REQUIRE_FALSE(j.at("plans").empty());
  const json& first = j.at("plans").at(0);
  return std::to_string(first.at("replicas").get<int>()) + " x " + first.at("label").get<std::string>();
}

// The GUI Fleet tab's best split, for the request the GUI's query made (as MainWindow hands it on).
std::string gui_fleet_best(const BestQuery& q) {
  const auto result = cpplan::gui::compute_plans(cpplan::test::shared_catalog(), gui_input(q), 1);
  REQUIRE(result.error.empty());
  const cpplan::gui::FleetRequest fleet{result.recommendation, result.error};
  const cpplan::gui::FleetResult r = cpplan::gui::compute_fleet(fleet, std::nullopt, 1);
  REQUIRE(r.error.empty());
  REQUIRE(r.report);
  REQUIRE_FALSE(r.report->rows.empty());
  const cpplan::planner::FleetRow& best = r.report->rows.front();
  return std::to_string(best.replicas) + " x " + cpplan::plan_label(best.replica.plan.config);
}

// The GUI heatmap's cell at the query's size and GPU count.
std::string heatmap_best(const BestQuery& q, const cpplan::ModelProfile& m) {
  const cpplan::Resolution res = q.width > 0 ? cpplan::Resolution{q.width, q.height}
                                             : cpplan::Resolution{m.default_width, m.default_height};
  const auto h = cpplan::gui::compute_heatmap(cpplan::test::shared_catalog(), gui_input(q), {res}, {q.gpus}, 1);
  REQUIRE(h.cells.size() == 1);
  INFO("heatmap cell error: " << h.cells[0].error);
  REQUIRE(h.cells[0].error.empty());
  return h.cells[0].label;
}

#ifdef CPPLAN_PYTHON_DIR
// cpplan.plan(...)[0]'s label and peak phase for every query, in one python3 process.
std::vector<Best> python_best(const std::vector<BestQuery>& queries) {
  json all = json::array();
  for (const BestQuery& q : queries) {
    json kwargs = {{"model", q.model}, {"gpus", q.gpus}, {"hardware", "h100-sxm"}, {"runtime", "cpplan"}};
    if (q.width > 0) kwargs.update({{"width", q.width}, {"height", q.height}});
    if (q.frames > 0) kwargs["frames"] = q.frames;
    if (q.steps > 0) kwargs["steps"] = q.steps;
    all.push_back(kwargs);
  }
  const std::string script =
      "import json, sys, cpplan\n"
      "best = [cpplan.plan(**k)[0] for k in json.loads(sys.argv[1])]\n"
      "print(json.dumps([[p.label, p.memory_phases['peak'], p.run_args] for p in best]))\n";
  const std::string command = std::string("PYTHONPATH='") + CPPLAN_PYTHON_DIR + "' '" + CPPLAN_PYTHON + "' -c \"" +
                              script + "\" '" + all.dump() + "' 2>/dev/null";
  std::vector<Best> out;
  for (const auto& pair : json::parse(cpplan::test::command_output(command)))
    out.push_back({pair.at(0).get<std::string>(), pair.at(1).get<std::string>(),
                   pair.at(2).get<std::vector<std::string>>()});
  return out;
}
#endif

#ifdef CPPLAN_RUN_BINARY
// A sweep of this one query, plans = "top 1": the plan `cpplan sweep --dry-run` lists, its peak
// phase and its run's argv.
Best sweep_best(const BestQuery& q, const cpplan::ModelProfile& m, const cpplan::test::TempDir& dir) {
  const std::string file = dir.file("sweep.toml");
  std::ofstream(file) << "models = [\"" << q.model << "\"]\n"
                      << "resolutions = [\"" << (q.width > 0 ? res_of(q) : std::to_string(m.default_width) + "x" +
                                                                                  std::to_string(m.default_height))
                      << "\"]\nframes = [" << (q.frames > 0 ? q.frames : m.default_frames) << "]\ngpus = [" << q.gpus
                      << "]\nsteps = " << (q.steps > 0 ? q.steps : m.default_steps) << "\nplans = \"top 1\"\n";
  const std::string out = cpplan::test::command_output(
      shell({CPPLAN_RUN_BINARY, "sweep", file, "--dry-run", "--db", dir.file("sweep.db")}) + " 2>&1");
  // "run  MODEL WxHxGPUS frames F: LABEL (peak PHASE)\n      cpplan run ARGS\n"
  INFO("cpplan sweep --dry-run printed: " << out);
  REQUIRE(out.rfind("run  ", 0) == 0);
  const auto colon = out.find(": ");
  const auto peak = out.find(" (peak ");
  const auto line_end = out.find('\n');
  REQUIRE(colon != std::string::npos);
  REQUIRE(peak != std::string::npos);
  REQUIRE(peak < line_end);
  Best b{out.substr(colon + 2, peak - colon - 2), out.substr(peak + 7, out.find(')', peak) - peak - 7), {}};
  const std::string prefix = "      cpplan run ";
  REQUIRE(out.compare(line_end + 1, prefix.size(), prefix) == 0);
  std::istringstream words(out.substr(line_end + 1 + prefix.size(), out.find('\n', line_end + 1) - line_end - 1 - prefix.size()));
  for (std::string w; words >> w;) b.run_args.push_back(w);
  return b;
}

// The plan `cpplan run --plan best` would execute (--dry-run: nothing runs).
std::string run_best(const BestQuery& q) {
  std::vector<std::string> argv{CPPLAN_RUN_BINARY, "run", "--plan", "best", "--dry-run", "--json"};
  const auto flags = flags_of(q);
  argv.insert(argv.end(), flags.begin(), flags.end());
  const std::string out = cpplan::test::command_output(shell(argv) + " 2>&1");
  INFO("cpplan run --plan best --dry-run printed: " << out);
  return json::parse(out).at("plan");
}
#endif

}  // namespace

TEST_CASE("cpplan, the GUI, its heatmap, Python, a sweep's top 1 and run --plan best choose the same best plan, "
          "with the same peak memory phase, and the GUI's Fleet tab the split --objective throughput chooses",
          "[gui][parity][best]") {
  cpplan::test::gui_app();
#ifdef CPPLAN_PYTHON_DIR
  const std::vector<Best> python = python_best(kQueries);
  REQUIRE(python.size() == kQueries.size());
#else
  WARN("built without the Python module (CPPLAN_PYTHON=OFF): Python is not compared");
#endif
#ifdef CPPLAN_RUN_BINARY
  const cpplan::test::TempDir dir;
#else
  WARN("built without the executor: the sweep and run --plan best are not compared");
#endif
  for (std::size_t i = 0; i < kQueries.size(); ++i) {
    const BestQuery& q = kQueries[i];
    INFO("query: " << shell(flags_of(q)));
    const cpplan::ModelProfile* m = cpplan::test::shared_catalog()->find_model(q.model);
    REQUIRE(m);
    const Best cli = cli_best(q);
    REQUIRE_FALSE(cli.label.empty());
    CHECK(gui_best(q) == cli);
    CHECK(heatmap_best(q, *m) == cli.label);
    CHECK(gui_fleet_best(q) == cli_fleet_best(q));
#ifdef CPPLAN_PYTHON_DIR
    CHECK(python[i] == cli);
#endif
#ifdef CPPLAN_RUN_BINARY
    // A sweep runs its own query flags (--warmup, --seed; no --hardware), then the same plan's.
    const Best sweep = sweep_best(q, *m, dir);
    CHECK(sweep.label == cli.label);
    CHECK(sweep.peak_phase == cli.peak_phase);
    if (q.gpus > 1) CHECK_FALSE(after_seed(sweep.run_args).empty());
    CHECK(ends_with(cli.run_args, after_seed(sweep.run_args)));
    CHECK(run_best(q) == cli.label);
#endif
  }
}
