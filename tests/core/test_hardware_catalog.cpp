// The hardware profiles added from shared/reference/hardware.md (H20, H800, A800, L40, B200,
// RTX A6000, A10): their datasheet figures as the files give them, and the nvidia-smi names that
// must detect them, or must still detect the older profiles whose names contain or are contained
// in theirs (docs/profiles.md, "match").
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "core/profiles.h"
#include "tests/support/fixtures.h"

using cpplan::LinkKind;
using cpplan::test::catalog;

namespace {

// One profile's figures, written out by hand from hardware.md (bandwidths per direction).
struct Datasheet {
  const char* name;
  double bf16_tflops;            // dense
  double memory_bandwidth_gbps;
  double intra_node_gbps;        // GPU to GPU
  LinkKind link_kind;
  double host_link_gbps;         // GPU to host memory, PCIe x16
  const char* architecture;
};

const std::vector<Datasheet>& added_profiles() {
  static const std::vector<Datasheet> v = {
      {"h20", 148, 4000, 450, LinkKind::kNvSwitch, 64, "hopper"},             // NVLink4; PCIe Gen5
      {"h800", 989, 3350, 200, LinkKind::kNvSwitch, 64, "hopper"},            // NVLink cut to 400 bidirectional
      {"a800-sxm-80g", 312, 2039, 200, LinkKind::kNvSwitch, 32, "ampere"},    // NVLink3 cut to 400 bidirectional
      {"l40", 181, 864, 32, LinkKind::kPcie, 32, "ada"},                      // PCIe Gen4 x16 only
      {"b200", 2250, 7700, 900, LinkKind::kNvSwitch, 64, "blackwell"},        // NVLink5; PCIe Gen5
      {"rtx-a6000", 154.8, 768, 32, LinkKind::kPcie, 32, "ampere"},           // NVLink bridge not modelled
      {"a10", 125, 600, 32, LinkKind::kPcie, 32, "ampere"},                   // PCIe Gen4 x16 only
  };
  return v;
}

std::string detected(const char* gpu_name, double memory_mib) {
  const cpplan::HardwareProfile* h = catalog().match_gpu(gpu_name, memory_mib);
  return h ? h->name : std::string("(none)");
}

}  // namespace

TEST_CASE("The catalog holds the seven hardware profiles added from hardware.md", "[core][hardware]") {
  const std::vector<std::string> names = catalog().hardware_names();
  for (const char* name : {"h20", "h800", "a800-sxm-80g", "l40", "b200", "rtx-a6000", "a10"}) {
    INFO(name);
    CHECK(std::find(names.begin(), names.end(), name) != names.end());
  }
}

TEST_CASE("The added hardware profiles carry hardware.md's datasheet figures and their architecture",
          "[core][hardware]") {
  for (const Datasheet& d : added_profiles()) {
    INFO(d.name);
    const cpplan::HardwareProfile* h = catalog().find_hardware(d.name);
    REQUIRE(h != nullptr);
    CHECK(h->bf16_tflops == d.bf16_tflops);
    CHECK(h->memory_bandwidth_gbps == d.memory_bandwidth_gbps);
    CHECK(h->intra_node.bandwidth_gbps == d.intra_node_gbps);
    CHECK(h->link_kind == d.link_kind);
    CHECK(h->host_link.bandwidth_gbps == d.host_link_gbps);
    CHECK(h->architecture == d.architecture);
  }
}

TEST_CASE("nvidia-smi names resolve to the added profiles and still to the older ones beside them",
          "[core][hardware]") {
  // Capacities as nvidia-smi reports them (memory.total, MiB).
  CHECK(detected("NVIDIA L40", 46068) == "l40");
  CHECK(detected("NVIDIA A10", 23028) == "a10");
  CHECK(detected("NVIDIA A100-SXM4-80GB", 81920) == "a100-sxm-80g");  // contains "A10": capacity decides
  CHECK(detected("NVIDIA H20", 97871) == "h20");
  CHECK(detected("NVIDIA H200", 143771) == "h200-sxm");  // contains "H20": capacity decides
  CHECK(detected("NVIDIA H800", 81559) == "h800");
  CHECK(detected("NVIDIA H100 80GB HBM3", 81559) == "h100-sxm");
  CHECK(detected("NVIDIA A800-SXM4-80GB", 81920) == "a800-sxm-80g");
  CHECK(detected("NVIDIA B200", 183359) == "b200");
  CHECK(detected("NVIDIA RTX A6000", 49140) == "rtx-a6000");
}

TEST_CASE("An L40S resolves to l40s although its name contains the L40's and its capacity is the same",
          "[core][hardware]") {
  // "NVIDIA L40" is a prefix of "NVIDIA L40S", so no substring of l40's can exclude the L40S, and
  // both report 46068 MiB: only a preference for the more specific match can separate them.
  CHECK(detected("NVIDIA L40S", 46068) == "l40s");
}

TEST_CASE("The Neuron profiles carry hardware.md's per-chip figures and their family", "[core][hardware]") {
  struct Chip {
    const char* name;
    double bf16_tflops, memory_mib, memory_gbps;
    int chips_per_node;
  };
  // hardware.md: trn1 190 TF, 32 GiB, 820 GiB/s (= 880 GB/s), 16 per trn1.32xlarge; trn2 667 TF,
  // 96 GiB, 2.9 TB/s, 16 per trn2.48xlarge; trn3 671 TF, 144 GiB, 4.9 TB/s; inf2 190 TF, 32 GiB,
  // 820 GiB/s, up to 12 per inf2.48xlarge.
  for (const Chip& c : {Chip{"trn1", 190, 32768, 880, 16}, Chip{"trn2", 667, 98304, 2900, 16},
                        Chip{"trn3", 671, 147456, 4900, 16}, Chip{"inf2", 190, 32768, 880, 12}}) {
    INFO(c.name);
    const cpplan::HardwareProfile* h = catalog().find_hardware(c.name);
    REQUIRE(h);
    CHECK(h->family == cpplan::DeviceFamily::kNeuron);
    CHECK(h->link_kind == LinkKind::kNeuronLink);
    CHECK(h->bf16_tflops == c.bf16_tflops);
    CHECK(h->memory_mib == c.memory_mib);
    CHECK(h->memory_bandwidth_gbps == c.memory_gbps);
    CHECK(h->gpus_per_node == c.chips_per_node);
  }
  CHECK(catalog().find_hardware("trn3")->intra_node.bandwidth_gbps == 1280);  // NeuronLink-v4: 2.56 TB/s per chip
  CHECK(catalog().find_hardware("tpu-v6e")->family == cpplan::DeviceFamily::kTpu);
  CHECK(catalog().find_hardware("h100-sxm")->family == cpplan::DeviceFamily::kCuda);
}

TEST_CASE("Every hardware profile carries its [compute] resource peaks from hardware-resources.md",
          "[core][hardware][peaks]") {
  struct Peaks {
    const char* name;
    double fp8_tflops, fp4_tflops, vector_tflops, exp_tera_per_s;
    int units;
    double clock_mhz;
    int compute_capability;
  };
  // Dense peaks from shared/reference/hardware-resources.md §1-§2; 0 where the format is n/a or
  // no figure is published. exp: SMs x 16 exp2/clk/SM x MHz / 1e6 (CUDA Programming Guide, via
  // FlashAttention-3's footnote), e.g. H100 132 x 16 x 1830 = 3.865e12/s; Neuron ScalarE
  // cores x 128 x MHz (Trainium2 8 x 128 x 1200 = 1.229e12/s).
  const std::vector<Peaks> table = {
      {"a100-sxm-80g", 0, 0, 19.5, 2.436, 108, 1410, 80},   // 108 x 16 x 1410 = 2.436e12
      {"a10", 0, 0, 31.2, 1.953, 72, 1695, 86},             // 72 x 16 x 1695 = 1.953e12
      {"h100-sxm", 1978.9, 0, 66.9, 3.865, 132, 1830, 90},
      {"h20", 296, 0, 44, 2.284, 78, 0, 90},                // clock not published: 78 x 16 x 1830
      {"b200", 4500, 9000, 75, 4.381, 148, 1850, 100},      // 148 x 16 x 1850 = 4.381e12
      {"l40s", 733, 0, 91.6, 5.725, 142, 2520, 89},         // 142 x 16 x 2520 = 5.725e12
      {"tpu-v6e", 918, 0, 0, 0, 1, 0, 0},                   // VPU and exp rates not published
      {"trn2", 1299, 0, 17.6, 1.229, 8, 2400, 0},
  };
  for (const Peaks& e : table) {
    INFO(e.name);
    const cpplan::HardwareProfile* h = catalog().find_hardware(e.name);
    REQUIRE(h);
    CHECK(h->peaks.fp8_tflops == e.fp8_tflops);
    CHECK(h->peaks.fp4_tflops == e.fp4_tflops);
    CHECK(h->peaks.vector_tflops == e.vector_tflops);
    CHECK(h->peaks.exp_tera_per_s == e.exp_tera_per_s);
    CHECK(h->peaks.units == e.units);
    CHECK(h->peaks.clock_mhz == e.clock_mhz);
    CHECK(h->peaks.compute_capability == e.compute_capability);
  }
  // Every CUDA profile names its compute capability and SM count, and has an exp ceiling.
  for (const std::string& name : catalog().hardware_names()) {
    const cpplan::HardwareProfile* h = catalog().find_hardware(name);
    if (h->family != cpplan::DeviceFamily::kCuda) continue;
    INFO(name);
    CHECK(h->peaks.compute_capability >= 80);
    CHECK(h->peaks.units > 0);
    CHECK(h->peaks.exp_tera_per_s > 0);
    CHECK(h->peaks.vector_tflops > 0);
  }
}

TEST_CASE("The profiles added from hardware-resources.md carry its figures, family and link kind",
          "[core][hardware][peaks]") {
  struct Added {
    const char* name;
    double bf16_tflops, fp8_tflops, fp4_tflops, memory_gbps, link_gbps;
    LinkKind link;
    cpplan::DeviceFamily family;
    int compute_capability;
  };
  // hardware-resources.md §1, §3, §4, §8: links per direction (xGMI: one link to one peer, 128 and
  // 153 GB/s read as bidirectional; ICI: 1,200 GB/s bidirectional per chip).
  const std::vector<Added> added = {
      {"b300", 2250, 4500, 14000, 7700, 900, LinkKind::kNvSwitch, cpplan::DeviceFamily::kCuda, 103},
      {"mi300x", 1307.4, 2614.9, 0, 5300, 64, LinkKind::kXgmi, cpplan::DeviceFamily::kRocm, 942},
      {"mi325x", 1307.4, 2614.9, 0, 6000, 64, LinkKind::kXgmi, cpplan::DeviceFamily::kRocm, 942},
      {"mi355x", 2500, 5000, 10100, 8000, 76.5, LinkKind::kXgmi, cpplan::DeviceFamily::kRocm, 950},
      {"tpu-v5p", 459, 459, 0, 2765, 600, LinkKind::kIci, cpplan::DeviceFamily::kTpu, 0},
      {"tpu-v7x", 2307, 4614, 0, 7370, 600, LinkKind::kIci, cpplan::DeviceFamily::kTpu, 0},
  };
  for (const Added& a : added) {
    INFO(a.name);
    const cpplan::HardwareProfile* h = catalog().find_hardware(a.name);
    REQUIRE(h);
    CHECK(h->bf16_tflops == a.bf16_tflops);
    CHECK(h->peaks.fp8_tflops == a.fp8_tflops);
    CHECK(h->peaks.fp4_tflops == a.fp4_tflops);
    CHECK(h->memory_bandwidth_gbps == a.memory_gbps);
    CHECK(h->intra_node.bandwidth_gbps == a.link_gbps);
    CHECK(h->link_kind == a.link);
    CHECK(h->family == a.family);
    CHECK(h->peaks.compute_capability == a.compute_capability);
  }
  CHECK(cpplan::to_string(LinkKind::kXgmi) == "xgmi");
  // rocm-smi / amd-smi product names resolve to the AMD profiles (none contains another's).
  CHECK(detected("AMD Instinct MI300X", 196608) == "mi300x");
  CHECK(detected("AMD Instinct MI325X", 262144) == "mi325x");
  CHECK(detected("AMD Instinct MI355X", 274658) == "mi355x");
  CHECK(detected("NVIDIA B300", 257492) == "b300");
}
