#pragma once
// How each framework runs a priced plan: the text-encoder and VAE placement it offers among the
// prediction's options (RankedPlan::runs, RankedPlan::frameworks), and the plan's own placement.

#include <optional>

#include "planner/planner.h"

namespace cpplan::planner {

// Sets rp.runs and rp.frameworks from rp.predicted's pipeline options (the cost model's rule over
// the placements each framework offers), then makes the plan's own placement the one of
// `ranked_for` (else the best some framework offers; a plan no framework runs keeps the cost
// model's choice). `capacity`: bytes per GPU. Precondition: rp's plan is valid and predicted.
void place_for_frameworks(const Query& q, const FrameworkOffers& offers, std::optional<Framework> ranked_for,
                          Bytes capacity, RankedPlan& rp);
// The same with the query's framework files looked up here.
void place_for_frameworks(const Query& q, Bytes capacity, RankedPlan& rp);

}  // namespace cpplan::planner
