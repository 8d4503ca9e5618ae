#include "cli/args.h"

#include "cli/app.h"
#include "cli/bench_command.h"
#include "cli/run_command.h"
#include "session/query/query_flags.h"

namespace cpplan::cli {

void add_query_options(CLI::App& app, Args& a) {
  session::add_query_flags(app, a);  // the flags cpplan-gui takes too (session/query/query_flags.h)
  app.add_flag("--json", a.json, "machine-readable output");
  app.add_flag("--explain", a.explain, "per-group bandwidths and cost terms of the top plan");
  session::add_field_flags(app, a, session::FieldGroup::kRecommend);  // --top, --objective, --slo-ms
}

void add_plan_options(CLI::App& app, Args& a) { session::add_field_flags(app, a, session::FieldGroup::kPlan); }

void add_run_options(CLI::App& run, Args& a) {
  add_plan_options(run, a);
  run.add_option("--nproc", a.nproc, "local ranks to launch (default: the plan's world size)");
  run.add_option("--warmup", a.warmup, "untimed forward passes first (default 1)");
  run.add_option("--seed", a.seed, "weights, noise and text embeddings (default 0)");
  run.add_option("--timeout", a.timeout, "collective timeout in seconds (default 60)");
  run.add_option("--device", a.device, "cpu | cuda (one GPU per local rank: cuda:LOCAL_RANK; NCCL groups)");
  run.add_option("--dtype", a.dtype, "fp32 | bf16 (default: fp32 on cpu, bf16 on cuda)");
  run.add_option("--weights", a.weights,
                 "same | int8: the blocks' attention and FFN weights in the --dtype (default) or int8 with a scale "
                 "per output channel, dequantized for each matmul (weight-only, as torchao's int8wo)");
  session::add_field_option(run, "db", a.db);
  run.add_option("--save-latents", a.save_latents, "write rank 0's final latents as float32 .npy");
  run.add_option("--plan", a.plan, "best: cpplan's first row for the same flags (--gpus/--nproc ranks)");
  run.add_flag("--dry-run", a.dry_run, "print the plan it would run (with --plan best: the one chosen) and the prediction it would record, run nothing");
  run.add_flag("--list-unsupported", a.list_unsupported,
               "list the valid plans of the query (--gpus, else 1 to 8 GPUs) the executor does not run, one a "
               "line with why (nothing when it runs them all); run nothing");
  run.add_option("--max-memory", a.max_memory,
                 "cap each rank's tensor memory, e.g. 512MiB (CPU; a run past it fails as out of memory)");
  run.add_flag("--sync-collectives", a.sync_collectives,
               "cuda: synchronise the GPU around every collective, so comm_ms is the communication the "
               "computation did not hide (diagnosis: serialises both; not used by calibrate)");
}

void add_bench_options(CLI::App& bench, BenchArgs& b) {
  bench.add_flag("--quick", b.quick, "shorter measurements (CI)");
  bench.add_flag("--json", b.json, "one JSON object");
  bench.add_flag("--markdown", b.markdown, "markdown tables (docs/performance.md)");
  bench.add_option("--worker", b.worker, "internal: run as a rank of the collective benchmark")->group("");
}

}  // namespace cpplan::cli
