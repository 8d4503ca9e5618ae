#include "session/engine/internal/tune_calibration.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "session/query/query.h"

namespace cpplan::session {

double TuneFit::factor(PlanFamily f) const {
  const auto it = family.find(f);
  return it == family.end() ? 1.0 : it->second;
}

namespace {

namespace fs = std::filesystem;
using nlohmann::json;


std::optional<PlanFamily> family_named(const std::string& name) {
  for (PlanFamily f : kPlanFamilies)
    if (to_string(f) == name) return f;
  return std::nullopt;
}

// A positive finite factor of the file, or InvalidInput naming the file and the field.
double factor(const json& j, const std::string& path, const std::string& field) {
  if (!j.is_number() || !(j.get<double>() > 0) || !std::isfinite(j.get<double>()))
    throw InvalidInput{fmt::format("{}: {} = {}: must be a positive number", path, field, j.dump())};
  return j.get<double>();
}

TuneCalibration parse(const json& j, const std::string& path) {
  TuneCalibration c;
  c.path = path;
  c.fit.scale = factor(j.at("scale"), path, "scale");
  for (const auto& [name, value] : j.at("families").items()) {
    const auto f = family_named(name);
    if (!f) throw InvalidInput{fmt::format("{}: families.{}: not a plan family", path, name)};
    c.fit.family[*f] = factor(value, path, "families." + name);
  }
  c.fit.runs = j.at("runs").get<int>();
  for (auto [field, value] : {std::pair{"source", &c.source}, {"host", &c.host}, {"device", &c.device},
                              {"model", &c.model}, {"resolution", &c.resolution}, {"fitted_at", &c.fitted_at}})
    *value = j.at(field).get<std::string>();
  return c;
}

}  // namespace

std::string this_host_name() {
  char host[256] = {};
  return gethostname(host, sizeof host - 1) == 0 ? std::string(host) : std::string();
}

std::string tune_source(bool local_hardware, const std::string& cluster, const std::string& hardware) {
  if (local_hardware) return "local";
  if (!cluster.empty()) return "cluster-" + cluster;
  return hardware;
}

std::string tune_calibration_path(const std::string& db_path, const std::string& source) {
  return (fs::path(db_path + ".tune") / fmt::format("calibration-{}.json", source)).string();
}

void write_tune_calibration(const TuneCalibration& c) {
  json families = json::object();
  for (const auto& [family, f] : c.fit.family) families[std::string(to_string(family))] = f;
  const json j{{"source", c.source}, {"host", c.host},           {"device", c.device},
               {"model", c.model},   {"resolution", c.resolution}, {"scale", c.fit.scale},
               {"families", families}, {"runs", c.fit.runs},     {"fitted_at", c.fitted_at}};
  std::ofstream out(c.path);
  out << j.dump(2) << '\n';
  if (!out) throw InvalidInput{fmt::format("{}: cannot write the tune's calibration", c.path)};
}

std::optional<TuneCalibration> read_tune_calibration(const std::string& db_path, const std::string& source,
                                                     const std::string& host) {
  const std::string path = tune_calibration_path(db_path, source);
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    TuneCalibration c = parse(json::parse(in), path);
    if (c.host != host) return std::nullopt;  // fitted on another machine sharing the database
    return c;
  } catch (const json::exception& e) {
    throw InvalidInput{fmt::format("{}: not a tune calibration: {}", path, e.what())};
  }
}

costmodel::StepCorrection with_tune(costmodel::StepCorrection base, const TuneFit& fit) {
  return [base = std::move(base), fit](const costmodel::Prediction& p, const ParallelConfig& c) {
    const double step_ms = base ? base(p, c) : p.step_ms;
    return step_ms * fit.scale * fit.factor(family_of(c));
  };
}

std::string tune_source_text(const TuneCalibration& c) {
  return fmt::format(", step times x this machine's tune ({} runs of {} at {}, {}: {})", c.fit.runs, c.model,
                     c.resolution, c.fitted_at, c.path);
}

}  // namespace cpplan::session
