#pragma once
// The plans table: a std::vector<planner::RankedPlan> as a QAbstractTableModel (columns as the
// CLI's table, plus whether the step is host- or GPU-bound and the reasons of invalid plans) and
// a proxy that sorts and filters it.

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <optional>
#include <vector>

#include "session/engine/engine.h"

namespace cpplan::gui {

class PlanTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  // kPlacement: the text-encoder/VAE placement of the prediction ("sharded/single", as the CLI);
  // kBound: "host" when any block group waits on the host's dispatch (BlockCost::host_bound), else "GPU".
  // kDtype, kCache: the format and the step cache the plan was priced with (the window shows them
  // where the query ranks several: --dtype any, --cache any).
  enum Column { kRank, kPlan, kVariant, kDtype, kCache, kStepMs, kStepsPerSec, kImageS, kPeakGiB, kFits, kPlacement,
                kBound, kFrameworks, kReasons, kColumnCount };
  // Roles beyond Qt's: the number a column sorts by (invalid plans sort last ascending), the
  // plan's index in the vector, and its verdict.
  enum Role { kSortRole = Qt::UserRole + 1, kIndexRole, kValidRole, kFitsRole, kVariantRole };

  explicit PlanTableModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

  // Replaces the rows (ranked as the planner returns them).
  void set_plans(std::vector<planner::RankedPlan> plans);
  const std::vector<planner::RankedPlan>& plans() const { return plans_; }
  const planner::RankedPlan& plan(int row) const { return plans_.at(row); }
  int valid_count() const { return valid_count_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<planner::RankedPlan> plans_;
  int valid_count_ = 0;
};

// Sorts by PlanTableModel::kSortRole, invalid plans last in either order, and hides rows: invalid ones unless shown, those over the
// GPU memory when asked, and all but one CP variant when one is chosen.
class PlanFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  explicit PlanFilterProxy(QObject* parent = nullptr);

  void set_show_invalid(bool show);
  void set_fits_only(bool fits_only);
  void set_variant(std::optional<CpVariant> variant);  // nullopt: every variant
  bool show_invalid() const { return show_invalid_; }

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

 private:
  bool show_invalid_ = false;
  bool fits_only_ = false;
  std::optional<CpVariant> variant_;
};

}  // namespace cpplan::gui
