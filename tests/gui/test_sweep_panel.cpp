// The Sweep tab: the progress lines of `cpplan sweep` (cli/sweep_command.cpp's format, written out
// by hand here) parsed whole or cut anywhere; the tab driving stand-in processes that print those
// lines (progress, summary, Cancel, a refused file); and, where this build has `cpplan run`, a
// real two-run sweep recorded into a database.
#include <catch2/catch.hpp>

#include <QCheckBox>
#include <QFile>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <filesystem>
#include <fstream>

#include "data/store.h"
#include "gui/sweep_panel.h"
#include "tests/gui/gui_support.h"

using cpplan::gui::SweepPanel;
using cpplan::gui::SweepProgress;
using cpplan::gui::last_sweep_progress;
using cpplan::test::wait_for;

namespace {

// An executable shell script standing in for cpplan.
QString fake_cpplan(const cpplan::test::TempDir& dir, const std::string& body) {
  const std::string path = dir.file("fake-cpplan");
  std::ofstream(path) << "#!/bin/sh\n" << body;
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return QString::fromStdString(path);
}

}  // namespace

TEST_CASE("Sweep progress lines are read whole, several at once, or cut anywhere", "[gui][sweep][progress]") {
  // 30 characters of bar, then "i/N ETA  s  model size label" (cli/sweep_command.cpp)
  const QString first = "\rsweep [..............................] 0/3 ETA    0s  flux-tiny 128x128 single GPU     ";
  const QString second = "\rsweep [##########....................] 1/3 ETA    8s  flux-tiny 128x128 ulysses 2       ";
  CHECK(last_sweep_progress(first) == SweepProgress{0, 3});
  CHECK(last_sweep_progress(first + second) == SweepProgress{1, 3});
  // a chunk that ends inside the count is not yet a report: "1/1" of "1/12"
  CHECK(last_sweep_progress("\rsweep [##....] 1/1") == std::nullopt);
  CHECK(last_sweep_progress(first + "\rsweep [##....] 1/1") == SweepProgress{0, 3});
  CHECK(last_sweep_progress("\rsweep [##....] 1/12 ") == SweepProgress{1, 12});
  CHECK(last_sweep_progress("\rsweep [") == std::nullopt);
  // not the sweep's format, or counts that cannot be
  CHECK(last_sweep_progress("cpplan: sweep.toml:2: steps = 0: must be an integer between 1 and 100000\n") ==
        std::nullopt);
  CHECK(last_sweep_progress("sweep [ab] 1/2 ") == std::nullopt);
  CHECK(last_sweep_progress("sweep [##] 5/3 ") == std::nullopt);
  CHECK(last_sweep_progress("sweep [] 0/0 ") == std::nullopt);
  CHECK(last_sweep_progress("") == std::nullopt);
}

TEST_CASE("The sweep's summary line is found in its output", "[gui][sweep]") {
  const QString out =
      "sweep s.toml: 4 runs, 3 ran (3 ok, 0 failed), 1 already recorded; database /tmp/x.db\n"
      "  model              size ranks  plan                           measured  predicted    error\n";
  CHECK(cpplan::gui::sweep_summary_line(out) ==
        "sweep s.toml: 4 runs, 3 ran (3 ok, 0 failed), 1 already recorded; database /tmp/x.db");
  CHECK(cpplan::gui::sweep_summary_line("nothing here\n").isEmpty());
  CHECK(cpplan::gui::sweep_arguments("s.toml", "x.db", true) ==
        QStringList{"sweep", "s.toml", "--db", "x.db", "--resume"});
  CHECK(cpplan::gui::sweep_arguments("s.toml", "", false) == QStringList{"sweep", "s.toml"});
}

TEST_CASE("The Sweep tab advances with the progress lines and shows the summary", "[gui][sweep]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  SweepPanel panel(QStringLiteral("/tmp/unused.db"));
  CHECK(!panel.start_button()->isEnabled());  // no file yet
  CHECK(!panel.progress()->isTextVisible());  // no "0 / 1 runs" before a sweep says its count
  panel.set_program(fake_cpplan(dir, R"(
printf '\rsweep [..............................] 0/2 ETA    0s  flux-tiny 128x128 single GPU' >&2
sleep 0.3
printf '\rsweep [###############...............] 1/2 ETA    1s  flux-tiny 128x128 ulysses 2' >&2
sleep 0.3
printf '\n' >&2
echo "sweep $2: 2 runs, 2 ran (2 ok, 0 failed), 0 already recorded; database $4"
echo "  model   size ranks  plan   measured  predicted    error"
)"));
  panel.set_file(QStringLiteral("my.toml"));
  CHECK(panel.start_button()->isEnabled());
  std::vector<std::pair<int, int>> seen;
  QObject::connect(&panel, &SweepPanel::progressed, [&](int started, int total) { seen.emplace_back(started, total); });
  panel.start();
  CHECK(panel.running());
  CHECK(panel.cancel_button()->isEnabled());
  REQUIRE(wait_for(&panel, &SweepPanel::sweep_finished, 20000));
  REQUIRE(!seen.empty());
  CHECK(seen.back() == std::pair{1, 2});
  for (const auto& [started, total] : seen) CHECK(total == 2);
  CHECK(panel.progress()->maximum() == 2);
  CHECK(panel.progress()->value() == 2);
  CHECK(panel.progress()->isTextVisible());
  CHECK(panel.status_text() == "sweep my.toml: 2 runs, 2 ran (2 ok, 0 failed), 0 already recorded; database /tmp/unused.db");
  CHECK(!panel.log_text().contains("sweep [")); // progress lines drive the bar, not the log
  CHECK(panel.log_text().contains("model   size ranks"));
  CHECK(!panel.cancel_button()->isEnabled());
}

TEST_CASE("Cancel ends a running sweep and says how far it got", "[gui][sweep][cancel]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  SweepPanel panel(QStringLiteral("/tmp/unused.db"));
  panel.set_program(fake_cpplan(dir, R"(
printf '\rsweep [..............................] 0/5 ETA    0s  a ' >&2
printf '\rsweep [######........................] 1/5 ETA    9s  b ' >&2
exec sleep 60
)"));
  panel.set_file(QStringLiteral("long.toml"));
  panel.start();
  REQUIRE(wait_for(&panel, &SweepPanel::progressed, 10000));
  while (panel.progress()->value() < 1) REQUIRE(wait_for(&panel, &SweepPanel::progressed, 10000));
  int code = 0;
  QObject::connect(&panel, &SweepPanel::sweep_finished, [&](int c) { code = c; });
  panel.cancel();
  REQUIRE(wait_for(&panel, &SweepPanel::sweep_finished, 10000));
  CHECK(code == -1);
  CHECK(!panel.running());
  CHECK(panel.status_text().startsWith("cancelled after"));
  CHECK(panel.status_text().contains("1 of 5 runs begun"));
  CHECK(panel.progress()->value() == 1);
  CHECK(panel.start_button()->isEnabled());
}

TEST_CASE("A sweep file the sweep refuses is its one line, and no cpplan is said plainly", "[gui][sweep][errors]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  SweepPanel panel(QStringLiteral("/tmp/unused.db"));
  panel.set_program(fake_cpplan(dir, R"(
echo "cpplan: bad.toml:2: steps = 0: must be an integer between 1 and 100000" >&2
exit 3
)"));
  panel.set_file(QStringLiteral("bad.toml"));
  panel.start();
  REQUIRE(wait_for(&panel, &SweepPanel::sweep_finished, 10000));
  CHECK(panel.status_text() == "failed (exit 3): cpplan: bad.toml:2: steps = 0: must be an integer between 1 and 100000");
  CHECK(panel.log_text().contains("cpplan: bad.toml:2: steps = 0"));

  SweepPanel without(QStringLiteral("/tmp/unused.db"));
  without.set_file(QStringLiteral("any.toml"));
  without.start();
  CHECK(!without.running());
  CHECK(without.status_text() == "cpplan not found");
}

#ifdef CPPLAN_RUN_BINARY
TEST_CASE("A real two-run sweep from the Sweep tab records both runs", "[gui][sweep][real]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  const std::string file = dir.file("tiny.toml");
  std::ofstream(file) << "models = [\"flux-tiny\"]\nresolutions = [\"128x128\"]\nsteps = 2\nwarmup = 1\n"
                         "plans = [ {}, { ulysses = 2 } ]\n";
  const std::string db = dir.file("sweep.db");
  SweepPanel panel(QString::fromStdString(db));
  panel.set_program(QStringLiteral(CPPLAN_RUN_BINARY));
  panel.set_file(QString::fromStdString(file));
  int code = -2;
  QObject::connect(&panel, &SweepPanel::sweep_finished, [&](int c) { code = c; });
  panel.start();
  REQUIRE(wait_for(&panel, &SweepPanel::sweep_finished, 300000));
  INFO(panel.log_text().toStdString());
  CHECK(code == 0);
  CHECK(panel.status_text().startsWith(QStringLiteral("sweep %1: 2 runs, 2 ran (2 ok, 0 failed)").arg(QString::fromStdString(file))));
  CHECK(panel.progress()->maximum() == 2);
  CHECK(panel.progress()->value() == 2);
  auto store = cpplan::data::Store::open(db);
  REQUIRE(store);
  CHECK(store.value().runs().value().size() == 2);
}
#endif
