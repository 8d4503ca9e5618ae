#pragma once
// The Calibration tab's "Fit to timings" box: `cpplan calibrate --import` from the GUI. Timing
// files (JSON, CSV or the recorder's JSON lines), the names their rows need (runtime of a source,
// model of a source, topology of a box), an optional fit file to write. Fit runs
// session::fit_runtimes on Qt's thread pool and shows the errors (priors, fitted, nested
// cross-validation), the plan order, what the data cannot settle and every row. Bad input shows
// its one line and writes nothing; no file is written unless one is named.

#include <QFutureWatcher>
#include <QWidget>
#include <optional>
#include <string>
#include <vector>

#include "session/engine/calibration.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace cpplan::gui {

// What the fields hold: lists separated by ';' (a box name may hold commas).
struct FitInput {
  std::vector<std::string> files, runtime_for, model_for, topology_for, warmup_for;
  std::string output;                 // "" : write nothing
  bool shrinkage_by_groups = false;   // --shrinkage-by groups
  std::vector<std::string> profiles;  // --profiles of the GUI
  std::string exe;                    // locates the installed profiles
};

// A fit, or its one-line error.
struct FitOutcome {
  std::optional<planner::RuntimeCalibration> result;
  std::string source, output;
  std::string error;
};

// "a; b ;; c" -> {"a", "b", "c"}.
std::vector<std::string> split_list(const std::string& text);
// The fit of `in` (what `cpplan calibrate --import` does), off the GUI thread.
FitOutcome fit_timings(const FitInput& in);
// "26 rows of a.json: time MAPE priors 30.1%, fitted 2.6%, nested 5-fold cross-validation 8.0%
// (mean of 5 repeats); 21 of 22 pairs ordered" (+ "; ridge chosen by leaving groups out",
// "\nwrote F").
std::string fit_summary(const FitOutcome& o);

class ImportFitPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ImportFitPanel(QWidget* parent = nullptr);
  ~ImportFitPanel() override;

  void set_profiles(std::vector<std::string> dirs, std::string exe);
  QLineEdit* files() { return files_; }
  QLineEdit* runtime_for() { return runtime_for_; }
  QLineEdit* model_for() { return model_for_; }
  QLineEdit* topology_for() { return topology_for_; }
  QLineEdit* warmup_for() { return warmup_for_; }
  QLineEdit* output() { return output_; }
  QCheckBox* shrinkage_by_groups() { return by_groups_; }
  QPushButton* fit_button() { return fit_; }
  QTableWidget* rows() { return rows_; }
  QString status_text() const;
  bool fitting() const { return watcher_.isRunning(); }
  void fit();  // what the Fit button does

 signals:
  void fitted();  // a fit (or its error) is shown

 private:
  void show(const FitOutcome& o);
  void browse();

  QLineEdit* files_;
  QLineEdit* runtime_for_;
  QLineEdit* model_for_;
  QLineEdit* topology_for_;
  QLineEdit* warmup_for_;
  QLineEdit* output_;
  QCheckBox* by_groups_;
  QPushButton* fit_;
  QLabel* status_;
  QTableWidget* rows_;
  std::vector<std::string> profiles_;
  std::string exe_;
  QFutureWatcher<FitOutcome> watcher_;
};

}  // namespace cpplan::gui
