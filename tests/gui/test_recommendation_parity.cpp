// One recommendation, three renderings: for a table of queries, the real `cpplan` binary's text
// (its ranked rows, its "rejected" lines and each framework's heading and script), the GUI's
// Recommendation tab (a real widget, off-screen) and the Python module in a real python3 process
// (cpplan.recommend) give the same rows, the same rejection groups and the same framework choices.
// Each front is parsed from what it shows the user; nothing is compared with the session's value.
#include <catch2/catch.hpp>

#include <QTreeWidgetItem>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gui/recommendation_view.h"
#include "tests/gui/gui_support.h"

using nlohmann::json;

namespace {

struct Query {
  std::string model, hardware;
  int gpus = 4, width = 0, height = 0, frames = 0;
  std::string framework = "any";
  bool all = false;
  std::string runtime = "diffusers";
};

// What each front shows of one recommendation, as plain values.
struct Row {
  std::string label, variant, frameworks;
  bool operator==(const Row&) const = default;
};
struct Rejection {
  int count = 0;
  std::string rule, example;
  bool operator==(const Rejection&) const = default;
};
struct Choice {
  std::string title, plan;
  std::vector<std::string> lines;
  bool operator==(const Choice&) const = default;
};
struct Shown {
  std::vector<Row> rows;
  std::vector<Rejection> rejected;
  std::vector<Choice> choices;
};

std::ostream& operator<<(std::ostream& o, const Row& r) { return o << r.label << " | " << r.variant << " | " << r.frameworks; }
std::ostream& operator<<(std::ostream& o, const Rejection& r) { return o << r.count << " | " << r.rule << " | " << r.example; }
std::ostream& operator<<(std::ostream& o, const Choice& c) {
  o << c.title << " | " << c.plan;
  for (const auto& l : c.lines) o << "\n    " << l;
  return o;
}

using cpplan::test::command_output;

std::vector<std::string> cli_args(const Query& q) {
  std::vector<std::string> a{"--model", q.model, "--hardware", q.hardware, "--gpus", std::to_string(q.gpus)};
  if (q.width > 0) a.insert(a.end(), {"--res", std::to_string(q.width) + "x" + std::to_string(q.height)});
  if (q.frames > 0) a.insert(a.end(), {"--frames", std::to_string(q.frames)});
  a.insert(a.end(), {"--framework", q.framework, "--runtime", q.runtime});
  if (q.all) a.push_back("--all");
  return a;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string trim(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  return s;
}

// The rows of the CLI's table, cut at its header's column starts.
std::vector<Row> cli_rows(const std::vector<std::string>& lines, std::size_t& i) {
  while (i < lines.size() && lines[i].rfind("rank  plan", 0) != 0) ++i;
  REQUIRE(i < lines.size());
  const std::string& header = lines[i++];
  const auto plan = header.find("plan"), variant = header.find("CP variant"), step = header.find("step ms");
  const auto frameworks = header.find("frameworks");
  REQUIRE(frameworks != std::string::npos);
  std::vector<Row> rows;
  for (; i < lines.size() && !lines[i].empty() && lines[i].rfind("      ", 0) != 0; ++i) {
    // After the variant: step ms, steps/s, image s, peak GiB, fits, text enc / VAE, then the
    // frameworks (a wide placement pushes them right of their header).
    std::istringstream figures(lines[i].substr(step));
    std::string word, rest;
    for (int k = 0; k < 6; ++k) figures >> word;
    for (std::string sep; figures >> word; sep = " ") rest += sep + word;
    rows.push_back({trim(lines[i].substr(plan, variant - plan)), trim(lines[i].substr(variant, step - variant)), rest});
  }
  return rows;
}

// "    13 plans  must divide image tokens = 3969 (change --res), e.g. ring 4 (and 1 more rule)"
std::vector<Rejection> cli_rejections(const std::vector<std::string>& lines) {
  static const std::regex kLine(R"(^\s+(\d+) plans?\s+(.*?)(?: \((?:change --\S+|the model's heads)\))?, e\.g\. (.+?)(?: \(and \d+ more rules?\))?$)");
  std::vector<Rejection> out;
  std::size_t i = 0;
  while (i < lines.size() && lines[i].rfind("rejected (", 0) != 0) ++i;
  if (i < lines.size() && lines[i].find("--all lists each") == std::string::npos) return out;  // --all: each plan
  for (++i; i < lines.size() && !lines[i].empty(); ++i) {
    std::smatch m;
    REQUIRE(std::regex_match(lines[i], m, kLine));
    out.push_back({std::stoi(m[1]), m[2], m[3]});
  }
  return out;
}

// Each framework's heading and script after the "top plan:" line.
std::vector<Choice> cli_choices(const std::vector<std::string>& lines, const std::string& top_label) {
  static const std::regex kFastest(R"(; the fastest plan it runs: (.+) \([^()]*\), (?:\d+% slower|as fast):?)");
  std::vector<Choice> out;
  std::size_t i = 0;
  while (i < lines.size() && lines[i].rfind("top plan: ", 0) != 0) ++i;
  for (++i; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.rfind("warm-up: ", 0) == 0) continue;
    if (line.rfind("  ", 0) == 0) {
      REQUIRE_FALSE(out.empty());
      out.back().lines.push_back(line.substr(2));
      continue;
    }
    Choice c;
    c.title = line.substr(0, std::min(line.find(':'), line.find(" (its placement: ")));
    std::smatch m;
    if (std::regex_search(line, m, kFastest)) c.plan = m[1];
    else if (line.find("; nor any other plan here") == std::string::npos) c.plan = top_label;
    out.push_back(std::move(c));
  }
  return out;
}

Shown cli_shown(const Query& q) {
  std::string command = CPPLAN_BINARY;
  for (const std::string& a : cli_args(q)) command += " '" + a + "'";
  const auto lines = lines_of(command_output(command + " 2>/dev/null"));
  Shown s;
  std::size_t i = 0;
  s.rows = cli_rows(lines, i);
  s.rejected = cli_rejections(lines);
  s.choices = cli_choices(lines, s.rows.empty() ? "" : s.rows.front().label);
  return s;
}

std::string text(const QTreeWidgetItem* item, int column) { return item->text(column).toStdString(); }

Shown gui_shown(const Query& q) {
  cpplan::gui::QueryInput in;
  in.model = q.model;
  in.hardware = q.hardware;
  in.gpus = q.gpus;
  in.width = q.width;
  in.height = q.height;
  in.frames = q.frames;
  in.framework = q.framework;
  in.all_plans = q.all;
  in.runtime = q.runtime;
  const auto result = cpplan::gui::compute_plans(cpplan::test::shared_catalog(), in, 1);
  REQUIRE(result.error.empty());
  using View = cpplan::gui::RecommendationView;
  View view;
  view.set_recommendation(result.recommendation.get());
  Shown s;
  const QTreeWidgetItem* ranked = view.section(View::kRanked);
  for (int i = 0; i < ranked->childCount(); ++i) {
    const auto* r = ranked->child(i);
    s.rows.push_back({text(r, View::kPlan), text(r, View::kVariant), text(r, View::kDetail)});
  }
  const QTreeWidgetItem* rejected = view.section(View::kRejected);
  for (int i = 0; i < rejected->childCount(); ++i) {
    const auto* r = rejected->child(i);
    s.rejected.push_back({std::stoi(text(r, View::kKey)), text(r, View::kPlan), text(r, View::kDetail)});
  }
  const QTreeWidgetItem* frameworks = view.section(View::kFrameworks);
  for (int i = 0; i < frameworks->childCount(); ++i) {
    const auto* f = frameworks->child(i);
    Choice c{text(f, View::kKey), text(f, View::kPlan), {}};
    for (int l = 0; l < f->childCount(); ++l) c.lines.push_back(text(f->child(l), View::kPlan));
    s.choices.push_back(std::move(c));
  }
  return s;
}

#ifdef CPPLAN_PYTHON_DIR
Shown python_shown(const Query& q) {
  json kwargs = {{"model", q.model}, {"hardware", q.hardware}, {"gpus", q.gpus}, {"framework", q.framework},
                 {"all", q.all}, {"top", 10}, {"runtime", q.runtime}};
  if (q.width > 0) kwargs.update({{"width", q.width}, {"height", q.height}});
  if (q.frames > 0) kwargs["frames"] = q.frames;
  if (q.all) kwargs.erase("top");  // --all shows every row
  const std::string script =
      "import json, sys, cpplan\n"
      "r = cpplan.recommend(**json.loads(sys.argv[1]))\n"
      "print(json.dumps({'rows': r.rows, 'rejected': r.rejected, 'choices': r.framework_choices}))\n";
  const std::string command = std::string("PYTHONPATH='") + CPPLAN_PYTHON_DIR + "' '" + CPPLAN_PYTHON + "' -c \"" +
                              script + "\" '" + kwargs.dump() + "' 2>/dev/null";
  const json j = json::parse(command_output(command));
  Shown s;
  for (const json& r : j.at("rows")) {
    s.rows.push_back({r.at("label"), r.at("variant"), r.at("frameworks_text")});
  }
  for (const json& g : j.at("rejected")) s.rejected.push_back({g.at("count"), g.at("rule"), g.at("example")});
  for (const json& c : j.at("choices")) {
    Choice choice{c.at("title"), c.at("plan").is_null() ? "" : c.at("plan").get<std::string>(), {}};
    if (!c.at("script").is_null()) choice.lines = c.at("script").at("lines").get<std::vector<std::string>>();
    s.choices.push_back(std::move(choice));
  }
  return s;
}

#endif

template <class T>
void check_same(const std::vector<T>& cli, const std::vector<T>& other, const char* what) {
  INFO(what << ": " << cli.size() << " in the CLI's text, " << other.size() << " here");
  REQUIRE(cli.size() == other.size());
  for (std::size_t i = 0; i < cli.size(); ++i) {
    INFO(what << " " << i << "\n  cli:   " << cli[i] << "\n  other: " << other[i]);
    CHECK(cli[i] == other[i]);
  }
}

}  // namespace

TEST_CASE("The CLI, the GUI and Python render the same recommendation for a table of queries",
          "[gui][parity][recommendation]") {
  cpplan::test::gui_app();
  const std::vector<Query> queries = {
      {"flux.1-dev", "h100-sxm", 4, 1008, 1008},                       // uneven: Anything forms, rejections
      {"flux.1-dev", "h100-sxm", 8, 1024, 1024},                       // even: each form priced apart
      {"flux.1-dev", "h100-sxm", 8, 1024, 1024, 0, "any", false, "cpplan"},  // one computation: "X/Anything"
      {"wan2.1-t2v-14b", "h200-sxm", 8, 1280, 720, 81},                // video, CFG, xDiT's own choice
      {"qwen-image", "h100-sxm", 4, 1328, 1328, 0, "diffusers"},       // one framework: the others hidden
      {"sd3.5-large", "l40s", 2, 0, 0, 0, "any", true},                // --all: each form its own row
  };
  for (const Query& q : queries) {
    INFO("query: " << q.model << " on " << q.gpus << " x " << q.hardware << " " << q.width << "x" << q.height
                   << " framework " << q.framework << (q.all ? " --all" : ""));
    const Shown cli = cli_shown(q);
    REQUIRE_FALSE(cli.rows.empty());
    const Shown gui = gui_shown(q);
    check_same(cli.rows, gui.rows, "GUI row");
#ifdef CPPLAN_PYTHON_DIR
    const Shown py = python_shown(q);
#else
    WARN("built without the Python module (CPPLAN_PYTHON=OFF): only the CLI and the GUI are compared");
    const Shown py = cli;
#endif
    check_same(cli.rows, py.rows, "Python row");
    if (!q.all) {  // --all lists each rejected plan, not the groups
      check_same(cli.rejected, gui.rejected, "GUI rejection");
      check_same(cli.rejected, py.rejected, "Python rejection");
    }
    check_same(cli.choices, gui.choices, "GUI framework choice");
    check_same(cli.choices, py.choices, "Python framework choice");
  }
}
