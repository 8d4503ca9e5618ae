#include "gui/charts.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QCursor>
#include <QFont>
#include <QHorizontalStackedBarSeries>
#include <QLegend>
#include <QLineSeries>
#include <QPen>
#include <QScatterSeries>
#include <QToolTip>
#include <QValueAxis>
#include <algorithm>
#include <iterator>
#include <vector>

#include "core/units.h"

namespace cpplan::gui {

namespace {

QChart* fresh_chart(QChartView* view, const QString& title) {
  auto* chart = new QChart;
  chart->setTitle(title);
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->setMargins(QMargins(4, 4, 4, 4));
  chart->legend()->setAlignment(Qt::AlignBottom);
  QChart* old = view->chart();
  view->setChart(chart);  // the view owns the new chart; the old one is ours to delete
  delete old;
  return chart;
}

QString qstr(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<int>(s.size())); }

}  // namespace

ParetoChart::ParetoChart(QWidget* parent) : QChartView(parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(320, 240);
  set_plans({}, 0);
}

void ParetoChart::add_points(QScatterSeries* s, const std::vector<planner::RankedPlan>& plans, bool fitting) {
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const auto& p = plans[i];
    if (!p.predicted || p.predicted->fits_memory != fitting) continue;
    s->append(step_of(p), p.predicted->peak_mem_bytes / kGiB);
    indices_.push_back(static_cast<int>(i));
  }
  connect(s, &QScatterSeries::hovered, this, [this, s](const QPointF& point, bool state) {
    if (!state) return QToolTip::hideText();
    const auto pts = s->points();
    const int offset = s->property("first_index").toInt();
    for (int k = 0; k < pts.size(); ++k)
      if (pts[k] == point) {
        const auto& p = plans_[indices_[offset + k]];
        QToolTip::showText(QCursor::pos(), QStringLiteral("%1 (%2): %3 ms, %4 GiB")
                                               .arg(QString::fromStdString(plan_label(p.plan.config)))
                                               .arg(qstr(display_name(p.plan.variant)))
                                               .arg(point.x(), 0, 'f', 2)
                                               .arg(point.y(), 0, 'f', 1));
        return;
      }
  });
  connect(s, &QScatterSeries::clicked, this, [this, s](const QPointF& point) {
    const auto pts = s->points();
    const int offset = s->property("first_index").toInt();
    for (int k = 0; k < pts.size(); ++k)
      if (pts[k] == point) emit plan_clicked(indices_[offset + k]);
  });
}

double ParetoChart::step_of(const planner::RankedPlan& p) const {
  return query_ ? session::mean_step_ms(*query_, p) : p.predicted->step_ms;
}

void ParetoChart::set_plans(const std::vector<planner::RankedPlan>& plans, double gpu_memory_gib, const Query* q) {
  plans_ = plans;
  query_.reset();
  if (q) query_ = *q;
  indices_.clear();
  const bool cached = q && (q->ranks_caches() || q->cache.active());
  QChart* chart = fresh_chart(this, QStringLiteral("%1 vs peak memory: %2 valid plans, %3 GiB per GPU")
                                        .arg(cached ? QStringLiteral("Mean step (computed and cached)")
                                                    : QStringLiteral("Step time"))
                                        .arg(std::count_if(plans.begin(), plans.end(),
                                                           [](const auto& p) { return p.predicted.has_value(); }))
                                        .arg(gpu_memory_gib, 0, 'f', 1));

  auto* fit = new QScatterSeries;
  fit->setName(QStringLiteral("fits"));
  fit->setMarkerSize(9);
  fit->setColor(QColor(0x20, 0x6c, 0xc8));
  fit->setProperty("first_index", 0);
  add_points(fit, plans, true);
  auto* over = new QScatterSeries;
  over->setName(QStringLiteral("OOM"));
  over->setMarkerSize(9);
  over->setColor(QColor(0xe0, 0x8a, 0x1e));
  over->setProperty("first_index", static_cast<int>(indices_.size()));
  add_points(over, plans, false);

  // The Pareto front: sorted by step time, each plan that needs less memory than every faster one.
  std::vector<QPointF> pts;
  for (const auto& p : plans)
    if (p.predicted) pts.emplace_back(step_of(p), p.predicted->peak_mem_bytes / kGiB);
  std::sort(pts.begin(), pts.end(), [](const QPointF& a, const QPointF& b) {
    return a.x() != b.x() ? a.x() < b.x() : a.y() < b.y();
  });
  auto* front = new QLineSeries;
  front->setName(QStringLiteral("Pareto front"));
  front->setPen(QPen(QColor(0x40, 0xa0, 0x40), 1.5));
  double best_mem = 1e300;
  for (const QPointF& pt : pts)
    if (pt.y() < best_mem) {
      front->append(pt);
      best_mem = pt.y();
    }

  // x spans the plans (they can sit far from 0); y starts at 0 and reaches the GPU's memory.
  double min_x = pts.empty() ? 0 : pts.front().x(), max_x = pts.empty() ? 1 : pts.back().x();
  double max_y = std::max(1.0, gpu_memory_gib);
  for (const QPointF& pt : pts) max_y = std::max(max_y, pt.y());
  const double pad = std::max(max_x - min_x, 0.1 * max_x) * 0.08 + 1e-9;
  min_x = std::max(0.0, min_x - pad);
  max_x += pad;
  auto* memory = new QLineSeries;
  memory->setName(QStringLiteral("GPU memory"));
  memory->setPen(QPen(QColor(0xb0, 0x20, 0x20), 1.5, Qt::DashLine));
  memory->append(min_x, gpu_memory_gib);
  memory->append(max_x, gpu_memory_gib);

  selected_ = new QScatterSeries;
  selected_->setName(QStringLiteral("selected"));
  selected_->setMarkerSize(15);
  selected_->setColor(QColor(0xd0, 0x10, 0x10));
  selected_->setBorderColor(Qt::black);

  for (QAbstractSeries* s : std::initializer_list<QAbstractSeries*>{memory, front, fit, over, selected_})
    chart->addSeries(s);
  auto* x = new QValueAxis;
  x->setTitleText(cached ? QStringLiteral("predicted mean step ms") : QStringLiteral("predicted step ms"));
  x->setRange(min_x, max_x);
  x->applyNiceNumbers();
  x->setLabelFormat(x->max() - x->min() < 10 ? QStringLiteral("%.1f") : QStringLiteral("%.0f"));
  memory->replace({QPointF(x->min(), gpu_memory_gib), QPointF(x->max(), gpu_memory_gib)});  // across the nice range
  auto* y = new QValueAxis;
  y->setTitleText(QStringLiteral("peak GiB per GPU"));
  y->setRange(0, max_y * 1.1);
  y->applyNiceNumbers();
  y->setLabelFormat(QStringLiteral("%.0f"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (QAbstractSeries* s : chart->series()) {
    s->attachAxis(x);
    s->attachAxis(y);
  }
}

void ParetoChart::set_selected(int plan_index) {
  if (!selected_) return;
  selected_->clear();
  if (plan_index < 0 || plan_index >= static_cast<int>(plans_.size())) return;
  const auto& p = plans_[plan_index];
  if (p.predicted) selected_->append(step_of(p), p.predicted->peak_mem_bytes / kGiB);
}

BreakdownChart::BreakdownChart(QWidget* parent) : QChartView(parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(280, 190);  // below it Qt Charts elides the axis labels
  set_prediction(nullptr);
}

namespace {

// The host's time a block group adds to the GPU's: beyond the GPU's work when launches overlap
// it (a host-bound block), all of it when the runtime is synchronous (BlockCost::time_ms).
Milliseconds host_beyond_gpu_ms(const costmodel::BlockCost& b) {
  return b.overlapped ? std::max(0.0, b.host_ms - b.device_ms()) : b.host_ms;
}

}  // namespace

void BreakdownChart::set_prediction(const costmodel::Prediction* p) {
  QString title = QStringLiteral("Step time");
  if (p) {
    title = QStringLiteral("Step %1 ms: host %2 ms vs GPU %3 ms (%4 compute + %5 communication)")
                .arg(p->step_ms, 0, 'f', 2)
                .arg(p->host_ms, 0, 'f', 2)
                .arg(p->compute_ms + p->comm_ms, 0, 'f', 2)
                .arg(p->compute_ms, 0, 'f', 2)
                .arg(p->comm_ms, 0, 'f', 2);
    if (p->sync_ms > 0) title += QStringLiteral(" + %1 waiting").arg(p->sync_ms, 0, 'f', 2);
    if (p->calibrated) title += QStringLiteral("; bars: the analytic %1 ms").arg(p->uncalibrated_step_ms, 0, 'f', 2);
  }
  QChart* chart = fresh_chart(this, title);
  if (!p) return;
  // Each bar is its group's BlockCost::time_ms(), so the bars add up to the (analytic) step.
  const char* const kParts[] = {"GEMM", "attention", "memory-bound", "host beyond GPU", "communication",
                                "waiting at collectives"};
  constexpr int kPartCount = 6;
  QBarSet* sets[kPartCount];
  auto* series = new QHorizontalStackedBarSeries;
  for (int k = 0; k < kPartCount; ++k) {
    sets[k] = new QBarSet(QString::fromLatin1(kParts[k]));
    series->append(sets[k]);
  }
  QStringList categories;
  auto add = [&](const QString& category, const costmodel::BlockCost& b) {
    categories << category;
    *sets[0] << b.gemm_ms;
    *sets[1] << b.attention_ms;
    *sets[2] << b.memory_ms;
    *sets[3] << host_beyond_gpu_ms(b);
    *sets[4] << b.comm_ms;
    *sets[5] << b.sync_ms;
  };
  for (int i = 0; i < p->block_count; ++i)
    add(QStringLiteral("%1 x%2").arg(qstr(to_string(p->blocks[i].kind))).arg(p->blocks[i].count), p->blocks[i]);
  // the rest of the step: embedders and scheduler on the host, output gather over CP, CFG all-gather
  if (p->step_rest.time_ms() > 0) add(QStringLiteral("per step"), p->step_rest);
  if (sets[5]->sum() == 0) series->remove(sets[5]);  // no collectives to wait at: keep the legend short
  chart->addSeries(series);
  auto* y = new QBarCategoryAxis;
  y->append(categories);
  auto* x = new QValueAxis;
  x->setTitleText(QStringLiteral("ms per step"));
  chart->addAxis(y, Qt::AlignLeft);
  chart->addAxis(x, Qt::AlignBottom);
  series->attachAxis(y);
  series->attachAxis(x);
  x->applyNiceNumbers();
  x->setLabelFormat(x->max() < 10 ? QStringLiteral("%.1f") : QStringLiteral("%.0f"));
}

// The phases of MemoryPhase, as the chart names them.
constexpr const char* kPhaseNames[costmodel::kMemoryPhaseCount] = {"loading", "encoding", "denoising", "decoding"};

MemoryChart::MemoryChart(QWidget* parent) : QChartView(parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(280, 180);  // three bars: below it Qt Charts elides the axis labels
  set_prediction(nullptr, 0);
}

void MemoryChart::set_prediction(const costmodel::Prediction* p, double gpu_memory_gib) {
  if (!p) {
    fresh_chart(this, QStringLiteral("Peak memory"));
    return;
  }
  // One bar per phase of an image, MemoryBreakdown::phases() (costmodel/cost_model.h): loading the
  // pipeline, the prompt's encoding (with the encoder streamed or loaded, and the transformer only
  // when it is already resident), the denoising (activations) and the VAE decode, each with the
  // runtime's reserve; the peak is the prediction's own peak_phase.
  const costmodel::MemoryBreakdown& m = p->memory;
  const int peak = static_cast<int>(p->peak_phase);
  QChart* chart = fresh_chart(this, QStringLiteral("Peak memory %1 of %2 GiB per GPU, while %3%4")
                                        .arg(p->peak_mem_bytes / kGiB, 0, 'f', 1)
                                        .arg(gpu_memory_gib, 0, 'f', 1)
                                        .arg(QString::fromLatin1(kPhaseNames[peak]))
                                        .arg(p->fits_memory ? QString() : QStringLiteral(" (does NOT fit)")));
  // Bytes of each part in each phase (MemoryPhase order); they add up to MemoryBreakdown::phases().
  // Each phase's own bytes share one colour (the category says which): the weights reaching the GPU
  // while loading, the text encoding's streamed or loaded encoder and its activations, the
  // transformer's activations (less the attention's extra), the VAE decoder's.
  struct Part {
    QString name;
    Bytes bytes[costmodel::kMemoryPhaseCount];
  };
  const Bytes tw = m.transformer_weights, te = m.text_encoder_weights, vae = m.vae_weights;
  const Bytes tw_encoding = m.transformer_while_encoding ? tw : 0.0, reserved = m.runtime_reserved;
  const std::vector<Part> parts = {
      {QStringLiteral("loading weights"), {m.load_weights, 0, 0, 0}},
      {QStringLiteral("transformer"), {0, tw_encoding, tw, tw}},
      {QStringLiteral("text encoders"), {0, te, te, te}},
      {QStringLiteral("VAE"), {0, vae, vae, vae}},
      {QStringLiteral("reserved"), {reserved, reserved, reserved, reserved}},
      {QStringLiteral("working set"), {0, m.text_encode, m.activations - m.attention_extra, m.vae_decode}},
      {QStringLiteral("attention extra"), {0, 0, m.attention_extra, 0}},
  };
  auto* series = new QHorizontalStackedBarSeries;
  for (const Part& part : parts) {
    if (std::all_of(std::begin(part.bytes), std::end(part.bytes), [](Bytes b) { return b == 0; })) continue;
    auto* set = new QBarSet(part.name);  // keep the legend short: only parts with bytes
    for (int phase = costmodel::kMemoryPhaseCount - 1; phase >= 0; --phase) *set << part.bytes[phase] / kGiB;  // bottom-up
    series->append(set);
  }
  chart->addSeries(series);
  auto* y = new QBarCategoryAxis;
  for (int phase = costmodel::kMemoryPhaseCount - 1; phase >= 0; --phase)
    y->append(QString::fromLatin1(kPhaseNames[phase]) + (phase == peak ? QStringLiteral(" (peak)") : QString()));
  QFont small = y->labelsFont();  // four bars in a short chart: labels no taller than a bar
  small.setPointSizeF(small.pointSizeF() * 0.8);
  y->setLabelsFont(small);
  auto* x = new QValueAxis;
  x->setRange(0, std::max(gpu_memory_gib, p->peak_mem_bytes / kGiB));
  x->applyNiceNumbers();
  x->setLabelFormat(QStringLiteral("%.0f"));
  chart->addAxis(y, Qt::AlignLeft);
  chart->addAxis(x, Qt::AlignBottom);
  series->attachAxis(y);
  series->attachAxis(x);
}

}  // namespace cpplan::gui
