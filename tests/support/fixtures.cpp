#include "tests/support/fixtures.h"

#include <stdexcept>

namespace cpplan::test {

std::string profiles_dir() { return CPPLAN_TEST_PROFILES; }

namespace {
ProfileCatalog load(bool apply_fits) {
  auto loaded = ProfileCatalog::load({profiles_dir()}, CatalogOptions{.apply_fits = apply_fits});
  if (!loaded) throw std::runtime_error(loaded.error().message);
  return std::move(loaded).value();
}
}  // namespace

const ProfileCatalog& catalog() {
  static const ProfileCatalog c = load(false);
  return c;
}

const ProfileCatalog& fitted_catalog() {
  static const ProfileCatalog c = load(true);
  return c;
}

Query make_query(const ModelProfile& model, int gpus, int width, int height, int frames, const std::string& hardware) {
  Query q;
  q.model = &model;
  q.hardware = catalog().find_hardware(hardware);
  if (!q.hardware) throw std::runtime_error("unknown test profile " + hardware);
  q.gpus = gpus;
  q.resolution = {width > 0 ? width : model.default_width, height > 0 ? height : model.default_height};
  q.frames = frames > 0 ? frames : model.default_frames;
  q.steps = model.default_steps;
  auto seq = compute_sequence(model, q.resolution, q.frames, model.text_tokens);
  if (!seq) throw std::runtime_error(seq.error().message);
  q.sequence = *seq;
  q.frameworks = catalog().frameworks_for_query().value();
  return q;
}

Query make_query(const std::string& model, int gpus, int width, int height, int frames, const std::string& hardware) {
  const ModelProfile* m = catalog().find_model(model);
  if (!m) throw std::runtime_error("unknown test profile " + model);
  return make_query(*m, gpus, width, height, frames, hardware);
}

ParallelConfig config(int ring, int ulysses, int tp, int cfg, int dp, bool ulysses_anything, bool ring_anything) {
  ParallelConfig c;
  c.context_parallel_config.ring_degree = ring;
  c.context_parallel_config.ulysses_degree = ulysses;
  c.context_parallel_config.ulysses_anything = ulysses_anything;
  c.context_parallel_config.ring_anything = ring_anything;
  c.tensor_parallel_config.tp_degree = tp;
  c.cfg_degree = cfg;
  c.dp_degree = dp;
  return c;
}

}  // namespace cpplan::test
