// Output of topology-aware placement: the placement summary, the layout with its launch lines and
// DeviceMesh and --explain (both computed and written by session/engine/explain.h, shared with
// cpplan-gui), and `cpplan list topologies`.
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <ostream>

#include "cli/render.h"
#include "session/engine/explain.h"

namespace cpplan::cli {

using nlohmann::json;
using planner::RankedPlan;
using planner::topology::Placement;
using costmodel::CommAxis;

std::string placement_summary(const Placement& p) {
  constexpr std::pair<CommAxis, char> shown[] = {
      {CommAxis::kTp, 't'}, {CommAxis::kUlysses, 'u'}, {CommAxis::kRing, 'r'}, {CommAxis::kPp, 'p'},
      {CommAxis::kCfg, 'c'}};
  std::vector<std::string> parts;
  for (auto [axis, letter] : shown) {
    const auto& g = p.layout[axis];
    if (g.ranks <= 1) continue;
    const int span = p.links[static_cast<int>(axis)].span_nodes;
    parts.push_back(fmt::format("{}:{:.0f}{}", letter, g.busbw_gbps, span > 1 ? fmt::format("@{}n", span) : ""));
  }
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, " "));
}

void print_topologies(std::ostream& out, const ProfileCatalog& c) {
  fmt::print(out, "{:<16} {:>5} {:<14} {:>5} {:<8}  {}\n", "topology", "GPUs", "hardware", "NICs", "network",
             "description");
  for (const Topology& t : c.topologies())
    fmt::print(out, "{:<16} {:>5} {:<14} {:>5} {:<8}  {}\n", t.name, t.gpus, t.hardware, t.nic_count(),
               t.has_network ? to_string(t.network.kind) : "-", t.description);
}

json topologies_json(const ProfileCatalog& c) {
  json a = json::array();
  for (const Topology& t : c.topologies())
    a.push_back({{"name", t.name},
                 {"description", t.description},
                 {"hardware", t.hardware},
                 {"gpus", t.gpus},
                 {"planning_only", t.planning_only},
                 {"devices", t.devices.size()},
                 {"links", t.links.size()},
                 {"nics", t.nic_count()},
                 {"network", t.has_network ? json(to_string(t.network.kind)) : json(nullptr)}});
  return a;
}

}  // namespace cpplan::cli
