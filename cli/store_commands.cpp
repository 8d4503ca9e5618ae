#include "cli/store_commands.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "cli/app.h"
#include "cli/args.h"
#include "core/text.h"
#include "core/units.h"
#include "data/store.h"
#include "imports/nccl_tests.h"
#include "session/engine/cluster_model.h"

namespace cpplan::cli {

namespace {

std::string host_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "";
  return host;
}

std::string store_path(const std::string& db) { return db.empty() ? data::Store::default_path() : db; }

// The largest bus bandwidth of the file's samples.
double peak_busbw(const imports::NcclTestsFile& file) {
  double peak = 0;
  for (const auto& sample : file.samples) peak = std::max(peak, sample.busbw_gbps);
  return peak;
}

void print_import_json(std::ostream& out, const imports::NcclTestsFile& file, const data::HardwareFingerprint& hw,
                       long long rows) {
  const int nodes = file.samples.front().nodes;
  const nlohmann::json j{{"collective", file.test},
                         {"ranks", file.ranks},
                         {"nodes", nodes},
                         {"ranks_per_node", file.ranks_per_node > 0 ? file.ranks_per_node : (file.ranks + nodes - 1) / nodes},
                         {"hosts", file.hosts},
                         {"gpu", hw.gpu_name},
                         {"cluster", hw.host},
                         {"rows", rows},
                         {"peak_busbw_gbps", peak_busbw(file)}};
  out << j.dump(2) << '\n';
}

// What was recorded: the file, where the ranks were, and one line per collective and group size.
void print_import(std::ostream& out, const std::string& name, const imports::NcclTestsFile& file,
                  const data::HardwareFingerprint& hw, long long rows, const std::string& path) {
  fmt::print(out, "{}: {} rows of {} recorded in {}\n", name, rows, file.test, path);
  fmt::print(out, "  cluster {}: machine {} ({}, {}); plan with it: cpplan --cluster {} ...\n", hw.host, hw.key(),
             hw.device_kind, hw.gpu_name, hw.host);
  const int nodes = file.samples.front().nodes;
  if (file.nodes() > 0)
    fmt::print(out, "  ranks on {} node{}, at most {} per node: {}\n", nodes, nodes == 1 ? "" : "s",
               file.ranks_per_node, fmt::join(file.hosts, ", "));
  else
    fmt::print(out, "  ranks on {} node{} (no device list in the file{})\n", nodes, nodes == 1 ? "" : "s",
               nodes == 1 ? "; --nodes N if they sat on more" : "");
  // One line per collective and group size (a file holds one test, the store groups by both).
  std::map<std::pair<std::string, int>, std::vector<const costmodel::CollectiveSample*>> groups;
  for (const auto& sample : file.samples) {
    groups[{std::string(costmodel::to_string(sample.kind)), sample.ranks}].push_back(&sample);
  }
  fmt::print(out, "  {:<15} {:>5} {:>5}  {:<22} {}\n", "collective", "ranks", "sizes", "bytes", "peak busbw");
  for (const auto& [key, samples] : groups) {
    const costmodel::CollectiveSample* peak = samples.front();
    double lo = samples.front()->bytes, hi = lo;
    for (const auto* sample : samples) {
      if (sample->busbw_gbps > peak->busbw_gbps) peak = sample;
      lo = std::min(lo, sample->bytes);
      hi = std::max(hi, sample->bytes);
    }
    fmt::print(out, "  {:<15} {:>5} {:>5}  {:<22} {:.2f} GB/s at {}\n", key.first, key.second, samples.size(),
               fmt::format("{} .. {}", human_bytes(lo), human_bytes(hi)), peak->busbw_gbps, human_bytes(peak->bytes));
  }
}

}  // namespace

CLI::App* add_import_nccl_tests_command(CLI::App& app, StoreArgs& s) {
  CLI::App* cmd = app.add_subcommand("import-nccl-tests",
                                     "record nccl-tests output (text table or -J JSON) as measurements of the cluster it ran on");
  cmd->add_option("file", s.nccl_file, "output of all_reduce_perf, all_gather_perf, alltoall_perf, "
                                       "reduce_scatter_perf or sendrecv_perf")
      ->required();
  cmd->add_option("--ranks", s.ranks, "ranks of the test (default: from the file's device list or nThread x nGpus)");
  cmd->add_option("--nodes", s.nodes, "nodes the ranks sat on (default: the hosts of the file's device list, else 1)");
  session::add_field_option(*cmd, "cluster", s.cluster,
                  "name the measurements are recorded under, for cpplan --cluster NAME (default: the stem of the "
                  "file's host names, e.g. gpu07 and gpu08 -> gpu; without a device list, this machine's host name)")
      ->check(kClusterName);
  cmd->add_option("--collective", s.collective, "the test, e.g. all_reduce_perf (default: from the file or its name)");
  cmd->add_option("--hardware-name", s.hardware_name, "GPU name of the fingerprint (default: the file's, else unknown)");
  session::add_field_option(*cmd, "db", s.db);
  cmd->add_flag("--json", s.json, "print what was recorded as one JSON object");
  return cmd;
}

CLI::App* add_db_merge_command(CLI::App& db, StoreArgs& s) {
  CLI::App* cmd = db.add_subcommand("merge", "merge cpplan databases (e.g. one per cluster job) without duplicates");
  cmd->add_option("sources", s.sources, "databases to merge from (read only)")->required();
  cmd->add_option("--into", s.into, "database to merge into (created if missing)")->required();
  return cmd;
}

int import_nccl_tests_command(const StoreArgs& s, std::ostream& out, std::ostream& err) {
  constexpr std::string_view kName = "cpplan import-nccl-tests";
  imports::NcclTestsOptions options;
  if (!s.ranks.empty()) options.ranks = parse_int("--ranks", s.ranks, 1, kMaxGpus);
  if (!s.nodes.empty()) options.nodes = parse_int("--nodes", s.nodes, 1, kMaxGpus);
  options.collective = s.collective;

  std::ifstream in(s.nccl_file, std::ios::binary);
  if (!in) {
    fmt::print(err, "{}: {}: cannot read: {}\n", kName, s.nccl_file, std::strerror(errno));
    return kExitInvalid;
  }
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  auto parsed = imports::parse_nccl_tests_file(text, s.nccl_file, options);
  if (!parsed) {
    fmt::print(err, "{}: {}\n", kName, parsed.error().message);
    return kExitInvalid;
  }
  const imports::NcclTestsFile& file = parsed.value();

  if (file.samples.front().nodes > file.ranks) {
    fmt::print(err, "{}: --nodes = {}: more nodes than the test's {} ranks\n", kName, s.nodes, file.ranks);
    return kExitInvalid;
  }

  // The samples describe the GPUs and links of the cluster the file was measured on: its GPU name
  // and cluster name, unless told otherwise. No rank or node count in the fingerprint, so that
  // every group size and node span of one cluster lands under one key.
  data::HardwareFingerprint hw;
  hw.device_kind = file.gpus ? "cuda" : "cpu";
  hw.gpu_name = !s.hardware_name.empty() ? s.hardware_name : !file.gpu_name.empty() ? file.gpu_name : "unknown";
  hw.host = !s.cluster.empty() ? s.cluster : !file.hosts.empty() ? session::cluster_of_hosts(file.hosts) : host_name();

  const std::string path = store_path(s.db);
  auto store = data::Store::open(path);
  if (!store) {
    fmt::print(err, "{}: {}\n", kName, store.error().message);
    return kExitInvalid;
  }
  costmodel::MeasurementSet set;
  set.collectives = file.samples;
  auto rows = store.value().record_measurements(hw, set, "nccl-tests");
  if (!rows) {
    fmt::print(err, "{}: {}\n", kName, rows.error().message);
    return kExitRuntime;
  }

  if (s.json) print_import_json(out, file, hw, static_cast<long long>(*rows));
  else print_import(out, s.nccl_file, file, hw, static_cast<long long>(*rows), path);
  return kExitOk;
}

int db_merge_command(const StoreArgs& s, std::ostream& out, std::ostream& err) {
  constexpr std::string_view kName = "cpplan db merge";
  auto store = data::Store::open(s.into);
  if (!store) {
    fmt::print(err, "{}: --into {}\n", kName, store.error().message);
    return kExitInvalid;
  }
  data::MergeSummary total;
  std::size_t merged = 0;
  for (const std::string& source : s.sources) {
    auto summary = store.value().merge_from(source);
    if (!summary) {
      // Each source is merged in its own transaction: those before this one stay merged.
      fmt::print(err, "{}: {} (merged before it: {} of {} files)\n", kName, summary.error().message, merged,
                 s.sources.size());
      return kExitInvalid;
    }
    const data::MergeSummary& m = summary.value();
    fmt::print(out, "{}: {} runs added, {} already there; {} samples, {} calibrations added\n", source, m.runs_added,
               m.runs_skipped, m.samples_added, m.calibrations_added);
    total.runs_added += m.runs_added;
    total.runs_skipped += m.runs_skipped;
    total.samples_added += m.samples_added;
    total.calibrations_added += m.calibrations_added;
    ++merged;
  }
  fmt::print(out, "merged {} files into {}: {} runs added, {} already there; {} samples, {} calibrations added\n",
             merged, s.into, total.runs_added, total.runs_skipped, total.samples_added, total.calibrations_added);
  return kExitOk;
}

}  // namespace cpplan::cli
