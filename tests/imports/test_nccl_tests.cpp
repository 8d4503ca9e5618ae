// nccl-tests output (tests/data/nccl-tests/) read into collective samples: the text table with
// and without a launcher prefix, the -J JSON, and files that must be refused with the file, the
// line and the column named. Expected values are the files' own printed figures.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>

#include "imports/nccl_tests.h"

using cpplan::costmodel::Collective;
using cpplan::costmodel::CollectiveSample;
using cpplan::imports::NcclTestsFile;
using cpplan::imports::NcclTestsOptions;
using cpplan::imports::parse_nccl_tests;
using cpplan::imports::parse_nccl_tests_file;

namespace {

std::string fixture(const std::string& name) {
  return std::string(CPPLAN_TEST_PROFILES) + "/../tests/data/nccl-tests/" + name;
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

NcclTestsFile parse_fixture(const std::string& name, const NcclTestsOptions& options = {}) {
  auto parsed = parse_nccl_tests_file(read(fixture(name)), name, options);
  INFO((parsed ? std::string() : parsed.error().message));
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

std::string error_of(const std::string& text, const std::string& name, const NcclTestsOptions& options = {}) {
  auto parsed = parse_nccl_tests(text, name, options);
  REQUIRE_FALSE(parsed.ok());
  return parsed.error().message;
}

std::string fixture_error(const std::string& name, const NcclTestsOptions& options = {}) {
  return error_of(read(fixture(name)), name, options);
}

void check_sample(const CollectiveSample& s, Collective kind, int ranks, double bytes, double time_us, double algbw,
                  double busbw) {
  CHECK(s.kind == kind);
  CHECK(s.ranks == ranks);
  CHECK_FALSE(s.uneven);
  CHECK(s.bytes == bytes);
  CHECK(s.time_us == time_us);
  CHECK(s.algbw_gbps == algbw);
  CHECK(s.busbw_gbps == busbw);
}

// The smallest valid table, for variations.
const std::string kHeader =
    "# nThread 1 nGpus 2 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
const std::string kRow =
    "        1024           256     float     sum      -1    20.00    0.05    0.05      0    20.00    0.05    0.05      0\n";

}  // namespace

TEST_CASE("all_reduce_perf on 8 GPUs: every row, out-of-place figures, ranks from the device list",
          "[imports][nccl_tests]") {
  const NcclTestsFile f = parse_fixture("all_reduce_perf-h100x8.txt");
  CHECK(f.test == "all_reduce_perf");
  CHECK(f.ranks == 8);
  CHECK(f.gpus);
  CHECK(f.gpu_name == "NVIDIA H100 80GB HBM3");
  REQUIRE(f.avg_busbw_gbps.has_value());
  CHECK(*f.avg_busbw_gbps == 106.1623);
  REQUIRE(f.samples.size() == 18);  // 1 KiB .. 128 MiB, factor 2
  check_sample(f.samples[0], Collective::kAllReduce, 8, 1024, 24.27, 0.04, 0.07);
  check_sample(f.samples[13], Collective::kAllReduce, 8, 8388608, 64.02, 131.02, 229.29);
  check_sample(f.samples[14], Collective::kAllReduce, 8, 16777216, 105.1, 159.62, 279.33);  // %7.1f from 100 us
  check_sample(f.samples[17], Collective::kAllReduce, 8, 134217728, 667.7, 201.03, 351.79);
  for (std::size_t i = 1; i < f.samples.size(); ++i) CHECK(f.samples[i].bytes == 2 * f.samples[i - 1].bytes);
}

TEST_CASE("srun's '0: ' prefixes, NCCL INFO lines and #wrong N/A are read through", "[imports][nccl_tests]") {
  // 8 tasks of one GPU each: nThread 1 x nGpus 1 would say 1 rank, the device list says 8.
  const NcclTestsFile f = parse_fixture("srun-all_reduce.log");
  CHECK(f.test == "all_reduce_perf");
  CHECK(f.ranks == 8);
  CHECK(f.gpu_name == "NVIDIA H200");
  REQUIRE(f.avg_busbw_gbps.has_value());
  CHECK(*f.avg_busbw_gbps == 50.0689);
  REQUIRE(f.samples.size() == 12);  // 8 B .. 32 MiB, factor 4
  check_sample(f.samples[0], Collective::kAllReduce, 8, 8, 31.16, 0.00, 0.00);
  check_sample(f.samples[10], Collective::kAllReduce, 8, 8388608, 74.51, 112.58, 197.02);
  check_sample(f.samples[11], Collective::kAllReduce, 8, 33554432, 209.6, 160.08, 280.14);
}

TEST_CASE("alltoall_perf without a test banner is named by its file name", "[imports][nccl_tests]") {
  const NcclTestsFile f = parse_fixture("alltoall_perf.txt");
  CHECK(f.test == "alltoall_perf");
  CHECK(f.ranks == 8);
  REQUIRE(f.samples.size() == 12);  // 64 KiB .. 128 MiB
  check_sample(f.samples[0], Collective::kAllToAll, 8, 65536, 38.57, 1.70, 1.49);
  check_sample(f.samples[11], Collective::kAllToAll, 8, 134217728, 382.8, 350.65, 306.82);
  CHECK(*f.avg_busbw_gbps == 108.0708);
}

TEST_CASE("the -J JSON output gives the same samples from results[].out_of_place", "[imports][nccl_tests]") {
  const NcclTestsFile f = parse_fixture("all_gather_perf.json");
  CHECK(f.test == "all_gather_perf");  // from the command line it records
  CHECK(f.ranks == 8);
  CHECK(f.gpus);
  CHECK(f.gpu_name == "NVIDIA H100 80GB HBM3");
  CHECK(*f.avg_busbw_gbps == 244.07);
  REQUIRE(f.samples.size() == 6);
  check_sample(f.samples[0], Collective::kAllGather, 8, 1048576, 22.48, 46.65, 40.81);
  check_sample(f.samples[3], Collective::kAllGather, 8, 67108864, 179.54, 373.77, 327.05);
  check_sample(f.samples[5], Collective::kAllGather, 8, 1073741824, 2531.74, 424.11, 371.1);
}

TEST_CASE("options --ranks and --collective override the file, and a wrong rank count is caught", "[imports][nccl_tests]") {
  // busbw 0.05 = algbw 0.05 x 1: sendrecv's factor, whatever the rank count.
  auto sendrecv = parse_nccl_tests(kHeader + kRow, "log.txt", {.ranks = 4, .collective = "sendrecv_perf"});
  REQUIRE(sendrecv.ok());
  REQUIRE(sendrecv->size() == 1);
  check_sample(sendrecv->front(), Collective::kSendRecv, 4, 1024, 20.0, 0.05, 0.05);

  // all_reduce on 2 ranks: factor 1 as well (2(n-1)/n); on 4 it would be 1.5.
  auto two = parse_nccl_tests(kHeader + kRow, "all_reduce_perf.out");
  REQUIRE(two.ok());
  CHECK(two->front().ranks == 2);
  CHECK_THAT(error_of(kHeader + kRow, "all_reduce_perf.out", {.ranks = 4, .collective = {}}),
             Catch::Equals("all_reduce_perf.out:3: column busbw(GB/s) = 0.05: not algbw 0.05 x 1.5 (all_reduce_perf's "
                           "bus factor for 4 ranks, from --ranks 4); the rank count is wrong, pass --ranks N"));

  // An MPI run whose device list was cut: nThread 1 x nGpus 1 says 1 rank, the busbw says more.
  CHECK_THAT(fixture_error("broken-ranks.txt"),
             Catch::Equals("broken-ranks.txt:7: column busbw(GB/s) = 63.69: not algbw 36.39 x 0 (all_reduce_perf's bus "
                           "factor for 1 ranks, from nThread 1 x nGpus 1); the rank count is wrong, pass --ranks N"));
  auto fixed = parse_nccl_tests(read(fixture("broken-ranks.txt")), "broken-ranks.txt", {.ranks = 8, .collective = {}});
  REQUIRE(fixed.ok());
  CHECK(fixed->size() == 3);
}

TEST_CASE("a bad number names the file, the line, the column and the value", "[imports][nccl_tests]") {
  CHECK(fixture_error("broken-time.txt") == "broken-time.txt:8: column time(us) = 'abc': not a number");
  CHECK(error_of(kHeader + "  1024  256  float  sum  -1  20.00  0.05  n/a  0  20.00  0.05  0.05  0\n",
                 "all_reduce_perf.txt") == "all_reduce_perf.txt:3: column busbw(GB/s) = 'n/a': not a number");
  CHECK(error_of(kHeader + "  99999999999999999999  1  float  sum  -1  20.00  0.05  0.05  0\n", "all_reduce_perf.txt") ==
        "all_reduce_perf.txt:3: column size(B) = '99999999999999999999': not a whole number of bytes");
  CHECK(error_of(kHeader + "  1024  256  float  sum  -1  0.00  0.05  0.05  0\n", "all_reduce_perf.txt") ==
        "all_reduce_perf.txt:3: column time(us) = 0: must be a time > 0");
  // A line that does not start with a number is a log line, not a row.
  CHECK_THAT(error_of(kHeader + "  1k  256  float  sum  -1  20.00  0.05  0.05  0\n", "all_reduce_perf.txt"),
             Catch::StartsWith("all_reduce_perf.txt: no result rows"));
}

TEST_CASE("rows with wrong results, truncated rows and unmodelled tests are refused", "[imports][nccl_tests]") {
  CHECK(fixture_error("broken-wrong.txt") ==
        "broken-wrong.txt:8: column #wrong = '3': the collective returned wrong results; nothing imported");
  CHECK(fixture_error("broken-truncated.txt") ==
        "broken-truncated.txt:9: 6 columns: a result row has at least 9 (size count type redop root, then time algbw "
        "busbw #wrong out-of-place)");
  CHECK(fixture_error("broken-unknown-test.txt") ==
        "broken-unknown-test.txt:1: test broadcast_perf: cpplan imports all_reduce_perf, all_gather_perf, "
        "alltoall_perf, reduce_scatter_perf and sendrecv_perf (and their MPI builds, *_perf_mpi)");
  CHECK(error_of(kHeader + kRow, "log.txt", {.ranks = 0, .collective = "hypercube_perf"}) ==
        "log.txt: test hypercube_perf: cpplan imports all_reduce_perf, all_gather_perf, alltoall_perf, "
        "reduce_scatter_perf and sendrecv_perf (and their MPI builds, *_perf_mpi)");
}

TEST_CASE("a file that cannot say its test, its ranks or any row is refused", "[imports][nccl_tests]") {
  CHECK_THAT(error_of(kHeader + kRow, "results.txt"),
             Catch::StartsWith("results.txt: cannot tell which test this is: no '# Collective test starting:' line"));
  CHECK(error_of(kHeader.substr(kHeader.find('\n') + 1) + kRow, "all_reduce_perf.txt") ==
        "all_reduce_perf.txt: cannot tell the number of ranks: no device list and no 'nThread T nGpus G' header; "
        "pass --ranks N");
  CHECK_THAT(error_of("", "empty.txt"), Catch::StartsWith("empty.txt: no result rows"));
  CHECK_THAT(error_of(kHeader, "all_reduce_perf.txt"), Catch::StartsWith("all_reduce_perf.txt: no result rows"));
  CHECK_THAT(error_of(kHeader + "# Collective test starting: all_reduce_perf\n" + kRow +
                          "# Collective test starting: alltoall_perf\n" + kRow,
                      "two.txt"),
             Catch::Equals("two.txt:5: a second test (alltoall_perf) after all_reduce_perf: import one test per file"));
}

TEST_CASE("broken JSON names the line or the field's path", "[imports][nccl_tests]") {
  CHECK_THAT(fixture_error("broken-syntax.json"), Catch::StartsWith("broken-syntax.json:27: not valid JSON: "));
  CHECK(fixture_error("broken-field.json") == "broken-field.json: results[1].out_of_place.time = \"fast\": not a number");
  CHECK(error_of(R"({"config": {"ngpus": 2}, "results": {}})", "all_gather_perf.json") ==
        "all_gather_perf.json: results: missing or not an array (nccl-tests -J output has results[])");
  CHECK(error_of(R"({"config": {"ngpus": 2}, "results": [{"size": 1024}]})", "all_gather_perf.json") ==
        "all_gather_perf.json: results[0].out_of_place: missing or not an object");
  CHECK(error_of(R"({"config": {"ngpus": 2}, "results": [{"size": 1024, "out_of_place":
                 {"time": 10.0, "alg_bw": 0.1, "bus_bw": 0.05, "nwrong": 2}}]})",
                 "all_gather_perf.json") ==
        "all_gather_perf.json: results[0].out_of_place.nwrong = 2: the collective returned wrong results; nothing "
        "imported");
  auto unchecked = parse_nccl_tests(R"({"config": {"ngpus": 2}, "results": [{"size": 1024, "out_of_place":
                                    {"time": 10.0, "alg_bw": 0.1, "bus_bw": 0.05, "nwrong": "N/A"}}]})",
                                    "all_gather_perf.json");
  REQUIRE(unchecked.ok());
  check_sample(unchecked->front(), Collective::kAllGather, 2, 1024, 10.0, 0.1, 0.05);
}

TEST_CASE("nccl-tests names map to the cost model's collectives", "[imports][nccl_tests]") {
  using cpplan::imports::collective_from_nccl_test;
  CHECK(collective_from_nccl_test("all_reduce_perf") == Collective::kAllReduce);
  CHECK(collective_from_nccl_test("all_gather_perf") == Collective::kAllGather);
  CHECK(collective_from_nccl_test("alltoall_perf") == Collective::kAllToAll);
  CHECK(collective_from_nccl_test("reduce_scatter_perf") == Collective::kReduceScatter);
  CHECK(collective_from_nccl_test("sendrecv_perf") == Collective::kSendRecv);
  CHECK(collective_from_nccl_test("alltoall") == Collective::kAllToAll);
  CHECK_FALSE(collective_from_nccl_test("broadcast_perf").has_value());
  CHECK_FALSE(collective_from_nccl_test("all_to_all").has_value());
}

TEST_CASE("the MPI build under mpirun --tag-output, two nodes, NCCL INFO lines between rows", "[imports][nccl_tests]") {
  const NcclTestsFile f = parse_fixture("all_reduce_perf_mpi-2nodes.txt");
  CHECK(f.test == "all_reduce_perf_mpi");
  CHECK(f.ranks == 2);
  CHECK(f.gpu_name == "NVIDIA A100-SXM4-40GB");
  CHECK(f.hosts == std::vector<std::string>{"test-nccl-efa-worker-0", "test-nccl-efa-worker-1"});
  CHECK(f.nodes() == 2);
  CHECK(f.ranks_per_node == 1);
  REQUIRE(f.samples.size() == 6);  // 7 rows; the 0-byte one carries no bandwidth
  check_sample(f.samples[0], Collective::kAllReduce, 2, 1024, 45.10, 0.02, 0.02);
  check_sample(f.samples[5], Collective::kAllReduce, 2, 1073741824, 352100.0, 3.05, 3.05);
  for (const auto& s : f.samples) CHECK(s.nodes == 2);  // each sample knows its ranks crossed nodes
}

TEST_CASE("kubectl's pod prefix before mpirun's tag, 16 ranks on 2 nodes, the out-of-place-only layout",
          "[imports][nccl_tests]") {
  const NcclTestsFile f = parse_fixture("alltoall_perf-kubectl-2nodes.txt");
  CHECK(f.test == "alltoall_perf_mpi");
  CHECK(f.ranks == 16);
  CHECK(f.gpu_name == "NVIDIA H100 80GB HBM3");
  CHECK(f.hosts == std::vector<std::string>{"nccl-tests-worker-0", "nccl-tests-worker-1"});
  CHECK(f.ranks_per_node == 8);
  REQUIRE(f.samples.size() == 6);  // the NCCL WARN line between rows 3 and 4 is no row
  check_sample(f.samples[3], Collective::kAllToAll, 16, 1048576, 610.30, 1.72, 1.61);
  check_sample(f.samples[5], Collective::kAllToAll, 16, 268435456, 61220.0, 4.38, 4.11);
  CHECK(f.samples[5].nodes == 2);
}

TEST_CASE("an older header without the test's name needs --collective, srun's prefix, 2 nodes of 4",
          "[imports][nccl_tests]") {
  CHECK_THAT(fixture_error("nccl-old.log"), Catch::Contains("cannot tell which test this is"));
  const NcclTestsFile f = parse_fixture("nccl-old.log", {.ranks = 0, .collective = "all_gather_perf"});
  CHECK(f.ranks == 8);
  CHECK(f.nodes() == 2);
  CHECK(f.ranks_per_node == 4);
  CHECK(f.gpu_name == "NVIDIA L40S");
  REQUIRE(f.samples.size() == 5);  // the columns of the "time algbw busbw error" header, no root column
  check_sample(f.samples[0], Collective::kAllGather, 8, 8192, 52.10, 0.16, 0.14);
  check_sample(f.samples[4], Collective::kAllGather, 8, 134217728, 20380.0, 6.59, 5.76);
}

TEST_CASE("a file without a device list has no hosts, one of 0-byte rows only is refused", "[imports][nccl_tests]") {
  auto parsed = parse_nccl_tests_file(kHeader + kRow, "all_reduce_perf.txt");
  REQUIRE(parsed.ok());
  CHECK(parsed->hosts.empty());
  CHECK(parsed->nodes() == 0);
  CHECK(parsed->ranks_per_node == 0);
  CHECK(parsed->samples.at(0).nodes == 1);  // nothing says the ranks left one node
  auto told = parse_nccl_tests_file(kHeader + kRow, "all_reduce_perf.txt", {.nodes = 2});
  REQUIRE(told.ok());
  CHECK(told->samples.at(0).nodes == 2);
  const std::string zero =
      "           0             0     float     sum      -1     0.12    0.00    0.00      0     0.11    0.00    0.00      0\n";
  CHECK(error_of(kHeader + zero, "all_reduce_perf.txt") ==
        "all_reduce_perf.txt: only rows of 0 bytes: no bandwidth to import");
}

TEST_CASE("the MPI builds' names map to the same collectives", "[imports][nccl_tests]") {
  using cpplan::imports::collective_from_nccl_test;
  CHECK(collective_from_nccl_test("all_reduce_perf_mpi") == Collective::kAllReduce);
  CHECK(collective_from_nccl_test("alltoall_perf_mpi") == Collective::kAllToAll);
  CHECK(collective_from_nccl_test("sendrecv_perf_mpi") == Collective::kSendRecv);
  CHECK_FALSE(collective_from_nccl_test("broadcast_perf_mpi").has_value());
}
