#include "session/engine/explore.h"

#include <algorithm>
#include <sstream>


namespace cpplan::session {

std::vector<Resolution> heatmap_resolutions(const ModelProfile& m) {
  const int step = m.pixel_granularity();
  std::vector<Resolution> out;
  for (double scale : {0.5, 0.75, 1.0, 1.5, 2.0}) {
    auto round = [&](int v) { return std::max(step, static_cast<int>(v * scale / step + 0.5) * step); };
    const Resolution r{round(m.default_width), round(m.default_height)};
    if (out.empty() || out.back().width != r.width || out.back().height != r.height) out.push_back(r);
  }
  return out;
}

std::vector<int> heatmap_gpu_counts() { return {1, 2, 4, 8, 16, 32, 64}; }

}  // namespace cpplan::session
