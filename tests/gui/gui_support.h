#pragma once
// Shared by the GUI suites: one QApplication per test binary (created on first use, so that
// listing the tests needs no display), the project's profiles as a shared catalog, waiting on a
// signal with a deadline, and a temporary directory.

#include <QApplication>
#include <QEventLoop>
#include <QTimer>
#include <cstdlib>
#include <filesystem>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "tests/support/temp_dir.h"
#include "gui/planning.h"
#include "tests/support/fixtures.h"

namespace cpplan::test {

// What a shell command prints on stdout (the caller quotes its arguments).
inline std::string command_output(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) throw std::runtime_error("popen failed: " + command);
  std::string out;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe.get())) out.append(buffer, n);
  return out;
}

inline QApplication& gui_app() {
  // ctest sets QT_QPA_PLATFORM=offscreen; run by hand, the binary needs no display either
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  static int argc = 1;
  static char name[] = "test_gui";
  static char* argv[] = {name, nullptr};
  static QApplication app(argc, argv);
  return app;
}

inline gui::CatalogPtr shared_catalog() {
  static const gui::CatalogPtr c = [] {
    auto loaded = ProfileCatalog::load({profiles_dir()});
    if (!loaded) throw std::runtime_error(loaded.error().message);
    return std::make_shared<const ProfileCatalog>(std::move(loaded).value());
  }();
  return c;
}

// Runs the event loop until `sender` emits `signal` or `timeout_ms` passes; true when it emitted.
template <class Sender, class Signal>
bool wait_for(Sender* sender, Signal signal, int timeout_ms = 10000) {
  QEventLoop loop;
  bool fired = false;
  auto connection = QObject::connect(sender, signal, &loop, [&] {
    fired = true;
    loop.quit();
  });
  QTimer::singleShot(timeout_ms, &loop, &QEventLoop::quit);
  loop.exec();
  QObject::disconnect(connection);
  return fired;
}


}  // namespace cpplan::test
