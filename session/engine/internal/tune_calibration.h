#pragma once
// The calibration `cpplan tune` writes for the next query on this machine: its fit (a scale and a
// factor per plan family, session/jobs/tune_fit.h) of the prediction source it tuned with. A tune with
// `--hardware local` writes the one `cpplan --hardware local` reads, a tune with `--cluster NAME`
// the one `--cluster NAME` reads; each beside the database, in DB.tune/calibration-SOURCE.json.

#include <map>
#include <optional>
#include <string>

#include "costmodel/cost_model.h"
#include "session/engine/internal/plan_family.h"

namespace cpplan::session {

// What `cpplan tune` learnt of this machine (session/jobs/tune_fit.h fits it): step_ms on this
// machine = predicted step_ms x scale x family factor (1 for a family not measured).
struct TuneFit {
  double scale = 1;
  std::map<PlanFamily, double> family;
  int runs = 0;  // measurements it was fitted to
  double factor(PlanFamily f) const;  // the family's factor, 1 when not measured
};

struct TuneCalibration {
  TuneFit fit;
  std::string source;  // "local", "cluster-NAME", or a hardware profile's name
  std::string host, device, model, resolution, fitted_at;
  std::string path;  // where it is (read) or goes (write)
};

// This host's name (gethostname), as a calibration names the machine it was fitted on.
std::string this_host_name();
// "local" (--hardware local), "cluster-NAME" (--cluster NAME), else the hardware profile's name.
std::string tune_source(bool local_hardware, const std::string& cluster, const std::string& hardware);
// DB.tune/calibration-SOURCE.json, DB the store's path.
std::string tune_calibration_path(const std::string& db_path, const std::string& source);
// Writes c to c.path (its directory exists); InvalidInput when it cannot.
void write_tune_calibration(const TuneCalibration& c);
// The calibration of `source` beside the store `db_path` when one was fitted on `host`; none
// otherwise. InvalidInput (naming the file) when the file is there but is not one.
std::optional<TuneCalibration> read_tune_calibration(const std::string& db_path, const std::string& source,
                                                     const std::string& host);
// `base` (none: the prediction's own step) times the fit's scale and the factor of the plan's family.
costmodel::StepCorrection with_tune(costmodel::StepCorrection base, const TuneFit& fit);
// ", step times x this machine's tune (N runs of MODEL at RES, FITTED_AT: PATH)".
std::string tune_source_text(const TuneCalibration& c);

}  // namespace cpplan::session
