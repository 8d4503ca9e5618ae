#pragma once
// The Calibration tab: the store's (--db) latest calibration of each machine, as `cpplan
// calibrate` fitted it: when, on how many runs, its held-out error and rank correlation before and
// after, and its coefficients (one per feature of costmodel::calibration_features()); beside them
// the report library's predicted-vs-measured plot of the store's runs (report/report.h). A missing
// or empty store says "no calibration in <db>"; nothing is created. Below, fitting the runtime and
// hardware defaults to end-to-end timings (gui/import_fit_panel.h).

#include <QString>
#include <QWidget>
#include <optional>

#include "report/report.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QTableWidget;

namespace cpplan::gui {

class ImportFitPanel;

// The figures of the store at `path`: an empty Figures (db_path set) when the file does not
// exist, an error when it cannot be read.
Result<report::Figures> load_calibrations(const std::string& path);

// "v3 fitted 2026-01-02T03:04:05Z on 40 runs, 5-fold: held-out MAPE 31.2% -> 8.4%, Spearman
// 0.71 -> 0.93" (fractions shown as percent).
std::string calibration_summary(const costmodel::Calibration& c);

class CalibrationPanel : public QWidget {
  Q_OBJECT

 public:
  explicit CalibrationPanel(const QString& db_path, QWidget* parent = nullptr);

  // Reads the store again; false (and the reason in status_text()) when it cannot be read.
  bool reload();
  QString db_path() const;
  QString status_text() const;
  int machine_count() const;             // machines with a calibration
  QComboBox* machine_box() { return machine_; }
  QTableWidget* coefficients() { return coefficients_; }
  QString summary_text() const;          // the selected machine's calibration
  QString plot_text() const;             // why there is no plot, or "" when shown
  bool has_plot() const;
  ImportFitPanel* import_fit() { return import_fit_; }

 signals:
  void reloaded();

 private:
  void show_machine(int index);  // index into calibrated_
  void show_plot();

  QLineEdit* path_;
  QLabel* status_;
  QComboBox* machine_;
  QLabel* summary_;
  QTableWidget* coefficients_;
  QLabel* plot_;
  ImportFitPanel* import_fit_;
  std::optional<report::Figures> figures_;
  std::vector<const report::Machine*> calibrated_;  // into figures_->machines
};

}  // namespace cpplan::gui
