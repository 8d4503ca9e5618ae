#include "gui/fleet_panel.h"

#include <QChart>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QPen>
#include <QScatterSeries>
#include <QValueAxis>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "session/engine/engine.h"

namespace cpplan::gui {

FleetResult compute_fleet(const FleetRequest& request, std::optional<double> slo_ms, std::uint64_t generation) {
  FleetResult r;
  r.generation = generation;
  r.slo_ms = slo_ms;
  if (!request.resolved) {
    r.error = request.error.empty() ? "no query" : request.error;
    return r;
  }
  const session::Resolved& resolved = *request.resolved;
  auto report = session::Engine(resolved.shared_catalog()).fleet(resolved, slo_ms);
  if (!report) r.error = report.error().message;
  else r.report = std::move(report).value();
  return r;
}

QString best_split_text(const planner::FleetReport& f) {
  if (f.rows.empty() || !f.rows.front().usable())
    return f.slo_ms ? QStringLiteral("No split meets the SLO and fits in memory") : QStringLiteral("No split fits in memory");
  const planner::FleetRow& best = f.rows.front();
  QString text = QStringLiteral("Best: %1 x %2 (%3 each, %4 idle): %5 images per hour at %6 s per image")
                     .arg(best.replicas)
                     .arg(QString::fromStdString(plan_label(best.replica.plan.config)))
                     .arg(best.gpus_per_replica == 1 ? QStringLiteral("1 GPU")
                                                     : QStringLiteral("%1 GPUs").arg(best.gpus_per_replica))
                     .arg(best.idle_gpus)
                     .arg(best.images_per_hour, 0, 'f', 0)
                     .arg(best.image_ms / 1e3, 0, 'f', 2);
  if (f.mixed)
    text += QStringLiteral("; mixed %1: %2 images per hour").arg(QString::fromStdString(f.mixed->label))
                .arg(f.mixed->images_per_hour, 0, 'f', 0);
  return text;
}

FleetChart::FleetChart(QWidget* parent) : QChartView(parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(320, 240);
  set_report(nullptr, std::nullopt);
}

namespace {

QLineSeries* line(const QString& name, const QPen& pen) {
  auto* s = new QLineSeries;
  s->setName(name);
  s->setPen(pen);
  return s;
}

// The fitting candidates, the frontier through them and the best usable split's point.
void add_points(QChart* chart, const planner::FleetReport& f, double& max_x, double& max_y) {
  auto* all = new QScatterSeries;
  all->setName(QStringLiteral("replica splits"));
  all->setMarkerSize(8);
  all->setColor(QColor(0x20, 0x6c, 0xc8));
  for (const planner::FleetPoint& p : f.points) {
    if (!p.fits) continue;  // a split whose replicas do not fit cannot run
    all->append(p.image_ms / 1e3, p.images_per_hour);
    max_x = std::max(max_x, p.image_ms / 1e3);
    max_y = std::max(max_y, p.images_per_hour);
  }
  auto* front = line(QStringLiteral("Pareto frontier"), QPen(QColor(0x40, 0xa0, 0x40), 1.5));
  for (int i : f.frontier) front->append(f.points[i].image_ms / 1e3, f.points[i].images_per_hour);
  auto* best = new QScatterSeries;
  best->setName(QStringLiteral("best split"));
  best->setMarkerSize(14);
  best->setColor(QColor(0xd0, 0x10, 0x10));
  if (!f.rows.empty() && f.rows.front().usable()) best->append(f.rows.front().image_ms / 1e3, f.rows.front().images_per_hour);
  for (QAbstractSeries* s : std::initializer_list<QAbstractSeries*>{front, all, best}) chart->addSeries(s);
}

}  // namespace

void FleetChart::set_report(const planner::FleetReport* f, std::optional<double> slo_ms) {
  auto* chart = new QChart;
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->setMargins(QMargins(4, 4, 4, 4));
  chart->legend()->setAlignment(Qt::AlignBottom);
  QChart* old = this->chart();
  setChart(chart);  // the view owns the new chart; the old one is ours to delete
  delete old;
  points_ = frontier_ = 0;
  slo_ = false;
  if (!f) {
    chart->setTitle(QStringLiteral("Images per hour vs latency per image"));
    return;
  }
  for (const planner::FleetPoint& p : f->points) points_ += p.fits;
  frontier_ = static_cast<int>(f->frontier.size());
  chart->setTitle(QStringLiteral("Images per hour vs latency per image: %1 GPUs, %2 candidate replica splits")
                      .arg(f->gpus)
                      .arg(points_));
  double max_x = slo_ms ? *slo_ms / 1e3 : 0, max_y = 1;
  add_points(chart, *f, max_x, max_y);
  auto* x = new QValueAxis;
  x->setTitleText(QStringLiteral("latency, s per image"));
  x->setRange(0, std::max(max_x, 0.1) * 1.1);
  x->applyNiceNumbers();
  x->setLabelFormat(x->max() - x->min() < 10 ? QStringLiteral("%.1f") : QStringLiteral("%.0f"));
  auto* y = new QValueAxis;
  y->setTitleText(QStringLiteral("images per hour"));
  y->setRange(0, max_y * 1.1);
  y->applyNiceNumbers();
  y->setLabelFormat(QStringLiteral("%.0f"));
  if (slo_ms) {
    auto* slo = line(QStringLiteral("SLO %1 s").arg(*slo_ms / 1e3, 0, 'f', 2), QPen(QColor(0xb0, 0x20, 0x20), 1.5, Qt::DashLine));
    slo->append(*slo_ms / 1e3, 0);
    slo->append(*slo_ms / 1e3, y->max());
    chart->addSeries(slo);
    slo_ = true;
  }
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (QAbstractSeries* s : chart->series()) {
    s->attachAxis(x);
    s->attachAxis(y);
  }
}

FleetPanel::FleetPanel(QWidget* parent)
    : QWidget(parent), slo_(new QDoubleSpinBox), best_(new QLabel), chart_(new FleetChart) {
  slo_->setRange(0, 1e7);
  slo_->setDecimals(0);
  slo_->setSingleStep(100);
  slo_->setSuffix(QStringLiteral(" ms"));
  slo_->setSpecialValueText(QStringLiteral("none"));  // 0: every fitting split counts
  slo_->setToolTip(QStringLiteral("latency target per image (cpplan --slo-ms)"));
  best_->setWordWrap(true);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(QStringLiteral("SLO per image:")));
  bar->addWidget(slo_);
  bar->addWidget(best_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(chart_, 1);
  connect(slo_, &QDoubleSpinBox::valueChanged, this, [this] { request(); });
  connect(&watcher_, &QFutureWatcher<FleetResult>::finished, this, [this] {
    in_flight_ = false;
    FleetResult r = watcher_.result();
    if (r.generation == generation_) {  // else superseded: drop it
      result_ = std::move(r);
      chart_->set_report(result_->report ? &*result_->report : nullptr, result_->slo_ms);
      best_->setText(result_->report ? best_split_text(*result_->report)
                                     : QString::fromStdString("Fleet: " + result_->error));
      emit fleet_shown();
    }
    if (pending_) start();
  });
}

FleetPanel::~FleetPanel() { watcher_.waitForFinished(); }

void FleetPanel::set_request(FleetRequest request) {
  request_ = std::move(request);
  this->request();
}

void FleetPanel::set_slo_ms(double ms) {
  if (slo_->value() == std::max(0.0, ms)) return request();
  slo_->setValue(std::max(0.0, ms));  // valueChanged requests it
}

QString FleetPanel::best_text() const { return best_->text(); }

void FleetPanel::request() {
  pending_ = true;
  ++generation_;
  best_->setText(QStringLiteral("computing the fleet..."));
  if (!in_flight_) start();
}

void FleetPanel::start() {
  pending_ = false;
  in_flight_ = true;
  const std::optional<double> slo = slo_->value() > 0 ? std::optional<double>(slo_->value()) : std::nullopt;
  watcher_.setFuture(QtConcurrent::run(compute_fleet, request_, slo, generation_));
}

}  // namespace cpplan::gui
