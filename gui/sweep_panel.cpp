#include "gui/sweep_panel.h"
#include "session/query/query_fields.h"

#include <QCheckBox>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFontDatabase>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QTimer>
#include <QVBoxLayout>

namespace cpplan::gui {

namespace {
constexpr int kKillAfterMs = 5000;      // after Cancel, SIGKILL if the sweep has not ended
constexpr int kStderrKeepChars = 4096;  // the tail kept to parse the progress from (lines are ~100)

// cli/sweep_command.cpp: "\rsweep [" + '#' x filled + '.' x rest + "] i/N ETA   12s  model size label".
// The count must be followed by a space: a line cut after "1/1" of "1/12" is not yet a report.
const QRegularExpression& progress_pattern() {
  static const QRegularExpression re(QStringLiteral("sweep \\[[#.]*\\] (\\d+)/(\\d+)\\s"));
  return re;
}
}  // namespace

std::optional<SweepProgress> last_sweep_progress(const QString& text) {
  std::optional<SweepProgress> last;
  auto it = progress_pattern().globalMatch(text);
  while (it.hasNext()) {
    const auto m = it.next();
    bool ok_i = false, ok_n = false;
    const int i = m.captured(1).toInt(&ok_i), n = m.captured(2).toInt(&ok_n);
    if (ok_i && ok_n && n >= 1 && i >= 0 && i <= n) last = SweepProgress{i, n};
  }
  return last;
}

QString sweep_summary_line(const QString& stdout_text) {
  static const QRegularExpression re(QStringLiteral("^sweep .*: \\d+ runs, .*$"), QRegularExpression::MultilineOption);
  const auto m = re.match(stdout_text);
  return m.hasMatch() ? m.captured(0).trimmed() : QString();
}

QStringList sweep_arguments(const QString& file, const QString& db, bool resume) {
  QStringList a{QStringLiteral("sweep"), file};
  if (!db.isEmpty()) a << QString::fromStdString(session::flag_of("db")) << db;
  if (resume) a << QStringLiteral("--resume");
  return a;
}

SweepPanel::SweepPanel(const QString& db_path, QWidget* parent)
    : QWidget(parent),
      file_(new QLineEdit),
      db_(new QLineEdit(db_path)),
      resume_(new QCheckBox(QStringLiteral("resume (skip runs already recorded ok on this machine)"))),
      browse_(new QPushButton(QStringLiteral("Browse..."))),
      start_(new QPushButton(QStringLiteral("Start"))),
      cancel_(new QPushButton(QStringLiteral("Cancel"))),
      progress_(new QProgressBar),
      status_(new QLabel(QStringLiteral("idle"))),
      log_(new QPlainTextEdit),
      clock_(new QElapsedTimer) {
  file_->setPlaceholderText(QStringLiteral("sweep file (TOML; docs/calibration.md, \"Sweep files\")"));
  db_->setToolTip(QStringLiteral("the database the runs are recorded in (--db)"));
  cancel_->setEnabled(false);
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat(QStringLiteral("%v / %m runs"));
  progress_->setTextVisible(false);  // until the sweep says how many runs it has
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  log_->setReadOnly(true);
  log_->setLineWrapMode(QPlainTextEdit::NoWrap);
  log_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  log_->setMaximumBlockCount(20000);

  auto* form = new QGridLayout;
  form->addWidget(new QLabel(QStringLiteral("Sweep file")), 0, 0);
  form->addWidget(file_, 0, 1);
  form->addWidget(browse_, 0, 2);
  form->addWidget(new QLabel(QStringLiteral("Database")), 1, 0);
  form->addWidget(db_, 1, 1, 1, 2);
  form->addWidget(resume_, 2, 1, 1, 2);
  auto* bar = new QHBoxLayout;
  bar->addWidget(start_);
  bar->addWidget(cancel_);
  bar->addWidget(progress_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(bar);
  layout->addWidget(status_);
  layout->addWidget(log_, 1);

  connect(browse_, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, QStringLiteral("Sweep file"), file_->text(),
                                                   QStringLiteral("Sweep files (*.toml);;All files (*)"));
    if (!f.isEmpty()) set_file(f);
  });
  connect(file_, &QLineEdit::textChanged, this, [this] { start_->setEnabled(!running() && !file_->text().isEmpty()); });
  connect(start_, &QPushButton::clicked, this, &SweepPanel::start);
  connect(cancel_, &QPushButton::clicked, this, &SweepPanel::cancel);
  start_->setEnabled(false);
}

SweepPanel::~SweepPanel() {
  if (running()) {
    process_->terminate();
    if (!process_->waitForFinished(kKillAfterMs)) process_->kill();
    process_->waitForFinished(1000);
  }
  delete clock_;
}

void SweepPanel::set_file(const QString& file) { file_->setText(file); }

bool SweepPanel::running() const { return process_ && process_->state() != QProcess::NotRunning; }

QString SweepPanel::status_text() const { return status_->text(); }

QString SweepPanel::log_text() const { return log_->toPlainText(); }

void SweepPanel::append(const QString& text) {
  log_->moveCursor(QTextCursor::End);
  log_->insertPlainText(text);
  log_->moveCursor(QTextCursor::End);
}

void SweepPanel::start() {
  if (running() || file_->text().isEmpty()) return;
  if (program_.isEmpty()) {
    status_->setText(QStringLiteral("cpplan not found"));
    append(QStringLiteral("cpplan-gui: no cpplan binary beside cpplan-gui (../cli/cpplan or ./cpplan)\n"));
    emit sweep_finished(-1);
    return;
  }
  const QStringList arguments = sweep_arguments(file_->text(), db_->text(), resume_->isChecked());
  delete process_;
  process_ = new QProcess(this);
  stderr_.clear();
  pending_.clear();
  stdout_.clear();
  cancelled_ = false;
  connect(process_, &QProcess::readyReadStandardOutput, this, [this] {
    const QString text = QString::fromLocal8Bit(process_->readAllStandardOutput());
    stdout_ += text;
    append(text);
  });
  connect(process_, &QProcess::readyReadStandardError, this, &SweepPanel::read_stderr);
  connect(process_, &QProcess::finished, this, &SweepPanel::finished);
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;
    append(QStringLiteral("cpplan-gui: cannot start %1: %2\n").arg(program_, process_->errorString()));
    finished(-1, QProcess::CrashExit);
  });
  log_->clear();
  append(QStringLiteral("$ %1 %2\n").arg(program_, arguments.join(QLatin1Char(' '))));
  progress_->setRange(0, 0);  // busy until the first progress line gives the run count
  progress_->setTextVisible(false);
  start_->setEnabled(false);
  cancel_->setEnabled(true);
  clock_->start();
  status_->setText(QStringLiteral("starting"));
  process_->start(program_, arguments);  // argv list: no shell
}

void SweepPanel::read_stderr() {
  const QString chunk = QString::fromLocal8Bit(process_->readAllStandardError());
  stderr_ += chunk;  // the tail: the latest progress report and the last line
  if (stderr_.size() > kStderrKeepChars) stderr_ = stderr_.right(kStderrKeepChars);
  // Lines other than progress reports (an error, a note) go to the log once complete.
  static const QRegularExpression separator(QStringLiteral("[\r\n]"));
  pending_ += chunk;
  const qsizetype cut = pending_.lastIndexOf(separator);
  if (cut >= 0) {
    for (const QString& line : pending_.left(cut).split(separator, Qt::SkipEmptyParts))
      if (!progress_pattern().match(line).hasMatch()) append(line + QLatin1Char('\n'));
    pending_ = pending_.mid(cut + 1);
  }
  if (const auto p = last_sweep_progress(stderr_)) {
    progress_->setRange(0, p->total);
    progress_->setValue(p->started);
    progress_->setTextVisible(true);
    status_->setText(QStringLiteral("run %1 of %2, %3 s elapsed")
                         .arg(p->started + 1)
                         .arg(p->total)
                         .arg(clock_->elapsed() / 1000.0, 0, 'f', 0));
    emit progressed(p->started, p->total);
  }
}

void SweepPanel::cancel() {
  if (!running()) return;
  cancelled_ = true;
  status_->setText(QStringLiteral("cancelling"));
  process_->terminate();
  QProcess* p = process_;
  QTimer::singleShot(kKillAfterMs, p, [p] {
    if (p->state() != QProcess::NotRunning) p->kill();
  });
}

void SweepPanel::finished(int exit_code, QProcess::ExitStatus status) {
  if (process_ && process_->bytesAvailable() > 0) stdout_ += QString::fromLocal8Bit(process_->readAllStandardOutput());
  cancel_->setEnabled(false);
  start_->setEnabled(!file_->text().isEmpty());
  const QString summary = sweep_summary_line(stdout_);
  const QString seconds = QString::number(clock_->isValid() ? clock_->elapsed() / 1000.0 : 0.0, 'f', 1);
  const int total = progress_->maximum();
  if (progress_->maximum() == 0) progress_->setRange(0, 1);  // leave the busy state
  if (status == QProcess::NormalExit && !summary.isEmpty()) {
    progress_->setValue(progress_->maximum());
    status_->setText(summary + (exit_code == 0 ? QString() : QStringLiteral(" (exit %1)").arg(exit_code)));
  } else if (cancelled_ || status == QProcess::CrashExit) {
    status_->setText(QStringLiteral("cancelled after %1 s, %2 of %3 runs begun; Start with resume continues")
                         .arg(seconds)
                         .arg(progress_->value())
                         .arg(total));
  } else {
    // No summary: the sweep refused its input (one line on stderr) or failed before running.
    QString last = stderr_.trimmed();
    last = last.mid(last.lastIndexOf(QRegularExpression(QStringLiteral("[\r\n]"))) + 1);
    if (!pending_.trimmed().isEmpty()) append(pending_.trimmed() + QLatin1Char('\n'));
    status_->setText(QStringLiteral("failed (exit %1)%2").arg(exit_code).arg(last.isEmpty() ? QString() : ": " + last));
  }
  emit sweep_finished(status == QProcess::CrashExit ? -1 : exit_code);
}

}  // namespace cpplan::gui
