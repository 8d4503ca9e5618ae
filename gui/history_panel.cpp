#include "gui/history_panel.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegend>
#include <QLineEdit>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScatterSeries>
#include <QSet>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

namespace cpplan::gui {

HistoryPanel::HistoryPanel(const QString& db_path, QWidget* parent)
    : QWidget(parent),
      model_(new HistoryModel(this)),
      proxy_(new HistoryFilterProxy(this)),
      path_(new QLineEdit(db_path)),
      model_filter_(new QComboBox),
      hardware_filter_(new QComboBox),
      status_(new QLabel),
      table_(new QTableView),
      scatter_(new QChartView),
      details_(new QPlainTextEdit) {
  proxy_->setSourceModel(model_);
  auto* reload_button = new QPushButton(QStringLiteral("Reload"));
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(QStringLiteral("Database")));
  bar->addWidget(path_, 3);
  bar->addWidget(reload_button);
  bar->addWidget(new QLabel(QStringLiteral("Model")));
  bar->addWidget(model_filter_, 1);
  bar->addWidget(new QLabel(QStringLiteral("Hardware")));
  bar->addWidget(hardware_filter_, 1);

  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(HistoryModel::kId, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setWordWrap(false);
  details_->setReadOnly(true);
  details_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  scatter_->setRenderHint(QPainter::Antialiasing);
  scatter_->setMinimumSize(300, 220);

  auto* bottom = new QSplitter(Qt::Horizontal);
  bottom->addWidget(scatter_);
  bottom->addWidget(details_);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(table_);
  split->addWidget(bottom);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(status_);
  layout->addWidget(split, 1);

  connect(reload_button, &QPushButton::clicked, this, [this] { reload(); });
  connect(path_, &QLineEdit::returnPressed, this, [this] { reload(); });
  auto refilter = [this] {
    proxy_->set_model_filter(model_filter_->currentData().toString());
    proxy_->set_hardware_filter(hardware_filter_->currentData().toString());
    update_scatter();
  };
  connect(model_filter_, &QComboBox::currentIndexChanged, this, refilter);
  connect(hardware_filter_, &QComboBox::currentIndexChanged, this, refilter);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] { show_details(); });
  refill_filters();
  update_scatter();
}

QString HistoryPanel::db_path() const { return path_->text(); }

void HistoryPanel::set_db_path(const QString& path) { path_->setText(path); }

QString HistoryPanel::details_text() const { return details_->toPlainText(); }

QString HistoryPanel::status_text() const { return status_->text(); }

bool HistoryPanel::reload() {
  auto runs = load_history(path_->text().toStdString());
  if (!runs) {
    model_->set_runs({});
    status_->setText(QString::fromStdString(runs.error().message));
    refill_filters();
    update_scatter();
    return false;
  }
  const auto count = runs->size();
  model_->set_runs(std::move(runs).value());
  status_->setText(count == 0 ? QStringLiteral("no runs yet in %1 (cpplan run records them)").arg(path_->text())
                              : QStringLiteral("%1 runs in %2").arg(count).arg(path_->text()));
  refill_filters();
  update_scatter();
  table_->resizeColumnsToContents();
  if (proxy_->rowCount() > 0) select_row(0);
  return true;
}

void HistoryPanel::refill_filters() {
  auto refill = [](QComboBox* box, const QStringList& values) {
    const QString keep = box->currentData().toString();
    QSignalBlocker block(box);
    box->clear();
    box->addItem(QStringLiteral("(any)"), QString());
    for (const QString& v : values) box->addItem(v, v);
    const int i = box->findData(keep);
    box->setCurrentIndex(i < 0 ? 0 : i);
  };
  QSet<QString> models, machines;
  for (const auto& r : model_->runs()) {
    models.insert(QString::fromStdString(r.run.model));
    machines.insert(QString::fromStdString(machine_name(r)));
    if (!r.run.predicted_hardware.empty()) machines.insert(QString::fromStdString(r.run.predicted_hardware));
  }
  QStringList m(models.begin(), models.end()), h(machines.begin(), machines.end());
  m.sort();
  h.sort();
  refill(model_filter_, m);
  refill(hardware_filter_, h);
  proxy_->set_model_filter(model_filter_->currentData().toString());
  proxy_->set_hardware_filter(hardware_filter_->currentData().toString());
}

void HistoryPanel::update_scatter() {
  auto* chart = new QChart;
  chart->setTitle(QStringLiteral("Predicted vs measured step ms (ok runs with a prediction)"));
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignBottom);
  auto* points = new QScatterSeries;
  points->setName(QStringLiteral("runs"));
  points->setMarkerSize(9);
  double min_v = 1e300, max_v = 0;
  double abs_err = 0;
  scatter_points_ = 0;
  for (int row = 0; row < proxy_->rowCount(); ++row) {
    const auto& r = model_->run(proxy_->mapToSource(proxy_->index(row, 0)).row()).run;
    if (r.status != "ok" || !r.step_ms || !r.predicted_step_ms) continue;
    points->append(*r.step_ms, *r.predicted_step_ms);
    min_v = std::min({min_v, *r.step_ms, *r.predicted_step_ms});
    max_v = std::max({max_v, *r.step_ms, *r.predicted_step_ms});
    if (auto e = prediction_error(r)) abs_err += std::abs(*e);
    ++scatter_points_;
  }
  if (scatter_points_ > 0)
    chart->setTitle(QStringLiteral("Predicted vs measured step ms: %1 runs, mean |error| %2%")
                        .arg(scatter_points_)
                        .arg(abs_err / scatter_points_ * 100, 0, 'f', 1));
  // log-log: a CPU run predicted for a GPU profile sits orders of magnitude off the diagonal
  if (scatter_points_ == 0) {
    min_v = 0.1;
    max_v = 100;
  }
  const double lo = std::pow(10.0, std::floor(std::log10(min_v))), hi = std::pow(10.0, std::ceil(std::log10(max_v)));
  auto* diagonal = new QLineSeries;
  diagonal->setName(QStringLiteral("predicted = measured"));
  diagonal->setPen(QPen(Qt::gray, 1, Qt::DashLine));
  diagonal->append(lo, lo);
  diagonal->append(hi, hi);
  chart->addSeries(diagonal);
  chart->addSeries(points);
  auto* x = new QLogValueAxis;
  x->setTitleText(QStringLiteral("measured step ms"));
  x->setRange(lo, hi);
  x->setLabelFormat(QStringLiteral("%g"));
  auto* y = new QLogValueAxis;
  y->setTitleText(QStringLiteral("predicted step ms"));
  y->setRange(lo, hi);
  y->setLabelFormat(QStringLiteral("%g"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (QAbstractSeries* s : chart->series()) {
    s->attachAxis(x);
    s->attachAxis(y);
  }
  QChart* old = scatter_->chart();
  scatter_->setChart(chart);
  delete old;
}

void HistoryPanel::select_row(int proxy_row) { table_->selectRow(proxy_row); }

void HistoryPanel::show_details() {
  const QModelIndex current = table_->selectionModel()->currentIndex();
  if (!current.isValid()) {
    details_->clear();
    return;
  }
  const int row = proxy_->mapToSource(current).row();
  details_->setPlainText(QString::fromStdString(run_details(model_->run(row))));
}

}  // namespace cpplan::gui
