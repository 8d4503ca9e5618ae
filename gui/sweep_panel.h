#pragma once
// The Sweep tab: runs `cpplan sweep FILE --db DB [--resume]` (QProcess, an argv list, no shell;
// the cpplan binary found as the Run tab finds it), advances a progress bar from the progress
// lines the sweep prints on stderr (cli/sweep_command.cpp: "\rsweep [###...] i/N ETA ..."),
// cancels it (SIGTERM, then SIGKILL after a timeout; each run is committed on its own, so
// --resume continues where it stopped) and shows the summary line it prints at the end.

#include <QProcess>
#include <QString>
#include <QWidget>
#include <optional>

class QCheckBox;
class QElapsedTimer;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;

namespace cpplan::gui {

// Where a sweep stands: `started` runs begun before the current one (skipped ones included) of
// `total`.
struct SweepProgress {
  int started = 0;
  int total = 0;
  bool operator==(const SweepProgress&) const = default;
};

// The last complete progress report in `text` (the sweep's stderr so far, "\r"-separated lines
// possibly cut anywhere): "sweep [<#.>] i/N " with 0 <= i <= N, N >= 1; nullopt when none.
std::optional<SweepProgress> last_sweep_progress(const QString& text);

// The summary line of the sweep's stdout ("sweep FILE: N runs, E ran (...), ..."), "" when absent.
QString sweep_summary_line(const QString& stdout_text);

// `cpplan sweep` arguments.
QStringList sweep_arguments(const QString& file, const QString& db, bool resume);

class SweepPanel : public QWidget {
  Q_OBJECT

 public:
  explicit SweepPanel(const QString& db_path, QWidget* parent = nullptr);
  ~SweepPanel() override;

  void set_program(const QString& program) { program_ = program; }
  void set_file(const QString& file);
  QLineEdit* file_edit() { return file_; }
  QLineEdit* db_edit() { return db_; }
  QCheckBox* resume_box() { return resume_; }
  QProgressBar* progress() { return progress_; }
  QPushButton* start_button() { return start_; }
  QPushButton* cancel_button() { return cancel_; }
  bool running() const;
  QString status_text() const;
  QString log_text() const;

 public slots:
  void start();
  void cancel();

 signals:
  void progressed(int started, int total);
  void sweep_finished(int exit_code);  // -1: ended by a signal (cancelled) or not started

 private:
  void read_stderr();
  void finished(int exit_code, QProcess::ExitStatus status);
  void append(const QString& text);

  QString program_;
  QProcess* process_ = nullptr;
  QLineEdit* file_;
  QLineEdit* db_;
  QCheckBox* resume_;
  QPushButton* browse_;
  QPushButton* start_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* status_;
  QPlainTextEdit* log_;
  QElapsedTimer* clock_;
  QString stderr_;   // the last few KB the sweep printed on stderr
  QString pending_;  // stderr after its last line break, not logged yet
  QString stdout_;
  bool cancelled_ = false;
};

}  // namespace cpplan::gui
