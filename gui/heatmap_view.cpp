#include "gui/heatmap_view.h"

#include <QBrush>
#include <QHeaderView>
#include <algorithm>
#include <cmath>

namespace cpplan::gui {

HeatmapView::HeatmapView(QWidget* parent) : QTableWidget(parent) {
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  setSelectionMode(QAbstractItemView::NoSelection);
  horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  verticalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  setWordWrap(true);
}

void HeatmapView::set_busy(const QString& what) { setToolTip(what); }

void HeatmapView::set_result(const HeatmapResult& r) {
  clear();
  setRowCount(static_cast<int>(r.resolutions.size()));
  setColumnCount(static_cast<int>(r.gpu_counts.size()));
  QStringList columns, rows;
  for (int g : r.gpu_counts) columns << QStringLiteral("%1 GPU%2").arg(g).arg(g == 1 ? "" : "s");
  for (const Resolution& res : r.resolutions) rows << QStringLiteral("%1x%2").arg(res.width).arg(res.height);
  setHorizontalHeaderLabels(columns);
  setVerticalHeaderLabels(rows);

  double lo = 1e300, hi = 0;
  for (const HeatCell& c : r.cells)
    if (!c.label.empty()) {
      lo = std::min(lo, c.step_ms);
      hi = std::max(hi, c.step_ms);
    }
  const double span = hi > lo ? std::log(hi / lo) : 1.0;
  for (int row = 0; row < rowCount(); ++row) {
    for (int col = 0; col < columnCount(); ++col) {
      const HeatCell& c = r.at(row, col);
      auto* item = new QTableWidgetItem;
      item->setTextAlignment(Qt::AlignCenter);
      if (!c.error.empty()) {
        item->setText(QStringLiteral("-"));
        item->setToolTip(QString::fromStdString(c.error));
        item->setBackground(QColor(0xdd, 0xdd, 0xdd));
      } else if (c.label.empty()) {
        item->setText(QStringLiteral("no valid plan"));
        item->setBackground(QColor(0xdd, 0xdd, 0xdd));
      } else {
        item->setText(QStringLiteral("%1\n%2 ms%3")
                          .arg(QString::fromStdString(c.label))
                          .arg(c.step_ms, 0, 'f', c.step_ms < 100 ? 1 : 0)
                          .arg(c.fits ? QString() : QStringLiteral(" (OOM)")));
        const double t = hi > lo ? std::log(c.step_ms / lo) / span : 0.0;  // 0 fast .. 1 slow
        QColor colour = QColor::fromHsvF(static_cast<float>(0.33 * (1 - t)), 0.45f, 0.97f);
        item->setBackground(c.fits ? colour : QColor(0xf2, 0xc4, 0xc4));
        item->setToolTip(QStringLiteral("%1 on %2 GPUs at %3x%4: %5 ms/step%6")
                             .arg(QString::fromStdString(c.label))
                             .arg(c.gpus)
                             .arg(c.resolution.width)
                             .arg(c.resolution.height)
                             .arg(c.step_ms, 0, 'f', 2)
                             .arg(c.fits ? QString() : QStringLiteral(", does not fit in memory")));
      }
      setItem(row, col, item);
    }
  }
  setToolTip({});
}

}  // namespace cpplan::gui
