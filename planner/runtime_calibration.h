#pragma once
// `cpplan calibrate --import`: the planner's predictions of measured end-to-end timings
// (costmodel/timing_row.h, read by imports/timing_rows.h), the runtime and hardware defaults
// fitted to them (costmodel/runtime_fit.h), and how well the fit predicts: in sample with the
// fitted profiles applied to the real cost model, by repeated nested k-fold cross-validation, and with each
// GPU kind, source and checkpoint left out. In the planner layer because every row's plan is validated first.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/fit.h"
#include "core/profiles.h"
#include "core/result.h"
#include "costmodel/timing_row.h"

namespace cpplan::planner {

struct CalibratedRow {
  costmodel::TimingRow row;
  std::string hardware;      // the profile it was predicted on
  bool per_image = false;    // compared as seconds per image (else ms per step)
  double measured_ms = 0;
  double prior_ms = 0;       // the catalog's profiles without any fit
  double fitted_ms = 0;      // the profiles with this fit applied
  // Its once-per-image serial terms (ms): encoding the prompt and decoding the latents.
  double fitted_text_encode_ms = 0, fitted_vae_decode_ms = 0;
  double held_out_ms = 0;    // nested cross-validation: fits that did not see the row (mean of the repeats)
  double held_out_error = 0; // their mean |predicted / measured - 1| (cv_mape is its mean over the rows)
  bool unreconciled = false; // the fit and the fits without it miss it alike by over 25% (a disagreement)
  // The prediction (ms) of each fit that left out one of the row's groups, by the group's kind:
  // "hardware" (its GPU kind), "model" (its checkpoint), "source", "box", "resolution".
  std::map<std::string, double> left_out_ms;
  std::optional<double> predicted_mem_bytes;  // when the row has a measured peak
};

struct RuntimeCalibration {
  RuntimeFit fit;
  std::vector<CalibratedRow> rows;
  double prior_mape = 0, fitted_mape = 0, cv_mape = 0;
  std::vector<std::pair<std::string, double>> held_out;  // "hardware=l20" -> MAPE of a fit without them
  // Pairs of the same source, box, GPU kind and resolution whose measurements differ by over 5%:
  // how many the fitted model orders right, and the ones it does not.
  int pairs = 0, pairs_ordered = 0;
  std::vector<std::string> misordered;
  int memory_rows = 0, memory_within_10 = 0;
  double memory_mape = 0;  // over the rows with a measured peak, fraction
  std::vector<std::string> memory_outside_10;
  // What the points cannot settle (planner/runtime_calibration.cpp, check_agreement): one
  // configuration measured twice beyond the reading error, rows no fit reconciles with the rest.
  std::vector<std::string> disagreements;
  // Rows neither fitted nor checked: oom ones (the run did not fit: no timing), counted, and those
  // whose published plan the planner marks invalid, one line each (row, plan, the rules it breaks):
  // the run ran, so each is a cpplan bug to fix, not a row to fit around.
  int oom_skipped = 0;
  std::vector<std::string> rejected;
};

struct RuntimeCalibrationOptions {
  std::string name = "fit";    // the fit's name (its file stem)
  std::string description;
  std::string source;          // the timings' file, for the provenance
  int folds = 5;
  int repeats = 5;             // of the nested cross-validation, each dealing the rows to the folds anew
  double reading_error = 0.02;  // how far apart two readings of one figure may be (charts: about 2%)
  // The ridge strength chosen by leaving out each GPU kind, source and checkpoint in turn (what
  // carries to one the fit has not seen), not by k-fold over the rows.
  bool shrinkage_by_groups = false;
};

// `priors`: a catalog loaded without fits (ProfileCatalog::load with apply_fits = false). Every
// row must name profiles of it; the first that does not is the error. Rows with oom = true and rows
// whose plan is invalid are skipped and listed (RuntimeCalibration::oom_skipped, rejected).
// Every row predicted by `shipped` as it is (the profiles with their fits applied), fitting nothing:
// how the shipped defaults do on timings (`cpplan calibrate --import --check`). Each row's
// prior_ms and fitted_ms are that prediction; held_out_ms is 0. The pair counts as a fit's.
Result<RuntimeCalibration> check_timings(const ProfileCatalog& shipped, const std::vector<costmodel::TimingRow>& rows);

Result<RuntimeCalibration> calibrate_runtimes(const ProfileCatalog& priors, const std::vector<costmodel::TimingRow>& rows,
                                              const RuntimeCalibrationOptions& options);

}  // namespace cpplan::planner
