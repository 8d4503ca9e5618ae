#pragma once
// The Run tab's "Tune on your pipeline" box: `cpplan tune` from the GUI. The user's script, its
// arguments, the candidates to measure, the launcher, the per-launch timeout and the device; Tune
// launches `cpplan tune` (QProcess, an argv list, no shell) for the Plans tab's query, fills a live
// table of each candidate's predicted and measured step time from the tune's one line per launch,
// shows its report when it ends, and Cancel stops it as Ctrl-C does (SIGINT: the launch running is
// stopped, what finished stays recorded, a rerun goes on).

#include <QProcess>
#include <QStringList>
#include <QWidget>
#include <optional>

#include "core/plan.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace cpplan::gui {

// What the tune's launch lines say: "tune: [1/4] launching ulysses 2 (predicted 15.23 ms/step)",
// then "tune: ulysses 2: ok, 100.34 ms/step (3.1 s)" or "tune: tp 2: timeout: timed out ... (40.0 s)".
struct TuneLine {
  bool launching = false;
  QString label;
  std::optional<double> predicted_ms, measured_ms;
  QString status;  // ok, oom, failed, timeout (outcome lines)
  QString error;
};
std::optional<TuneLine> parse_tune_line(const QString& line);

struct TuneOptions {
  QString script;
  QStringList script_args;
  int top = 4;
  QString launcher = QStringLiteral("torchrun");
  int timeout_s = 1800;
  QString device = QStringLiteral("cuda");
};

// `cpplan tune` arguments for the query `q` (its model or `model_config`, size, steps, GPUs,
// hardware, attention backend), recording into `db` ("" = default).
QStringList tune_arguments(const Query& q, const TuneOptions& o, const QString& db, const QString& model_config = {});

class TunePanel : public QWidget {
  Q_OBJECT

 public:
  explicit TunePanel(QWidget* parent = nullptr);
  ~TunePanel() override;

  void set_program(const QString& program) { program_ = program; }
  // The query Tune measures; no query disables Tune with `why`.
  void set_query(std::optional<Query> q, const QString& db, const QString& model_config, const QString& why = {});
  void set_environment(const QProcessEnvironment& env) { env_ = env; }
  QLineEdit* script() { return script_; }
  QLineEdit* script_args() { return args_; }
  QSpinBox* top() { return top_; }
  QComboBox* device() { return device_; }
  QSpinBox* timeout_s() { return timeout_; }
  QTableWidget* table() { return table_; }
  QPushButton* tune_button() { return tune_; }
  TuneOptions options() const;
  QStringList arguments() const;  // what Tune launches ("" when it cannot)
  bool running() const;
  QString status_text() const;
  QString log_text() const;

 public slots:
  void start();
  void cancel();

 signals:
  void tune_finished(int exit_code);

 private:
  void read_errors();
  void show_line(const TuneLine& line);
  void finished(int exit_code, QProcess::ExitStatus status);

  QString program_, db_, model_config_;
  std::optional<Query> query_;
  QProcessEnvironment env_ = QProcessEnvironment::systemEnvironment();
  QProcess* process_ = nullptr;
  QString pending_;  // stderr not yet ended by a newline
  QLineEdit* script_;
  QLineEdit* args_;
  QSpinBox* top_;
  QComboBox* launcher_;
  QSpinBox* timeout_;
  QComboBox* device_;
  QPushButton* tune_;
  QPushButton* cancel_;
  QLabel* status_;
  QTableWidget* table_;
  QPlainTextEdit* log_;
};

}  // namespace cpplan::gui
