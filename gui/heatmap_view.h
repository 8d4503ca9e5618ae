#pragma once
// The best plan and its step time over resolutions (rows) x GPU counts (columns), coloured from
// fast (green) to slow (red) on a log scale; grey where no plan is valid, pink (OOM) where the
// best does not fit in memory.

#include <QTableWidget>

#include "gui/planning.h"

namespace cpplan::gui {

class HeatmapView : public QTableWidget {
  Q_OBJECT

 public:
  explicit HeatmapView(QWidget* parent = nullptr);
  void set_result(const HeatmapResult& r);
  void set_busy(const QString& what);  // shown in the corner while a grid is computed
};

}  // namespace cpplan::gui
