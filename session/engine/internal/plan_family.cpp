#include "session/engine/internal/plan_family.h"

namespace cpplan::session {

PlanFamily family_of(const ParallelConfig& c) {
  if (c.pp() > 1) return PlanFamily::kPipeFusion;
  if (c.fs() > 1) return PlanFamily::kFullyShard;
  if (c.ring() > 1 && c.ulysses() > 1) return PlanFamily::kHybrid;
  if ((c.ring() > 1 || c.ulysses() > 1) && (c.tp() > 1 || c.cfg_degree > 1)) return PlanFamily::kHybrid;
  if (c.ulysses() > 1) return PlanFamily::kUlysses;
  if (c.ring() > 1) return PlanFamily::kRing;
  if (c.tp() > 1) return PlanFamily::kTensor;
  if (c.cfg_degree > 1) return PlanFamily::kCfg;
  if (c.dp_degree > 1) return PlanFamily::kData;
  return PlanFamily::kSingle;
}

std::string_view to_string(PlanFamily f) {
  switch (f) {
    case PlanFamily::kSingle: return "single";
    case PlanFamily::kUlysses: return "ulysses";
    case PlanFamily::kRing: return "ring";
    case PlanFamily::kHybrid: return "hybrid";
    case PlanFamily::kTensor: return "tp";
    case PlanFamily::kCfg: return "cfg";
    case PlanFamily::kPipeFusion: return "pipefusion";
    case PlanFamily::kFullyShard: return "fully sharded";
    case PlanFamily::kData: return "data";
  }
  return "?";
}

}  // namespace cpplan::session
