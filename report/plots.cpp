// The report's PNG plots: Qt Charts drawn into a QImage through a QGraphicsScene, off-screen.
#include <QApplication>
#include <QCategoryAxis>
#include <QChart>
#include <QGraphicsScene>
#include <QImage>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPainter>
#include <QPen>
#include <QScatterSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <map>

#include "report/detail.h"

namespace cpplan::report::detail {

namespace {

// Ten distinguishable colours (matplotlib's tab10 without its red, which marks y = x).
const QColor kPalette[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
                           QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b), QColor(0xe3, 0x77, 0xc2),
                           QColor(0x7f, 0x7f, 0x7f), QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf),
                           QColor(0x00, 0x33, 0x66)};
const QColor kIdentity(0xd6, 0x27, 0x28);

QColor palette(std::size_t i) { return kPalette[i % std::size(kPalette)]; }
QString qstr(const std::string& s) { return QString::fromStdString(s); }

// Qt's own chatter (fonts, XDG_RUNTIME_DIR, platform notes) is not the report's output: dropped
// while the plots render; critical and fatal messages still reach the previous handler.
class QuietQt {
 public:
  QuietQt() { previous() = qInstallMessageHandler(&QuietQt::handle); }
  ~QuietQt() { qInstallMessageHandler(previous()); }
  QuietQt(const QuietQt&) = delete;
  QuietQt& operator=(const QuietQt&) = delete;

 private:
  static QtMessageHandler& previous() {
    static QtMessageHandler handler = nullptr;
    return handler;
  }
  static void handle(QtMsgType type, const QMessageLogContext& context, const QString& message) {
    if (type != QtCriticalMsg && type != QtFatalMsg) return;
    if (previous()) previous()(type, context, message);
  }
};

// Charts are QGraphicsWidgets: they need a QApplication. One is created on first use (off-screen
// unless QT_QPA_PLATFORM says otherwise) and lives until exit, as Qt wants one per process.
Result<bool> ensure_application() {
  if (qobject_cast<QApplication*>(QCoreApplication::instance())) return true;
  if (QCoreApplication::instance())
    return Error{"plots: Qt Charts needs a QApplication, and this process already runs another Qt application"};
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  static int argc = 1;
  static char name[] = "cpplan";
  static char* argv[] = {name, nullptr};
  static QApplication* app = new QApplication(argc, argv);  // never deleted: see above
  return app != nullptr;
}

QChart* new_chart(const QString& title) {
  auto* chart = new QChart;
  chart->setTitle(title);
  QFont font = chart->titleFont();
  font.setPointSizeF(font.pointSizeF() * 1.2);
  font.setBold(true);
  chart->setTitleFont(font);
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->setBackgroundRoundness(0);
  chart->legend()->setAlignment(Qt::AlignBottom);
  return chart;
}

void attach(QChart* chart, QAbstractSeries* series, QAbstractAxis* x, QAbstractAxis* y) {
  chart->addSeries(series);
  series->attachAxis(x);
  series->attachAxis(y);
}

void hide_legend(QChart* chart, QAbstractSeries* series) {
  for (QLegendMarker* m : chart->legend()->markers(series)) m->setVisible(false);
}

// Takes ownership of `chart`, lays it out at the options' size and saves it as PNG.
Result<bool> save(QChart* chart, const std::string& path, const Options& options) {
  QGraphicsScene scene;  // owns the chart from here
  scene.addItem(chart);
  const QRectF area(0, 0, options.width_px, options.height_px);
  chart->setGeometry(area);
  QCoreApplication::sendPostedEvents();  // the chart lays itself out on a posted LayoutRequest
  QCoreApplication::processEvents();
  QImage image(options.width_px, options.height_px, QImage::Format_RGB32);
  image.fill(Qt::white);
  QPainter painter(&image);
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setRenderHint(QPainter::TextAntialiasing);
  scene.render(&painter, area, area);
  painter.end();
  if (!image.save(qstr(path), "PNG")) return Error{fmt::format("{}: cannot write the PNG", path)};
  return true;
}

std::map<std::string, QColor> kind_colours(const Figures& f) {
  std::map<std::string, QColor> colours;
  for (std::size_t i = 0; i < f.by_kind.size(); ++i) colours[f.by_kind[i].group] = palette(i);
  return colours;
}

QChart* scatter_chart(const Figures& f) {
  QChart* chart = new_chart(QStringLiteral("Predicted vs measured step time: %1 runs, MAPE %2%")
                                .arg(f.points.size())
                                .arg(f.overall->mape * 100, 0, 'f', 1));
  double lo = 1e300, hi = 0;
  for (const RunPoint& p : f.points) {
    lo = std::min({lo, p.measured_ms, p.predicted_ms});
    hi = std::max({hi, p.measured_ms, p.predicted_ms});
  }
  // Log axes once the times span more than a decade and a bit: tiny and large models together.
  const bool log = hi / lo > 20;
  QAbstractAxis *x = nullptr, *y = nullptr;
  double a = 0, b = 0;  // the axes' common range
  if (log) {
    a = std::pow(10.0, std::floor(std::log10(lo / 1.3)));
    b = std::pow(10.0, std::ceil(std::log10(hi * 1.3)));
    for (QAbstractAxis** axis : {&x, &y}) {
      auto* l = new QLogValueAxis;
      l->setBase(10);
      l->setRange(a, b);
      l->setLabelFormat(QStringLiteral("%g"));
      l->setMinorTickCount(8);
      *axis = l;
    }
  } else {
    auto* vx = new QValueAxis;
    vx->setRange(0, hi * 1.1);
    vx->applyNiceNumbers();
    a = 0;
    b = vx->max();
    vx->setLabelFormat(b < 10 ? QStringLiteral("%.1f") : QStringLiteral("%.0f"));
    auto* vy = new QValueAxis;
    vy->setRange(a, b);
    vy->setTickCount(vx->tickCount());
    vy->setLabelFormat(vx->labelFormat());
    x = vx;
    y = vy;
  }
  x->setTitleText(QStringLiteral("measured step ms (median)"));
  y->setTitleText(QStringLiteral("predicted step ms"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);

  // y = x, and y = 1.25 x / y = 0.8 x: inside the band, the prediction is within 25%.
  const double lo_x = log ? a : 0.0;
  for (double factor : {1.25, 0.8}) {
    auto* band = new QLineSeries;
    band->setName(QStringLiteral("within 25%"));
    band->setPen(QPen(QColor(0xa0, 0xa0, 0xa0), 1.2, Qt::DashLine));
    band->append(lo_x, lo_x * factor);
    band->append(b / std::max(1.0, factor), b / std::max(1.0, factor) * factor);
    attach(chart, band, x, y);
    if (factor < 1) hide_legend(chart, band);
  }
  auto* identity = new QLineSeries;
  identity->setName(QStringLiteral("predicted = measured"));
  identity->setPen(QPen(kIdentity, 2.5));
  identity->append(log ? a : 0, log ? a : 0);
  identity->append(b, b);
  attach(chart, identity, x, y);

  const auto colours = kind_colours(f);
  std::map<std::string, QScatterSeries*> series;
  for (const Accuracy& k : f.by_kind) {
    auto* s = new QScatterSeries;
    s->setName(QStringLiteral("%1 (%2)").arg(qstr(k.group)).arg(k.runs));
    s->setMarkerSize(11);
    s->setColor(colours.at(k.group));
    s->setBorderColor(colours.at(k.group).darker(140));
    series[k.group] = s;
  }
  for (const RunPoint& p : f.points) series.at(p.kind)->append(p.measured_ms, p.predicted_ms);
  for (const Accuracy& k : f.by_kind) attach(chart, series.at(k.group), x, y);
  return chart;
}

QChart* error_chart(const Figures& f) {
  QChart* chart = new_chart(QStringLiteral("Prediction error by plan kind (each dot a run, bar: mean error)"));
  const int n = static_cast<int>(f.by_kind.size());
  auto* x = new QCategoryAxis;
  x->setStartValue(-0.5);
  x->setRange(-0.5, n - 0.5);
  for (int i = 0; i < n; ++i) {
    const Accuracy& k = f.by_kind[i];
    x->append(QStringLiteral("%1 (n=%2)").arg(qstr(k.group)).arg(k.runs), i + 0.5);  // MAPE: REPORT.md
  }
  if (n > 6) x->setLabelsAngle(-20);
  double lo = -5, hi = 5;
  for (const RunPoint& p : f.points) {
    lo = std::min(lo, p.error() * 100);
    hi = std::max(hi, p.error() * 100);
  }
  auto* y = new QValueAxis;
  y->setRange(lo - 0.08 * (hi - lo), hi + 0.08 * (hi - lo));
  y->applyNiceNumbers();
  y->setLabelFormat(QStringLiteral("%+.0f%%"));
  y->setTitleText(QStringLiteral("(predicted - measured) / measured"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);

  auto* zero = new QLineSeries;
  zero->setPen(QPen(QColor(0x60, 0x60, 0x60), 1.2));
  zero->append(-0.5, 0);
  zero->append(n - 0.5, 0);
  attach(chart, zero, x, y);
  hide_legend(chart, zero);

  const auto colours = kind_colours(f);
  for (int i = 0; i < n; ++i) {
    const std::string& kind = f.by_kind[i].group;
    std::vector<const RunPoint*> runs;
    for (const RunPoint& p : f.points)
      if (p.kind == kind) runs.push_back(&p);
    // Spread the dots across the kind's slot (by run id) so that equal errors stay visible.
    auto* dots = new QScatterSeries;
    dots->setMarkerSize(10);
    dots->setColor(colours.at(kind));
    dots->setBorderColor(colours.at(kind).darker(140));
    double mean = 0;
    for (std::size_t j = 0; j < runs.size(); ++j) {
      const double offset = runs.size() > 1 ? -0.3 + 0.6 * static_cast<double>(j) / (runs.size() - 1) : 0.0;
      dots->append(i + offset, runs[j]->error() * 100);
      mean += runs[j]->error() * 100 / static_cast<double>(runs.size());
    }
    attach(chart, dots, x, y);
    hide_legend(chart, dots);
    auto* bar = new QLineSeries;
    bar->setPen(QPen(Qt::black, 3));
    bar->append(i - 0.38, mean);
    bar->append(i + 0.38, mean);
    attach(chart, bar, x, y);
    hide_legend(chart, bar);
  }
  chart->legend()->hide();
  return chart;
}

QChart* busbw_chart(const std::vector<const BusbwCurve*>& curves, const std::string& name, bool several_machines) {
  QChart* chart = new_chart(QStringLiteral("%1: bus bandwidth vs message size").arg(qstr(name)));
  double lo = 1e300, hi = 0, top = 0;
  for (const BusbwCurve* c : curves)
    for (const auto& [bytes, busbw] : c->points) {
      lo = std::min(lo, bytes);
      hi = std::max(hi, bytes);
      top = std::max(top, busbw);
    }
  // x = log2(bytes), labelled with sizes; a label every `step` octaves, powers of 4 when sparse.
  const double x0 = std::floor(std::log2(lo)), x1 = std::max(std::ceil(std::log2(hi)), x0 + 1);
  int step = std::max(1, static_cast<int>(std::ceil((x1 - x0) / 10)));
  if (step > 1) step += step % 2;
  auto* x = new QCategoryAxis;
  x->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  x->setRange(x0, x1);
  x->setStartValue(x0);
  for (int e = static_cast<int>(x0); e <= static_cast<int>(x1); ++e)
    if (step == 1 || e % step == 0) x->append(qstr(human_bytes(std::ldexp(1.0, e))), e);
  x->setTitleText(QStringLiteral("message size (log scale)"));
  auto* y = new QValueAxis;
  y->setRange(0, top > 0 ? top * 1.1 : 1);
  y->applyNiceNumbers();
  y->setLabelFormat(y->max() < 10 ? QStringLiteral("%.1f") : QStringLiteral("%.0f"));
  y->setTitleText(QStringLiteral("busbw GB/s"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (std::size_t i = 0; i < curves.size(); ++i) {
    const BusbwCurve& c = *curves[i];
    auto* line = new QLineSeries;
    QString label = QStringLiteral("%1 ranks").arg(c.ranks);
    if (c.uneven) label += QStringLiteral(", uneven");
    if (several_machines) label += QStringLiteral(", ") + qstr(c.machine);
    line->setName(label);
    line->setPen(QPen(palette(i), 2.2, c.uneven ? Qt::DashLine : Qt::SolidLine));
    line->setPointsVisible(true);
    for (const auto& [bytes, busbw] : c.points) line->append(std::log2(bytes), busbw);
    attach(chart, line, x, y);
  }
  return chart;
}

std::string in_dir(const std::string& dir, const std::string& file) {
  return (std::filesystem::path(dir) / file).string();
}

}  // namespace

Result<std::vector<Plot>> render_plots(const Figures& f, const std::string& out_dir, const Options& options) {
  std::vector<Plot> plots;
  Plot scatter{Plot::Section::kAccuracy, "scatter.png", "predicted vs measured step time", ""};
  Plot errors{Plot::Section::kAccuracy, "error-by-kind.png", "prediction error by plan kind", ""};
  const bool compare = !f.points.empty();
  if (!compare) scatter.skipped = errors.skipped = "no run has both a measured and a predicted step time.";

  // One plot per collective; all_to_all's uneven curves join its even ones.
  std::map<costmodel::Collective, std::vector<const BusbwCurve*>> by_collective;
  for (const BusbwCurve& c : f.busbw) by_collective[c.collective].push_back(&c);
  std::vector<Plot> busbw;
  for (const auto& [collective, curves] : by_collective) {
    const std::string name(costmodel::to_string(collective));
    busbw.push_back({Plot::Section::kBandwidth, "busbw-" + name + ".png", "busbw of " + name + " vs message size", ""});
  }
  if (f.busbw.empty())
    busbw.push_back({Plot::Section::kBandwidth, "busbw.png", "busbw vs message size",
                     "no collective samples (cpplan probe, cpplan import-nccl-tests)."});

  if (compare || !by_collective.empty()) {
    QuietQt quiet;
    auto app = ensure_application();
    if (!app) return app.error();
    if (compare) {
      auto ok = save(scatter_chart(f), in_dir(out_dir, scatter.file), options);
      if (!ok) return ok.error();
      ok = save(error_chart(f), in_dir(out_dir, errors.file), options);
      if (!ok) return ok.error();
    }
    std::size_t i = 0;
    for (const auto& [collective, curves] : by_collective) {
      std::vector<std::string> machines;
      for (const BusbwCurve* c : curves)
        if (std::find(machines.begin(), machines.end(), c->machine) == machines.end()) machines.push_back(c->machine);
      const std::string name(costmodel::to_string(collective));
      auto ok = save(busbw_chart(curves, name, machines.size() > 1), in_dir(out_dir, busbw[i++].file), options);
      if (!ok) return ok.error();
    }
  }
  plots.push_back(std::move(scatter));
  plots.push_back(std::move(errors));
  for (Plot& p : busbw) plots.push_back(std::move(p));
  return plots;
}

}  // namespace cpplan::report::detail
