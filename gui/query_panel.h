#pragma once
// The query panel: model (and its facts at the chosen size), resolution, frames (video models),
// GPU count, images per prompt (batch), the topology the plans are placed on and its nodes,
// hardware, steps, attention backend, the DiT's number format and step cache (one, or any: every
// one that runs here; the cache's parameters), the runtime (how the framework runs it), the framework the
// ranking is restricted to ("any": none), the text-encoder and VAE placements ("auto": the
// planner picks per plan) and the anything modes; a diffusers model config instead of the model
// (cpplan --model-config), each framework's version file (--framework-version) and every plan
// (--all).
// Every edit emits changed() with the whole query; the window re-plans off the UI thread.

#include <QWidget>
#include <array>

#include "gui/planning.h"

class QCheckBox;
class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QDoubleSpinBox;

namespace cpplan::gui {

class QueryPanel : public QWidget {
  Q_OBJECT

 public:
  explicit QueryPanel(CatalogPtr catalog, QWidget* parent = nullptr);

  QueryInput input() const;
  // Shows `in` (0 fields: the model's defaults) and emits changed() once.
  void set_input(const QueryInput& in);
  QString facts_text() const;

  QComboBox* model_box() { return model_; }
  QSpinBox* gpus_box() { return gpus_; }
  QSpinBox* width_box() { return width_; }
  QSpinBox* height_box() { return height_; }
  QComboBox* runtime_box() { return runtime_; }
  QComboBox* dtype_box() { return dtype_; }  // precision_choices() in order: "bf16", "fp8", ..., then "any"
  // "none", each policy (core/cache.h's order), then "any"; the parameters' boxes show "policy's"
  // at their minimum (unset) and are enabled where the chosen policies take them.
  QComboBox* cache_box() { return cache_; }
  QSpinBox* cache_fn_box() { return cache_fn_; }
  QSpinBox* cache_bn_box() { return cache_bn_; }
  QSpinBox* cache_warmup_box() { return cache_warmup_; }
  QSpinBox* cache_every_box() { return cache_every_; }
  QDoubleSpinBox* cache_hit_rate_box() { return cache_hit_rate_; }
  QSpinBox* cache_max_cached_box() { return cache_max_cached_; }
  QComboBox* framework_box() { return framework_; }  // "any", "diffusers", "xdit", "cache-dit"
  QComboBox* text_encoder_box() { return text_encoder_; }  // "auto", then each placement
  QComboBox* vae_box() { return vae_; }                    // "auto", "single", "parallel"
  QSpinBox* batch_box() { return batch_; }
  QComboBox* topology_box() { return topology_; }  // "none", then the catalog's topologies
  QSpinBox* nodes_box() { return nodes_; }
  QDoubleSpinBox* host_mem_box() { return host_mem_; }  // 0: the hardware profile's         // enabled with a topology or a hardware [node]
  QComboBox* hardware_box() { return hardware_; }
  QLineEdit* model_config_edit() { return config_edit_; }     // the config's path; Enter applies it
  QPushButton* model_config_button() { return config_open_; }  // "Model config...": a file dialog
  QPushButton* clear_config_button() { return config_clear_; }
  QLabel* config_error_label() { return config_error_; }  // the config's one-line error; hidden when none
  // "default: <version>", then the framework's other files (data: the file name); null when the
  // catalog has only its default file.
  QComboBox* framework_version_box(Framework f) { return versions_[static_cast<int>(f)]; }
  QCheckBox* all_plans_box() { return all_plans_; }
  QCheckBox* offload_transformer_box() { return offload_transformer_; }

  // Plans the diffusers config at `path` (a transformer config.json or a pipeline folder) instead
  // of the model combo's profile, with its default size and steps; "" goes back to the combo. A
  // path that cannot be read or mapped shows the CLI's one-line error and keeps the query as it
  // was (nothing is emitted); returns whether the path was taken.
  bool set_model_config(const QString& path);

 signals:
  void changed(const cpplan::gui::QueryInput& input);

 private:
  QWidget* config_row();                     // the dialog button, the path and the clear button
  QWidget* dtype_cache_row();                // the Dtype and Cache combos side by side
  QWidget* cache_parameters_row();           // the cache parameters' boxes
  void enable_cache_parameters();            // those the chosen policies take
  void add_framework_versions(QFormLayout* form);  // a version combo per framework with older files
  void choose_model_config();                // the file dialog
  bool apply_model_config(const QString& path);  // set_model_config without emitting
  void show_config_error(const QString& message);  // "" hides it
  const ModelProfile* current_model() const;     // the config's profile, else the combo's
  void apply_model_defaults();     // the model's size, frames, steps and granularity
  void apply_topology_defaults();  // the topology's hardware and nodes x its GPUs, as the CLI's defaults
  void apply_hardware_node();      // without a topology: nodes of the hardware's usual server ([node]), or none
  void update_facts();
  void emit_changed();

  CatalogPtr catalog_;
  QComboBox* model_;
  QLabel* facts_;
  QSpinBox* width_;
  QSpinBox* height_;
  QSpinBox* frames_;
  QSpinBox* gpus_;
  QComboBox* hardware_;
  QSpinBox* batch_;
  QComboBox* topology_;  // item 0 "none" (data ""), then each topology (data: its name)
  QSpinBox* nodes_;
  QSpinBox* steps_;
  QComboBox* backend_;
  QComboBox* dtype_;
  QComboBox* cache_;
  QSpinBox* cache_fn_;
  QSpinBox* cache_bn_;
  QSpinBox* cache_warmup_;
  QSpinBox* cache_every_;
  QDoubleSpinBox* cache_hit_rate_;
  QSpinBox* cache_max_cached_;
  QComboBox* runtime_;
  QComboBox* framework_;
  QComboBox* text_encoder_;  // item data: -1 for auto, else the TextEncoderPlacement
  QComboBox* vae_;           // item data: -1 for auto, else the VaePlacement
  QCheckBox* anything_;
  QLineEdit* config_edit_;
  QPushButton* config_open_;
  QPushButton* config_clear_;
  QLabel* config_error_;
  std::array<QComboBox*, kFrameworkCount> versions_{};  // null: the framework has one file
  QCheckBox* all_plans_;
  QDoubleSpinBox* host_mem_;
  QCheckBox* offload_transformer_;  // enabled for a pipeline of two transformers only
  // The model config in use ("" none), and the catalog holding its profile, named config_model_.
  std::string config_path_;
  CatalogPtr config_catalog_;
  std::string config_model_;
  bool quiet_ = false;  // set_input in progress: one changed() at the end
};

}  // namespace cpplan::gui
