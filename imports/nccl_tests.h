#pragma once
// Reads the output of NVIDIA's nccl-tests (all_reduce_perf, all_gather_perf, alltoall_perf,
// reduce_scatter_perf, sendrecv_perf) into collective samples, so that a cluster's own
// measurements feed the cost model like cpplan's probes do. Both of its formats:
//  - the text table: `#` header lines ("# Collective test starting: all_reduce_perf",
//    "# nThread 1 nGpus 8 ...", the "#  Rank  0 Group ..." device list, the column names), one
//    row per message size `size count type redop root` + out-of-place `time algbw busbw #wrong`
//    + the same four in-place (or, in newer builds, the out-of-place set alone), and a
//    "# Avg bus bandwidth : X" footer. Lines may carry launcher prefixes ("0: " from srun
//    --label, "[1,0]<stdout>:" from mpirun --tag-output, "[pod/NAME/CONTAINER] " from kubectl
//    logs --prefix); NCCL INFO and WARN lines anywhere, and blank lines, are ignored. Rows of 0
//    bytes are read and left out (no bandwidth). The MPI builds (all_reduce_perf_mpi, ...) are
//    the same tests.
//  - the `-J` JSON file: results[] of {size, count, type, redop, root,
//    out_of_place: {time, alg_bw, bus_bw, nwrong}, in_place: {...}}.
// The out-of-place figures are taken. Pure: no file or device access.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "costmodel/measurements.h"

namespace cpplan::imports {

struct NcclTestsOptions {
  int ranks = 0;           // > 0: the group size, overriding the file's; 0: from the file
  int nodes = 0;           // > 0: the nodes the ranks sat on; 0: the device list's hosts, else 1
  std::string collective;  // "" : from the file; else a test name such as "all_reduce_perf"
};

struct NcclTestsFile {
  std::string test;                      // e.g. "all_reduce_perf"
  int ranks = 0;                         // group size of every sample
  bool gpus = false;                     // the file names GPUs (nGpus, a device list)
  std::string gpu_name;                  // first device's name in the device list, "" when absent
  std::vector<std::string> hosts;        // the device list's hosts ("on HOST"), in rank order; none without one
  int ranks_per_node = 0;                // the most ranks on one host; 0 without a device list
  int nodes() const { return static_cast<int>(hosts.size()); }
  std::optional<GBps> avg_busbw_gbps;    // the "# Avg bus bandwidth" footer, when present
  std::vector<costmodel::CollectiveSample> samples; // one per result row, in file order
};

// Parses `text`, the contents of `file_name` (used in messages only). The rank count comes from
// `options.ranks`, else the device list ("#  Rank  N ..." lines), else nThread x nGpus; the test
// from `options.collective`, else "# Collective test starting: X", else a `*_perf` word in the
// header, else the file name. Every row's busbw must be its algbw x busbw_factor(test, ranks)
// (to the printed precision), which catches a wrong rank count. Errors name the file, the line
// (JSON: the field's path), the column and the rule: "f.txt:12: column time(us) = 'abc': not a
// number". A row with #wrong > 0 (wrong results) is an error, not a sample.
Result<NcclTestsFile> parse_nccl_tests_file(std::string_view text, std::string_view file_name,
                                            const NcclTestsOptions& options = {});

// The samples of parse_nccl_tests_file().
Result<std::vector<costmodel::CollectiveSample>> parse_nccl_tests(std::string_view text,
                                                                  std::string_view file_name,
                                                                  const NcclTestsOptions& options = {});

// "all_reduce_perf" -> kAllReduce, likewise all_gather_perf, alltoall_perf, reduce_scatter_perf,
// sendrecv_perf (the "_perf" suffix is optional, an "_mpi" one allowed); nullopt for the tests
// cpplan does not model.
std::optional<costmodel::Collective> collective_from_nccl_test(std::string_view test);

}  // namespace cpplan::imports
