// cpplan-gui: parses the CLI's query flags (before Qt starts, so a bad flag is one line and exit
// 2 or 3 as with cpplan), opens the window on that query, and with --screenshot renders the
// window to a PNG once the plans are shown, prints one line and exits.
#include <QApplication>
#include <QTextStream>
#include <cstdio>
#include <filesystem>

#include "gui/args.h"
#include "gui/calibration_panel.h"
#include "gui/import_fit_panel.h"
#include "gui/main_window.h"
#include "gui/sweep_panel.h"

int main(int argc, char** argv) {
  std::error_code ec;
  std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) exe = argc > 0 ? argv[0] : "";
  const cpplan::gui::ParsedArgs parsed = cpplan::gui::parse_args(argc, argv, exe);
  if (parsed.exit_code >= 0) {
    std::fprintf(parsed.exit_code == 0 ? stdout : stderr, "%s\n", parsed.message.c_str());
    return parsed.exit_code;
  }
  const cpplan::gui::GuiOptions& o = parsed.options;

  int qt_argc = 1;  // our flags are parsed; Qt's own come from the environment (QT_QPA_PLATFORM)
  QApplication app(qt_argc, argv);
  QApplication::setApplicationName(QStringLiteral("cpplan-gui"));
  cpplan::gui::MainWindow window(parsed.catalog, QString::fromStdString(o.db));
  window.calibration()->import_fit()->set_profiles(o.profiles, exe);
  window.resize(o.width, o.height);
  window.show_tab(QString::fromStdString(o.tab));
  if (!o.sweep_file.empty()) window.sweep()->set_file(QString::fromStdString(o.sweep_file));
  int exit_code = 0;
  if (!o.screenshot.empty()) {
    QObject::connect(&window, &cpplan::gui::MainWindow::screenshot_taken, &app,
                     [&exit_code](bool ok, const QString& message) {
                       std::fprintf(ok ? stdout : stderr, "cpplan-gui: %s\n", message.toLocal8Bit().constData());
                       exit_code = ok ? 0 : 4;
                       QApplication::exit(exit_code);
                     });
    window.screenshot_when_ready(QString::fromStdString(o.screenshot));
  }
  window.set_query(o.input);
  window.show();
  const int rc = app.exec();
  return o.screenshot.empty() ? rc : exit_code;
}
