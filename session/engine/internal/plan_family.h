#pragma once
// A plan's family (Ulysses, ring, hybrids, TP, CFG, PipeFusion, fully sharded, ...): what
// `cpplan tune` picks the best of and fits a factor per.

#include <string_view>

#include "core/parallel_config.h"

namespace cpplan::session {

// How a plan's work is split, whatever the degrees.
enum class PlanFamily { kSingle, kUlysses, kRing, kHybrid, kTensor, kCfg, kPipeFusion, kFullyShard, kData };
inline constexpr PlanFamily kPlanFamilies[] = {PlanFamily::kSingle,     PlanFamily::kUlysses,    PlanFamily::kRing,
                                               PlanFamily::kHybrid,     PlanFamily::kTensor,     PlanFamily::kCfg,
                                               PlanFamily::kPipeFusion, PlanFamily::kFullyShard, PlanFamily::kData};
PlanFamily family_of(const ParallelConfig& c);
std::string_view to_string(PlanFamily f);  // "single", "ulysses", "ring", "hybrid", "tp", "cfg", ...

}  // namespace cpplan::session
