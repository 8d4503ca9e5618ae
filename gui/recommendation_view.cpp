#include "gui/recommendation_view.h"

#include <QHeaderView>
#include <QStringList>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cpplan::gui {

QString lever_control(Lever lever) {
  switch (lever) {
    case Lever::kResolution: return QStringLiteral("Resolution (width x height)");
    case Lever::kTextTokens: return QStringLiteral("Text tokens");
    case Lever::kModelHeads: return QStringLiteral("the model's heads");
    case Lever::kAttentionBackend: return QStringLiteral("Attention backend");
    case Lever::kGpuCount: return QStringLiteral("GPUs");
    case Lever::kDegree: return QStringLiteral("the plan's degrees");
    case Lever::kVariant: return QStringLiteral("Ulysses/Ring Anything");
    case Lever::kBatch: return QStringLiteral("Batch");
    case Lever::kSteps: return QStringLiteral("Steps");
    case Lever::kModel: return QStringLiteral("Model");
    case Lever::kNone: return {};
  }
  return {};
}

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QTreeWidgetItem* child(QTreeWidgetItem* parent, const QStringList& columns) {
  return new QTreeWidgetItem(parent, columns);
}

// The plan's label, with its format and cache where the query ranks several: "ulysses 4 (fp8, fbcache)".
QString plan_text(const Query& q, const planner::RankedPlan& p) {
  const std::string format_cache = planner::format_cache_label(q, p);
  return qs(plan_label(p.plan.config) + (format_cache.empty() ? "" : " (" + format_cache + ")"));
}

void add_rows(QTreeWidgetItem* section, const session::Recommendation& rec) {
  int rank = 0;
  for (const session::Row& row : rec.rows) {
    if (!rec.request.all && rank >= rec.request.top) break;
    const auto& pr = *row.plan->predicted;
    child(section, {QString::number(++rank), plan_text(rec.query(), *row.plan), qs(row.variant),
                    QStringLiteral("%1 ms/step").arg(pr.step_ms, 0, 'f', 2),
                    qs(session::frameworks_text(row))});
  }
}

void add_rejections(QTreeWidgetItem* section, const session::Recommendation& rec) {
  for (const session::Rejection& g : rec.rejections)
    child(section, {QString::number(g.count), qs(g.rule), lever_control(g.lever), QString(),
                    qs(plan_label(g.example->plan.config))});
}

QString gap_text(const session::FrameworkChoice& c) {
  if (!c.plan) return QStringLiteral("runs no plan here");
  if (c.top_unavailable.empty()) return QStringLiteral("top plan");
  return c.gap > 0.005 ? QStringLiteral("%1% slower").arg(c.gap * 100, 0, 'f', 0) : QStringLiteral("as fast");
}

void add_frameworks(QTreeWidgetItem* section, const session::Recommendation& rec) {
  for (const session::FrameworkChoice& c : rec.frameworks) {
    if (!c.shown) continue;
    auto* item = child(section, {qs(c.title), c.plan ? plan_text(rec.query(), *c.plan) : QString(),
                                 c.plan ? qs(std::string(display_name(c.plan->plan.variant))) : QString(), gap_text(c),
                                 qs(c.top_unavailable)});
    if (c.script)
      for (const std::string& line : c.script->lines) child(item, {QString(), qs(line)});
  }
}

}  // namespace

RecommendationView::RecommendationView(QWidget* parent) : QTreeWidget(parent) {
  setColumnCount(kColumnCount);
  setHeaderLabels({QStringLiteral(""), QStringLiteral("plan / rule / script"), QStringLiteral("variant / lever"),
                   QStringLiteral("step / gap"), QStringLiteral("frameworks / example / why not the top plan")});
  header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  set_recommendation(nullptr);
}

void RecommendationView::set_recommendation(const session::Recommendation* rec, const QString& error) {
  clear();
  auto* ranked = new QTreeWidgetItem(this, {QStringLiteral("Ranked")});
  auto* rejected = new QTreeWidgetItem(this, {QStringLiteral("Rejected")});
  auto* frameworks = new QTreeWidgetItem(this, {QStringLiteral("Frameworks")});
  if (!rec) {
    if (!error.isEmpty()) child(ranked, {QString(), error});
  } else {
    add_rows(ranked, *rec);
    add_rejections(rejected, *rec);
    add_frameworks(frameworks, *rec);
    ranked->setText(kDetail, qs(rec->prediction_source));
  }
  for (QTreeWidgetItem* s : {ranked, rejected, frameworks}) s->setExpanded(true);
}

}  // namespace cpplan::gui
