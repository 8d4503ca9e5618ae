#include "gui/query_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QDoubleSpinBox>
#include <QVBoxLayout>
#include <algorithm>

#include "session/engine/engine.h"
#include "session/query/query_fields.h"

namespace cpplan::gui {

namespace {

// A spin box's range: its query field's bounds (session/query/query_fields.h), the CLI's own.
void set_field_range(QSpinBox* box, std::string_view flag) {
  const session::QueryField& f = session::query_field(flag);
  box->setRange(static_cast<int>(f.lo), static_cast<int>(f.hi));
}

// --nodes of nodes holding `gpus_per_node` GPUs each: the GPUs of every node within --gpus' bound.
int max_nodes(int gpus_per_node) {
  return static_cast<int>(session::query_field("--gpus").hi) / std::max(1, gpus_per_node);
}

}  // namespace


namespace {
QString qstr(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<int>(s.size())); }

// The placement combos: "auto" (data -1), then each placement (data: its enum value).
template <class Placement>
void fill_placements(QComboBox* box, int count) {
  box->addItem(QStringLiteral("auto"), -1);
  box->setItemData(0, QStringLiteral("the planner picks, per plan, the fastest that fits"), Qt::ToolTipRole);
  for (int i = 0; i < count; ++i) box->addItem(qstr(to_string(static_cast<Placement>(i))), i);
}

// The framework combo: "any", then each framework by the CLI's name (cpplan --framework).
void fill_frameworks(QComboBox* box) {
  box->addItem(QStringLiteral("any"));
  for (int i = 0; i < planner::kFrameworkCount; ++i)
    box->addItem(qstr(planner::to_string(static_cast<planner::Framework>(i))));
  box->addItem(QStringLiteral("cpplan"));
  box->setToolTip(QStringLiteral("rank only the plans this framework runs"));
}

// A framework's version combo: its default file (data ""), then each other file of it (data: the
// name cpplan --framework-version takes), by the version line of the file; null when it has none.
QComboBox* version_combo(const ProfileCatalog& catalog, Framework f) {
  const FrameworkProfile* standard = catalog.find_framework(to_string(f));
  QComboBox* box = nullptr;
  for (const FrameworkProfile& p : catalog.frameworks()) {
    if (p.framework != f || p.name == to_string(f)) continue;
    if (!box) {
      box = new QComboBox;
      const QString version = standard ? qstr(standard->version) : qstr(to_string(f));
      box->addItem(QStringLiteral("default: %1").arg(version), QString());
      if (standard) box->setItemData(0, qstr(standard->description), Qt::ToolTipRole);
      box->setToolTip(QStringLiteral("the release whose features decide which plans it runs, and its launch line "
                                     "(cpplan --framework-version)"));
      // Long version lines are elided in the box (the list shows them whole): the panel keeps its width.
      box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
      box->setMinimumContentsLength(16);
    }
    box->addItem(QStringLiteral("%1: %2").arg(qstr(p.name), qstr(p.version)), qstr(p.name));
    box->setItemData(box->count() - 1, qstr(p.description), Qt::ToolTipRole);
  }
  return box;
}

// The combo's last item: "any", with what it ranks as its tooltip.
void add_any(QComboBox* box, const QString& tooltip) {
  box->addItem(QStringLiteral("any"));
  box->setItemData(box->count() - 1, tooltip, Qt::ToolTipRole);
}

template <class Placement>
std::optional<Placement> placement_of(const QComboBox* box) {
  const int v = box->currentData().toInt();
  return v < 0 ? std::nullopt : std::optional<Placement>(static_cast<Placement>(v));
}

template <class Placement>
void show_placement(QComboBox* box, const std::optional<Placement>& p) {
  box->setCurrentIndex(box->findData(p ? static_cast<int>(*p) : -1));
}
}  // namespace

QueryPanel::QueryPanel(CatalogPtr catalog, QWidget* parent)
    : QWidget(parent),
      catalog_(std::move(catalog)),
      model_(new QComboBox),
      facts_(new QLabel),
      width_(new QSpinBox),
      height_(new QSpinBox),
      frames_(new QSpinBox),
      gpus_(new QSpinBox),
      hardware_(new QComboBox),
      batch_(new QSpinBox),
      topology_(new QComboBox),
      nodes_(new QSpinBox),
      steps_(new QSpinBox),
      backend_(new QComboBox),
      dtype_(new QComboBox),
      cache_(new QComboBox),
      cache_fn_(new QSpinBox),
      cache_bn_(new QSpinBox),
      cache_warmup_(new QSpinBox),
      cache_every_(new QSpinBox),
      cache_hit_rate_(new QDoubleSpinBox),
      cache_max_cached_(new QSpinBox),
      runtime_(new QComboBox),
      framework_(new QComboBox),
      text_encoder_(new QComboBox),
      vae_(new QComboBox),
      anything_(new QCheckBox(QStringLiteral("allow Ulysses / Ring Anything"))),
      config_edit_(new QLineEdit),
      config_open_(new QPushButton(QStringLiteral("Model config..."))),
      config_clear_(new QPushButton(QStringLiteral("Clear"))),
      config_error_(new QLabel),
      all_plans_(new QCheckBox(QStringLiteral("list every plan (cpplan --all)"))),
      host_mem_(new QDoubleSpinBox),
      offload_transformer_(new QCheckBox(QStringLiteral("offload the idle transformer (cpplan --offload-idle-transformer)"))) {
  for (const ModelProfile& m : catalog_->models()) {
    model_->addItem(QString::fromStdString(m.name));
    model_->setItemData(model_->count() - 1, QString::fromStdString(m.description), Qt::ToolTipRole);
  }
  for (const HardwareProfile& h : catalog_->hardware_profiles()) {
    hardware_->addItem(QString::fromStdString(h.name));
    hardware_->setItemData(hardware_->count() - 1, QString::fromStdString(h.description), Qt::ToolTipRole);
  }
  hardware_->addItem(QStringLiteral("local"));
  hardware_->setItemData(hardware_->count() - 1,
                         QStringLiteral("this machine as probed (cpplan probe) and calibrated (cpplan calibrate), "
                                        "from the database of the History tab"),
                         Qt::ToolTipRole);
  topology_->addItem(QStringLiteral("none"), QString());
  topology_->setItemData(0, QStringLiteral("the hardware profile's links, no placement"), Qt::ToolTipRole);
  for (const Topology& t : catalog_->topologies()) {
    topology_->addItem(QString::fromStdString(t.name), QString::fromStdString(t.name));
    topology_->setItemData(topology_->count() - 1,
                           QStringLiteral("%1 x %2: %3")
                               .arg(t.gpus)
                               .arg(QString::fromStdString(t.hardware), QString::fromStdString(t.description)),
                           Qt::ToolTipRole);
  }
  topology_->setToolTip(QStringLiteral("place every plan's groups on this node's GPUs and links (cpplan --topology)"));
  backend_->addItem(QStringLiteral("default (the framework's pick)"));
  for (int b = 0; b < kAttentionBackendCount; ++b) backend_->addItem(qstr(to_string(static_cast<AttentionBackend>(b))));
  for (const Precision& p : precision_choices()) {
    dtype_->addItem(qstr(to_string(p)));
    dtype_->setItemData(dtype_->count() - 1, qstr(describe(p)), Qt::ToolTipRole);
  }
  add_any(dtype_, QStringLiteral("rank every format the GPU runs that a framework offers (cpplan --dtype any)"));
  dtype_->setToolTip(QStringLiteral("the DiT linears' number format (cpplan --dtype); a format the GPU or the "
                                    "framework cannot run is refused with the CLI's line"));
  for (int i = 0; i <= static_cast<int>(CachePolicy::kFixed); ++i)
    cache_->addItem(qstr(to_string(static_cast<CachePolicy>(i))));
  add_any(cache_, QStringLiteral("rank no cache and every cache a framework ships, at its defaults (cpplan --cache any)"));
  cache_->setToolTip(QStringLiteral("a step cache (cpplan --cache): the middle blocks of a cached step reuse their "
                                    "residual; the frameworks column keeps those that ship it with the plan"));
  runtime_->addItem(QStringLiteral("framework's"), QString());  // cpplan without --runtime
  runtime_->setItemData(0, QStringLiteral("the runtime of the framework below (xdit for xdit), else diffusers"),
                        Qt::ToolTipRole);
  for (const RuntimeProfile& r : catalog_->runtimes()) {
    runtime_->addItem(QString::fromStdString(r.name), QString::fromStdString(r.name));
    runtime_->setItemData(runtime_->count() - 1, QString::fromStdString(r.description), Qt::ToolTipRole);
  }
  runtime_->setToolTip(QStringLiteral("how the framework runs the plan: its host cost per op, fusion, waits"));
  fill_frameworks(framework_);
  fill_placements<TextEncoderPlacement>(text_encoder_, kTextEncoderPlacementCount);
  text_encoder_->setToolTip(QStringLiteral("where the text encoders live: on every GPU, offloaded to the host, "
                                           "loaded only to encode, sharded over the plan's GPUs, or the largest sharded "
                                           "with fully sharded weights (on the GPU or in host memory, as xDiT does)"));
  fill_placements<VaePlacement>(vae_, kVaePlacementCount);
  vae_->setToolTip(QStringLiteral("the VAE decode on one GPU, patch-parallel over the plan's GPUs, or on one GPU tile by tile or image by image (tiled, sliced: less memory, more time)"));
  set_field_range(width_, "--res");  // each side
  set_field_range(height_, "--res");
  width_->setSuffix(QStringLiteral(" px"));
  height_->setSuffix(QStringLiteral(" px"));
  set_field_range(frames_, "--frames");
  set_field_range(gpus_, "--gpus");
  set_field_range(batch_, "--batch");
  batch_->setToolTip(QStringLiteral("images generated together (cpplan --batch); dp_degree must divide it"));
  set_field_range(nodes_, "--nodes");
  nodes_->setEnabled(false);
  nodes_->setToolTip(QStringLiteral(
      "nodes of the topology, or of a PCIe GPU's usual server, joined by their network (cpplan --nodes)"));
  set_field_range(steps_, "--steps");
  anything_->setChecked(true);
  all_plans_->setToolTip(QStringLiteral("also the fully-sharded twins (fs > 1) of every valid plan, not only of "
                                        "those that do not fit, and data parallel for one image"));
  facts_->setWordWrap(true);
  facts_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  facts_->setMinimumWidth(240);

  auto* form = new QFormLayout;
  form->addRow(QStringLiteral("Model"), model_);
  form->addRow(config_row());
  form->addRow(config_error_);
  form->addRow(facts_);
  form->addRow(QStringLiteral("Width"), width_);
  form->addRow(QStringLiteral("Height"), height_);
  form->addRow(QStringLiteral("Frames"), frames_);
  form->addRow(QStringLiteral("GPUs"), gpus_);
  form->addRow(QStringLiteral("Batch"), batch_);
  form->addRow(QStringLiteral("Topology"), topology_);
  form->addRow(QStringLiteral("Nodes"), nodes_);
  host_mem_->setRange(0, session::query_field("--host-mem").hi);  // 0: the profile's
  host_mem_->setDecimals(0);
  host_mem_->setSuffix(QStringLiteral(" GiB"));
  host_mem_->setSpecialValueText(QStringLiteral("profile's"));
  host_mem_->setToolTip(QStringLiteral("host memory of one node (cpplan --host-mem): every rank of a node loads its "
                                       "own copy of the pipeline there first; 0: the hardware profile's"));
  form->addRow(QStringLiteral("Host memory"), host_mem_);
  form->addRow(QStringLiteral("Hardware"), hardware_);
  form->addRow(QStringLiteral("Steps"), steps_);
  form->addRow(QStringLiteral("Attention"), backend_);
  form->addRow(QStringLiteral("Dtype"), dtype_cache_row());
  form->addRow(cache_parameters_row());
  form->addRow(QStringLiteral("Runtime"), runtime_);
  form->addRow(QStringLiteral("Framework"), framework_);
  add_framework_versions(form);
  form->addRow(QStringLiteral("Text encoder"), text_encoder_);
  form->addRow(QStringLiteral("VAE"), vae_);
  form->addRow(anything_);
  form->addRow(all_plans_);
  offload_transformer_->setToolTip(QStringLiteral("a pipeline of two transformers (Wan2.2 A14B) keeps the one not "
                                                  "denoising in host memory and loads each once per image"));
  form->addRow(offload_transformer_);
  auto* box = new QGroupBox(QStringLiteral("Query"));
  box->setLayout(form);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(box);
  layout->addStretch(1);

  connect(model_, &QComboBox::currentIndexChanged, this, [this] {
    apply_model_defaults();
    emit_changed();
  });
  for (QSpinBox* s : {width_, height_, frames_, gpus_, steps_, batch_})
    connect(s, &QSpinBox::valueChanged, this, [this] { emit_changed(); });
  // A topology (or another node count) sets the hardware and GPU count, as the CLI's defaults do;
  // both stay editable (fewer GPUs of one node, another hardware profile).
  connect(topology_, &QComboBox::currentIndexChanged, this, [this] {
    if (topology_->currentData().toString().isEmpty()) {  // back to no topology: one node of the hardware
      const bool was_quiet = quiet_;
      quiet_ = true;
      nodes_->setValue(1);
      quiet_ = was_quiet;
    }
    apply_topology_defaults();
    emit_changed();
  });
  connect(host_mem_, &QDoubleSpinBox::valueChanged, this, [this] { emit_changed(); });
  connect(nodes_, &QSpinBox::valueChanged, this, [this] {
    apply_topology_defaults();
    emit_changed();
  });
  connect(hardware_, &QComboBox::currentIndexChanged, this, [this] {
    if (topology_->currentData().toString().isEmpty()) apply_hardware_node();
  });
  for (QComboBox* c : {hardware_, backend_, dtype_, runtime_, framework_, text_encoder_, vae_})
    connect(c, &QComboBox::currentIndexChanged, this, [this] { emit_changed(); });
  connect(cache_, &QComboBox::currentIndexChanged, this, [this] {
    enable_cache_parameters();
    emit_changed();
  });
  for (QSpinBox* s : {cache_fn_, cache_bn_, cache_warmup_, cache_every_, cache_max_cached_})
    connect(s, &QSpinBox::valueChanged, this, [this] { emit_changed(); });
  connect(cache_hit_rate_, &QDoubleSpinBox::valueChanged, this, [this] { emit_changed(); });
  for (QComboBox* c : versions_)
    if (c) connect(c, &QComboBox::currentIndexChanged, this, [this] { emit_changed(); });
  for (QCheckBox* c : {anything_, all_plans_, offload_transformer_}) connect(c, &QCheckBox::toggled, this, [this] { emit_changed(); });

  const int flux = model_->findText(QStringLiteral("flux.1-dev"));
  const int h100 = hardware_->findText(QString::fromUtf8(session::kFallbackHardware));
  const int runtime = runtime_->findData(QString::fromStdString(QueryInput{}.runtime));
  quiet_ = true;
  model_->setCurrentIndex(flux >= 0 ? flux : 0);
  hardware_->setCurrentIndex(h100 >= 0 ? h100 : 0);
  runtime_->setCurrentIndex(runtime >= 0 ? runtime : 0);
  gpus_->setValue(4);
  apply_model_defaults();
  quiet_ = false;
  update_facts();
}

QWidget* QueryPanel::config_row() {
  config_edit_->setPlaceholderText(QStringLiteral("config.json or pipeline folder"));
  config_edit_->setToolTip(QStringLiteral("plan a diffusers checkpoint instead of the model above, from its "
                                          "transformer config.json or pipeline folder (cpplan --model-config)"));
  config_open_->setToolTip(QStringLiteral("choose a transformer config.json, or a pipeline's model_index.json for "
                                          "its folder"));
  config_clear_->setToolTip(QStringLiteral("plan the model above again"));
  config_clear_->setEnabled(false);
  config_error_->setWordWrap(true);
  config_error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  config_error_->setStyleSheet(QStringLiteral("color: #b3261e"));
  config_error_->hide();
  connect(config_open_, &QPushButton::clicked, this, [this] { choose_model_config(); });
  connect(config_clear_, &QPushButton::clicked, this, [this] { set_model_config({}); });
  // Enter or leaving the field applies a typed path (the one in use is not read again).
  connect(config_edit_, &QLineEdit::editingFinished, this, [this] {
    const QString path = config_edit_->text().trimmed();
    if (path.toStdString() != config_path_) set_model_config(path);
  });
  auto* row = new QWidget;
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(config_open_);
  layout->addWidget(config_edit_, 1);
  layout->addWidget(config_clear_);
  return row;
}

namespace {
// A cache parameter's box: the field's bounds (session/query/query_fields.h) with one more value
// below them, shown as "policy's": the parameter left to the policy (the flag not given).
void set_cache_range(QSpinBox* box, std::string_view flag) {
  const session::QueryField& f = session::query_field(flag);
  box->setRange(static_cast<int>(f.lo) - 1, static_cast<int>(f.hi));
  box->setSpecialValueText(QStringLiteral("policy's"));
  box->setValue(box->minimum());
  box->setToolTip(QString::fromStdString(f.help));
}

// Shows `text` in `box`: its item, one added for a list the CLI takes ("fp8,bf16"), or the first
// item for "" (bf16, none).
void show_choice(QComboBox* box, const std::string& text) {
  const QString t = QString::fromStdString(text);
  if (!t.isEmpty() && box->findText(t) < 0) box->addItem(t);
  box->setCurrentIndex(std::max(0, box->findText(t)));
}

// The box's value, unset at its minimum ("policy's").
std::optional<int> cache_value(const QSpinBox* box) {
  return box->value() == box->minimum() ? std::nullopt : std::optional<int>(box->value());
}
}  // namespace

QWidget* QueryPanel::dtype_cache_row() {
  auto* row = new QWidget;
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(dtype_, 1);
  layout->addWidget(new QLabel(QStringLiteral("Cache")));
  layout->addWidget(cache_, 1);
  return row;
}

QWidget* QueryPanel::cache_parameters_row() {
  set_cache_range(cache_fn_, "--cache-fn");
  set_cache_range(cache_bn_, "--cache-bn");
  set_cache_range(cache_warmup_, "--cache-warmup");
  set_cache_range(cache_every_, "--cache-every");
  set_cache_range(cache_max_cached_, "--cache-max-cached");
  const session::QueryField& rate = session::query_field("--cache-hit-rate");
  cache_hit_rate_->setDecimals(2);
  cache_hit_rate_->setSingleStep(0.05);
  cache_hit_rate_->setRange(rate.lo, rate.hi);  // the field's (0, 0.99]: its lower bound is "policy's"
  cache_hit_rate_->setSpecialValueText(QStringLiteral("policy's"));
  cache_hit_rate_->setValue(rate.lo);
  cache_hit_rate_->setToolTip(QString::fromStdString(rate.help));
  auto* row = new QWidget;
  auto* grid = new QGridLayout(row);
  grid->setContentsMargins(0, 0, 0, 0);
  // Two rows of three: the blocks a cached step runs and the warm-up; the schedule.
  const std::pair<const char*, QWidget*> boxes[] = {{"F", cache_fn_},          {"B", cache_bn_},
                                                    {"warm-up", cache_warmup_}, {"every", cache_every_},
                                                    {"hit", cache_hit_rate_},   {"max", cache_max_cached_}};
  for (int i = 0; i < static_cast<int>(std::size(boxes)); ++i) {
    auto* label = new QLabel(QString::fromLatin1(boxes[i].first));
    label->setToolTip(boxes[i].second->toolTip());
    grid->addWidget(label, i / 3, (i % 3) * 2);
    grid->addWidget(boxes[i].second, i / 3, (i % 3) * 2 + 1);
  }
  enable_cache_parameters();
  return row;
}

void QueryPanel::enable_cache_parameters() {
  // The policies the combo names (any: every one; a list: each); a box is enabled when one takes it.
  const QStringList chosen = cache_->currentText().split(QLatin1Char(','));
  const auto takes = [&](std::string_view flag) {
    for (int i = 1; i <= static_cast<int>(CachePolicy::kFixed); ++i) {
      const auto p = static_cast<CachePolicy>(i);
      const bool named = chosen.contains(QStringLiteral("any")) || chosen.contains(qstr(to_string(p)));
      if (named && parameter_refusal(p, flag).empty()) return true;
    }
    return false;
  };
  cache_fn_->setEnabled(takes("--cache-fn"));
  cache_bn_->setEnabled(takes("--cache-bn"));
  cache_warmup_->setEnabled(takes("--cache-warmup"));
  cache_every_->setEnabled(takes("--cache-every"));
  cache_hit_rate_->setEnabled(takes("--cache-hit-rate"));
  cache_max_cached_->setEnabled(takes("--cache-max-cached"));
}

void QueryPanel::add_framework_versions(QFormLayout* form) {
  for (int i = 0; i < kFrameworkCount; ++i) {
    const auto f = static_cast<Framework>(i);
    versions_[i] = version_combo(*catalog_, f);
    if (!versions_[i]) continue;
    const FrameworkProfile* standard = catalog_->find_framework(to_string(f));
    form->addRow(QStringLiteral("%1 version").arg(standard ? qstr(standard->title) : qstr(to_string(f))), versions_[i]);
  }
}

void QueryPanel::choose_model_config() {
  const QString start = config_path_.empty() ? QString() : QFileInfo(QString::fromStdString(config_path_)).path();
  QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Diffusers model config"), start,
                                              QStringLiteral("diffusers configs (*.json);;all files (*)"));
  if (path.isEmpty()) return;  // cancelled
  // A pipeline is read from its folder: transformer/, text encoders and VAE (core/diffusers_config.h).
  if (QFileInfo(path).fileName() == QStringLiteral("model_index.json")) path = QFileInfo(path).path();
  set_model_config(path);
}

bool QueryPanel::set_model_config(const QString& path) {
  if (!apply_model_config(path)) return false;
  emit_changed();
  return true;
}

bool QueryPanel::apply_model_config(const QString& path) {
  config_edit_->setText(path);
  QueryInput probe;
  probe.model_config = path.toStdString();
  auto resolved = resolve_model_config(catalog_, probe);
  if (!resolved) {
    show_config_error(QString::fromStdString(resolved.error().message));
    return false;  // the previous config (or model) stays, and so does its table
  }
  show_config_error({});
  config_path_ = probe.model_config;
  config_catalog_ = path.isEmpty() ? nullptr : resolved->catalog;
  config_model_ = path.isEmpty() ? std::string() : resolved->input.model;
  model_->setEnabled(path.isEmpty());
  config_clear_->setEnabled(!path.isEmpty());
  apply_model_defaults();
  return true;
}

void QueryPanel::show_config_error(const QString& message) {
  config_error_->setText(message);
  config_error_->setVisible(!message.isEmpty());
}

const ModelProfile* QueryPanel::current_model() const {
  if (config_catalog_) return config_catalog_->find_model(config_model_);
  return catalog_->find_model(model_->currentText().toStdString());
}

void QueryPanel::apply_model_defaults() {
  const ModelProfile* m = current_model();
  if (!m) return;
  const bool was_quiet = quiet_;
  quiet_ = true;
  const int step = m->pixel_granularity();
  for (QSpinBox* s : {width_, height_}) {
    s->setSingleStep(step);
    s->setToolTip(QStringLiteral("a multiple of %1 (VAE factor x patch size)").arg(step));
  }
  width_->setValue(m->default_width);
  height_->setValue(m->default_height);
  frames_->setSingleStep(std::max(1, m->vae.temporal));
  frames_->setValue(m->default_frames);
  frames_->setEnabled(m->video);
  steps_->setValue(m->default_steps);
  offload_transformer_->setEnabled(m->transformers > 1);  // nothing is idle in a one-transformer pipeline
  if (m->transformers < 2) offload_transformer_->setChecked(false);
  quiet_ = was_quiet;
}

// Without a topology, the nodes are the hardware profile's usual server ([node] of a PCIe GPU),
// as the CLI's --nodes without --topology: N of them set the GPU count.
void QueryPanel::apply_hardware_node() {
  const HardwareProfile* h = catalog_->find_hardware(hardware_->currentText().toStdString());
  const bool has_node = h && h->node;
  nodes_->setEnabled(has_node);
  if (!has_node || nodes_->value() < 2) return;
  const bool was_quiet = quiet_;
  quiet_ = true;
  nodes_->setMaximum(max_nodes(h->gpus_per_node));
  gpus_->setValue(nodes_->value() * h->gpus_per_node);
  quiet_ = was_quiet;
}

void QueryPanel::apply_topology_defaults() {
  const Topology* t = catalog_->find_topology(topology_->currentData().toString().toStdString());
  if (!t) return apply_hardware_node();
  nodes_->setEnabled(true);
  const bool was_quiet = quiet_;
  quiet_ = true;
  nodes_->setMaximum(max_nodes(t->gpus));
  gpus_->setValue(nodes_->value() * t->gpus);
  const int h = hardware_->findText(QString::fromStdString(t->hardware));
  if (h >= 0) hardware_->setCurrentIndex(h);
  quiet_ = was_quiet;
}

QueryInput QueryPanel::input() const {
  QueryInput in;
  in.model = model_->currentText().toStdString();
  in.hardware = hardware_->currentText().toStdString();
  in.gpus = gpus_->value();
  in.batch = batch_->value();
  in.topology = topology_->currentData().toString().toStdString();
  // Without a topology, nodes of the hardware's usual server count only when more than one.
  in.nodes = !in.topology.empty() || (nodes_->isEnabled() && nodes_->value() > 1) ? nodes_->value() : 0;
  in.width = width_->value();
  in.height = height_->value();
  in.frames = frames_->isEnabled() ? frames_->value() : 1;
  in.steps = steps_->value();
  in.backend = backend_->currentIndex() > 0 ? std::optional(static_cast<AttentionBackend>(backend_->currentIndex() - 1))
                                            : std::nullopt;
  in.dtype = dtype_->currentText().toStdString();
  in.cache = cache_->currentText().toStdString();
  // A disabled box is a parameter no chosen policy takes: not given (the CLI would refuse it).
  const auto given = [](const QSpinBox* box) { return box->isEnabled() ? cache_value(box) : std::nullopt; };
  in.cache_fn = given(cache_fn_);
  in.cache_bn = given(cache_bn_);
  in.cache_warmup = given(cache_warmup_);
  in.cache_every = given(cache_every_);
  in.cache_max_cached = given(cache_max_cached_);
  if (cache_hit_rate_->isEnabled() && cache_hit_rate_->value() > cache_hit_rate_->minimum())
    in.cache_hit_rate = cache_hit_rate_->value();
  in.allow_anything = anything_->isChecked();
  in.runtime = runtime_->currentData().toString().toStdString();
  in.framework = framework_->currentText().toStdString();
  in.text_encoder = placement_of<TextEncoderPlacement>(text_encoder_);
  in.vae = placement_of<VaePlacement>(vae_);
  in.model_config = config_path_;
  for (const QComboBox* box : versions_)
    if (box && !box->currentData().toString().isEmpty())
      in.framework_versions.push_back(box->currentData().toString().toStdString());
  in.all_plans = all_plans_->isChecked();
  in.offload_idle_transformer = offload_transformer_->isChecked();
  in.host_mem_gib = host_mem_->value();
  return in;
}

void QueryPanel::set_input(const QueryInput& in) {
  quiet_ = true;
  const int m = model_->findText(QString::fromStdString(in.model));
  if (m >= 0) model_->setCurrentIndex(m);
  if (in.model_config != config_path_) apply_model_config(QString::fromStdString(in.model_config));
  apply_model_defaults();
  if (in.width > 0) width_->setValue(in.width);
  if (in.height > 0) height_->setValue(in.height);
  if (in.frames > 0) frames_->setValue(in.frames);
  if (in.steps > 0) steps_->setValue(in.steps);
  batch_->setValue(in.batch);
  const int t = topology_->findData(QString::fromStdString(in.topology));
  topology_->setCurrentIndex(t >= 0 ? t : 0);
  nodes_->setValue(in.nodes > 0 ? in.nodes : 1);
  apply_topology_defaults();  // "" hardware and 0 GPUs: the topology's
  if (in.gpus > 0) gpus_->setValue(in.gpus);
  const int h = hardware_->findText(QString::fromStdString(in.hardware));
  if (h >= 0) hardware_->setCurrentIndex(h);
  backend_->setCurrentIndex(in.backend ? static_cast<int>(*in.backend) + 1 : 0);
  show_choice(dtype_, in.dtype);
  show_choice(cache_, in.cache);
  enable_cache_parameters();
  const auto show = [](QSpinBox* box, const std::optional<int>& v) { box->setValue(v ? *v : box->minimum()); };
  show(cache_fn_, in.cache_fn);
  show(cache_bn_, in.cache_bn);
  show(cache_warmup_, in.cache_warmup);
  show(cache_every_, in.cache_every);
  show(cache_max_cached_, in.cache_max_cached);
  cache_hit_rate_->setValue(in.cache_hit_rate ? *in.cache_hit_rate : cache_hit_rate_->minimum());
  anything_->setChecked(in.allow_anything);
  const int r = runtime_->findData(QString::fromStdString(in.runtime));
  if (r >= 0) runtime_->setCurrentIndex(r);
  const int f = framework_->findText(QString::fromStdString(in.framework));
  if (f >= 0) framework_->setCurrentIndex(f);
  show_placement(text_encoder_, in.text_encoder);
  show_placement(vae_, in.vae);
  for (QComboBox* box : versions_) {
    if (!box) continue;
    int chosen = 0;  // the default, unless `in` names one of this framework's other files
    for (const std::string& name : in.framework_versions)
      if (const int i = box->findData(QString::fromStdString(name)); i > 0) chosen = i;
    box->setCurrentIndex(chosen);
  }
  all_plans_->setChecked(in.all_plans);
  offload_transformer_->setChecked(in.offload_idle_transformer);
  host_mem_->setValue(in.host_mem_gib);
  quiet_ = false;
  emit_changed();
}

QString QueryPanel::facts_text() const { return facts_->text(); }

void QueryPanel::update_facts() {
  QueryInput in = input();
  if (config_catalog_) {  // the config's profile, as resolve_model_config names it
    in.model = config_model_;
    in.model_config.clear();
  }
  facts_->setText(QString::fromStdString(model_facts(config_catalog_ ? *config_catalog_ : *catalog_, in)));
}

void QueryPanel::emit_changed() {
  if (quiet_) return;
  update_facts();
  emit changed(input());
}

}  // namespace cpplan::gui
