#pragma once
// The run history: the store's runs (data::Store::runs) as a table, a proxy filtering them by
// model and hardware, and the text of one run's details.

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "data/store.h"

namespace cpplan::gui {

// The runs of the database at `path`, newest first. A missing file is no runs (it is not
// created); a file that is not a cpplan database is an error.
Result<std::vector<data::StoredRun>> load_history(const std::string& path);

// What a run was measured on, as shown and filtered: the GPU name, else the CPU's.
std::string machine_name(const data::StoredRun& r);
// Relative error of the prediction, (predicted - measured) / measured; empty when either is.
std::optional<double> prediction_error(const data::RunRecord& r);
// Every field of one run, one per line.
std::string run_details(const data::StoredRun& r);

class HistoryModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kId, kFinished, kModel, kSize, kPlan, kVariant, kMachine, kStatus, kMeasuredMs, kPredictedMs, kError,
                kSteal, kColumnCount };
  enum Role { kSortRole = Qt::UserRole + 1, kModelRole, kMachineRole, kProfileRole };

  explicit HistoryModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void set_runs(std::vector<data::StoredRun> runs);
  const std::vector<data::StoredRun>& runs() const { return runs_; }
  const data::StoredRun& run(int row) const { return runs_.at(row); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<data::StoredRun> runs_;
};

// Keeps the runs of one model and one hardware ("" = any). The hardware matches either the
// machine (machine_name) or the hardware profile the prediction used.
class HistoryFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  explicit HistoryFilterProxy(QObject* parent = nullptr);
  void set_model_filter(const QString& model);
  void set_hardware_filter(const QString& hardware);

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;

 private:
  QString model_, hardware_;
};

}  // namespace cpplan::gui
