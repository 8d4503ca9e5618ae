#pragma once
// The Recommendation tab: session::recommend's answer as the CLI's text prints it, in a tree: the
// ranked rows (one per computation, "Ulysses/Anything" for both forms), the rejected plans grouped
// by the rule they break first with the GUI's control for its lever, and each framework's choice
// with its script lines. It renders; it computes nothing.

#include <QString>
#include <QTreeWidget>

#include "core/violation.h"
#include "session/engine/recommend.h"

namespace cpplan::gui {

// The query panel's control that moves a lever ("" when none does).
QString lever_control(Lever lever);

class RecommendationView : public QTreeWidget {
  Q_OBJECT

 public:
  enum Column { kKey, kPlan, kVariant, kFigure, kDetail, kColumnCount };
  enum Section { kRanked, kRejected, kFrameworks, kSectionCount };

  explicit RecommendationView(QWidget* parent = nullptr);
  // `rec` null: an empty view with `error` (the query's one line) as its only item.
  void set_recommendation(const session::Recommendation* rec, const QString& error = {});
  QTreeWidgetItem* section(Section s) const { return topLevelItem(s); }
};

}  // namespace cpplan::gui
