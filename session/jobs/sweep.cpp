#include "session/jobs/sweep.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "data/store.h"
#include "launch/launcher.h"
#include "session/query/query.h"
#include "session/query/query_fields.h"

namespace cpplan::session {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
// PipeFusion's part of a run key: empty without it, so that the keys of stores recorded before
// the axis existed still match their runs.
std::string pipefusion_key(const PipeFusionConfig& pf) {
  return pf.degree == 1 ? std::string() : fmt::format("|pf{}m{}w{}", pf.degree, pf.patches, pf.warmup_steps);
}
}  // namespace

std::string run_key(const std::string& model, Resolution res, int frames, int steps, const ParallelConfig& c,
                    int batch, long long seed, const std::string& dtype) {
  const ContextParallelConfig& cp = c.context_parallel_config;
  return fmt::format("{}|{}x{}x{}|{}|{}|r{}u{}t{}c{}d{}|ua{}ra{}|{}{}|b{}|s{}", model, res.width, res.height, frames,
                     steps, dtype, cp.ring_degree, cp.ulysses_degree, c.tp(), c.cfg_degree, c.dp_degree,
                     cp.ulysses_anything ? 1 : 0, cp.ring_anything ? 1 : 0, to_string(cp.rotate_method),
                     cp.convert_to_fp32 ? "" : "|bf16acc", batch, seed) +
         pipefusion_key(c.pipefusion) + (c.fs() == 1 ? std::string() : fmt::format("|fs{}", c.fs()));
}

std::string cache_key(const CacheSpec& c) {
  if (!c.active()) return {};
  return fmt::format("|cache-{}-f{}b{}w{}e{}", to_string(c.policy), c.first_blocks, c.last_blocks, c.warmup_steps,
                     c.every);
}

std::string weights_key(bool int8) { return int8 ? "|weights-int8" : ""; }

std::string run_key(const SweepRun& r) {
  // cpplan run's order: the weights' mark (exec/run_weights.h), then the cache's.
  return run_key(r.model, r.size, r.frames, r.steps, r.config, 1, r.seed, r.dtype) +
         weights_key(r.weights == "int8") + cache_key(r.cache);
}

std::vector<std::string> recorded_run_keys(const std::string& db, const std::string& machine_key) {
  auto store = data::Store::open(db);
  if (!store) throw InvalidInput{store.error().message};
  auto recorded = store.value().runs();
  if (!recorded) throw InvalidInput{recorded.error().message};
  std::vector<std::string> keys;
  for (const auto& r : recorded.value())
    if (r.run.status == "ok" && r.hardware.key() == machine_key) keys.push_back(r.run.run_key);
  return keys;
}

namespace {

// One `cpplan run` as a child that dies with the sweep (a killed sweep leaves no orphan that
// could record a run after the sweep was resumed); its --json result, null when it printed none.
json run_child(const std::string& cpplan, const std::vector<std::string>& args, const std::string& db, int& code) {
  const fs::path out = fs::temp_directory_path() / fmt::format("cpplan-sweep-{}.json", getpid());
  std::vector<std::string> argv = {cpplan, "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {flag_of("db"), db, "--json"});
  code = launch::run_to_file(argv, out.string());
  json result;
  std::ifstream in(out);
  try {
    result = json::parse(in);
  } catch (...) {
  }
  std::error_code ec;
  fs::remove(out, ec);
  return result;
}

SweepOutcome execute(const std::string& cpplan, const SweepRun& r, const std::string& db) {
  int code = -1;
  const json result = run_child(cpplan, r.run_args, db, code);
  SweepOutcome o;
  o.run = &r;
  o.ok = code == 0 && result.is_object();
  if (!o.ok) return o;
  o.measured_ms = result.contains("measured") && result["measured"].is_object() ? result["measured"].value("step_ms", 0.0) : 0.0;
  o.predicted_ms = result.contains("predicted") && result["predicted"].is_object() ? result["predicted"].value("step_ms", 0.0) : 0.0;
  return o;
}

std::string csv_line(const SweepOutcome& o) {
  const SweepRun& r = *o.run;
  return fmt::format("{},{},{},{},{},{},{:.4f},{:.4f},{:.2f}\n", r.model, r.resolution, r.frames, r.gpus, r.label,
                     o.ok ? "ok" : "failed", o.measured_ms, o.predicted_ms, o.error_pct());
}

}  // namespace

SweepSummary run_sweep(const std::string& cpplan, const std::vector<SweepRun>& runs, const std::vector<std::string>& skip,
                       const std::string& db, const std::string& csv_path, bool append, const SweepCallbacks& callbacks) {
  const std::set<std::string> done(skip.begin(), skip.end());
  std::ofstream csv(csv_path, append ? std::ios::app : std::ios::trunc);
  if (!append) csv << "model,resolution,frames,ranks,plan,status,measured_step_ms,predicted_step_ms,error_pct\n";
  const auto start = std::chrono::steady_clock::now();
  SweepSummary s;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const SweepRun& r = runs[i];
    if (done.count(run_key(r))) {
      ++s.skipped;
      continue;
    }
    if (callbacks.cancel && callbacks.cancel->load()) {
      s.cancelled = true;
      break;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto executed = static_cast<double>(s.outcomes.size());
    const double eta = executed > 0 ? elapsed / executed * static_cast<double>(runs.size() - i) : 0;
    if (callbacks.starting) callbacks.starting({i, runs.size(), eta, &r});
    s.outcomes.push_back(execute(cpplan, r, db));
    s.outcomes.back().ok ? ++s.ok : ++s.failed;
    csv << csv_line(s.outcomes.back());
    csv.flush();
    if (callbacks.finished) callbacks.finished(s.outcomes.back());
  }
  return s;
}

namespace {

// One torchrun per run, on this node: torchrun's agent serves the rendezvous on MASTER_PORT.
std::string emit_torchrun(const std::string& file, const std::vector<SweepRun>& runs) {
  std::string out = fmt::format(
      "#!/usr/bin/env bash\n# cpplan sweep {} as torchrun jobs on one node: each writes its own database "
      "(SQLite on a\n# shared filesystem is unsafe); merge them with: cpplan db merge sweep-*.db --into all.db\n"
      "# torchrun's agent serves the rendezvous on MASTER_PORT (default 29500).\nset -u\n",
      file);
  for (std::size_t i = 0; i < runs.size(); ++i)
    out += fmt::format("torchrun --nproc_per_node {} --master_port \"${{MASTER_PORT:-29500}}\" --no_python cpplan run {} "
                       "--db sweep-{}.db\n",
                       runs[i].gpus, fmt::join(runs[i].run_args, " "), i);
  return out;
}

// A Slurm array, a run per array task, each task of its job step one rank: `cpplan run` reads
// srun's variables, and takes its rendezvous port from the job id (array tasks are jobs of their
// own, so they do not clash).
std::string emit_slurm(const std::string& file, const std::vector<SweepRun>& runs) {
  int ntasks = 1;
  bool cuda = false;
  for (const SweepRun& r : runs) {
    ntasks = std::max(ntasks, r.gpus);
    cuda = cuda || r.device == "cuda";
  }
  std::string out = fmt::format("#!/usr/bin/env bash\n#SBATCH --job-name=cpplan-sweep\n#SBATCH --array=0-{}\n"
                                "#SBATCH --ntasks={}\n{}#SBATCH --exclusive\n",
                                runs.size() - 1, ntasks, cuda ? "#SBATCH --gpus-per-task=1\n" : "");
  out += fmt::format("# cpplan sweep {} as a Slurm array: job i writes sweep-i.db; merge with\n"
                     "#   cpplan db merge sweep-*.db --into all.db\nset -u\ncase \"$SLURM_ARRAY_TASK_ID\" in\n",
                     file);
  for (std::size_t i = 0; i < runs.size(); ++i)
    out += fmt::format("  {}) NPROC={}; ARGS=({}) ;;\n", i, runs[i].gpus, fmt::join(runs[i].run_args, " "));
  out += fmt::format("esac\nsrun --ntasks=\"$NPROC\"{} cpplan run \"${{ARGS[@]}}\" --db \"sweep-$SLURM_ARRAY_TASK_ID.db\"\n",
                     cuda ? " --gpus-per-task=1" : "");
  return out;
}

}  // namespace

std::string emit_sweep(const std::string& kind, const std::string& file, const std::vector<SweepRun>& runs) {
  if (kind == "torchrun") return emit_torchrun(file, runs);
  if (kind == "slurm") return emit_slurm(file, runs);
  throw InvalidInput{fmt::format("--emit = {}: must be slurm or torchrun", kind)};
}

}  // namespace cpplan::session
