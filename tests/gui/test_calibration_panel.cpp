// The Calibration tab over a real SQLite file written with data::Store: the latest calibration of
// each machine (version, runs, folds, held-out error and rank correlation before and after, every
// coefficient), the report library's predicted-vs-measured plot, and the message of a store
// without calibrations; a database that does not exist is not created.
#include <catch2/catch.hpp>

#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QPushButton>
#include <QTableWidget>
#include <filesystem>

#include "data/store.h"
#include "core/fit.h"
#include "gui/calibration_panel.h"
#include "gui/import_fit_panel.h"
#include "tests/gui/gui_support.h"
#include "tests/support/machines.h"

using cpplan::costmodel::Calibration;
using cpplan::data::RunRecord;
using cpplan::data::Store;
using cpplan::gui::CalibrationPanel;

namespace {

RunRecord run_of(int ulysses, double measured_ms, double predicted_ms) {
  RunRecord r;
  r.model = "flux-tiny";
  r.width = r.height = 128;
  r.steps = 4;
  r.dtype = "float32";
  r.ulysses = ulysses;
  r.world_size = ulysses;
  r.attention_backend = "flash";
  r.status = "ok";
  r.started_at = "2025-01-01T00:00:00Z";
  r.finished_at = "2025-01-01T00:00:05Z";
  r.step_ms = measured_ms;
  r.predicted_step_ms = predicted_ms;
  r.predicted_hardware = "local";
  r.step_times_ms = {measured_ms};
  return r;
}

Calibration calibration(std::vector<double> coefficients, double mape_after) {
  Calibration c;
  c.fitted_at = "2025-02-03T04:05:06Z";
  c.features = {"gemm", "attention", "comm"};
  c.coefficients = std::move(coefficients);
  c.runs = 12;
  c.folds = 4;
  c.mape_before = 0.3;
  c.mape_after = mape_after;
  c.rank_corr_before = 0.7;
  c.rank_corr_after = 0.95;
  return c;
}

// A file in DIR/p/fits/ (made here): where a fit named after the file may be written.
std::string fits_dir_file(const cpplan::test::TempDir& dir, const std::string& name) {
  std::filesystem::create_directories(dir.path() / "p" / "fits");
  return (dir.path() / "p" / "fits" / name).string();
}

// The import panel set to fit the shipped FLUX.1-dev timings as scripts/fit-runtimes.sh does.
void fill_published_fit(cpplan::gui::ImportFitPanel& fit, const std::string& out) {
  fit.set_profiles({cpplan::test::profiles_dir()}, "");
  fit.files()->setText(QString::fromStdString(cpplan::test::profiles_dir() + "/reference/published-flux.json"));
  fit.runtime_for()->setText(QStringLiteral("cache-dit=diffusers"));
  fit.output()->setText(QString::fromStdString(out));
}

}  // namespace

TEST_CASE("The Calibration tab shows the latest fit, its coefficients and the scatter plot", "[gui][calibration]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  const std::string db = dir.file("cal.db");
  {
    auto store = Store::open(db);
    REQUIRE(store);
    for (auto [u, measured, predicted] : {std::tuple{1, 10.0, 12.0}, {2, 6.0, 5.0}, {4, 4.0, 4.4}})
      REQUIRE(store.value().record_run(cpplan::test::cpu_box(), run_of(u, measured, predicted)));
    REQUIRE(store.value().record_calibration(cpplan::test::cpu_box(), calibration({2.0, 1.0, 1.0}, 0.2)).value() == 1);
    // the second fit is the latest: version 2, and its figures are the ones shown
    REQUIRE(store.value().record_calibration(cpplan::test::cpu_box(), calibration({1.5, 0.25, 3.0}, 0.08)).value() == 2);
  }
  CalibrationPanel panel(QString::fromStdString(db));
  REQUIRE(panel.reload());
  CHECK(panel.machine_count() == 1);
  CHECK(panel.machine_box()->count() == 1);
  CHECK(panel.machine_box()->itemText(0).contains("Test CPU 9000"));
  CHECK(panel.status_text().contains("1 of 1 machines calibrated"));
  CHECK(panel.status_text().contains("3 runs compared"));
  const QString summary = panel.summary_text();
  INFO(summary.toStdString());
  CHECK(summary.startsWith("v2 fitted 2025-02-03T04:05:06Z on 12 runs, 4-fold"));
  CHECK(summary.contains("held-out MAPE 30.0% -> 8.0%"));
  CHECK(summary.contains("Spearman 0.70 -> 0.95"));

  QTableWidget* coefficients = panel.coefficients();
  REQUIRE(coefficients->rowCount() == 3);
  const std::vector<std::pair<QString, double>> expected = {{"gemm", 1.5}, {"attention", 0.25}, {"comm", 3.0}};
  for (int i = 0; i < 3; ++i) {
    CHECK(coefficients->item(i, 0)->text() == expected[i].first);
    CHECK(coefficients->item(i, 1)->text().toDouble() == Approx(expected[i].second));
  }
  CHECK(panel.has_plot());
  CHECK(panel.plot_text().isEmpty());
}

TEST_CASE("A store without calibrations says so, and a missing one is not created", "[gui][calibration][empty]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  const std::string missing = dir.file("sub/none.db");
  CalibrationPanel panel(QString::fromStdString(missing));
  REQUIRE(panel.reload());
  CHECK(panel.status_text().startsWith(QStringLiteral("no calibration in %1").arg(QString::fromStdString(missing))));
  CHECK(panel.machine_count() == 0);
  CHECK(!panel.machine_box()->isEnabled());
  CHECK(panel.coefficients()->rowCount() == 0);
  CHECK(!panel.has_plot());
  CHECK(panel.plot_text().contains("no run"));
  CHECK(!std::filesystem::exists(missing));
  CHECK(!std::filesystem::exists(dir.file("sub")));

  // an existing store with runs but no calibration: the message, and the runs' plot
  const std::string db = dir.file("runs.db");
  {
    auto store = Store::open(db);
    REQUIRE(store);
    REQUIRE(store.value().record_run(cpplan::test::cpu_box(), run_of(2, 8.0, 9.0)));
  }
  CalibrationPanel with_runs(QString::fromStdString(db));
  REQUIRE(with_runs.reload());
  CHECK(with_runs.status_text().startsWith(QStringLiteral("no calibration in %1").arg(QString::fromStdString(db))));
  CHECK(with_runs.has_plot());
}

TEST_CASE("A file that is not a cpplan database is one line in the Calibration tab", "[gui][calibration][errors]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  const std::string bad = dir.file("notes.db");
  {
    std::FILE* f = std::fopen(bad.c_str(), "w");
    REQUIRE(f);
    std::fputs("these are not the tables you are looking for\n", f);
    std::fclose(f);
  }
  CalibrationPanel panel(QString::fromStdString(bad));
  CHECK(!panel.reload());
  CHECK(!panel.status_text().isEmpty());
  CHECK(!panel.status_text().contains('\n'));
  CHECK(panel.machine_count() == 0);
}

TEST_CASE("The Calibration tab fits the published timings as calibrate --import does, and writes the fit",
          "[gui][calibration][import]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  const std::string out = fits_dir_file(dir, "gui-fit.toml");
  CalibrationPanel panel(QString::fromStdString(dir.file("none.db")));
  cpplan::gui::ImportFitPanel& fit = *panel.import_fit();
  fill_published_fit(fit, out);
  fit.fit_button()->click();
  REQUIRE(cpplan::test::wait_for(&fit, &cpplan::gui::ImportFitPanel::fitted, 120000));
  INFO(fit.status_text().toStdString());
  // The same fit as the shipped one, profiles/fits/published-flux.toml, which
  // scripts/fit-runtimes.sh wrote through the CLI: its provenance's rows, in-sample and nested
  // cross-validated errors.
  const auto shipped = cpplan::load_runtime_fit(cpplan::test::profiles_dir() + "/fits/published-flux.toml");
  REQUIRE(shipped.ok());
  const cpplan::FitProvenance& p = shipped->provenance;
  REQUIRE(p.rows == 26);
  CHECK(fit.status_text().startsWith(QStringLiteral("26 rows of ")));
  CHECK(fit.status_text().contains(QString::asprintf("fitted %.1f%%, nested 5-fold cross-validation %.1f%% (mean of 5 repeats)",
                                                      100 * p.mape, 100 * p.cv_mape)));
  CHECK(fit.status_text().endsWith(QString::fromStdString("wrote " + out)));
  CHECK(fit.rows()->rowCount() == 26);
  CHECK(fit.rows()->item(0, 0)->text() == QStringLiteral("diffusers-cp-guide"));
  auto written = cpplan::load_runtime_fit(out);
  INFO((written ? std::string() : written.error().message));
  REQUIRE(written.ok());
  CHECK(written->name == "gui-fit");
  CHECK(written->provenance.rows == 26);
}

TEST_CASE("The Calibration tab's ridge box fits as calibrate --import --shrinkage-by groups does",
          "[gui][calibration][import]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  const std::string out = fits_dir_file(dir, "by-groups.toml");
  CalibrationPanel panel(QString::fromStdString(dir.file("none.db")));
  cpplan::gui::ImportFitPanel& fit = *panel.import_fit();
  fill_published_fit(fit, out);
  CHECK_FALSE(fit.shrinkage_by_groups()->isChecked());  // k-fold over the rows unless asked
  fit.shrinkage_by_groups()->click();
  fit.fit_button()->click();
  REQUIRE(cpplan::test::wait_for(&fit, &cpplan::gui::ImportFitPanel::fitted, 120000));
  INFO(fit.status_text().toStdString());
  CHECK(fit.status_text().contains(QStringLiteral("pairs ordered; ridge chosen by leaving groups out")));
  auto written = cpplan::load_runtime_fit(out);
  INFO((written ? std::string() : written.error().message));
  REQUIRE(written.ok());
  CHECK(written->provenance.shrinkage_by_groups);
}

TEST_CASE("A bad mapping or no file in the Calibration tab's fit is one line, and nothing is written",
          "[gui][calibration][import][errors]") {
  cpplan::test::gui_app();
  cpplan::test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "p" / "fits");
  const std::string out = (dir.path() / "p" / "fits" / "bad.toml").string();
  CalibrationPanel panel(QString::fromStdString(dir.file("none.db")));
  cpplan::gui::ImportFitPanel& fit = *panel.import_fit();
  fit.set_profiles({cpplan::test::profiles_dir()}, "");
  fit.output()->setText(QString::fromStdString(out));
  fit.fit();
  REQUIRE(cpplan::test::wait_for(&fit, &cpplan::gui::ImportFitPanel::fitted, 60000));
  CHECK(fit.status_text() == QStringLiteral("--import = (none): name at least one timings file"));
  fit.files()->setText(QString::fromStdString(cpplan::test::profiles_dir() + "/reference/published-flux.json"));
  fit.runtime_for()->setText(QStringLiteral("cache-dit"));
  fit.fit();
  REQUIRE(cpplan::test::wait_for(&fit, &cpplan::gui::ImportFitPanel::fitted, 60000));
  INFO(fit.status_text().toStdString());
  CHECK(fit.status_text().startsWith(QStringLiteral("--runtime-for = cache-dit")));
  CHECK_FALSE(fit.status_text().contains(QLatin1Char('\n')));
  fit.runtime_for()->setText(QStringLiteral("cache-dit=diffusers"));
  fit.warmup_for()->setText(QStringLiteral("xdit-flux=two"));  // as calibrate --warmup-for refuses it
  fit.fit();
  REQUIRE(cpplan::test::wait_for(&fit, &cpplan::gui::ImportFitPanel::fitted, 60000));
  CHECK(fit.status_text() == QStringLiteral("--warmup-for = xdit-flux=two: W must be an integer from 0 to 100000"));
  CHECK(fit.rows()->rowCount() == 0);
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("The fit's lists split on semicolons, since a box name may hold commas", "[gui][calibration][import]") {
  using cpplan::gui::split_list;
  CHECK(split_list("a.json; b.csv ;; ") == std::vector<std::string>{"a.json", "b.csv"});
  CHECK(split_list("4 x A100 on PCIe, no NVLink=4x-a100-pcie") ==
        std::vector<std::string>{"4 x A100 on PCIe, no NVLink=4x-a100-pcie"});
  CHECK(split_list("").empty());
}
