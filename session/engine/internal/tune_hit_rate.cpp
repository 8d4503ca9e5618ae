#include "session/engine/internal/tune_hit_rate.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "session/query/query.h"

namespace cpplan::session {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The fields that name an entry: the model and the cache's policy and parameters.
json key_of(const std::string& model, const CacheSpec& s) {
  return {{"model", model},
          {"policy", to_string(s.policy)},
          {"first_blocks", s.first_blocks},
          {"last_blocks", s.last_blocks},
          {"warmup_steps", s.warmup_steps},
          {"max_continuous_cached", s.max_continuous_cached}};
}

bool same_key(const json& entry, const json& key) {
  for (const auto& [field, value] : key.items())
    if (!entry.is_object() || entry.value(field, json()) != value) return false;
  return true;
}

// The file's entries (none when it is missing); InvalidInput when it is not a hit-rate file.
json read_entries(const std::string& path) {
  std::ifstream in(path);
  if (!in) return json::array();
  try {
    json j = json::parse(in);
    if (!j.is_object() || !j.contains("entries") || !j.at("entries").is_array())
      throw InvalidInput{fmt::format("{}: not a tune hit-rate file: no \"entries\" list", path)};
    return j.at("entries");
  } catch (const json::exception& e) {
    throw InvalidInput{fmt::format("{}: not a tune hit-rate file: {}", path, e.what())};
  }
}

MeasuredHitRate parse_entry(const json& e, const std::string& model, const CacheSpec& s, const std::string& path) {
  MeasuredHitRate m;
  m.model = model;
  m.cache = s;
  m.path = path;
  try {
    m.cached_steps = e.at("cached_steps").get<int>();
    m.counted_steps = e.at("counted_steps").get<int>();
    m.runs = e.at("runs").get<int>();
    m.host = e.at("host").get<std::string>();
    m.measured_at = e.at("measured_at").get<std::string>();
  } catch (const json::exception& ex) {
    throw InvalidInput{fmt::format("{}: not a tune hit-rate file: {}", path, ex.what())};
  }
  if (m.counted_steps < 1 || m.cached_steps < 0 || m.cached_steps > m.counted_steps || m.runs < 1)
    throw InvalidInput{fmt::format("{}: {} {}: cached_steps = {}, counted_steps = {}, runs = {}: must be 0 <= cached "
                                   "<= counted, counted and runs at least 1",
                                   path, model, to_string(s.policy), m.cached_steps, m.counted_steps, m.runs)};
  return m;
}

}  // namespace

double MeasuredHitRate::hit_rate() const {
  return counted_steps > 0 ? std::min(kMaxMeasuredHitRate, static_cast<double>(cached_steps) / counted_steps) : 0.0;
}

bool threshold_cache(const CacheSpec& s) { return s.active() && !s.fixed_schedule(); }

std::string tune_hit_rate_path(const std::string& db_path) {
  return (fs::path(db_path + ".tune") / "hit-rates.json").string();
}

void write_measured_hit_rate(const MeasuredHitRate& m) {
  json entries = read_entries(m.path);
  json entry = key_of(m.model, m.cache);
  const json key = entry;
  entries.erase(std::remove_if(entries.begin(), entries.end(), [&](const json& e) { return same_key(e, key); }),
                entries.end());
  entry.update({{"cached_steps", m.cached_steps}, {"counted_steps", m.counted_steps}, {"hit_rate", m.hit_rate()},
                {"runs", m.runs}, {"host", m.host}, {"measured_at", m.measured_at}});
  entries.push_back(std::move(entry));
  std::ofstream out(m.path);
  out << json{{"entries", entries}}.dump(2) << '\n';
  if (!out) throw InvalidInput{fmt::format("{}: cannot write the tune's measured hit rate", m.path)};
}

std::optional<MeasuredHitRate> read_measured_hit_rate(const std::string& db_path, const std::string& model,
                                                      const CacheSpec& s) {
  const std::string path = tune_hit_rate_path(db_path);
  const json key = key_of(model, s);
  for (const json& e : read_entries(path))
    if (same_key(e, key)) return parse_entry(e, model, s, path);
  return std::nullopt;
}

std::vector<MeasuredHitRate> apply_measured_hit_rates(Query& q, const std::string& db_path) {
  std::vector<MeasuredHitRate> applied;
  const auto apply = [&](CacheSpec& s) {
    if (!threshold_cache(s)) return;
    const auto m = read_measured_hit_rate(db_path, q.model->name, s);
    if (!m) return;
    s.hit_rate = m->hit_rate();
    if (std::none_of(applied.begin(), applied.end(), [&](const auto& a) { return a.cache.policy == s.policy; }))
      applied.push_back(*m);
  };
  apply(q.cache);
  for (CacheSpec& s : q.caches) apply(s);
  return applied;
}

std::string hit_rate_source_text(const std::vector<MeasuredHitRate>& applied) {
  std::string text;
  for (const MeasuredHitRate& m : applied)
    text += fmt::format(", {} hit rate {:.2f} measured by cpplan tune over {} run{} ({})", to_string(m.cache.policy),
                        m.hit_rate(), m.runs, m.runs == 1 ? "" : "s", m.path);
  return text;
}

}  // namespace cpplan::session
