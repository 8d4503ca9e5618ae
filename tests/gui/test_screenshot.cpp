// The real cpplan-gui binary, off-screen: --screenshot writes a window image at least 1000x600
// with the table filled (the binary says how many plans it shows; the image is not blank), and
// bad flags are one line on stderr with the CLI's exit codes.
#include <catch2/catch.hpp>

#include <QImage>
#include <QProcess>
#include <filesystem>
#include <QRegularExpression>
#include <QSet>

#include "tests/gui/gui_support.h"

namespace {

struct Outcome {
  int exit_code = -1;
  QString out, err;
};

Outcome run_gui(const QStringList& args) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  if (!env.contains("QT_QPA_PLATFORM")) env.insert("QT_QPA_PLATFORM", "offscreen");
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(CPPLAN_GUI_BINARY), args);
  if (!p.waitForFinished(60000)) {
    p.kill();
    p.waitForFinished();
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromLocal8Bit(p.readAllStandardOutput()),
          QString::fromLocal8Bit(p.readAllStandardError())};
}

}  // namespace

TEST_CASE("cpplan-gui --screenshot writes the window with the ranked plans", "[gui][screenshot]") {
  cpplan::test::TempDir dir;
  const QString png = QString::fromStdString(dir.file("shot.png"));
  const Outcome o = run_gui({"--screenshot", png, "--gpus", "4", "--res", "1008x1008", "--hardware", "h100-sxm"});
  INFO(o.err.toStdString());
  REQUIRE(o.exit_code == 0);
  const auto match = QRegularExpression(QStringLiteral("(\\d+) plans shown \\((\\d+) valid")).match(o.out);
  REQUIRE(match.hasMatch());
  CHECK(match.captured(1).toInt() == 8);  // the 8 valid plans (tests/planner/test_enumerate.cpp)
  CHECK(match.captured(2).toInt() == 8);

  QImage image(png);
  REQUIRE(!image.isNull());
  CHECK(image.width() >= 1000);
  CHECK(image.height() >= 600);
  // a filled window has text, charts and bars: many colours, none covering almost everything
  QSet<QRgb> colours;
  for (int y = 0; y < image.height(); y += 3)
    for (int x = 0; x < image.width(); x += 3) colours.insert(image.pixel(x, y));
  CHECK(colours.size() > 100);
}

TEST_CASE("cpplan-gui refuses bad flags with one line and the CLI's exit codes", "[gui][screenshot][errors]") {
  const Outcome usage = run_gui({"--gpu", "4"});
  CHECK(usage.exit_code == 2);
  CHECK(usage.err.trimmed().count('\n') == 0);
  const Outcome invalid = run_gui({"--gpus", "0", "--screenshot", "x.png"});
  CHECK(invalid.exit_code == 3);
  CHECK(invalid.err.trimmed() == "cpplan-gui: --gpus = 0: must be between 1 and 131072");
  const Outcome model = run_gui({"--model", "nope", "--screenshot", "x.png"});
  CHECK(model.exit_code == 3);
  CHECK(model.err.trimmed().count('\n') == 0);
  const Outcome te = run_gui({"--text-encoder", "gpu", "--screenshot", "x.png"});
  CHECK(te.exit_code == 3);
  CHECK(te.err.trimmed() == "cpplan-gui: --text-encoder = gpu: must be replicated, offloaded, sequential, sharded, fully-sharded or fully-sharded-host");
  const Outcome vae = run_gui({"--vae", "tile", "--screenshot", "x.png"});
  CHECK(vae.exit_code == 3);
  CHECK(vae.err.trimmed() == "cpplan-gui: --vae = tile: must be single, parallel, tiled or sliced");
  const Outcome runtime = run_gui({"--runtime", "torch", "--screenshot", "x.png"});
  CHECK(runtime.exit_code == 3);
  CHECK(runtime.err.startsWith("cpplan-gui: --runtime = torch: "));
  CHECK(runtime.err.trimmed().count('\n') == 0);
  const Outcome alias = run_gui({"--offload-text-encoders", "--text-encoder", "sharded", "--screenshot", "x.png"});
  CHECK(alias.exit_code == 3);
  CHECK(alias.err.trimmed() == "cpplan-gui: --offload-text-encoders: contradicts --text-encoder = sharded");
}

TEST_CASE("cpplan-gui --hardware local without a database of this machine's probes is one line, exit 3, nothing written",
          "[gui][screenshot][errors][local]") {
  cpplan::test::TempDir dir;
  const std::string db = dir.file("none.db");
  const QString png = QString::fromStdString(dir.file("shot.png"));
  const Outcome o = run_gui({"--hardware", "local", "--db", QString::fromStdString(db), "--screenshot", png});
  CHECK(o.exit_code == 3);
  // the CLI's message for the same query (cpplan --hardware local --db ...)
  CHECK(o.err.trimmed().toStdString() == "cpplan-gui: --hardware = local: no database at " + db + " (run cpplan probe first)");
  CHECK_FALSE(std::filesystem::exists(db));
  CHECK_FALSE(std::filesystem::exists(png.toStdString()));
}

TEST_CASE("cpplan-gui takes --runtime, --text-encoder, --vae and the --offload-text-encoders alias",
          "[gui][screenshot][runtime]") {
  cpplan::test::TempDir dir;
  const QString png = QString::fromStdString(dir.file("shot.png"));
  const Outcome o = run_gui({"--screenshot", png, "--gpus", "4", "--res", "1008x1008", "--runtime", "compiled",
                             "--offload-text-encoders", "--vae", "single"});
  INFO(o.err.toStdString());
  REQUIRE(o.exit_code == 0);
  CHECK(o.out.contains("8 plans shown (8 valid"));
  CHECK(!QImage(png).isNull());
}

TEST_CASE("cpplan-gui --tab renders every tab, and a bad tab name lists the choices", "[gui][screenshot][tabs]") {
  cpplan::test::TempDir dir;
  const QString db = QString::fromStdString(dir.file("empty.db"));  // does not exist: every tab copes
  QSet<QByteArray> images;
  for (const char* tab : {"plans", "heatmap", "history", "run", "calibration", "sweep", "fleet"}) {
    const QString png = QString::fromStdString(dir.file(std::string(tab) + ".png"));
    const Outcome o = run_gui({"--tab", tab, "--screenshot", png, "--db", db, "--size", "1200x800"});
    INFO(tab << ": " << o.err.toStdString());
    REQUIRE(o.exit_code == 0);
    CHECK(o.out.contains(QStringLiteral("%1 tab)").arg(QString(tab)), Qt::CaseInsensitive));
    QImage image(png);
    REQUIRE(!image.isNull());
    CHECK(image.width() == 1200);
    CHECK(image.height() == 800);
    images.insert(QByteArray(reinterpret_cast<const char*>(image.constBits()), image.sizeInBytes()));
  }
  CHECK(images.size() == 7);  // seven different pictures: each tab was the one shown
  CHECK(!std::filesystem::exists(db.toStdString()));

  const Outcome bad = run_gui({"--tab", "calibrate", "--screenshot", "x.png"});
  CHECK(bad.exit_code == 3);
  CHECK(bad.err.trimmed() == "cpplan-gui: --tab = calibrate: must be plans, heatmap, history, run, calibration, sweep, fleet or recommendation");
}

TEST_CASE("cpplan-gui --topology dgx-h100 --nodes 2 plans 16 GPUs with placements", "[gui][screenshot][topology]") {
  cpplan::test::TempDir dir;
  const QString png = QString::fromStdString(dir.file("topo.png"));
  const Outcome o = run_gui({"--topology", "dgx-h100", "--nodes", "2", "--screenshot", png});
  INFO(o.err.toStdString());
  REQUIRE(o.exit_code == 0);
  CHECK(o.out.contains("plans shown"));
  CHECK(!QImage(png).isNull());
  const Outcome nodes = run_gui({"--nodes", "2", "--screenshot", png});
  CHECK(nodes.exit_code == 3);
  CHECK(nodes.err.trimmed() == "cpplan-gui: --nodes = 2: h100-sxm's profile describes no node ([node]): name the box with --topology or --topology-file, or give --gpus alone (8 GPUs per node)");
}
