#include "gui/plan_table_model.h"

#include <QBrush>
#include <QColor>
#include <QStringList>
#include <limits>
#include <string>
#include <utility>

#include "core/units.h"

namespace cpplan::gui {

namespace {

QString frameworks_text(const planner::RankedPlan& p) {
  QStringList names;
  for (const auto& n : p.frameworks.names()) names << QString::fromStdString(n);
  return names.isEmpty() ? QStringLiteral("-") : names.join(QStringLiteral(", "));
}

// "sharded/single", as the CLI's "text enc / VAE" column (cli/render.cpp).
QString placement_text(const costmodel::Prediction& pr) {
  const std::string s =
      std::string(to_string(pr.pipeline.text_encoder)) + "/" + std::string(to_string(pr.pipeline.vae));
  return QString::fromStdString(s);
}

// Blocks (counting each group's count) whose host dispatch outlasts their GPU work, of all blocks.
std::pair<int, int> host_bound_blocks(const costmodel::Prediction& pr) {
  int host = 0, all = 0;
  for (int i = 0; i < pr.block_count; ++i) {
    host += pr.blocks[i].host_bound() ? pr.blocks[i].count : 0;
    all += pr.blocks[i].count;
  }
  return {host, all};
}

QString bound_text(const costmodel::Prediction& pr) {
  return host_bound_blocks(pr).first > 0 ? QStringLiteral("host") : QStringLiteral("GPU");
}

QString bound_tooltip(const costmodel::Prediction& pr) {
  const auto [host, all] = host_bound_blocks(pr);
  return QStringLiteral("%1 of %2 blocks host-bound; per step: host %3 ms, GPU %4 ms compute + %5 ms communication")
      .arg(host)
      .arg(all)
      .arg(pr.host_ms, 0, 'f', 2)
      .arg(pr.compute_ms, 0, 'f', 2)
      .arg(pr.comm_ms, 0, 'f', 2);
}

QString cache_text(const planner::RankedPlan& p) {
  const std::string_view policy = to_string(p.cache.policy);
  return QString::fromUtf8(policy.data(), static_cast<int>(policy.size()));
}

QString reasons_text(const planner::RankedPlan& p) {
  QStringList reasons;
  for (const auto& r : p.plan.reasons()) reasons << QString::fromStdString(r);
  return reasons.join(QStringLiteral("; "));
}

}  // namespace

void PlanTableModel::set_plans(std::vector<planner::RankedPlan> plans) {
  beginResetModel();
  plans_ = std::move(plans);
  valid_count_ = 0;
  for (const auto& p : plans_) valid_count_ += p.plan.valid();
  endResetModel();
}

int PlanTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(plans_.size());
}

int PlanTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant PlanTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const planner::RankedPlan& p = plans_[index.row()];
  const bool valid = p.plan.valid();
  const costmodel::Prediction* pr = p.predicted ? &*p.predicted : nullptr;
  const int column = index.column();

  switch (role) {
    case kIndexRole: return index.row();
    case kValidRole: return valid;
    case kFitsRole: return pr && pr->fits_memory;
    case kVariantRole: return static_cast<int>(p.plan.variant);
    case Qt::ToolTipRole:
      if (!valid) return QStringLiteral("invalid: ") + reasons_text(p);
      if (column == kBound) return bound_tooltip(*pr);
      return {};
    case Qt::ForegroundRole:
      if (!valid) return QBrush(QColor(0x80, 0x80, 0x80));
      if (column == kFits && pr && !pr->fits_memory) return QBrush(QColor(0xb0, 0x20, 0x20));
      return {};
    case Qt::TextAlignmentRole:
      if (column == kRank || (column >= kStepMs && column <= kFits))
        return static_cast<int>(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    case kSortRole: {
      constexpr double kLast = std::numeric_limits<double>::infinity();
      switch (column) {
        case kRank: return valid ? index.row() : kLast;  // the planner's order: rows are ranked
        case kPlan: return QString::fromStdString(plan_label(p.plan.config));
        case kVariant: return static_cast<int>(p.plan.variant);
        case kDtype: return QString::fromStdString(to_string(p.precision));
        case kCache: return cache_text(p);
        case kStepMs: return pr ? pr->step_ms : kLast;
        case kStepsPerSec: return pr ? -pr->steps_per_sec : kLast;  // fastest first, like the others
        case kImageS: return pr ? pr->image_ms : kLast;
        case kPeakGiB: return pr ? pr->peak_mem_bytes : kLast;
        case kFits: return pr ? (pr->fits_memory ? 0 : 1) : 2;
        case kPlacement: return pr ? placement_text(*pr) : QString();
        case kBound: return pr ? host_bound_blocks(*pr).first : kLast;  // GPU-bound first, then by host-bound blocks
        case kFrameworks: return frameworks_text(p);
        case kReasons: return reasons_text(p);
        default: return {};
      }
    }
    case Qt::DisplayRole:
      switch (column) {
        case kRank: return valid ? QVariant(index.row() + 1) : QVariant(QStringLiteral("-"));
        case kPlan: return QString::fromStdString(plan_label(p.plan.config));
        case kVariant: return QString::fromUtf8(display_name(p.plan.variant).data(),
                                                static_cast<int>(display_name(p.plan.variant).size()));
        case kDtype: return QString::fromStdString(to_string(p.precision));
        case kCache: return cache_text(p);
        case kStepMs: return pr ? QString::number(pr->step_ms, 'f', 2) : QString();
        case kStepsPerSec: return pr ? QString::number(pr->steps_per_sec, 'f', 2) : QString();
        case kImageS: return pr ? QString::number(pr->image_ms / 1e3, 'f', 2) : QString();
        case kPeakGiB: return pr ? QString::number(pr->peak_mem_bytes / kGiB, 'f', 1) : QString();
        case kFits: return !valid ? QStringLiteral("invalid") : pr->fits_memory ? QStringLiteral("yes") : QStringLiteral("NO");
        case kPlacement: return pr ? placement_text(*pr) : QString();
        case kBound: return pr ? bound_text(*pr) : QString();
        case kFrameworks: return valid ? frameworks_text(p) : QString();
        case kReasons: return reasons_text(p);
        default: return {};
      }
    default: return {};
  }
}

QVariant PlanTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[kColumnCount] = {"rank",     "plan",    "CP variant", "dtype",
                                                   "cache",    "step ms", "steps/s",    "image s",
                                                   "peak GiB", "fits",    "text enc / VAE", "bound",
                                                   "frameworks", "reasons"};
  return section >= 0 && section < kColumnCount ? QString::fromLatin1(kNames[section]) : QVariant();
}

PlanFilterProxy::PlanFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(PlanTableModel::kSortRole);
}

void PlanFilterProxy::set_show_invalid(bool show) {
  show_invalid_ = show;
  invalidateRowsFilter();
}

void PlanFilterProxy::set_fits_only(bool fits_only) {
  fits_only_ = fits_only;
  invalidateRowsFilter();
}

void PlanFilterProxy::set_variant(std::optional<CpVariant> variant) {
  variant_ = variant;
  invalidateRowsFilter();
}

bool PlanFilterProxy::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  const QModelIndex i = sourceModel()->index(source_row, 0, source_parent);
  const bool valid = i.data(PlanTableModel::kValidRole).toBool();
  if (!valid && !show_invalid_) return false;
  if (fits_only_ && !i.data(PlanTableModel::kFitsRole).toBool()) return false;
  if (variant_ && i.data(PlanTableModel::kVariantRole).toInt() != static_cast<int>(*variant_)) return false;
  return true;
}

bool PlanFilterProxy::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  // Invalid plans stay below the valid ones in either order (Qt reverses lessThan for descending).
  const bool left_valid = left.data(PlanTableModel::kValidRole).toBool();
  if (left_valid != right.data(PlanTableModel::kValidRole).toBool())
    return sortOrder() == Qt::AscendingOrder ? left_valid : !left_valid;
  const QVariant a = left.data(PlanTableModel::kSortRole), b = right.data(PlanTableModel::kSortRole);
  if (a.typeId() == QMetaType::QString || b.typeId() == QMetaType::QString)
    return QString::localeAwareCompare(a.toString(), b.toString()) < 0;
  const double x = a.toDouble(), y = b.toDouble();
  if (x != y) return x < y;
  // ties (e.g. every invalid row): the planner's order
  return left.data(PlanTableModel::kIndexRole).toInt() < right.data(PlanTableModel::kIndexRole).toInt();
}

}  // namespace cpplan::gui
