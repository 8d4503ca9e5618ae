#include "gui/main_window.h"
#include "session/engine/executor_support.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPixmap>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "core/units.h"
#include "data/store.h"
#include "gui/calibration_panel.h"
#include "gui/charts.h"
#include "gui/fleet_panel.h"
#include "gui/heatmap_view.h"
#include "gui/history_panel.h"
#include "gui/plan_detail.h"
#include "gui/plan_table_model.h"
#include "gui/query_panel.h"
#include "gui/recommendation_view.h"
#include "gui/run_panel.h"
#include "gui/sweep_panel.h"
#include "gui/tune_panel.h"

namespace cpplan::gui {

namespace {

QString qstr(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<int>(s.size())); }

// The heatmap does not depend on the size and GPU count of the query: its grid spans them.
QueryInput heatmap_key(QueryInput in) {
  in.width = in.height = 0;
  in.gpus = 1;
  in.nodes = 0;  // nor on the topology's node count: it plans without placement
  in.framework = "any";  // nor on the framework: it ranks every plan
  in.framework_versions.clear();  // and no framework's verdicts
  return in;
}

// As the CLI's line under the table: "12 valid plans that diffusers cannot run are left out".
QString hidden_text(const planner::PlanReport& r) {
  if (r.hidden_count == 0 || !r.framework) return {};
  const std::string_view name = framework_title(*r.framework);
  return QStringLiteral("; %1 valid plan%2 that %3 cannot run %4 left out (framework any shows %5)")
      .arg(r.hidden_count)
      .arg(r.hidden_count == 1 ? "" : "s")
      .arg(qstr(name))
      .arg(r.hidden_count == 1 ? "is" : "are")
      .arg(r.hidden_count == 1 ? "it" : "them");
}

// The status bar's line for a plan result: its error, else the counts (the valid, those that fit,
// the invalid, those --framework left out), the figures' source and the planning time.
QString plan_status(const PlanResult& res, const std::vector<planner::RankedPlan>& plans) {
  if (!res.error.empty()) return QString::fromStdString(res.error);
  const session::Recommendation& rec = *res.recommendation;
  const double gpu_gib = res.query->hardware->memory_bytes() / kGiB;
  // Each valid plan once per format and cache a framework runs it with, as the CLI's line says.
  const bool several = res.query->ranks_precisions() || res.query->ranks_caches();
  return QString::fromLatin1(several ? "%1 rows: %2 valid plans with a dtype and cache (%3 fit in %4 GiB), %5 invalid "
                                  "plans%6; predictions from %7; planned in %8 ms"
                                : "%1 plans: %2 valid (%3 fit in %4 GiB), %5 invalid%6; predictions from %7; "
                                  "planned in %8 ms")
      .arg(plans.size())
      .arg(rec.report.valid_count)
      .arg(rec.fitting)
      .arg(gpu_gib, 0, 'f', 1)
      .arg(rec.report.invalid_count)
      .arg(hidden_text(rec.report))
      .arg(QString::fromStdString(rec.prediction_source))
      .arg(res.elapsed_ms, 0, 'f', res.elapsed_ms < 1 ? 2 : 1);
}

}  // namespace

MainWindow::MainWindow(CatalogPtr catalog, const QString& db_path, QWidget* parent)
    : QMainWindow(parent),
      catalog_(std::move(catalog)),
      query_(new QueryPanel(catalog_)),
      plans_(new PlanTableModel(this)),
      proxy_(new PlanFilterProxy(this)),
      table_(new QTableView),
      show_invalid_(new QCheckBox(QStringLiteral("show invalid"))),
      fits_only_(new QCheckBox(QStringLiteral("fits memory only"))),
      variant_(new QComboBox),
      counts_(new QLabel),
      detail_(new PlanDetail),
      pareto_(new ParetoChart),
      heatmap_(new HeatmapView),
      heatmap_title_(new QLabel),
      history_(new HistoryPanel(db_path.isEmpty() ? QString::fromStdString(data::Store::default_path()) : db_path)),
      run_(new RunPanel),
      tune_(new TunePanel),
      calibration_(new CalibrationPanel(history_->db_path())),
      sweep_(new SweepPanel(history_->db_path())),
      fleet_(new FleetPanel),
      recommendation_(new RecommendationView),
      tabs_(new QTabWidget),
      status_(new QLabel) {
  setWindowTitle(QStringLiteral("cpplan: parallel configurations for diffusion transformers"));

  // Plans tab: filter bar and table above; the Pareto chart and the selected plan below.
  proxy_->setSourceModel(plans_);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(PlanTableModel::kRank, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(22);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setAlternatingRowColors(true);
  variant_->addItem(QStringLiteral("every CP variant"), -1);
  for (int v = 0; v < kCpVariantCount; ++v) variant_->addItem(qstr(display_name(static_cast<CpVariant>(v))), v);
  auto* filters = new QHBoxLayout;
  filters->addWidget(show_invalid_);
  filters->addWidget(fits_only_);
  filters->addWidget(variant_);
  filters->addStretch(1);
  filters->addWidget(counts_);
  auto* top = new QWidget;
  auto* top_layout = new QVBoxLayout(top);
  top_layout->setContentsMargins(0, 0, 0, 0);
  top_layout->addLayout(filters);
  top_layout->addWidget(table_, 1);
  auto* bottom = new QSplitter(Qt::Horizontal);
  bottom->addWidget(pareto_);
  bottom->addWidget(detail_);
  auto* plans_tab = new QSplitter(Qt::Vertical);
  plans_tab->addWidget(top);
  plans_tab->addWidget(bottom);
  plans_tab->setSizes({300, 520});  // about ten rows above, the charts below; kept in proportion
  bottom->setSizes({460, 700});

  auto* heat_tab = new QWidget;
  auto* heat_layout = new QVBoxLayout(heat_tab);
  heatmap_title_->setWordWrap(true);
  heat_layout->addWidget(heatmap_title_);
  heat_layout->addWidget(heatmap_, 1);

  tabs_->addTab(plans_tab, QStringLiteral("Plans"));
  tabs_->addTab(heat_tab, QStringLiteral("Heatmap"));
  tabs_->addTab(history_, QStringLiteral("History"));
  // Run tab: the selected plan for real above; below, the query's best candidates on the user's own
  // pipeline (cpplan tune).
  auto* tune_box = new QGroupBox(QStringLiteral("Tune on your pipeline (cpplan tune: the query's best candidates)"));
  auto* tune_layout = new QVBoxLayout(tune_box);
  tune_layout->addWidget(tune_);
  auto* run_tab = new QSplitter(Qt::Vertical);
  run_tab->addWidget(run_);
  run_tab->addWidget(tune_box);
  tabs_->addTab(run_tab, QStringLiteral("Run"));
  tabs_->addTab(calibration_, QStringLiteral("Calibration"));
  tabs_->addTab(sweep_, QStringLiteral("Sweep"));
  tabs_->addTab(fleet_, QStringLiteral("Fleet"));
  tabs_->addTab(recommendation_, QStringLiteral("Recommendation"));
  auto* central = new QSplitter(Qt::Horizontal);
  central->addWidget(query_);
  central->addWidget(tabs_);
  central->setStretchFactor(1, 1);
  central->setSizes({300, 1200});
  setCentralWidget(central);
  statusBar()->addWidget(status_, 1);
  run_->set_program(find_cpplan(QCoreApplication::applicationDirPath()));
  tune_->set_program(find_cpplan(QCoreApplication::applicationDirPath()));
  sweep_->set_program(find_cpplan(QCoreApplication::applicationDirPath()));

  connect(query_, &QueryPanel::changed, this, [this](const QueryInput& in) {
    request_plan(in);
    request_heatmap(in);
  });
  connect(&plan_watcher_, &QFutureWatcher<PlanResult>::finished, this, [this] {
    plan_in_flight_ = false;
    PlanResult r = plan_watcher_.result();
    if (r.generation == plan_generation_) apply_plan(std::move(r));  // else superseded: drop it
    if (plan_pending_) start_plan();
  });
  connect(&heat_watcher_, &QFutureWatcher<HeatmapResult>::finished, this, [this] {
    heat_in_flight_ = false;
    const HeatmapResult r = heat_watcher_.result();
    if (r.generation == heat_generation_) {
      heatmap_->set_result(r);
      heatmap_title_->setText(QStringLiteral("Best plan (fitting first) and its predicted step time for %1 on %2, "
                                             "by resolution and GPU count")
                                  .arg(QString::fromStdString(r.model), QString::fromStdString(r.hardware)));
      emit heatmap_shown();
      maybe_screenshot();
    }
    if (heat_pending_) start_heatmap();
  });
  connect(show_invalid_, &QCheckBox::toggled, this, [this](bool on) {
    proxy_->set_show_invalid(on);
    update_counts();
  });
  connect(fits_only_, &QCheckBox::toggled, this, [this](bool on) {
    proxy_->set_fits_only(on);
    update_counts();
  });
  connect(variant_, &QComboBox::currentIndexChanged, this, [this] {
    const int v = variant_->currentData().toInt();
    proxy_->set_variant(v < 0 ? std::nullopt : std::optional<CpVariant>(static_cast<CpVariant>(v)));
    update_counts();
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] { on_selection(); });
  connect(pareto_, &ParetoChart::plan_clicked, this, [this](int index) {
    const QModelIndex i = proxy_->mapFromSource(plans_->index(index, 0));
    if (i.isValid()) select_plan_row(i.row());
  });
  connect(detail_, &PlanDetail::run_requested, this, [this] { show_tab(QStringLiteral("Run")); });
  connect(fleet_, &FleetPanel::fleet_shown, this, [this] { maybe_screenshot(); });
  connect(run_, &RunPanel::run_finished, this, [this] { history_->reload(); });
  connect(tune_, &TunePanel::tune_finished, this, [this] { history_->reload(); });
  connect(sweep_, &SweepPanel::sweep_finished, this, [this] {
    history_->reload();
    calibration_->reload();
  });

  history_->reload();
  calibration_->reload();
  request_plan(query_->input());
  request_heatmap(query_->input());
}

MainWindow::~MainWindow() {
  plan_watcher_.waitForFinished();  // the jobs hold only values and the catalog; let them end
  heat_watcher_.waitForFinished();
}

void MainWindow::set_query(const QueryInput& in) { query_->set_input(in); }

void MainWindow::request_plan(const QueryInput& in) {
  plan_pending_ = in;
  ++plan_generation_;
  status_->setText(QStringLiteral("planning %1 GPUs...").arg(in.gpus));
  if (!plan_in_flight_) start_plan();
}

void MainWindow::start_plan() {
  const QueryInput in = *plan_pending_;
  plan_pending_.reset();
  plan_in_flight_ = true;
  // --hardware local reads this machine's probes in the History tab's database; the result keeps
  // the panel's input as it was.
  QueryInput with_db = in;
  if (with_db.db.empty()) with_db.db = history_->db_path().toStdString();
  plan_watcher_.setFuture(QtConcurrent::run(
      [catalog = catalog_, with_db, in, generation = plan_generation_] {
        PlanResult r = compute_plans(catalog, with_db, generation);
        r.input = in;
        return r;
      }));
}

bool MainWindow::planning() const { return plan_in_flight_ || plan_pending_.has_value(); }

void MainWindow::apply_plan(PlanResult r) {
  std::vector<planner::RankedPlan> plans = std::move(r.report.plans);
  r.report.plans.clear();
  result_ = std::move(r);
  const PlanResult& res = *result_;
  fleet_->set_request({res.recommendation, res.error});
  recommendation_->set_recommendation(res.recommendation.get(), QString::fromStdString(res.error));
  const double gpu_gib = res.query ? res.query->hardware->memory_bytes() / kGiB : 0;
  pareto_->set_plans(plans, gpu_gib, res.query ? &*res.query : nullptr);
  plans_->set_plans(std::move(plans));
  // The dtype and cache columns, where the query ranks several (as the CLI's table).
  table_->setColumnHidden(PlanTableModel::kDtype, !res.query || !res.query->ranks_precisions());
  table_->setColumnHidden(PlanTableModel::kCache, !res.query || !res.query->ranks_caches());
  status_->setText(plan_status(res, plans_->plans()));
  update_counts();
  table_->resizeColumnsToContents();
  if (proxy_->rowCount() > 0)
    select_plan_row(0);
  else
    on_selection();
  emit plans_shown(proxy_->rowCount());
  maybe_screenshot();
}

void MainWindow::maybe_screenshot() {
  if (screenshot_path_.isEmpty() || !result_ || planning()) return;
  if (tabs_->currentIndex() == 1 && (heat_in_flight_ || heat_pending_)) return;  // the heatmap tab waits for it
  if (tabs_->currentWidget() == fleet_ && fleet_->busy()) return;                  // and the fleet tab for its fleet
  QTimer::singleShot(100, this, [this] { take_screenshot(); });  // let the layout and charts settle
}

bool MainWindow::show_tab(const QString& name) {
  for (int i = 0; i < tabs_->count(); ++i)
    if (tabs_->tabText(i).compare(name, Qt::CaseInsensitive) == 0) {
      tabs_->setCurrentIndex(i);
      return true;
    }
  return false;
}

void MainWindow::request_heatmap(const QueryInput& in) {
  const QueryInput key = heatmap_key(in);
  if (heat_last_ && *heat_last_ == key) return;
  heat_last_ = key;
  heat_pending_ = key;
  ++heat_generation_;
  heatmap_->set_busy(QStringLiteral("computing..."));
  if (!heat_in_flight_) start_heatmap();
}

void MainWindow::start_heatmap() {
  const QueryInput in = *heat_pending_;
  heat_pending_.reset();
  heat_in_flight_ = true;
  // No resolutions: the model's (a model config's profile is known once resolved, off this thread).
  heat_watcher_.setFuture(QtConcurrent::run(compute_heatmap, catalog_, in, std::vector<Resolution>{},
                                            heatmap_gpu_counts(), heat_generation_));
}

int MainWindow::selected_plan() const {
  const QModelIndex current = table_->selectionModel()->currentIndex();
  return current.isValid() ? proxy_->mapToSource(current).row() : -1;
}

void MainWindow::select_plan_row(int proxy_row) {
  table_->selectRow(proxy_row);
  table_->scrollTo(proxy_->index(proxy_row, 0));
  on_selection();
}

QString MainWindow::status_text() const { return status_->text(); }

void MainWindow::on_selection() {
  const int index = selected_plan();
  const bool have = index >= 0 && result_ && result_->query;
  pareto_->set_selected(index);
  const bool query = result_ && result_->query;
  tune_->set_query(query ? result_->query : std::nullopt, history_->db_path(),
                   query ? QString::fromStdString(result_->input.model_config) : QString(),
                   QStringLiteral("plan a query first"));
  if (!have) {
    detail_->set_plan(nullptr, nullptr);
    run_->set_command({}, {}, QStringLiteral("select a valid plan in the Plans tab"));
    return;
  }
  const planner::RankedPlan& p = plans_->plan(index);
  // The ranking whole (the table holds the plans moved out of result_->report): a framework that
  // cannot run `p` names its fastest plan there.
  const planner::PlanReport* ranking = result_->recommendation ? &result_->recommendation->report : nullptr;
  detail_->set_plan(&*result_->query, &p, result_->report.framework, ranking);
  const QString label = QString::fromStdString(plan_label(p.plan.config));
  std::string unsupported =
      p.plan.valid() ? session::unsupported_plan(*result_->query->model, p.plan.config) : std::string();
  if (p.plan.valid() && unsupported.empty()) unsupported = session::unsupported_run_choice(p.precision, p.cache);
  if (!p.plan.valid())
    run_->set_command({}, {}, QStringLiteral("%1 is invalid: nothing to run").arg(label));
  else if (!unsupported.empty())  // as `cpplan run` would refuse it
    run_->set_command({}, {},
                      QStringLiteral("%1: cpplan run does not run it: %2").arg(label, QString::fromStdString(unsupported)));
  else
    run_->set_command(label, run_arguments(*result_->query, p.plan.config, history_->db_path(),
                                           QString::fromStdString(result_->input.model_config), p.precision, p.cache));
}

void MainWindow::update_counts() {
  counts_->setText(QStringLiteral("showing %1 of %2 plans").arg(proxy_->rowCount()).arg(plans_->rowCount()));
}

void MainWindow::screenshot_when_ready(const QString& path) {
  screenshot_path_ = path;
  maybe_screenshot();
}

void MainWindow::take_screenshot() {
  if (screenshot_path_.isEmpty()) return;
  const QString path = screenshot_path_;
  screenshot_path_.clear();
  const QPixmap image = grab();
  const bool ok = !image.isNull() && image.save(path);
  if (!ok) {
    emit screenshot_taken(false, QStringLiteral("cannot write %1").arg(path));
    return;
  }
  emit screenshot_taken(true, QStringLiteral("%1 plans shown (%2 valid, %3 invalid); wrote %4 (%5x%6, %7 tab)")
                                  .arg(proxy_->rowCount())
                                  .arg(result_ ? result_->report.valid_count : 0)
                                  .arg(result_ ? result_->report.invalid_count : 0)
                                  .arg(path)
                                  .arg(image.width())
                                  .arg(image.height())
                                  .arg(tabs_->tabText(tabs_->currentIndex())));
}

}  // namespace cpplan::gui
