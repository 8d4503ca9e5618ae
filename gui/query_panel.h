#pragma once
// The query panel: model (and its facts at the chosen size), resolution, frames (video models),
// GPU count, images per prompt (batch), the topology the plans are placed on and its nodes,
// hardware, steps, attention backend, the runtime (how the framework runs it), the framework the
// ranking is restricted to ("any": none), the text-encoder and VAE placements ("auto": the
// planner picks per plan) and the anything modes.
// Every edit emits changed() with the whole query; the window re-plans off the UI thread.

#include <QWidget>

#include "gui/planning.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;

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
  QComboBox* framework_box() { return framework_; }  // "any", "diffusers", "xdit", "cache-dit"
  QComboBox* text_encoder_box() { return text_encoder_; }  // "auto", then each placement
  QComboBox* vae_box() { return vae_; }                    // "auto", "single", "parallel"
  QSpinBox* batch_box() { return batch_; }
  QComboBox* topology_box() { return topology_; }  // "none", then the catalog's topologies
  QSpinBox* nodes_box() { return nodes_; }         // enabled with a topology
  QComboBox* hardware_box() { return hardware_; }

 signals:
  void changed(const cpplan::gui::QueryInput& input);

 private:
  void apply_model_defaults();     // the model's size, frames, steps and granularity
  void apply_topology_defaults();  // the topology's hardware and nodes x its GPUs, as the CLI's defaults
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
  QComboBox* runtime_;
  QComboBox* framework_;
  QComboBox* text_encoder_;  // item data: -1 for auto, else the TextEncoderPlacement
  QComboBox* vae_;           // item data: -1 for auto, else the VaePlacement
  QCheckBox* anything_;
  bool quiet_ = false;  // set_input in progress: one changed() at the end
};

}  // namespace cpplan::gui
