#pragma once
// The History tab: the runs of one database, filtered by model and hardware, a scatter of
// predicted against measured step time (the diagonal is a perfect prediction), and the details
// of the selected run.

#include <QWidget>

#include "gui/history_model.h"

class QChartView;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QTableView;

namespace cpplan::gui {

class HistoryPanel : public QWidget {
  Q_OBJECT

 public:
  explicit HistoryPanel(const QString& db_path, QWidget* parent = nullptr);

  QString db_path() const;
  void set_db_path(const QString& path);
  // Rereads the database (after a run finished, or on Reload); false and a message when it fails.
  bool reload();

  HistoryModel* model() { return model_; }
  HistoryFilterProxy* proxy() { return proxy_; }
  QComboBox* model_filter() { return model_filter_; }
  QComboBox* hardware_filter() { return hardware_filter_; }
  QString details_text() const;
  QString status_text() const;
  void select_row(int proxy_row);
  int scatter_points() const { return scatter_points_; }

 private:
  void refill_filters();
  void update_scatter();
  void show_details();

  HistoryModel* model_;
  HistoryFilterProxy* proxy_;
  QLineEdit* path_;
  QComboBox* model_filter_;
  QComboBox* hardware_filter_;
  QLabel* status_;
  QTableView* table_;
  QChartView* scatter_;
  QPlainTextEdit* details_;
  int scatter_points_ = 0;
};

}  // namespace cpplan::gui
