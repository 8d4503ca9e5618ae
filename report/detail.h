#pragma once
// Internal to report/: formatting shared by the markdown and the plots, and the plots
// themselves (plots.cpp, the only file that sees Qt).

#include <string>
#include <vector>

#include "core/result.h"
#include "core/text.h"
#include "report/report.h"

namespace cpplan::report::detail {

// Renders every plot of `figures` into `out_dir` (which exists and is writable): the scatter of
// predicted vs measured step time, the error by plan kind, one busbw plot per collective. Plots
// without data are skipped with the reason; an error only when Qt cannot start or a PNG cannot
// be saved.
Result<std::vector<Plot>> render_plots(const Figures& figures, const std::string& out_dir, const Options& options);

}  // namespace cpplan::report::detail
