#include "gui/plan_detail.h"

#include <QClipboard>
#include <QFontDatabase>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QVBoxLayout>
#include <fmt/format.h>

#include "core/units.h"
#include "gui/charts.h"
#include "planner/snippets.h"

namespace cpplan::gui {

std::string plan_snippets(const Query& q, const planner::RankedPlan& p) { return planner::framework_snippets(q, p); }

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

PlanDetail::PlanDetail(QWidget* parent)
    : QWidget(parent),
      summary_(new QLabel),
      breakdown_(new BreakdownChart),
      memory_(new MemoryChart),
      snippet_(new QPlainTextEdit),
      copy_(new QPushButton(QStringLiteral("Copy"))),
      run_(new QPushButton(QStringLiteral("Run this plan..."))) {
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
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

  auto* charts = new QSplitter(Qt::Vertical);
  charts->addWidget(breakdown_);
  charts->addWidget(memory_);
  charts->addWidget(code);
  charts->setSizes({230, 190, 160});
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(summary_);
  layout->addWidget(charts, 1);

  connect(copy_, &QPushButton::clicked, this,
          [this] { QGuiApplication::clipboard()->setText(snippet_->toPlainText()); });
  connect(run_, &QPushButton::clicked, this, &PlanDetail::run_requested);
  set_plan(nullptr, nullptr);
}

void PlanDetail::set_plan(const Query* q, const planner::RankedPlan* p) {
  if (!q || !p) {
    summary_->setText(QStringLiteral("No plan selected."));
    breakdown_->set_prediction(nullptr);
    memory_->set_prediction(nullptr, 0);
    snippet_->clear();
    copy_->setEnabled(false);
    run_->setEnabled(false);
    return;
  }
  const std::string label = plan_label(p->plan.config);
  const std::string_view variant = display_name(p->plan.variant);
  const double gpu_gib = q->hardware->memory_bytes() / kGiB;
  if (!p->plan.valid()) {
    std::string text = fmt::format("<b>{}</b> ({}) is invalid:<ul>", label, variant);
    for (const auto& r : p->plan.reasons) text += "<li>" + QString::fromStdString(r).toHtmlEscaped().toStdString() + "</li>";
    summary_->setText(QString::fromStdString(text + "</ul>"));
    breakdown_->set_prediction(nullptr);
    memory_->set_prediction(nullptr, gpu_gib);
    snippet_->clear();
    copy_->setEnabled(false);
    run_->setEnabled(false);
    return;
  }
  const costmodel::Prediction& pr = *p->predicted;
  const std::string runtime = pr.runtime.empty() ? "kernel launches only" : pr.runtime + " runtime";
  summary_->setText(QString::fromStdString(fmt::format(
      "<b>{}</b> ({}, rotate {}) with the {}: {}, {:.2f} steps/s; {:.2f} s per image = {:.2f} text encoding + "
      "{:.2f} for {} steps + {:.2f} VAE decode + {:.2f} pipeline; text encoder {}, VAE {}; {:.2f} TFLOP and "
      "{:.1f} MB sent per rank per step; peak {:.1f} of {:.1f} GiB{}; predictions from {} figures",
      label, variant, to_string(p->plan.config.context_parallel_config.rotate_method), runtime, step_text(pr),
      pr.steps_per_sec, pr.image_ms / 1e3, pr.text_encode_ms / 1e3, q->steps * pr.step_ms / 1e3, q->steps,
      pr.vae_decode_ms / 1e3, pr.pipeline.host_ms / 1e3, placement_text(pr.pipeline.text_encoder, q->text_encoder),
      placement_text(pr.pipeline.vae, q->vae), pr.step_flops / 1e12, pr.comm_bytes / 1e6, pr.peak_mem_bytes / kGiB,
      gpu_gib, pr.fits_memory ? "" : " (does NOT fit)", costmodel::to_string(pr.source))));
  breakdown_->set_prediction(&pr);
  memory_->set_prediction(&pr, gpu_gib);
  snippet_->setPlainText(QString::fromStdString(plan_snippets(*q, *p)));
  copy_->setEnabled(true);
  run_->setEnabled(true);
}

QString PlanDetail::summary_text() const { return summary_->text(); }

QString PlanDetail::snippet_text() const { return snippet_->toPlainText(); }

}  // namespace cpplan::gui
