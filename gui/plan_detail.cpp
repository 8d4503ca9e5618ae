#include "gui/plan_detail.h"

#include <QClipboard>
#include <QFontDatabase>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/units.h"
#include "gui/charts.h"
#include "session/engine/explain.h"

namespace cpplan::gui {

namespace {
constexpr int kPlacementTab = 1;  // in views_, after the step and memory charts

}  // namespace

namespace {

// As the CLI's step_text (cli/render.cpp): "12.34 ms/step (GPU-bound: host 5.00 ms vs GPU 10.00
// compute + 2.34 communication, 0.10 waiting at collectives)".
std::string step_text(const costmodel::Prediction& pr) {
  int host_bound = 0, blocks = 0;
  for (int i = 0; i < pr.block_count; ++i) {
    host_bound += pr.blocks[i].host_bound() ? pr.blocks[i].count : 0;
    blocks += pr.blocks[i].count;
  }
  const std::string bound = host_bound == 0        ? "GPU-bound"
                            : host_bound == blocks ? "host-bound"
                                                   : fmt::format("{} of {} blocks host-bound", host_bound, blocks);
  std::string s = fmt::format("{:.2f} ms/step ({}: host {:.2f} ms vs GPU {:.2f} compute + {:.2f} communication",
                              pr.step_ms, bound, pr.host_ms, pr.compute_ms, pr.comm_ms);
  if (pr.sync_ms > 0) s += fmt::format(", {:.2f} waiting at collectives", pr.sync_ms);
  s += ")";
  if (pr.calibrated) s += fmt::format(", calibrated from {:.2f} analytic", pr.uncalibrated_step_ms);
  return s;
}

// "sharded (forced)" when the query asked for it, "sharded (auto)" when the planner picked it (the
// fastest that fits), as the query panel's combos say.
template <class Placement>
std::string placement_text(Placement chosen, const std::optional<Placement>& forced) {
  return fmt::format("{} ({})", to_string(chosen), forced ? "forced" : "auto");
}

}  // namespace

std::string topology_placement_text(const Query& q, const planner::RankedPlan& rp) {
  return session::placement_text(q, rp);  // the CLI's layout and --explain group table (session/engine/explain.h)
}

PlanDetail::PlanDetail(QWidget* parent)
    : QWidget(parent),
      summary_(new QLabel),
      breakdown_(new BreakdownChart),
      memory_(new MemoryChart),
      placement_(new QPlainTextEdit),
      kernels_(new QPlainTextEdit),
      views_(new QTabWidget),
      snippet_(new QPlainTextEdit),
      copy_(new QPushButton(QStringLiteral("Copy"))),
      run_(new QPushButton(QStringLiteral("Run this plan..."))) {
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  placement_->setReadOnly(true);
  placement_->setLineWrapMode(QPlainTextEdit::NoWrap);
  placement_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  placement_->setToolTip(QStringLiteral("which GPUs form each group, and each group's bandwidth with the other "
                                        "groups of its axis communicating at once (cpplan --explain)"));
  kernels_->setReadOnly(true);
  kernels_->setLineWrapMode(QPlainTextEdit::NoWrap);
  kernels_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  kernels_->setToolTip(QStringLiteral("each kind of kernel the step launches: which kernel the framework picks on this "
                                      "GPU, the resource that binds it, and the framework's source (cpplan --explain)"));
  snippet_->setReadOnly(true);
  snippet_->setLineWrapMode(QPlainTextEdit::NoWrap);
  snippet_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  copy_->setToolTip(QStringLiteral("copy the diffusers script and the xDiT line to the clipboard"));
  run_->setToolTip(QStringLiteral("launch `cpplan run` on this plan with local ranks (Run tab)"));

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(new QLabel(QStringLiteral("diffusers / xDiT")));
  buttons->addStretch(1);
  buttons->addWidget(copy_);
  buttons->addWidget(run_);
  auto* code = new QWidget;
  auto* code_layout = new QVBoxLayout(code);
  code_layout->setContentsMargins(0, 0, 0, 0);
  code_layout->addLayout(buttons);
  code_layout->addWidget(snippet_, 1);

  // The charts and, on a topology, the placement share one place: tabs, the placement enabled
  // only when the plan has one.
  auto* step_and_memory = new QSplitter(Qt::Vertical);
  step_and_memory->addWidget(breakdown_);
  step_and_memory->addWidget(memory_);
  step_and_memory->setSizes({230, 190});
  views_->addTab(step_and_memory, QStringLiteral("Step and memory"));
  views_->addTab(placement_, QStringLiteral("Placement"));
  views_->setTabEnabled(kPlacementTab, false);
  views_->addTab(kernels_, QStringLiteral("Kernels"));
  auto* charts = new QSplitter(Qt::Vertical);
  charts->addWidget(views_);
  charts->addWidget(code);
  charts->setSizes({420, 160});
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(summary_);
  layout->addWidget(charts, 1);

  connect(copy_, &QPushButton::clicked, this,
          [this] { QGuiApplication::clipboard()->setText(snippet_->toPlainText()); });
  connect(run_, &QPushButton::clicked, this, &PlanDetail::run_requested);
  set_plan(nullptr, nullptr);
}

void PlanDetail::set_plan(const Query* q, const planner::RankedPlan* p, std::optional<planner::Framework> framework,
                          const planner::PlanReport* report) {
  show_placement(q, p);
  if (!q || !p) return show_no_figures(QStringLiteral("No plan selected."), 0);
  const std::string label = plan_label(p->plan.config);
  const std::string_view variant = display_name(p->plan.variant);
  const double gpu_gib = q->hardware->memory_bytes() / kGiB;
  if (!p->plan.valid()) {
    std::string text = fmt::format("<b>{}</b> ({}) is invalid:<ul>", label, variant);
    for (const auto& r : p->plan.reasons()) text += "<li>" + QString::fromStdString(r).toHtmlEscaped().toStdString() + "</li>";
    return show_no_figures(QString::fromStdString(text + "</ul>"), gpu_gib);
  }
  const costmodel::Prediction& pr = *p->predicted;
  const std::string runtime = pr.runtime.empty() ? "kernel launches only" : pr.runtime + " runtime";
  // Its format and cache where the query ranks several; the steps it computes and those it reuses.
  const std::string format_cache = planner::format_cache_label(*q, *p);
  const int computed = q->steps - pr.cached_steps;
  const std::string steps = pr.cached_steps > 0 ? fmt::format("{} computed + {} cached steps", computed, pr.cached_steps)
                                                : fmt::format("{} steps", q->steps);
  summary_->setText(QString::fromStdString(fmt::format(
      "<b>{}</b> ({}{}, rotate {}) with the {}: {}, {:.2f} steps/s; {:.2f} s per image = {:.2f} text encoding + "
      "{:.2f} for {} + {:.2f} VAE decode + {:.2f} pipeline; text encoder {}, VAE {}; {:.2f} TFLOP and "
      "{:.1f} MB sent per rank per step; peak {:.1f} of {:.1f} GiB{}; predictions from {} figures",
      label, variant, format_cache.empty() ? "" : ", " + format_cache,
      to_string(p->plan.config.context_parallel_config.rotate_method), runtime, step_text(pr), pr.steps_per_sec,
      pr.image_ms / 1e3, pr.text_encode_ms / 1e3, (computed * pr.step_ms + pr.cached_steps * pr.cached_step_ms) / 1e3,
      steps,
      pr.vae_decode_ms / 1e3, pr.pipeline.host_ms / 1e3, placement_text(pr.pipeline.text_encoder, q->text_encoder),
      placement_text(pr.pipeline.vae, q->vae), pr.step_flops / 1e12, pr.comm_bytes / 1e6, pr.peak_mem_bytes / kGiB,
      gpu_gib, pr.fits_memory ? "" : " (does NOT fit)", costmodel::to_string(pr.source))));
  breakdown_->set_prediction(&pr);
  memory_->set_prediction(&pr, gpu_gib);
  const auto ex = session::explain(*q, *p);
  kernels_->setPlainText(ex ? QString::fromStdString(session::kernels_text(*ex)) : QString());
  snippet_->setPlainText(QString::fromStdString(plan_snippets(*q, *p, framework, report)));
  copy_->setEnabled(true);
  run_->setEnabled(true);
}

void PlanDetail::show_placement(const Query* q, const planner::RankedPlan* p) {
  const std::string placement = q && p ? topology_placement_text(*q, *p) : std::string();
  placement_->setPlainText(QString::fromStdString(placement));
  // Shown when a query first places plans (a topology was chosen); left to the user after that.
  const bool had_placement = views_->isTabEnabled(kPlacementTab);
  views_->setTabEnabled(kPlacementTab, !placement.empty());
  if (had_placement == placement.empty()) views_->setCurrentIndex(placement.empty() ? 0 : kPlacementTab);
}

void PlanDetail::show_no_figures(const QString& summary, double gpu_gib) {
  summary_->setText(summary);
  breakdown_->set_prediction(nullptr);
  memory_->set_prediction(nullptr, gpu_gib);
  snippet_->clear();
  kernels_->clear();
  copy_->setEnabled(false);
  run_->setEnabled(false);
}

QString PlanDetail::summary_text() const { return summary_->text(); }
QString PlanDetail::kernels_text() const { return kernels_->toPlainText(); }

QString PlanDetail::snippet_text() const { return snippet_->toPlainText(); }

QString PlanDetail::topology_text() const { return placement_->toPlainText(); }

bool PlanDetail::placement_shown() const { return views_->currentIndex() == kPlacementTab; }

}  // namespace cpplan::gui
