#include "gui/calibration_panel.h"

#include <QComboBox>
#include <QFontDatabase>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPixmap>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QVBoxLayout>
#include <filesystem>
#include <fmt/format.h>

#include "gui/import_fit_panel.h"

namespace cpplan::gui {

namespace {
constexpr int kPlotWidthPx = 720, kPlotHeightPx = 480;
}  // namespace

Result<report::Figures> load_calibrations(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {  // Store::open would create it: only read here
    report::Figures empty;
    empty.db_path = path;
    return empty;
  }
  auto store = data::Store::open(path);
  if (!store) return store.error();
  return report::gather(store.value());
}

std::string calibration_summary(const costmodel::Calibration& c) {
  return fmt::format("v{} fitted {} on {} runs, {}-fold: held-out MAPE {:.1f}% -> {:.1f}%, Spearman {:.2f} -> {:.2f}",
                     c.version, c.fitted_at, c.runs, c.folds, 100 * c.mape_before, 100 * c.mape_after,
                     c.rank_corr_before, c.rank_corr_after);
}

CalibrationPanel::CalibrationPanel(const QString& db_path, QWidget* parent)
    : QWidget(parent),
      path_(new QLineEdit(db_path)),
      status_(new QLabel),
      machine_(new QComboBox),
      summary_(new QLabel),
      coefficients_(new QTableWidget(0, 2)),
      plot_(new QLabel),
      import_fit_(new ImportFitPanel) {
  auto* reload_button = new QPushButton(QStringLiteral("Reload"));
  path_->setToolTip(QStringLiteral("the cpplan database (--db): cpplan calibrate stores its fits there"));
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(QStringLiteral("Database")));
  bar->addWidget(path_, 1);
  bar->addWidget(reload_button);

  status_->setWordWrap(true);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  coefficients_->setHorizontalHeaderLabels({QStringLiteral("feature"), QStringLiteral("coefficient")});
  coefficients_->verticalHeader()->hide();
  coefficients_->horizontalHeader()->setStretchLastSection(true);
  coefficients_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  coefficients_->setToolTip(QStringLiteral("step_ms = sum(coefficient x feature); each term x 1 is the analytic model"));
  plot_->setAlignment(Qt::AlignCenter);
  plot_->setWordWrap(true);
  plot_->setMinimumSize(320, 240);

  auto* left = new QWidget;
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(0, 0, 0, 0);
  auto* machine_row = new QHBoxLayout;
  machine_row->addWidget(new QLabel(QStringLiteral("Machine")));
  machine_row->addWidget(machine_, 1);
  left_layout->addLayout(machine_row);
  left_layout->addWidget(summary_);
  left_layout->addWidget(coefficients_, 1);
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(left);
  split->addWidget(plot_);
  split->setSizes({420, 720});

  // Below: fitting the runtime and hardware defaults to end-to-end timings (calibrate --import).
  auto* import_box = new QGroupBox(QStringLiteral("Fit to end-to-end timings (cpplan calibrate --import)"));
  auto* import_layout = new QVBoxLayout(import_box);
  import_layout->addWidget(import_fit_);
  auto* vertical = new QSplitter(Qt::Vertical);
  vertical->addWidget(split);
  vertical->addWidget(import_box);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(status_);
  layout->addWidget(vertical, 1);

  connect(reload_button, &QPushButton::clicked, this, [this] { reload(); });
  connect(path_, &QLineEdit::returnPressed, this, [this] { reload(); });
  connect(machine_, &QComboBox::currentIndexChanged, this, [this](int i) { show_machine(i); });
}

QString CalibrationPanel::db_path() const { return path_->text(); }
QString CalibrationPanel::status_text() const { return status_->text(); }
int CalibrationPanel::machine_count() const { return static_cast<int>(calibrated_.size()); }
QString CalibrationPanel::summary_text() const { return summary_->text(); }
QString CalibrationPanel::plot_text() const { return plot_->pixmap().isNull() ? plot_->text() : QString(); }
bool CalibrationPanel::has_plot() const { return !plot_->pixmap().isNull(); }

bool CalibrationPanel::reload() {
  calibrated_.clear();
  figures_.reset();
  auto figures = load_calibrations(db_path().toStdString());
  bool ok = true;
  if (!figures) {
    status_->setText(QString::fromStdString(figures.error().message));
    ok = false;
  } else {
    figures_ = std::move(figures).value();
    for (const report::Machine& m : figures_->machines)
      if (m.calibration) calibrated_.push_back(&m);
    status_->setText(calibrated_.empty()
                         ? QStringLiteral("no calibration in %1 (cpplan probe, a sweep, then cpplan calibrate fit one)")
                               .arg(db_path())
                         : QStringLiteral("%1 of %2 machines calibrated in %3; %4 runs compared")
                               .arg(calibrated_.size())
                               .arg(figures_->machines.size())
                               .arg(db_path())
                               .arg(figures_->points.size()));
  }
  {
    const QSignalBlocker block(machine_);
    machine_->clear();
    for (const report::Machine* m : calibrated_) machine_->addItem(QString::fromStdString(m->label));
  }
  machine_->setEnabled(!calibrated_.empty());
  show_machine(calibrated_.empty() ? -1 : 0);
  show_plot();
  emit reloaded();
  return ok;
}

void CalibrationPanel::show_machine(int index) {
  coefficients_->setRowCount(0);
  if (index < 0 || index >= static_cast<int>(calibrated_.size())) {
    summary_->clear();
    return;
  }
  const costmodel::Calibration& c = *calibrated_[index]->calibration;
  summary_->setText(QString::fromStdString(calibration_summary(c)));
  coefficients_->setRowCount(static_cast<int>(c.coefficients.size()));
  for (std::size_t i = 0; i < c.coefficients.size(); ++i) {
    const std::string name = i < c.features.size() ? c.features[i] : fmt::format("term {}", i);
    coefficients_->setItem(static_cast<int>(i), 0, new QTableWidgetItem(QString::fromStdString(name)));
    auto* value = new QTableWidgetItem(QString::number(c.coefficients[i], 'g', 4));
    value->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    coefficients_->setItem(static_cast<int>(i), 1, value);
  }
  coefficients_->resizeColumnToContents(0);
}

// The report library renders into files: a temporary directory, read back as a pixmap.
void CalibrationPanel::show_plot() {
  plot_->setPixmap(QPixmap());
  if (!figures_) {
    plot_->setText(QStringLiteral("no plot: the store cannot be read"));
    return;
  }
  if (figures_->points.empty()) {
    plot_->setText(QStringLiteral("no predicted-vs-measured plot: no run in %1 has both a measured and a predicted "
                                  "step time")
                       .arg(db_path()));
    return;
  }
  QTemporaryDir dir;
  auto written = dir.isValid() ? report::write_report(*figures_, dir.path().toStdString(),
                                                      {.width_px = kPlotWidthPx, .height_px = kPlotHeightPx})
                               : Result<report::Written>(Error{"cannot create a temporary directory"});
  if (!written) {
    plot_->setText(QStringLiteral("no plot: %1").arg(QString::fromStdString(written.error().message)));
    return;
  }
  for (const report::Plot& p : written->plots) {
    if (p.file != "scatter.png") continue;
    if (!p.skipped.empty()) {
      plot_->setText(QStringLiteral("no plot: %1").arg(QString::fromStdString(p.skipped)));
      return;
    }
    QPixmap image(dir.filePath(QString::fromStdString(p.file)));
    if (!image.isNull()) {
      plot_->setPixmap(image);
      return;
    }
  }
  plot_->setText(QStringLiteral("no plot: the report library wrote no scatter.png"));
}

}  // namespace cpplan::gui
