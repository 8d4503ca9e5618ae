#include "gui/import_fit_panel.h"

#include <QCheckBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "session/engine/calibration.h"
#include "session/query/query.h"

namespace cpplan::gui {

namespace {

QString qstr(const std::string& s) { return QString::fromStdString(s); }

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

QLineEdit* field(const char* placeholder, const char* tip) {
  auto* e = new QLineEdit;
  e->setPlaceholderText(QString::fromUtf8(placeholder));
  e->setToolTip(QString::fromUtf8(tip));
  return e;
}

QString percent(double measured, double predicted) {
  return QString::asprintf("%+.1f%%", 100.0 * (predicted / measured - 1));
}

}  // namespace

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(';', start), text.size());
    if (std::string item = trimmed(text.substr(start, end - start)); !item.empty()) out.push_back(std::move(item));
    start = end + 1;
  }
  return out;
}

FitOutcome fit_timings(const FitInput& in) {
  FitOutcome out;
  out.source = fmt::format("{}", fmt::join(in.files, ", "));
  out.output = in.output;
  try {
    if (in.files.empty()) throw session::InvalidInput("--import = (none): name at least one timings file");
    session::RuntimeFitRequest request;
    request.source = out.source;
    request.output = in.output;
    request.shrinkage_by_groups = in.shrinkage_by_groups;
    request.profiles = in.profiles;
    request.exe = in.exe;
    session::complete_fit_request(request);  // a bad output before any work
    const session::TimingMappings mappings{"", in.runtime_for, in.model_for, in.topology_for, in.warmup_for};
    out.result = session::fit_runtimes(session::import_timings(in.files, mappings), request);
  } catch (const session::InvalidInput& e) {
    out.error = e.message;
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

std::string fit_summary(const FitOutcome& o) {
  if (!o.result) return o.error;
  const planner::RuntimeCalibration& r = *o.result;
  std::string s = fmt::format("{} rows of {}: time MAPE priors {:.1f}%, fitted {:.1f}%, nested {}-fold cross-validation "
                              "{:.1f}% (mean of {} repeats); {} of {} pairs ordered",
                              r.rows.size(), o.source, 100 * r.prior_mape, 100 * r.fitted_mape, r.fit.provenance.folds,
                              100 * r.cv_mape, r.fit.provenance.repeats, r.pairs_ordered, r.pairs);
  if (r.fit.provenance.shrinkage_by_groups) s += "; ridge chosen by leaving groups out";
  for (const std::string& d : r.disagreements) s += "\ncannot settle: " + d;
  if (!o.output.empty()) s += "\nwrote " + o.output;
  return s;
}

ImportFitPanel::ImportFitPanel(QWidget* parent)
    : QWidget(parent),
      files_(field("published.json; mine.csv", "timing files: JSON, CSV or the recorder's JSON lines "
                                               "(docs/calibration.md); ';' between files")),
      runtime_for_(field("cache-dit=diffusers", "SOURCE=RUNTIME: the runtime of a source's rows (--runtime-for); ';' "
                                                "between pairs")),
      model_for_(field("my-source=pixart-alpha", "SOURCE=MODEL: the model profile of a source's rows (--model-for)")),
      topology_for_(field("8 x L20 on PCIe=8x-l20-pcie", "BOX=TOPOLOGY: the topology of the rows whose box is BOX "
                                                         "(--topology-for)")),
      warmup_for_(field("my-source=2", "SOURCE=W: the PipeFusion warm-up steps of a source's rows that state none "
                                       "(--warmup-for; default xDiT's, 1)")),
      output_(field("mine/fits/my-fit.toml", "write the fit here (-o): a .toml in a fits/ folder of a --profiles "
                                             "directory; empty: write nothing")),
      by_groups_(new QCheckBox(QStringLiteral("choose the pull toward the priors by leaving each GPU kind, source and "
                                              "checkpoint out (slower)"))),
      fit_(new QPushButton(QStringLiteral("Fit"))),
      status_(new QLabel),
      rows_(new QTableWidget(0, 8)) {
  auto* browse = new QPushButton(QStringLiteral("Browse..."));
  auto* file_row = new QHBoxLayout;
  file_row->addWidget(files_, 1);
  file_row->addWidget(browse);
  auto* form = new QFormLayout;
  form->addRow(QStringLiteral("Timings"), file_row);
  form->addRow(QStringLiteral("Runtime for"), runtime_for_);
  form->addRow(QStringLiteral("Model for"), model_for_);
  form->addRow(QStringLiteral("Topology for"), topology_for_);
  form->addRow(QStringLiteral("Warm-up for"), warmup_for_);
  form->addRow(QStringLiteral("Write fit to"), output_);
  by_groups_->setToolTip(QStringLiteral("--shrinkage-by groups: for predicting a GPU kind, source or checkpoint the "
                                        "timings do not hold; unchecked, k-fold over the rows (docs/calibration.md)"));
  form->addRow(QStringLiteral("Ridge"), by_groups_);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  rows_->setHorizontalHeaderLabels({"source", "hardware", "GPUs", "plan", "size", "measured", "fitted", "held out"});
  rows_->verticalHeader()->hide();
  rows_->horizontalHeader()->setStretchLastSection(true);
  rows_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  auto* bar = new QHBoxLayout;
  bar->addWidget(fit_);
  bar->addWidget(status_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(form);
  layout->addLayout(bar);
  layout->addWidget(rows_, 1);
  connect(browse, &QPushButton::clicked, this, [this] { this->browse(); });
  connect(fit_, &QPushButton::clicked, this, [this] { fit(); });
  connect(&watcher_, &QFutureWatcher<FitOutcome>::finished, this, [this] {
    fit_->setEnabled(true);
    show(watcher_.result());
    emit fitted();
  });
}

ImportFitPanel::~ImportFitPanel() { watcher_.waitForFinished(); }

void ImportFitPanel::set_profiles(std::vector<std::string> dirs, std::string exe) {
  profiles_ = std::move(dirs);
  exe_ = std::move(exe);
}

QString ImportFitPanel::status_text() const { return status_->text(); }

void ImportFitPanel::browse() {
  const QStringList picked = QFileDialog::getOpenFileNames(this, QStringLiteral("Timings to fit"), QString(),
                                                           QStringLiteral("Timings (*.json *.csv *.jsonl)"));
  if (!picked.isEmpty()) files_->setText(picked.join(QStringLiteral("; ")));
}

void ImportFitPanel::fit() {
  if (fitting()) return;
  FitInput in;
  in.files = split_list(files_->text().toStdString());
  in.runtime_for = split_list(runtime_for_->text().toStdString());
  in.model_for = split_list(model_for_->text().toStdString());
  in.topology_for = split_list(topology_for_->text().toStdString());
  in.warmup_for = split_list(warmup_for_->text().toStdString());
  in.output = trimmed(output_->text().toStdString());
  in.shrinkage_by_groups = by_groups_->isChecked();
  in.profiles = profiles_;
  in.exe = exe_;
  fit_->setEnabled(false);
  status_->setText(QStringLiteral("fitting..."));
  watcher_.setFuture(QtConcurrent::run(fit_timings, in));
}

void ImportFitPanel::show(const FitOutcome& o) {
  status_->setText(qstr(fit_summary(o)));
  rows_->setRowCount(0);
  if (!o.result) return;
  const auto& rows = o.result->rows;
  rows_->setRowCount(static_cast<int>(rows.size()));
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    const planner::CalibratedRow& c = rows[static_cast<std::size_t>(i)];
    const double scale = c.per_image ? 1e-3 : 1;
    const QStringList cells = {qstr(c.row.source), qstr(c.hardware), QString::number(c.row.gpus),
                               qstr(plan_label(c.row.config)), QStringLiteral("%1x%2").arg(c.row.width).arg(c.row.height),
                               QString::asprintf("%.3g %s", c.measured_ms * scale, c.per_image ? "s" : "ms"),
                               percent(c.measured_ms, c.fitted_ms), percent(c.measured_ms, c.held_out_ms)};
    for (int k = 0; k < cells.size(); ++k) rows_->setItem(i, k, new QTableWidgetItem(cells[k]));
  }
}

}  // namespace cpplan::gui
