#include "gui/run_panel.h"
#include "session/query/query.h"
#include "session/query/query_fields.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QTimer>
#include <QVBoxLayout>

namespace cpplan::gui {

namespace {
constexpr int kKillAfterMs = 5000;  // after Cancel, SIGKILL if the launcher has not ended its ranks
QString qstr(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<int>(s.size())); }
}  // namespace

QString find_cpplan(const QString& application_dir) {
  for (const QString& candidate : {application_dir + QStringLiteral("/../cli/cpplan"),
                                   application_dir + QStringLiteral("/cpplan")}) {
    const QFileInfo info(candidate);
    if (info.isFile() && info.isExecutable()) return info.canonicalFilePath();
  }
  return {};
}

namespace {
QStringList qstrings(const std::vector<std::string>& words) {
  QStringList out;
  for (const std::string& w : words) out << qstr(w);
  return out;
}

// `o`'s flags (the field table's), with `model_config` for its model when it is given: a
// config's profile is named after its folder, so the command derives it again.
QStringList arguments_of(session::Options o, const QString& model_config) {
  if (!model_config.isEmpty()) {
    o.model = session::Options{}.model;
    o.model_config = model_config.toStdString();
  }
  return qstrings(session::run_options_argv(o));
}
}  // namespace

QStringList query_arguments(const Query& q, const QString& model_config) {
  return arguments_of(session::query_options(q), model_config);
}

QStringList run_arguments(const Query& q, const ParallelConfig& c, const QString& db, const QString& model_config,
                          const Precision& precision, const CacheSpec& cache) {
  // The query's and the plan's flags: without a model config, session::run_argv, as `cpplan --json`
  // ("run_args") and a sweep's runs write them. No --runtime: `cpplan run` predicts as it runs.
  QStringList a = QStringList{QStringLiteral("run")} + arguments_of(session::run_options(q, precision, cache), model_config) +
                  qstrings(session::plan_argv(c));
  if (!db.isEmpty()) a << QString::fromStdString(session::flag_of("db")) << db;
  return a;
}

RunPanel::RunPanel(QWidget* parent)
    : QWidget(parent),
      plan_(new QLabel),
      status_(new QLabel(QStringLiteral("idle"))),
      progress_(new QProgressBar),
      start_(new QPushButton(QStringLiteral("Run"))),
      cancel_(new QPushButton(QStringLiteral("Cancel"))),
      log_(new QPlainTextEdit),
      tick_(new QTimer(this)),
      clock_(new QElapsedTimer) {
  plan_->setWordWrap(true);
  plan_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setTextVisible(false);
  cancel_->setEnabled(false);
  log_->setReadOnly(true);
  log_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  log_->setMaximumBlockCount(20000);
  tick_->setInterval(500);

  auto* bar = new QHBoxLayout;
  bar->addWidget(start_);
  bar->addWidget(cancel_);
  bar->addWidget(progress_, 1);
  bar->addWidget(status_);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(plan_);
  layout->addLayout(bar);
  layout->addWidget(log_, 1);

  connect(start_, &QPushButton::clicked, this, &RunPanel::start);
  connect(cancel_, &QPushButton::clicked, this, &RunPanel::cancel);
  connect(tick_, &QTimer::timeout, this,
          [this] { status_->setText(QStringLiteral("running %1 s").arg(clock_->elapsed() / 1000.0, 0, 'f', 1)); });
  set_command({}, {}, QStringLiteral("select a valid plan in the Plans tab"));
}

RunPanel::~RunPanel() {
  if (process_ && process_->state() != QProcess::NotRunning) {
    process_->terminate();
    if (!process_->waitForFinished(kKillAfterMs)) process_->kill();
    process_->waitForFinished(1000);
  }
  delete clock_;
}

void RunPanel::set_command(const QString& plan_label, const QStringList& arguments, const QString& why) {
  arguments_ = arguments;
  if (arguments.isEmpty())
    plan_->setText(why);
  else
    plan_->setText(QStringLiteral("<b>%1</b> with local ranks:<br><tt>cpplan %2</tt>")
                       .arg(plan_label.toHtmlEscaped(), arguments.join(QLatin1Char(' ')).toHtmlEscaped()));
  start_->setEnabled(!arguments.isEmpty() && !running());
}

bool RunPanel::running() const { return process_ && process_->state() != QProcess::NotRunning; }

QString RunPanel::log_text() const { return log_->toPlainText(); }

QString RunPanel::status_text() const { return status_->text(); }

QString RunPanel::plan_text() const { return plan_->text(); }

void RunPanel::append(const QString& text) {
  log_->moveCursor(QTextCursor::End);
  log_->insertPlainText(text);
  log_->moveCursor(QTextCursor::End);
}

void RunPanel::start() {
  if (running() || arguments_.isEmpty()) return;
  const QString program = program_;
  if (program.isEmpty()) {
    status_->setText(QStringLiteral("cpplan not found"));
    append(QStringLiteral("cpplan-gui: no cpplan binary beside cpplan-gui (../cli/cpplan or ./cpplan)\n"));
    return;
  }
  delete process_;
  process_ = new QProcess(this);
  process_->setProcessChannelMode(QProcess::MergedChannels);
  connect(process_, &QProcess::readyReadStandardOutput, this,
          [this] { append(QString::fromLocal8Bit(process_->readAllStandardOutput())); });
  connect(process_, &QProcess::finished, this, &RunPanel::finished);
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;
    append(QStringLiteral("cpplan-gui: cannot start %1: %2\n").arg(program_, process_->errorString()));
    finished(-1, QProcess::CrashExit);
  });
  log_->clear();
  append(QStringLiteral("$ %1 %2\n").arg(program, arguments_.join(QLatin1Char(' '))));
  progress_->setRange(0, 0);  // busy: `cpplan run` reports at the end, not per step
  start_->setEnabled(false);
  cancel_->setEnabled(true);
  clock_->start();
  tick_->start();
  status_->setText(QStringLiteral("running"));
  process_->start(program, arguments_);  // argv list: no shell
}

void RunPanel::cancel() {
  if (!running()) return;
  status_->setText(QStringLiteral("cancelling"));
  process_->terminate();
  QProcess* p = process_;
  QTimer::singleShot(kKillAfterMs, p, [p] {
    if (p->state() != QProcess::NotRunning) p->kill();
  });
}

void RunPanel::finished(int exit_code, QProcess::ExitStatus status) {
  tick_->stop();
  progress_->setRange(0, 1);
  progress_->setValue(1);
  cancel_->setEnabled(false);
  start_->setEnabled(!arguments_.isEmpty());
  const QString how = status == QProcess::CrashExit ? QStringLiteral("ended by a signal")
                                                     : QStringLiteral("exit %1").arg(exit_code);
  status_->setText(QStringLiteral("finished (%1) after %2 s").arg(how).arg(clock_->elapsed() / 1000.0, 0, 'f', 1));
  emit run_finished(status == QProcess::CrashExit ? -1 : exit_code);
}

}  // namespace cpplan::gui
