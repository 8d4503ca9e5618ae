#pragma once
// The Run tab: launches `cpplan run` (QProcess, an argv list, no shell) on the selected plan with
// local ranks, shows its live log and a busy bar with the elapsed time, cancels it (SIGTERM: the
// launcher forwards it to the ranks and records the run cancelled), and says when it is over so
// that History reloads.

#include <QProcess>
#include <QStringList>
#include <QWidget>

#include "core/plan.h"

class QElapsedTimer;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTimer;

namespace cpplan::gui {

// The cpplan binary next to cpplan-gui: <dir>/../cli/cpplan in the build tree, <dir>/cpplan when
// installed; "" when neither is executable.
QString find_cpplan(const QString& application_dir);

// The query's own flags: its model (or `model_config`, --model-config), size, steps, GPUs,
// hardware, attention backend and frames of a video model.
QStringList query_arguments(const Query& q, const QString& model_config = {});

// `cpplan run` arguments for the plan `c` of the query `q`, recording into `db` ("" = default);
// with the query's forced --text-encoder / --vae, without its runtime (run predicts as cpplan),
// with the row's format `precision` (--weights int8 for int8-weight-only) and step `cache` where
// it is a fixed schedule (session::run_options).
// A query planned from a diffusers config passes `model_config` (--model-config) for --model.
QStringList run_arguments(const Query& q, const ParallelConfig& c, const QString& db,
                          const QString& model_config = {}, const Precision& precision = {},
                          const CacheSpec& cache = {});

class RunPanel : public QWidget {
  Q_OBJECT

 public:
  explicit RunPanel(QWidget* parent = nullptr);
  ~RunPanel() override;

  // What Start launches; an empty list disables Start with `why`.
  void set_command(const QString& plan_label, const QStringList& arguments, const QString& why = {});
  void set_program(const QString& program) { program_ = program; }
  const QStringList& arguments() const { return arguments_; }
  bool running() const;
  QString log_text() const;
  QString status_text() const;
  QString plan_text() const;  // the plan and its command, or why Start is disabled

 public slots:
  void start();
  void cancel();

 signals:
  void run_finished(int exit_code);

 private:
  void append(const QString& text);
  void finished(int exit_code, QProcess::ExitStatus status);

  QString program_;
  QStringList arguments_;
  QProcess* process_ = nullptr;
  QLabel* plan_;
  QLabel* status_;
  QProgressBar* progress_;
  QPushButton* start_;
  QPushButton* cancel_;
  QPlainTextEdit* log_;
  QTimer* tick_;
  QElapsedTimer* clock_;
};

}  // namespace cpplan::gui
