// This machine's measured model as `cpplan run`, `cpplan calibrate` and `--hardware local` use it
// (session::predict_local): on a CPU the rank's own thread runs each op's kernel as it dispatches
// it, so a block costs its kernels plus its dispatch; a GPU's asynchronous launches hide the
// dispatch behind the kernels. The probe below is written by hand: its 1-element add (48 bytes)
// is the per-op time, 5 us; the executor's op counts are the cpplan runtime's (profiles/runtimes/
// cpplan.toml: 133 per double block, 79 per single block).
#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <unistd.h>
#include <string>

#include "data/store.h"
#include "session/engine/calibration.h"
#include "session/engine/local_model.h"
#include "tests/support/fixtures.h"

namespace fs = std::filesystem;

namespace {

// A store holding a hand-written probe of `machine`: GEMM, attention and elementwise rates, and
// the 1-element add at 5 us.
std::string probed_store(const cpplan::session::Machine& machine, const std::string& name) {
  using namespace cpplan::costmodel;
  const fs::path dir = fs::temp_directory_path() / ("cpplan-local-cpu-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string db = (dir / name).string();
  fs::remove(db);
  auto store = cpplan::data::Store::open(db);
  REQUIRE(store.ok());
  MeasurementSet m;
  m.kernels.push_back({KernelKind::kGemm, "small", 1e6, 0, 16, 1, 10});
  m.kernels.push_back({KernelKind::kGemm, "large", 1e10, 0, 4096, 1, 1e4});
  m.kernels.push_back({KernelKind::kAttention, "small", 1e6, 0, 16, 1, 20});
  m.kernels.push_back({KernelKind::kAttention, "large", 1e10, 0, 4096, 1, 2e4});
  m.kernels.push_back({KernelKind::kMemory, "add n=1", 0, 48, 1, 1, 5});
  m.kernels.push_back({KernelKind::kMemory, "add n=1M", 0, 12e6, 1, 1, 1200});
  REQUIRE(store.value().record_measurements(machine.fingerprint, m, "probe").ok());
  return db;
}

cpplan::session::Machine machine_of(const std::string& device_kind) {
  cpplan::session::Machine here;
  here.fingerprint.device_kind = device_kind;
  here.fingerprint.cpu_name = "test CPU";
  here.fingerprint.gpu_name = device_kind == "cuda" ? "test GPU" : "";
  here.fingerprint.host = "test-host";
  here.memory_mib = 65536;
  return here;
}

cpplan::costmodel::Prediction local_prediction(const std::string& device_kind) {
  const cpplan::session::Machine here = machine_of(device_kind);
  const std::string db = probed_store(here, device_kind + ".db");
  std::unique_ptr<cpplan::session::LocalModel> local;
  {
    auto store = cpplan::data::Store::open(db);
    REQUIRE(store.ok());
    local = cpplan::session::load_local_model(store.value(), here);
  }
  fs::remove_all(fs::path(db).parent_path());
  REQUIRE(local != nullptr);
  cpplan::session::attach_runtime(*local, cpplan::test::fitted_catalog());
  const cpplan::Query q = cpplan::test::make_query("flux-tiny", 1, 224, 224);
  return cpplan::session::predict_local(*local, q, cpplan::ParallelConfig{}).raw;
}

}  // namespace

TEST_CASE("On a CPU a block costs its kernels plus the dispatch of its ops, on a GPU the larger of the two",
          "[session][local][host]") {
  const cpplan::costmodel::Prediction cpu = local_prediction("cpu");
  REQUIRE(cpu.block_count == 2);  // flux-tiny: 2 double blocks, then 2 single blocks
  const auto& doubles = cpu.blocks[0];
  const auto& singles = cpu.blocks[1];
  // 2 blocks x 133 ops x 5 us and 2 x 79 x 5 us.
  CHECK(doubles.host_ms == Approx(2 * 133 * 0.005));
  CHECK(singles.host_ms == Approx(2 * 79 * 0.005));
  CHECK_FALSE(doubles.overlapped);
  CHECK(doubles.time_ms() == Approx(doubles.device_ms() + doubles.host_ms));
  CHECK(singles.time_ms() == Approx(singles.device_ms() + singles.host_ms));

  const cpplan::costmodel::Prediction gpu = local_prediction("cuda");
  const auto& gpu_doubles = gpu.blocks[0];
  CHECK(gpu_doubles.overlapped);
  CHECK(gpu_doubles.time_ms() == Approx(std::max(gpu_doubles.device_ms(), gpu_doubles.host_ms)));
}

TEST_CASE("a measurement its hypervisor slowed by more than 5% says so in one line, and nothing under it",
          "[session][local]") {
  // 18% stolen during a run's steps: the line, with the share rounded and the 5% rule.
  CHECK(cpplan::session::contended_line(0.18, "during the steps", "calibrate leaves this run out") ==
        "contended: the hypervisor gave 18% of this host's CPU time to other guests during the steps (more than 5%): "
        "calibrate leaves this run out");
  CHECK(cpplan::session::contended_line(0.05, "while the probe ran", "probe again").empty());   // at the line
  CHECK(cpplan::session::contended_line(0.02, "while the probe ran", "probe again").empty());
  CHECK(cpplan::session::contended_line(-1, "during the steps", "calibrate leaves this run out").empty());  // unread
}
