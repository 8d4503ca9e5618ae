#include "gui/tune_panel.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <csignal>

#include "gui/run_panel.h"
#include "session/query/query_fields.h"

namespace cpplan::gui {

namespace {

QString ms_text(const std::optional<double>& ms) { return ms ? QString::number(*ms, 'f', 2) : QStringLiteral("-"); }

}  // namespace

std::optional<TuneLine> parse_tune_line(const QString& line) {
  static const QRegularExpression launching(QStringLiteral(R"(^tune: \[\d+/\d+\] launching (.+) \(predicted ([\d.]+) ms/step\)$)"));
  static const QRegularExpression measured(QStringLiteral(R"(^tune: (.+): (ok|oom|failed|timeout)(?:, ([\d.]+) ms/step|: (.*)) \([\d.]+ s\)$)"));
  TuneLine t;
  if (const auto m = launching.match(line); m.hasMatch()) {
    t.launching = true;
    t.label = m.captured(1);
    t.predicted_ms = m.captured(2).toDouble();
    return t;
  }
  const auto m = measured.match(line);
  if (!m.hasMatch()) return std::nullopt;
  t.label = m.captured(1);
  t.status = m.captured(2);
  if (!m.captured(3).isEmpty()) t.measured_ms = m.captured(3).toDouble();
  t.error = m.captured(4);
  return t;
}

QStringList tune_arguments(const Query& q, const TuneOptions& o, const QString& db, const QString& model_config) {
  QStringList a = QStringList{QStringLiteral("tune"), o.script} + query_arguments(q, model_config);
  // --top from the field table (its key "top"); the rest are the tune command's own flags.
  a << QString::fromStdString(session::flag_of("top")) << QString::number(o.top) << QStringLiteral("--launcher") << o.launcher
    << QStringLiteral("--timeout-s") << QString::number(o.timeout_s) << QStringLiteral("--device") << o.device;
  if (!db.isEmpty()) a << QString::fromStdString(session::flag_of("db")) << db;
  if (!o.script_args.isEmpty()) a << QStringLiteral("--") << o.script_args;
  return a;
}

TunePanel::TunePanel(QWidget* parent)
    : QWidget(parent),
      script_(new QLineEdit),
      args_(new QLineEdit),
      top_(new QSpinBox),
      launcher_(new QComboBox),
      timeout_(new QSpinBox),
      device_(new QComboBox),
      tune_(new QPushButton(QStringLiteral("Tune"))),
      cancel_(new QPushButton(QStringLiteral("Cancel"))),
      status_(new QLabel(QStringLiteral("idle"))),
      table_(new QTableWidget(0, 4)),
      log_(new QPlainTextEdit) {
  script_->setPlaceholderText(QStringLiteral("run.py: applies cpplan.current_plan(), records with cpplan.record"));
  args_->setPlaceholderText(QStringLiteral("the script's arguments (after --), \"double quotes\" around one with spaces"));
  top_->setRange(1, 32);
  top_->setValue(4);
  launcher_->addItems({QStringLiteral("torchrun"), QStringLiteral("srun"), QStringLiteral("mpirun")});
  timeout_->setRange(1, 86400);
  timeout_->setValue(1800);
  timeout_->setSuffix(QStringLiteral(" s"));
  device_->addItems({QStringLiteral("cuda"), QStringLiteral("cpu")});
  auto* browse = new QPushButton(QStringLiteral("Browse..."));
  auto* script_row = new QHBoxLayout;
  script_row->addWidget(script_, 1);
  script_row->addWidget(browse);
  auto* knobs = new QHBoxLayout;
  for (auto [name, w] : {std::pair<const char*, QWidget*>{"candidates", top_}, {"launcher", launcher_},
                         {"timeout per launch", timeout_}, {"device", device_}}) {
    knobs->addWidget(new QLabel(QString::fromUtf8(name)));
    knobs->addWidget(w);
  }
  knobs->addStretch(1);
  auto* form = new QFormLayout;
  form->addRow(QStringLiteral("Script"), script_row);
  form->addRow(QStringLiteral("Arguments"), args_);
  form->addRow(QString(), knobs);
  auto* bar = new QHBoxLayout;
  bar->addWidget(tune_);
  bar->addWidget(cancel_);
  bar->addWidget(status_, 1);
  table_->setHorizontalHeaderLabels({"plan", "predicted ms/step", "measured ms/step", "status"});
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  cancel_->setEnabled(false);
  tune_->setEnabled(false);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(form);
  layout->addLayout(bar);
  layout->addWidget(table_, 1);
  layout->addWidget(log_, 1);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, QStringLiteral("Your pipeline script"), QString(),
                                                   QStringLiteral("Python (*.py)"));
    if (!f.isEmpty()) script_->setText(f);
  });
  connect(tune_, &QPushButton::clicked, this, &TunePanel::start);
  connect(cancel_, &QPushButton::clicked, this, &TunePanel::cancel);
}

TunePanel::~TunePanel() {
  if (running()) {
    process_->kill();
    process_->waitForFinished(3000);
  }
}

void TunePanel::set_query(std::optional<Query> q, const QString& db, const QString& model_config, const QString& why) {
  query_ = std::move(q);
  db_ = db;
  model_config_ = model_config;
  if (!running()) {
    tune_->setEnabled(query_.has_value());
    status_->setText(query_ ? QStringLiteral("idle") : why);
  }
}

TuneOptions TunePanel::options() const {
  TuneOptions o;
  o.script = script_->text().trimmed();
  o.script_args = QProcess::splitCommand(args_->text());
  o.top = top_->value();
  o.launcher = launcher_->currentText();
  o.timeout_s = timeout_->value();
  o.device = device_->currentText();
  return o;
}

QStringList TunePanel::arguments() const {
  return query_ ? tune_arguments(*query_, options(), db_, model_config_) : QStringList{};
}

bool TunePanel::running() const { return process_ && process_->state() != QProcess::NotRunning; }
QString TunePanel::status_text() const { return status_->text(); }
QString TunePanel::log_text() const { return log_->toPlainText(); }

void TunePanel::start() {
  if (running() || !query_) return;
  if (program_.isEmpty()) {
    status_->setText(QStringLiteral("no cpplan binary beside cpplan-gui: nothing to tune with"));
    return;
  }
  delete process_;
  process_ = new QProcess(this);
  process_->setProcessEnvironment(env_);
  connect(process_, &QProcess::readyReadStandardError, this, &TunePanel::read_errors);
  connect(process_, &QProcess::readyReadStandardOutput, this,
          [this] { log_->appendPlainText(QString::fromLocal8Bit(process_->readAllStandardOutput()).trimmed()); });
  connect(process_, &QProcess::finished, this, &TunePanel::finished);
  const QStringList args = arguments();
  table_->setRowCount(0);
  log_->clear();
  pending_.clear();
  log_->appendPlainText(QStringLiteral("$ %1 %2").arg(program_, args.join(QLatin1Char(' '))));
  tune_->setEnabled(false);
  cancel_->setEnabled(true);
  status_->setText(QStringLiteral("tuning"));
  process_->start(program_, args);  // argv list: no shell
}

void TunePanel::cancel() {
  if (!running()) return;
  status_->setText(QStringLiteral("cancelling: the launch running stops, what finished stays recorded"));
  ::kill(static_cast<pid_t>(process_->processId()), SIGINT);  // as Ctrl-C: the tune stops cleanly
}

void TunePanel::read_errors() {
  pending_ += QString::fromLocal8Bit(process_->readAllStandardError());
  qsizetype end;
  while ((end = pending_.indexOf(QLatin1Char('\n'))) >= 0) {
    const QString line = pending_.left(end);
    pending_.remove(0, end + 1);
    log_->appendPlainText(line);
    if (const auto t = parse_tune_line(line)) show_line(*t);
  }
}

void TunePanel::show_line(const TuneLine& t) {
  int row = -1;
  for (int r = 0; r < table_->rowCount(); ++r)
    if (table_->item(r, 0)->text() == t.label) row = r;
  if (row < 0) {
    row = table_->rowCount();
    table_->insertRow(row);
    for (int c = 0; c < 4; ++c) table_->setItem(row, c, new QTableWidgetItem(QStringLiteral("-")));
    table_->item(row, 0)->setText(t.label);
  }
  if (t.launching) {
    table_->item(row, 1)->setText(ms_text(t.predicted_ms));
    table_->item(row, 3)->setText(QStringLiteral("running"));
    status_->setText(QStringLiteral("tuning: %1").arg(t.label));
    return;
  }
  table_->item(row, 2)->setText(ms_text(t.measured_ms));
  table_->item(row, 3)->setText(t.error.isEmpty() ? t.status : QStringLiteral("%1: %2").arg(t.status, t.error));
}

void TunePanel::finished(int exit_code, QProcess::ExitStatus status) {
  if (!pending_.isEmpty()) log_->appendPlainText(pending_), pending_.clear();
  cancel_->setEnabled(false);
  tune_->setEnabled(query_.has_value());
  const QString how = status == QProcess::CrashExit ? QStringLiteral("ended by a signal")
                      : exit_code == 130             ? QStringLiteral("cancelled; rerun to go on")
                                                     : QStringLiteral("exit %1").arg(exit_code);
  status_->setText(QStringLiteral("finished (%1)").arg(how));
  emit tune_finished(status == QProcess::CrashExit ? -1 : exit_code);
}

}  // namespace cpplan::gui
