#pragma once
// A fit of the runtime and hardware defaults to end-to-end timings (cpplan calibrate --import):
// the runtimes' host costs and per-collective overheads, and, per GPU architecture and link kind,
// multipliers of the hardware profiles' achievable efficiencies. Stored as profiles/fits/*.toml
// with its provenance; the catalog applies every fit it loads, in load order, to the profiles it
// names, so the cost model sees the fitted values. Schema: docs/profiles.md.

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/result.h"
#include "core/runtime.h"

namespace cpplan {

// Fitted values of one runtime; unset fields keep the runtime profile's own.
struct RuntimeFitValues {
  std::optional<double> us_per_op, eager_us_per_op, ulysses, ring, ring_iteration, collective_us, sync_us, image_ms, step;
};

// Multipliers of the efficiencies of every hardware profile of one architecture (1: unchanged;
// 1.3: kernels of that kind run 1.3x faster than the profile's efficiency says).
// The largest efficiency multiplier (architectures, links) a fit file may hold; a fit keeps to it.
inline constexpr double kMaxFitMultiplier = 100;

struct ArchitectureFitValues {
  double gemm = 1, attention = 1, memory = 1, conv = 1;
};

struct FitProvenance {
  std::string source;          // the file the fit was made from
  int rows = 0;                // measurements fitted
  std::string fitted_at;       // ISO-8601 UTC
  std::string cpplan_version;
  double mape = 0;             // in-sample, fraction
  double cv_mape = 0;          // nested k-fold cross-validation, fraction (mean of its repeats)
  int folds = 0;
  int repeats = 1;             // of the cross-validation, each dealing the rows to the folds anew
  double shrinkage = 0;        // strength of the pull toward the priors, chosen by cross-validation
  // ... over the rows (k-fold), or by leaving out each GPU kind, source and checkpoint in turn
  // (`shrinkage_by = "groups"`; absent: "rows").
  bool shrinkage_by_groups = false;
  std::map<std::string, double> held_out;  // "hardware=l20" -> MAPE with that group left out
};

struct RuntimeFit {
  std::string name;  // file stem
  std::string description;
  std::string source_file;  // where it was loaded from
  FitProvenance provenance;
  std::map<std::string, RuntimeFitValues> runtimes;            // by runtime profile name
  std::map<std::string, ArchitectureFitValues> architectures;  // by HardwareProfile::architecture
  std::map<std::string, double> links;                         // by to_string(LinkKind): efficiency multiplier
};

Result<RuntimeFit> load_runtime_fit(const std::string& path);
Result<RuntimeFit> parse_runtime_fit(std::string_view text, const std::string& path);
// The fit as a TOML file (what load_runtime_fit reads back).
std::string to_toml(const RuntimeFit& fit);

// One fit of several applied in order: later values win, field by field for runtimes, whole
// entries for architectures and links (multipliers replace each other; they do not compound).
RuntimeFit merge_fits(const std::deque<RuntimeFit>& fits);

// Applies `fit` to a runtime or a hardware profile (efficiencies multiplied, capped where a
// fraction of a peak must stay one: GEMM, attention and conv at 0.95 of the datasheet peak).
void apply_fit(const RuntimeFit& fit, RuntimeProfile& runtime);
void apply_fit(const RuntimeFit& fit, HardwareProfile& hardware);

}  // namespace cpplan
